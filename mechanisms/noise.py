"""Randomness and noise samplers for every occustream mechanism.

Generators
    * :func:`default_rng` — the project's generator when a caller passes ``rng=None``:
      a PCG64 generator seeded with 256 bits from :mod:`secrets` (the OS CSPRNG).
      Never ``np.random.default_rng()`` without a seed elsewhere in the code.
    * :func:`keyed_rng` — replay-safe noise. A Philox (counter-based) generator whose
      128-bit key is ``HMAC-SHA256(secret, encode(parts))``, e.g.
      ``keyed_rng(secret, "pegasus", tick, "all")``: after a crash the stream draws
      the *same* noise for (mechanism, tick, location-or-"all") instead of a fresh
      one (two independent noisy answers to one count would spend twice the budget).
      When a whole tick is drawn from one ``"all"`` generator, values are reproduced
      for the same location order (the building's vector order).

Samplers
    * :func:`discrete_laplace` — **the sampler for releases that leave the system.**
      Exact two-sided geometric noise, P[Z = z] ∝ exp(−|z|/scale): Z = Y₁ − Y₂ with
      Y geometric, each Y drawn by inversion of its survival function e^(−ry) with an
      *exact lazy comparison* of uniform 64-bit words against the binary expansion of
      e^(−ry) (tabulated once per rate with correctly rounded decimal arithmetic;
      a tie in 64 bits draws more words). No floating-point number enters the sampling
      path, so the precision attack of Mironov (CCS 2012, "On significance of the least
      significant bits for differential privacy") does not apply: the output set is ℤ
      whatever the input and every probability is exact. (Canonne, Kamath & Steinke
      2020, Alg. 2, is the usual exact sampler; the table form vectorises better:
      ≈ 1.5 ms for 10,000 values.)
    * :func:`laplace` — continuous Laplace (``rng.laplace``) for analyses and for
      noise whose sample never leaves the system (PeGaSus' grouper, pruning tests:
      only a comparison bit is used).

Exact guarantee shipped
    For integer counts with sensitivity Δ (1 for occupancy: a device is in at most one
    location per tick), ``count + discrete_laplace(Δ/ε)`` is ε-differentially private
    (pure DP; the discrete Laplace mechanism, Ghosh, Roughgarden & Sundararajan 2009).
    The rate 1/scale is rounded **down** to a multiple of 2⁻²⁰
    (:data:`RATE_DENOMINATOR`) so the sampler is exact for a rate ε' ≤ ε (relative
    change < 10⁻⁴ for ε ≥ 0.01): the release is ε'-DP hence ε-DP. The guarantee is
    exact relative to the bit generator's uniform 64-bit words; it is computational in
    the sense that Philox/PCG64 are not certified cryptographic generators, though they
    are keyed (HMAC-SHA256) or seeded from the OS CSPRNG.

Analysis consistent with the sampler
    Error bars and MAE for released counts use the discrete distribution
    (q = e^(−1/scale)): P[|Z| > k] = 2q^(k+1)/(1+q), E|Z| = 2q/(1−q²),
    Var Z = 2q/(1−q)². For small ε these approach the continuous figures (scale,
    2·scale²). :func:`laplace_interval` returns the half-width used in dashboard
    tooltips; :func:`laplace_mae` the expected absolute error.
"""

from __future__ import annotations

import decimal
import functools
import hashlib
import hmac
import math
import secrets
from fractions import Fraction

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive, check_probability

__all__ = [
    "RATE_DENOMINATOR",
    "default_rng",
    "discrete_laplace",
    "discrete_laplace_pmf",
    "encode_parts",
    "keyed_rng",
    "laplace",
    "laplace_interval",
    "laplace_mae",
    "laplace_variance",
    "resolve_rng",
]

#: Denominator of the rational rate n/2²⁰ the exact sampler works with.
RATE_DENOMINATOR = 1 << 20

_MIN_KEY_BYTES = 16


