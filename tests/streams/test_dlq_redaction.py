"""DLQ redaction (issue 14 H): no spelling of a MAC survives :func:`redact`."""

from __future__ import annotations

import json
import re

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from streams.pipeline.presence import REDACTED, redact

SEPARATORS = [":", "-", ".", " ", "_", ""]
#: JSON escapes of the separators (and of hex digits): what a producer may write raw
ESCAPED = {":": "\\u003a", "-": "\\u002d", ".": "\\u002e", " ": "\\u0020", "_": "\\u005f"}
#: filler without hex digits, so the MAC's digits can only come from the MAC itself
FILLER = st.text(alphabet="ghijklmnopqrstuvwxyz GHIJKLMNOPQRSTUVWXYZ!#%&()*+,;<=>?@[]^`{|}~",
                 max_size=20)


def spell(mac: int, style: str, sep: str, case: list[bool], escape: bool) -> str:
    """One spelling of a 48-bit MAC."""
    h = f"{mac:012x}"
    h = "".join(c.upper() if up else c for c, up in zip(h, case, strict=True))
    s = ESCAPED.get(sep, sep) if escape else sep
    if style == "cisco":
        return s.join(h[i:i + 4] for i in range(0, 12, 4))
    return s.join(h[i:i + 2] for i in range(0, 12, 2))


def leaked(mac: int, out: str) -> bool:
    """Whether the MAC's 12 hex digits appear in order, separators aside, in ``out``."""
    return any(f"{mac:012x}" in re.sub(r"[^0-9a-f]", "", part.lower())
               for part in out.split(REDACTED))


spellings = st.builds(
    spell,
    st.integers(0, 2**48 - 1),
    st.sampled_from(["pairs", "cisco"]),
    st.sampled_from(SEPARATORS),
    st.lists(st.booleans(), min_size=12, max_size=12),
    st.booleans(),
)


@settings(max_examples=400, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.integers(0, 2**48 - 1), st.sampled_from(["pairs", "cisco"]),
       st.sampled_from(SEPARATORS), st.lists(st.booleans(), min_size=12, max_size=12),
       st.booleans(), FILLER, FILLER,
       st.sampled_from(["text", "json_device", "json_other", "broken_json", "bytes"]))
@example(0xAABBCCDDEEFF, "pairs", ":", [False] * 12, True, "", "", "broken_json")
@example(0xAABBCCDDEEFF, "cisco", ".", [True] * 12, False, "", "", "text")
@example(0xAABBCCDDEEFF, "pairs", " ", [False] * 12, False, "", "", "json_other")
@example(0xAABBCCDDEEFF, "pairs", "_", [False] * 12, False, "", "", "json_other")
def test_property_no_mac_spelling_survives(mac, style, sep, case, escape, pre, post, where):
    text = spell(mac, style, sep, case, escape)
    raw: bytes | str
    if where == "text":
        raw = f"{pre}{text}{post}"
    elif where == "bytes":
        raw = f"{pre}{text}{post}".encode() + b"\xff"
    elif where == "json_device":
        raw = json.dumps({"device": pre + text, "ap": "x", "ts": 1}).encode()
    elif where == "json_other":
        # a raw (unescaped) JSON string holding the spelling in a field other than device
        raw = ('{"ap": "' + pre.replace('"', "") + text + '", "note": 1}').encode()
    else:
        raw = ('{"device": "' + text + '", "ts": ').encode()  # truncated JSON
    out = redact(raw)
    assert not leaked(mac, out), (raw, out)
    assert text not in out


def test_every_listed_spelling_is_redacted():
    mac = 0x3C22FB0A1B2C
    samples = [
        "3c:22:fb:0a:1b:2c", "3C-22-FB-0A-1B-2C", "3c.22.fb.0a.1b.2c", "3c 22 fb 0a 1b 2c",
        "3c_22_fb_0a_1b_2c", "3c22fb0a1b2c", "3C22FB0A1B2C", "3c:22:FB:0a:1B:2c",
        "3c\\u003a22\\u003afb\\u003a0a\\u003a1b\\u003a2c",
        "3c\\u003A22\\u003Afb\\u003A0a\\u003A1b\\u003A2c", "3c22.fb0a.1b2c", "3C22.FB0A.1B2C",
    ]
    for s in samples:
        for raw in (f"seen {s} at", '{"ap": "' + s + '"}', '{"device":"' + s + '"'):
            out = redact(raw.encode())
            assert not leaked(mac, out), (raw, out)
