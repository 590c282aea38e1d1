"""Privacy audit: attacker priors, posteriors and learned noise densities (thesis ch. 4, app. B).

Pure numpy/scipy post-processing of counts; see :mod:`research.attacker.posterior`
and :mod:`research.attacker.kde`.
"""

from research.attacker.kde import ConditionalKDE, fit_conditional_kde
from research.attacker.posterior import (
    ADMIN_KINDS,
    ATTACKERS,
    CONFIDENCE_EDGES,
    CONFIDENCE_LABELS,
    N_CLASSES,
    LaplaceLikelihood,
    Likelihood,
    closed_total,
    condition_prior,
    confidence_class,
    dp_worst_case_bound,
    localized_by_class,
    noisy_posterior,
    open_regions,
    priors,
    true_count_posterior,
)

__all__ = [
    "ADMIN_KINDS",
    "ATTACKERS",
    "CONFIDENCE_EDGES",
    "CONFIDENCE_LABELS",
    "N_CLASSES",
    "ConditionalKDE",
    "LaplaceLikelihood",
    "Likelihood",
    "closed_total",
    "condition_prior",
    "confidence_class",
    "dp_worst_case_bound",
    "fit_conditional_kde",
    "localized_by_class",
    "noisy_posterior",
    "open_regions",
    "priors",
    "true_count_posterior",
]