def default_rng() -> np.random.Generator:
    """A fresh generator seeded with 256 bits from the OS CSPRNG (:mod:`secrets`)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(secrets.randbits(256))))


def resolve_rng(rng: np.random.Generator | None) -> np.random.Generator:
    """``rng`` itself, or :func:`default_rng` when it is None."""
    return default_rng() if rng is None else rng


def encode_parts(*parts: object) -> bytes:
    """Unambiguous byte encoding of ``parts`` (type tag + length + payload per part).

    Accepts ``str``, ``bytes``, ``int`` (incl. numpy integers), ``float`` and ``bool``.
    ``("a", "bc")`` and ``("ab", "c")`` encode differently, and so do ``1`` and ``"1"``.
    """
    out = bytearray()
    for p in parts:
        if isinstance(p, bool | np.bool_):
            tag, payload = b"?", b"1" if p else b"0"
        elif isinstance(p, int | np.integer):
            tag, payload = b"i", str(int(p)).encode()
        elif isinstance(p, float | np.floating):
            tag, payload = b"f", float(p).hex().encode()
        elif isinstance(p, str):
            tag, payload = b"s", p.encode("utf-8")
        elif isinstance(p, bytes | bytearray):
            tag, payload = b"b", bytes(p)
        else:
            raise InvalidParameterError(
                f"parts must be str, bytes, int, float or bool, not {type(p).__name__}: {p!r}"
            )
        out += tag + len(payload).to_bytes(8, "big") + payload
    return bytes(out)


def keyed_rng(key: bytes, *parts: object) -> np.random.Generator:
    """Counter-based generator keyed by ``HMAC-SHA256(key, encode_parts(*parts))``.

    The same key and parts always give the same stream of numbers (on every machine:
    Philox is platform independent); different parts give independent-looking streams.
    Convention: ``keyed_rng(secret, mechanism, tick, location_or_"all")``.

    Args:
        key: the deployment secret, at least 16 bytes.
        *parts: what the noise is for; see :func:`encode_parts`.

    Raises:
        InvalidParameterError: key shorter than 16 bytes or not bytes.
    """
    if not isinstance(key, bytes | bytearray) or len(key) < _MIN_KEY_BYTES:
        raise InvalidParameterError(
            f"key must be at least {_MIN_KEY_BYTES} secret bytes, not {type(key).__name__} "
            f"of length {len(key) if isinstance(key, bytes | bytearray) else '?'}"
        )
    digest = hmac.new(bytes(key), encode_parts(*parts), hashlib.sha256).digest()
    philox_key = int.from_bytes(digest[:16], "little")
    return np.random.Generator(np.random.Philox(key=philox_key))


# --------------------------------------------------------------------------- exact sampler


def _rate_numerators(scale: float | np.ndarray, size: int) -> np.ndarray:
    """Numerators n with n/2²⁰ ≤ 1/scale (rounded down, exact), shape (size,)."""
    sc = np.broadcast_to(np.asarray(scale, dtype=float), (size,))
    if size == 0:
        return np.zeros(0, dtype=np.int64)
    uniq, inv = np.unique(sc, return_inverse=True)
    nums = np.empty(uniq.size, dtype=np.int64)
    for i, s in enumerate(uniq):
        check_positive("scale", s)
        n = math.floor(Fraction(RATE_DENOMINATOR) / Fraction(float(s)))
        if n < 1:
            raise InvalidParameterError(
                f"scale must be at most {RATE_DENOMINATOR} (rate ≥ 2^-20), not {s!r}"
            )
        nums[i] = n
    return nums[inv.reshape(-1)]


#: Most thresholds kept per rate; beyond, the geometric's memorylessness takes over.
_TABLE_MAX = 1 << 16
_WORD = 1 << 64


def _threshold_word(num: int, v: int, word: int) -> int:
    """Word ``word`` (0 = most significant) of the binary expansion of e^(−num·v/2²⁰).

    That is ⌊e^(−rv)·2^(64(word+1))⌋ mod 2⁶⁴, computed with correctly rounded decimal
    arithmetic at a precision raised until the floor is unambiguous (e^(−rv) is
    irrational for rational rv > 0, so this terminates).
    """
    bits = 64 * (word + 1)
    prec = bits // 3 + 40
    while True:
        ctx = decimal.Context(prec=prec, rounding=decimal.ROUND_HALF_EVEN)
        e = ctx.exp(ctx.divide(-decimal.Decimal(num * v), RATE_DENOMINATOR))
        x = ctx.multiply(e, 1 << bits)
        f = int(x.to_integral_value(rounding=decimal.ROUND_FLOOR))
        err = x.scaleb(10 - prec)  # ≫ the rounding error of exp and the product
        if err < x - f < 1 - err:
            return f % _WORD
        prec += 40


@functools.lru_cache(maxsize=64)
def _threshold_table(num: int) -> np.ndarray:
    """Ascending uint64 array of c_v = ⌊e^(−rv)·2⁶⁴⌋ for v = V..1 (r = num/2²⁰).

    V is the smallest count with c_V = 0 (e^(−rV) < 2⁻⁶⁴) or :data:`_TABLE_MAX`.
    Computed by repeated multiplication at 66 significant digits (relative error
    < 10⁻⁶⁰ after 2¹⁶ products); an entry whose floor is not certain at a relative
    margin of 10⁻⁴⁵ is recomputed with :func:`_threshold_word`.
    """
    rate = num / RATE_DENOMINATOR
    n_v = min(_TABLE_MAX, int(44.4 / rate) + 2)
    ctx = decimal.Context(prec=66, rounding=decimal.ROUND_HALF_EVEN)
    step = ctx.exp(ctx.divide(-decimal.Decimal(num), RATE_DENOMINATOR))
    two64 = decimal.Decimal(_WORD)
    x = decimal.Decimal(1)
    out = []
    for v in range(1, n_v + 1):
        x = ctx.multiply(x, step)
        y = ctx.multiply(x, two64)
        f = int(y.to_integral_value(rounding=decimal.ROUND_FLOOR))
        err = y.scaleb(-45)  # relative error of v ≤ 65536 products at 66 digits < 1e-60
        if not (err < y - f < 1 - err):
            f = _threshold_word(num, v, 0)
        out.append(f)
        if f == 0:
            break
    return np.array(out[::-1], dtype=np.uint64)


def _word_stream(rng: np.random.Generator, n: int) -> np.ndarray:
    """Draw n uniform 64-bit words from the generator's bit generator."""
    return np.asarray(rng.bit_generator.random_raw(n), dtype=np.uint64)


