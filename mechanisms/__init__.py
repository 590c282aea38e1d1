"""Pure privacy mechanisms for occustream (numpy/scipy only: no I/O, Kafka or Redis).

Submodules draw noise (and say what they spend) or post-process (and take no
``rng``). See ``shared/ALGORITHMS.md`` for the specifications.
"""
