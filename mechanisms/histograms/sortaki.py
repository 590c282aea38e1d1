"""SORTaki: Initializer → (Sorter) → Partitioner → Finalizer (Doudalis & Mehrotra, §IV–V).

The template is Alg. 2 (no sorting) and Alg. 3 (with sorting). The budget ε is split
``ε_in = γ_in·ε`` (initializer), ``ε_p = γ_p·ε`` (partitioner), ``ε_f = γ_f·ε``
(finalizer) with γ_in + γ_p + γ_f = 1; sequential composition (Thm II.1) makes the whole
release ε-DP: the initializer is the Laplace mechanism on disjoint cells (ε_in), the
sorter and the noisy-data partitioners are post-processing, DAWA's partitioner is
ε_p-DP, and the finalizer's bin measurements are ε_f-DP by parallel composition
(Thm II.2) because bins are disjoint; WAF/AHP arithmetic is post-processing.

Configurations (SORTaki Table II), by name — grammar ``[s][t](G|D)(AHP|WF)`` plus
``Identity``, ``AHP``, ``DPC``, ``sDPC``, ``DAWA``, ``sDAWA``:

=========  =====================================================================
Identity   Laplace mechanism with scale 1/ε
AHP        the complete AHP of Zhang et al. 2014 (SDM, §4): sorting + thresholding
           (η = 0.35) + the published greedy clustering (:mod:`.ahp`), ρ = γ_in = 0.85
GAHP       greedy partitioner (Alg. 5) + AHP finalizer/bin error, no sorting
sGAHP      sorting + GAHP;  ``stGAHP``: sorting + thresholding + GAHP
sDAHP      sorting + DP partitioner (Alg. 6) + AHP finalizer/bin error
sDWF       sorting + DP partitioner + WAF finalizer / UEE (eq. 5)
DPC        DPCube partitioner (ξ = 2/ε_in²) + WAF finalizer; ``sDPC`` with sorting
DAWA       Li et al. 2014: γ_in = 0, L1 partition with ε_p = ε/4, GreedyH measurement
           (§4–5, :mod:`.greedyh`) of the workload reduced to the buckets with the rest
sDAWA      sorting + DAWA's partitioner (ε_p = (1 − γ_in)·ε/4) + WAF finalizer
=========  =====================================================================

The DP partitioner is the full O(n²) Alg. 6 up to ``dpp_full_max_n`` values and the
restricted 2^k version above (``dpp="full"|"restricted"|"auto"``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive, check_probability
from mechanisms.histograms import _tree
from mechanisms.histograms import finalizers as fin
from mechanisms.histograms import partitioners as part
from mechanisms.histograms._noise import laplace_noise, noisy_values, resolve_rng
from mechanisms.histograms.ahp import AHP_RATIO, ahp_cluster, ahp_threshold_published
from mechanisms.histograms.bin_error import FORMULAS
from mechanisms.histograms.bins import Partition, identity_order, sort_order
from mechanisms.histograms.greedyh import GRAM_MAX, greedyh_tree, reduced_range_gram
from mechanisms.histograms.hdmm import hdmm_release

__all__ = [
    "TABLE_II",
    "BudgetShares",
    "Config",
    "HistogramRelease",
    "parse_config",
    "basic_initializer",
    "threshold_initializer",
    "ahp_threshold",
    "run_config",
    "release_histogram",
]

#: The configurations of SORTaki Table II, in table order.
TABLE_II = (
    "Identity",
    "AHP",
    "GAHP",
    "sGAHP",
    "stGAHP",
    "sDAHP",
    "sDWF",
    "DPC",
    "sDPC",
    "DAWA",
    "sDAWA",
)

#: DAWA's default share of the budget for its partitioner (Li et al. 2014; SORTaki §VII).
DAWA_PARTITION_SHARE = 0.25
#: the lean DAWA variant's partition share (``DAWA10``: not a published configuration —
#: a candidate of the default release, measured in docs/histograms-1d.md "DAWA10")
LEAN_DAWA_PARTITION_SHARE = 0.10
#: the middle DAWA variant's partition share (``DAWA15-HDMM``, a candidate of the default
#: release only: on the training files' range cells it matches DAWA10-HDMM's geo-mean
#: where the rule picked that and is never as far from DAWA where DAWA's 25 % wins —
#: docs/histograms-1d.md "DAWA15-HDMM")
MID_DAWA_PARTITION_SHARE = 0.15
#: buckets per block when DAWA's partition keeps more than
#: :data:`~mechanisms.histograms.greedyh.GRAM_MAX` (:func:`_measure_bucket_blocks`; block
#: sizes 256–8,192 measured alike on RANDOM-64K, the cost grows as the block squared:
#: docs/histograms-1d.md "Large domains")
DAWA_BLOCK = 1024


@dataclass(frozen=True)
class BudgetShares:
    """γ_in, γ_p, γ_f of one run; they add up to 1."""

    gamma_in: float
    gamma_p: float
    gamma_f: float

    def __post_init__(self) -> None:
        for name in ("gamma_in", "gamma_p", "gamma_f"):
            v = getattr(self, name)
            if not (0.0 <= v <= 1.0):
                raise InvalidParameterError(f"{name} must be in [0, 1], not {v!r}")
        total = self.gamma_in + self.gamma_p + self.gamma_f
        if not math.isclose(total, 1.0, rel_tol=0, abs_tol=1e-12):
            raise InvalidParameterError(f"budget shares must add up to 1, not {total!r}")

    def split(self, epsilon: float) -> tuple[float, float, float]:
        """(ε_in, ε_p, ε_f); ε_f is ε − ε_in − ε_p so the three add up to ε exactly."""
        e_in = self.gamma_in * epsilon
        e_p = self.gamma_p * epsilon
        return e_in, e_p, epsilon - e_in - e_p


@dataclass(frozen=True)
class Config:
    """One SORTaki configuration (component choice; budget shares come at run time)."""

    name: str
    sort: bool = False
    threshold: bool = False
    partitioner: str = "none"  # none | greedy | ahp | dp | dpcube | dawa
    finalizer: str = "identity"  # identity | ahp | waf | dawa
    #: the dawa partitioner's share of what γ_in leaves (None: DAWA_PARTITION_SHARE)
    partition_share: float | None = None
    #: the dawa partitioner over the aligned dyadic bins only
    #: (:func:`~mechanisms.histograms.partitioners.aligned_candidates`; ``-aligned`` names)
    aligned: bool = False
    #: how the dawa finaliser measures the bucket sums for a range workload: "greedyh"
    #: (DAWA §4–5) or "hdmm" (the better of HDMM's weighted hierarchies and p-Identity
    #: strategies for the workload reduced to the buckets; ``-HDMM`` names; continuous
    #: noise only, so ``discrete`` runs measure with GreedyH)
    measurement: str = "greedyh"

    @property
    def uses_initializer(self) -> bool:
        """Whether the configuration spends γ_in on a noisy histogram."""
        return self.partitioner in {"greedy", "ahp", "dp", "dpcube"} or self.sort

    def default_gamma_in(self) -> float:
        """SORTaki §VII: γ_in = 0.9 is best for DP/DPCube/DAWA partitioners, 0.7 for greedy."""
        if not self.uses_initializer:
            return 0.0
        if self.partitioner == "ahp":
            return AHP_RATIO
        return 0.7 if self.partitioner == "greedy" else 0.9

    def shares(self, gamma_in: float | None = None) -> BudgetShares:
        """Budget shares of this configuration for ``gamma_in`` (None → the default)."""
        if self.partitioner == "none" and not self.sort:
            return BudgetShares(0.0, 0.0, 1.0)
        g_in = self.default_gamma_in() if gamma_in is None else float(gamma_in)
        if not self.uses_initializer:
            g_in = 0.0
        elif not (0.0 < g_in < 1.0):
            raise InvalidParameterError(
                f"gamma_in must be in (0, 1) for {self.name}, not {gamma_in!r}"
            )
        rho = DAWA_PARTITION_SHARE if self.partition_share is None else self.partition_share
        g_p = rho * (1.0 - g_in) if self.partitioner == "dawa" else 0.0
        return BudgetShares(g_in, g_p, 1.0 - g_in - g_p)


_GRAMMAR = re.compile(r"^(s?)(t?)([GD])(AHP|WF)$")


def parse_config(name: str) -> Config:
    """The :class:`Config` named ``name`` (Table II names and the ``[s][t](G|D)(AHP|WF)`` family).

    Raises:
        InvalidParameterError: unknown name (the message lists Table II).
    """
    fixed = {
        "Identity": Config("Identity"),
        "AHP": Config("AHP", sort=True, threshold=True, partitioner="ahp", finalizer="ahp"),
        "DPC": Config("DPC", partitioner="dpcube", finalizer="waf"),
        "sDPC": Config("sDPC", sort=True, partitioner="dpcube", finalizer="waf"),
        "DAWA": Config("DAWA", partitioner="dawa", finalizer="dawa"),
        "DAWA10": Config(
            "DAWA10",
            partitioner="dawa",
            finalizer="dawa",
            partition_share=LEAN_DAWA_PARTITION_SHARE,
        ),
        "sDAWA": Config("sDAWA", sort=True, partitioner="dawa", finalizer="waf"),
        "DAWA-aligned": Config("DAWA-aligned", partitioner="dawa", finalizer="dawa", aligned=True),
        "DAWA10-aligned": Config(
            "DAWA10-aligned",
            partitioner="dawa",
            finalizer="dawa",
            partition_share=LEAN_DAWA_PARTITION_SHARE,
            aligned=True,
        ),
    }
    fixed |= {
        f"{base}-HDMM": replace(fixed[base], name=f"{base}-HDMM", measurement="hdmm")
        for base in ("DAWA", "DAWA10")
    }
    fixed["DAWA15-HDMM"] = replace(
        fixed["DAWA10-HDMM"], name="DAWA15-HDMM", partition_share=MID_DAWA_PARTITION_SHARE
    )
    if name in fixed:
        return fixed[name]
    m = _GRAMMAR.match(name)
    if not m:
        raise InvalidParameterError(
            f"algorithm must be one of {', '.join(TABLE_II)} (or [s][t](G|D)(AHP|WF)), not {name!r}"
        )
    s, t, p, f = m.groups()
    return Config(
        name,
        sort=bool(s),
        threshold=bool(t),
        partitioner="greedy" if p == "G" else "dp",
        finalizer="ahp" if f == "AHP" else "waf",
    )


@dataclass(frozen=True, eq=False)
class HistogramRelease:
    """Output of one run: the released histogram and the public facts about its budget."""

    algorithm: str
    estimate: np.ndarray
    epsilon: float
    eps_in: float
    eps_p: float
    eps_f: float
    partition: Partition | None = None
    params: dict = field(default_factory=dict)

    @property
    def n_bins(self) -> int:
        """Number of bins released (domain size for Identity)."""
        return self.partition.n_bins if self.partition is not None else len(self.estimate)


def basic_initializer(
    x: np.ndarray, eps_in: float, *, rng: np.random.Generator | None = None, discrete: bool = False
) -> np.ndarray:
    """NOISE DRAWING — basic Initializer, SORTaki Alg. 1: ``f_i + Lap(1/ε_in)``."""
    return noisy_values(x, eps_in, rng=rng, discrete=discrete)


def ahp_threshold(n: int, eps_in: float) -> float:
    """Default AHP threshold ξ = ln(n)/ε_in.

    Our choice (the sources leave ξ open): P(Lap(1/ε_in) > ln(n)/ε_in) = 1/(2n), so with
    probability ≥ 1/2 every empty cell is zeroed by :func:`threshold_initializer`.
    """
    return math.log(max(n, 2)) / check_positive("eps_in", eps_in)


def threshold_initializer(noisy: np.ndarray, xi: float) -> np.ndarray:
    """AHP's thresholding step (post-processing): noisy values below ξ become 0."""
    v = np.asarray(noisy, dtype=np.float64)
    return np.where(v < xi, 0.0, v)


