"""Shared report and plot helpers for ``occustream evaluate | audit | tune``.

A :class:`Report` collects headings, paragraphs, tables and matplotlib figures and
writes either one self-contained HTML file (figures embedded as base64 PNG) or a
Markdown file with the PNGs beside it. Figures are drawn with the Agg backend via
:class:`matplotlib.figure.Figure` (no pyplot global state), so the tools run headless.
"""

from __future__ import annotations

import base64
import html
import io
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from mechanisms.errors import InvalidParameterError
from research.attacker import CONFIDENCE_LABELS

#: Light blue → dark red, lowest to highest confidence class (thesis Fig. 4.2).
CLASS_COLOURS = ("#c6dbef", "#6baed6", "#fdd49e", "#fc8d59", "#d7301f", "#7f0000")

FORMATS = ("html", "md")


def new_figure(width: float = 8.0, height: float = 4.0, **subplots: Any) -> tuple[Figure, Any]:
    """A headless figure and its axes (``subplots`` as for ``Figure.subplots``)."""
    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.subplots(**subplots)


def figure_png(fig: Figure, dpi: int = 100) -> bytes:
    """PNG bytes of a figure."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def stacked_classes(ax: Any, hours: np.ndarray, per_class: np.ndarray, title: str = "") -> None:
    """Figures 4.2–4.9 style: time on x, people per confidence class stacked on y.

    Args:
        ax: a matplotlib Axes.
        hours: x values (hours of day), shape (T,).
        per_class: people per class, shape (T, 6), lowest class first.
        title: axes title.
    """
    per_class = np.asarray(per_class, dtype=float)
    ax.stackplot(hours, per_class.T, colors=CLASS_COLOURS, labels=CONFIDENCE_LABELS, step=None)
    ax.set_xlim(float(np.min(hours)), float(np.max(hours)) if len(hours) > 1 else 1.0)
    ax.set_xlabel("hour of day")
    ax.set_ylabel("people localised")
    if title:
        ax.set_title(title, fontsize=9)


def fmt(x: Any, digits: int = 3) -> str:
    """Compact cell formatting for tables."""
    if isinstance(x, float | np.floating):
        if not np.isfinite(x):
            return "—" if np.isnan(x) else ("∞" if x > 0 else "−∞")
        return f"{x:.{digits}g}"
    return str(x)


def write_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *lines: str,
    cell: Any = str,
) -> None:
    """A CLI's result on standard output: the table, then ``lines``.

    Tab-separated, ``cell`` formatting each value; ``lines`` follow (e.g. ``"report:
    <path>"``). Standard output, not logging: it is the command's answer, for a terminal
    or a pipe.
    """
    out = ["\t".join(headers), *("\t".join(cell(c) for c in r) for r in rows), *lines]
    sys.stdout.write("\n".join(out) + "\n")


@dataclass
class Report:
    """An ordered list of blocks written as HTML or Markdown."""

    title: str
    blocks: list[tuple[str, Any]] = field(default_factory=list)

    def heading(self, text: str, level: int = 2) -> None:
        """Add a section heading."""
        self.blocks.append(("h", (level, text)))

    def paragraph(self, text: str) -> None:
        """Add a paragraph (plain text)."""
        self.blocks.append(("p", text))

    def table(
        self, headers: Sequence[str], rows: Sequence[Sequence[Any]], caption: str = ""
    ) -> None:
        """Add a table; cells are formatted with :func:`fmt`."""
        self.blocks.append(("t", (list(headers), [[fmt(c) for c in r] for r in rows], caption)))

    def figure(self, fig: Figure, caption: str, name: str | None = None) -> None:
        """Add a figure (rendered to PNG now)."""
        slug = name or re.sub(r"[^a-z0-9]+", "-", caption.lower()).strip("-")[:60] or "figure"
        self.blocks.append(("f", (figure_png(fig), caption, slug)))

    def write(self, out_dir: str | Path, fmt_: str = "html", stem: str = "report") -> Path:
        """Write the report into ``out_dir``; returns the report file's path."""
        if fmt_ not in FORMATS:
            raise InvalidParameterError(f"format must be one of {list(FORMATS)}, not {fmt_!r}")
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        if fmt_ == "html":
            path = out / f"{stem}.html"
            path.write_text(self._html(), encoding="utf-8")
        else:
            path = out / f"{stem}.md"
            path.write_text(self._markdown(out, stem), encoding="utf-8")
        return path

    def _html(self) -> str:
        e = html.escape
        parts = [
            "<!doctype html><html><head><meta charset='utf-8'>",
            f"<title>{e(self.title)}</title><style>",
            "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}",
            "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;",
            "padding:3px 8px;text-align:right}th{background:#eee}img{max-width:100%}",
            "caption{caption-side:bottom;font-size:90%;color:#555}",
            f"</style></head><body><h1>{e(self.title)}</h1>",
        ]
        for kind, data in self.blocks:
            if kind == "h":
                level, text = data
                parts.append(f"<h{level}>{e(text)}</h{level}>")
            elif kind == "p":
                parts.append(f"<p>{e(data)}</p>")
            elif kind == "t":
                headers, rows, caption = data
                parts.append("<table>")
                if caption:
                    parts.append(f"<caption>{e(caption)}</caption>")
                parts.append("<tr>" + "".join(f"<th>{e(h)}</th>" for h in headers) + "</tr>")
                for r in rows:
                    parts.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>")
                parts.append("</table>")
            else:
                png, caption, _ = data
                b64 = base64.b64encode(png).decode("ascii")
                parts.append(
                    f"<figure><img alt='{e(caption)}' src='data:image/png;base64,{b64}'>"
                    f"<figcaption>{e(caption)}</figcaption></figure>"
                )
        parts.append("</body></html>\n")
        return "\n".join(parts)

    def _markdown(self, out: Path, stem: str) -> str:
        lines = [f"# {self.title}", ""]
        n_fig = 0
        for kind, data in self.blocks:
            if kind == "h":
                level, text = data
                lines += ["#" * level + " " + text, ""]
            elif kind == "p":
                lines += [data, ""]
            elif kind == "t":
                headers, rows, caption = data
                lines.append("| " + " | ".join(headers) + " |")
                lines.append("|" + "---|" * len(headers))
                lines += ["| " + " | ".join(r) + " |" for r in rows]
                lines += ([f"*{caption}*"] if caption else []) + [""]
            else:
                png, caption, slug = data
                n_fig += 1
                name = f"{stem}-{n_fig:02d}-{slug}.png"
                (out / name).write_bytes(png)
                lines += [f"![{caption}]({name})", "", f"*{caption}*", ""]
        return "\n".join(lines)
