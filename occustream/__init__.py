"""The command line (``occustream``), the worker's composition root and the demo.

Top layer (docs/ARCHITECTURE.md): nothing else imports it.
"""