def _resolve_tie(
    num: int, table: np.ndarray, complete: bool, u: int, v: int, rng: np.random.Generator
) -> int:
    """How many of e^(−rv), e^(−r(v+1)), … whose first word equals ``u`` lie above R.

    R's first word is ``u``; its further words are drawn lazily (and reused across the
    v compared) until they differ from the threshold's. Probability ≤ V·2⁻⁶⁴ per draw.
    """
    n_v = table.size
    words: list[int] = []
    extra = 0
    while True:
        if v <= n_v:
            first = int(table[n_v - v])
        elif complete:
            first = 0  # past the table every threshold is below 2⁻⁶⁴
        else:
            return extra  # the memoryless extension takes over from V
        if first != u:
            return extra
        w = 1
        while True:
            if len(words) < w:
                words.append(int(_word_stream(rng, 1)[0]))
            c = _threshold_word(num, v, w)
            if words[w - 1] != c:
                below = words[w - 1] < c
                break
            w += 1
        if not below:
            return extra
        extra += 1
        v += 1


def _geometric_exact(num: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """Draw n iid Y with P[Y ≥ y] = e^(−ry) exactly, r = num/2²⁰ (one-sided geometric).

    Inversion with exact lazy comparison: Y = #{v ≥ 1 : R < e^(−rv)} for R uniform in
    [0, 1). R's first 64 bits U give the answer unless U equals a threshold's first word
    (probability ≤ V·2⁻⁶⁴); then further words of R are drawn and compared with further
    words of e^(−rv) until they differ. If R < e^(−rV) for the last tabulated V, the
    geometric's memorylessness gives Y = V + a fresh draw.
    """
    table = _threshold_table(num)
    n_v = table.size
    u = _word_stream(rng, n)
    pos = np.searchsorted(table, u, side="right")  # entries ≤ u
    y = (n_v - pos).astype(np.int64)  # thresholds strictly above u  →  R below them
    tie = (pos > 0) & (table[np.maximum(pos - 1, 0)] == u)
    complete = table[0] == 0
    for i in np.flatnonzero(tie):  # U equals the first word of e^(−rv): compare more bits
        y[i] += _resolve_tie(num, table, complete, int(u[i]), n_v - int(pos[i]) + 1, rng)
    if table[0] != 0:  # table truncated at _TABLE_MAX: extend by memorylessness
        more = np.flatnonzero(y == n_v)
        if more.size:
            y[more] += _geometric_exact(num, more.size, rng)
    return y


def discrete_laplace(
    scale: float | np.ndarray,
    size: int | tuple[int, ...] | None = None,
    *,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Exact discrete Laplace (two-sided geometric) noise, P[Z = z] ∝ exp(−|z|/scale).

    Z = Y₁ − Y₂ with Y₁, Y₂ iid one-sided geometric, P[Y ≥ y] = q^y, q = e^(−r), which
    gives P[Z = z] = (1−q)/(1+q)·q^|z| exactly. Each Y is drawn by inversion with
    exact lazy comparison against the binary expansion of e^(−ry) (see
    :func:`_geometric_exact`): no floating-point value is involved, so the sampled law
    is exactly the discrete Laplace with rate r = ⌊2²⁰/scale⌋/2²⁰ ≤ 1/scale, for any
    uniform bit source. (The approach is an alternative to Canonne, Kamath & Steinke
    2020, Alg. 2, chosen because it vectorises to two table look-ups.) Draws consumed
    are a deterministic function of the generator's words, so a keyed generator
    reproduces the release.

    Args:
        scale: noise scale b = Δ/ε (> 0), a scalar or an array broadcast to ``size``.
        size: output shape; default the shape of ``scale`` (a scalar if scale is one).
        rng: generator; None → :func:`default_rng`.

    Returns:
        int64 array of the requested shape (an int64 scalar for scalar output).

    Raises:
        InvalidParameterError: a scale that is not positive and finite, or above 2²⁰.
    """
    rng = resolve_rng(rng)
    shape: tuple[int, ...]
    if size is None:
        shape = np.shape(scale)
    elif isinstance(size, int | np.integer):
        shape = (int(size),)
    else:
        shape = tuple(int(s) for s in size)
    n = int(np.prod(shape)) if shape else 1
    nums = _rate_numerators(scale, n)
    out = np.empty(n, dtype=np.int64)
    uniq, inv = np.unique(nums, return_inverse=True)
    inv = inv.reshape(-1)
    for j, num in enumerate(uniq):
        rows = np.flatnonzero(inv == j) if uniq.size > 1 else np.arange(n)
        g = _geometric_exact(int(num), 2 * rows.size, rng)
        out[rows] = g[: rows.size] - g[rows.size :]
    return out.reshape(shape) if shape else out[0]


def discrete_laplace_pmf(z: np.ndarray | int, scale: float) -> np.ndarray:
    """P[Z = z] of the discrete Laplace *as sampled* (rate rounded down to n/2²⁰)."""
    rate = _rate_numerators(scale, 1)[0] / RATE_DENOMINATOR
    q = math.exp(-rate)
    return (1 - q) / (1 + q) * np.power(q, np.abs(np.asarray(z, dtype=float)))


def laplace(
    scale: float | np.ndarray,
    size: int | tuple[int, ...] | None = None,
    *,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Continuous Laplace(0, scale) noise — for analyses and never-released comparisons.

    Do not add this to a value that leaves the system (see the module docstring).
    """
    sc = np.asarray(scale, dtype=float)
    if np.any(~(sc > 0)) or np.any(~np.isfinite(sc)):
        raise InvalidParameterError(f"scale must be positive and finite, not {scale!r}")
    return resolve_rng(rng).laplace(0.0, sc, size=size)


# --------------------------------------------------------------------------- analysis


def _q(epsilon: float, sensitivity: float) -> float:
    scale = check_positive("sensitivity", sensitivity) / check_positive("epsilon", epsilon)
    rate = _rate_numerators(scale, 1)[0] / RATE_DENOMINATOR
    return math.exp(-rate)


def laplace_mae(epsilon: float, *, sensitivity: float = 1.0, discrete: bool = True) -> float:
    """Expected |noise| of a release at ``epsilon``: 2q/(1−q²) discrete, Δ/ε continuous."""
    if not discrete:
        return check_positive("sensitivity", sensitivity) / check_positive("epsilon", epsilon)
    q = _q(epsilon, sensitivity)
    return 2 * q / (1 - q * q)


def laplace_variance(epsilon: float, *, sensitivity: float = 1.0, discrete: bool = True) -> float:
    """Noise variance: 2q/(1−q)² discrete, 2(Δ/ε)² continuous."""
    if not discrete:
        b = check_positive("sensitivity", sensitivity) / check_positive("epsilon", epsilon)
        return 2 * b * b
    q = _q(epsilon, sensitivity)
    return 2 * q / (1 - q) ** 2


def laplace_interval(
    epsilon: float, confidence: float = 0.95, *, sensitivity: float = 1.0, discrete: bool = True
) -> float:
    """Half-width k of the public error bar: P[|noise| ≤ k] ≥ confidence.

    Public (data independent): depends on ε and the confidence only, so showing it in a
    tooltip costs no budget. Discrete (default, matches :func:`discrete_laplace`): the
    smallest integer k with 2q^(k+1)/(1+q) ≤ 1 − confidence. Continuous: b·ln(1/(1−conf)).
    """
    conf = check_probability("confidence", confidence)
    if not discrete:
        b = check_positive("sensitivity", sensitivity) / check_positive("epsilon", epsilon)
        return b * math.log(1 / (1 - conf))
    q = _q(epsilon, sensitivity)
    k = math.ceil(math.log((1 - conf) * (1 + q) / 2) / math.log(q) - 1)
    k = max(k, 0)
    # guard the float rounding of the log ratio: step to the exact smallest k
    while k > 0 and 2 * q**k / (1 + q) <= 1 - conf:
        k -= 1
    while 2 * q ** (k + 1) / (1 + q) > 1 - conf:
        k += 1
    return float(k)