def _partition_starts(
    cfg: Config,
    y: np.ndarray,
    x_ordered: np.ndarray,
    eps_in: float,
    eps_p: float,
    eps_f: float,
    *,
    dpp: str,
    dpp_full_max_n: int,
    dawa_dyadic: bool,
    xi: float | None,
    rng: np.random.Generator,
) -> np.ndarray:
    n = len(y)
    if cfg.partitioner == "greedy":
        formula = FORMULAS["uee_ahp" if cfg.finalizer == "ahp" else "uee"]
        return part.greedy_partition(y, formula, eps_in, eps_f)
    if cfg.partitioner == "ahp":
        return ahp_cluster(y, eps_f)
    if cfg.partitioner == "dp":
        formula = FORMULAS["uee_ahp" if cfg.finalizer == "ahp" else "uee"]
        restricted = dpp == "restricted" or (dpp == "auto" and n > dpp_full_max_n)
        return part.dp_partition(y, formula, eps_in, eps_f, restricted=restricted)
    if cfg.partitioner == "dpcube":
        return part.dpcube_partition(y, xi if xi is not None else 2.0 / eps_in**2)
    if cfg.partitioner == "dawa":
        return part.dawa_partition(
            x_ordered, eps_p, eps_f, dyadic=dawa_dyadic, aligned=cfg.aligned, rng=rng
        )
    raise InvalidParameterError(f"unknown partitioner {cfg.partitioner!r}")


