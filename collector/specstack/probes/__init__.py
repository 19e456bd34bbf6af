"""Probes of the installed engine's own code, run in-process without a model (seconds)."""
