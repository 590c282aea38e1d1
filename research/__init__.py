"""Experiment, evaluation and audit tools (CLI drivers over mechanisms + simulator)."""