def _ranges_to_bins(
    partition: Partition, lo: np.ndarray, hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Bin index range [first, last+1) covering each domain range [lo, hi) (contiguous bins)."""
    lab = partition.labels
    return lab[np.asarray(lo)], lab[np.asarray(hi) - 1] + 1


def run_config(
    cfg: Config,
    x: np.ndarray,
    epsilon: float,
    *,
    gamma_in: float | None = None,
    workload: tuple[np.ndarray, np.ndarray] | None = None,
    dpp: str = "auto",
    dpp_full_max_n: int = 4096,
    dawa_dyadic: bool = True,
    xi: float | None = None,
    discrete: bool = False,
    rng: np.random.Generator | None = None,
) -> HistogramRelease:
    """Run one configuration: SORTaki Alg. 2 (no sorting) or Alg. 3 (with sorting).

    Args:
        cfg: the configuration (see :func:`parse_config`).
        x: the true histogram (any shape; flattened row-major, reshaped back).
        epsilon: total budget ε (sensitivity 1: one record changes one cell by 1).
        gamma_in: initializer share (None → the configuration's default).
        workload: ``(lo, hi)`` range queries (exclusive hi) for DAWA's measurement.
        dpp: "full", "restricted" (bins of size 2^k) or "auto" (full up to dpp_full_max_n).
        dpp_full_max_n: domain size above which "auto" uses the restricted DPP.
        dawa_dyadic: DAWA's partitioner over 2^k-size bins only (else all intervals).
        xi: DPCube variance threshold (None → 2/ε_in², or AHP threshold for t-configs).
        discrete: exact discrete Laplace for every count measurement (integer ``x``;
            for releases that leave the system), else continuous Laplace.
        rng: noise source (None → project CSPRNG); every draw comes from it.

    Returns:
        A :class:`HistogramRelease` with ε_in + ε_p + ε_f = ε.
    """
    epsilon = check_positive("epsilon", epsilon)
    if dpp not in {"auto", "full", "restricted"}:
        raise InvalidParameterError(f"dpp must be auto, full or restricted, not {dpp!r}")
    gen = resolve_rng(rng)
    x_arr = np.asarray(x, dtype=np.float64)
    shape = x_arr.shape
    flat = x_arr.ravel()
    n = len(flat)
    if n == 0:
        raise InvalidParameterError("x must not be empty")
    if discrete and not np.array_equal(flat, np.round(flat)):
        raise InvalidParameterError("discrete noise needs integer counts in x")
    shares = cfg.shares(gamma_in)
    eps_in, eps_p, eps_f = shares.split(epsilon)
    params = {"gamma_in": shares.gamma_in, "gamma_p": shares.gamma_p, "gamma_f": shares.gamma_f}

    if cfg.partitioner == "none" and not cfg.sort:  # Identity
        est = noisy_values(flat, epsilon, rng=gen, discrete=discrete)
        return HistogramRelease(
            cfg.name,
            est.reshape(shape),
            epsilon,
            0.0,
            0.0,
            epsilon,
            Partition.singletons(n),
            params,
        )

    noisy = (
        basic_initializer(flat, eps_in, rng=gen, discrete=discrete) if eps_in > 0 else np.zeros(0)
    )
    y_init = noisy
    if cfg.threshold:
        xi_t = (
            ahp_threshold_published(n, eps_in)
            if cfg.partitioner == "ahp"
            else ahp_threshold(n, eps_in)
        )
        y_init = threshold_initializer(noisy, xi_t)
        params["threshold_xi"] = xi_t
    order = sort_order(y_init) if cfg.sort else identity_order(n)
    y = y_init[order] if eps_in > 0 else np.zeros(n)
    starts = _partition_starts(
        cfg,
        y,
        flat[order],
        eps_in,
        eps_p,
        eps_f,
        dpp=dpp,
        dpp_full_max_n=dpp_full_max_n,
        dawa_dyadic=dawa_dyadic,
        xi=xi,
        rng=gen,
    )
    partition = Partition.from_boundaries(order, starts)

    if cfg.finalizer == "dawa":
        # DAWA §4–5: GreedyH on the workload reduced to the buckets (bucket fractions)
        bucket_sums = partition.bin_sums(flat)
        if workload is None:
            # identity: the reduced Gram is diag(1/|B|), on which GreedyH weights every
            # bucket 1 and no inner node (tests/mechanisms/histograms/
            # test_hist_ahp_greedyh.py), so its release is the bucket sums + Lap(1/ε_f):
            # drawn here directly — the same call and draws as through the tree, in O(k)
            # memory (the dense k × k Gram did not fit at 500,000 buckets)
            k = len(bucket_sums)
            sums = bucket_sums + laplace_noise(
                np.full(k, 1.0 / eps_f), k, rng=gen, discrete=discrete
            )
            params["greedyh_nodes"] = k
        else:
            # past GRAM_MAX buckets the dense k × k Gram does not fit: the buckets are cut
            # into contiguous blocks of about DAWA_BLOCK, each measured alone for the
            # queries clipped to it (a departure from DAWA, named in the parameters)
            sums, nodes, blocks = _measure_bucket_blocks(
                bucket_sums, n, workload, starts, eps_f,
                cfg.measurement == "hdmm" and not discrete, gen, discrete,
            )
            if nodes is not None:
                params["greedyh_nodes"] = nodes
            if blocks > 1:
                params["measurement_blocks"] = blocks
        est = fin.ahp_finalize(partition, sums)
    else:
        sums = fin.measure_bin_sums(flat, partition, eps_f, rng=gen, discrete=discrete)
        if cfg.finalizer == "waf":
            # WAF mixes the *un-thresholded* initializer output (unbiased, eq. 1)
            est = fin.waf_finalize(partition, noisy, sums, eps_in, eps_f)
        else:
            est = fin.ahp_finalize(partition, sums)
    return HistogramRelease(
        cfg.name, est.reshape(shape), epsilon, eps_in, eps_p, eps_f, partition, params
    )


def _measure_bucket_blocks(
    bucket_sums: np.ndarray,
    n: int,
    workload: tuple[np.ndarray, np.ndarray],
    starts: np.ndarray,
    eps_f: float,
    hdmm: bool,
    gen: np.random.Generator,
    discrete: bool,
) -> tuple[np.ndarray, int | None, int]:
    """NOISE DRAWING (ε_f charged by the caller): DAWA's measurement of its bucket sums.

    GreedyH (§4–5) — or, with ``hdmm``, HDMM (McKenna et al. 2018 §5–6 on the reduced
    workload W̄, whose Gram is public once the partition is; the strategy's columns have
    L1 norm 1, so ε_f-DP like GreedyH's; continuous Laplace, HDMM's weights are not
    integers, so a discrete release measures with GreedyH as dawa2d_release does) — on
    the range workload reduced to the buckets. Up to
    :data:`~mechanisms.histograms.greedyh.GRAM_MAX` buckets that is one strategy, as
    published; past it (its dense k × k Gram would not fit) the buckets are cut into
    ``⌈k / DAWA_BLOCK⌉`` near-equal contiguous blocks, each measured with its own
    strategy for the queries clipped to its cells — a departure from DAWA, named in the
    release's parameters. The blocks are disjoint, so one record moves the sums of one
    block only: ε_f-DP in all (parallel composition). Returns the least-squares sums,
    GreedyH's node count (None: HDMM) and the number of blocks.
    """
    k = len(bucket_sums)
    lo, hi = (np.asarray(v, np.int64) for v in workload)
    s_ = np.asarray(starts, np.int64)
    blocks = -(-k // DAWA_BLOCK) if k > GRAM_MAX else 1
    cuts = np.linspace(0, k, blocks + 1).round().astype(np.int64)
    out = np.empty(k)
    nodes = 0
    for b0, b1 in zip(cuts[:-1], cuts[1:], strict=True):
        c0 = int(s_[b0])
        c1 = int(s_[b1]) if b1 < k else n
        qlo, qhi = np.maximum(lo, c0) - c0, np.minimum(hi, c1) - c0
        keep = qlo < qhi
        gram = reduced_range_gram(c1 - c0, qlo[keep], qhi[keep], s_[b0:b1] - c0)
        if hdmm:
            out[b0:b1] = hdmm_release(bucket_sums[b0:b1], eps_f, gram=gram, rng=gen)
            continue
        tree = greedyh_tree(gram)
        noisy = _tree.measure(bucket_sums[b0:b1], tree, eps_f, rng=gen, discrete=discrete)
        out[b0:b1] = _tree.least_squares(tree, noisy, eps_f)
        nodes += int(np.count_nonzero(tree.weight))
    return out, (None if hdmm else nodes), blocks


def release_histogram(
    algorithm: str,
    x: np.ndarray,
    epsilon: float,
    *,
    gamma_in: float | None = None,
    rng: np.random.Generator | None = None,
    **options: object,
) -> HistogramRelease:
    """Run the configuration named ``algorithm`` (Table II name) on ``x`` with budget ε."""
    if gamma_in is not None:
        check_probability("gamma_in", gamma_in)
    return run_config(parse_config(algorithm), x, epsilon, gamma_in=gamma_in, rng=rng, **options)  # type: ignore[arg-type]


def with_name(cfg: Config, name: str) -> Config:
    """A copy of ``cfg`` under another name (e.g. aliases)."""
    return replace(cfg, name=name)
