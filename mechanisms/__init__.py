"""Pure privacy mechanisms for occustream (numpy/scipy only: no I/O, Kafka or Redis).

Submodules draw noise (and say what they spend) or post-process (and take no
``rng``). See docs/MECHANISMS.md for the specifications.

Release library (unit of privacy everywhere: event-level, one device at one tick):

* ``noise`` — ``default_rng`` (CSPRNG-seeded), ``keyed_rng`` (replay-safe, HMAC-keyed
  Philox), exact ``discrete_laplace`` for released counts, ``laplace`` for analyses,
  public error bars ``laplace_interval`` / ``laplace_mae``.
* ``accounting`` — ``Budget``, scoped ``Accountant`` (``BudgetExhaustedError``),
  ``LedgerRecord`` per release, device-day report, ``PredicateLedger`` (thesis Thm 5.2).
* ``laplace`` — ``laplace_release`` and its state-machine form (spends ε per tick).
* ``pegasus`` — PeGaSus ``initialize`` / ``update`` (spends ε_p + ε_g per tick).
* ``hierarchical`` — multi-state PeGaSus over building → floor → location.
* ``queries`` — post-processing: window sums, event detection, ROC sweeps (no rng).
* ``pseudonym`` — keyed HMAC and TTL-salt pseudonyms (TTL: no formal guarantee).
* ``heatmap`` — colour classes and colour utility (post-processing).

Device-day releases (unit: one device's whole day; issue 15):

* ``gaussian`` — exact discrete Gaussian (keyed, replay-safe, vectorised) and ρ.
* ``accounting.DayBudget`` — per-day (ε_day, δ) over zCDP/RDP via dp-accounting.
* ``device_day`` — the default heatmap: per-tick discrete Gaussian per tree node,
  whole day charged at its first tick, 15-minute and hourly consistent views.
* ``consistency`` — tree least squares, non-negativity, time aggregation (no rng).
* ``continual`` — binary-tree counter for one-shot live counters.
"""
