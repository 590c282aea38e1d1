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
"""
