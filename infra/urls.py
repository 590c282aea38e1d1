"""Service URLs as the project prints and derives them (credentials masked, next database)."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from mechanisms.errors import ConfigError


def safe_url(url: str | None) -> str:
    """``url`` with any user/password part replaced by ``***`` (for terminal and logs)."""
    if not url:
        return ""
    try:
        parts = urlsplit(url if "://" in url else f"//{url}")
    except ValueError:
        return "<unparseable url>"
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    out = urlunsplit(parts._replace(netloc=f"***@{host}"))
    return out if "://" in url else out.removeprefix("//")


def next_db_url(url: str) -> str:
    """``url`` with the next Redis database number (``/0`` → ``/1``; ``?db=N`` too).

    Args:
        url: a ``redis://``, ``rediss://`` or ``unix://`` URL ("" → "").

    Raises:
        ConfigError: when the database number is not an integer.
    """
    if not url:
        return ""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    try:
        if any(k == "db" for k, _ in query) or parts.scheme == "unix":
            if not any(k == "db" for k, _ in query):
                query.append(("db", "0"))
            query = [(k, str(int(v) + 1) if k == "db" else v) for k, v in query]
            return url.split("?", 1)[0] + "?" + urlencode(query)  # keeps unix:///path
        db = int(parts.path.strip("/") or 0)
    except ValueError:
        raise ConfigError(f"redis_url must name an integer database, not {url!r}") from None
    return urlunsplit(parts._replace(path=f"/{db + 1}"))
