"""Runs: what a run is asked to do (options), one method end to end (method_run, method_summary), several in
one loop (sweep: sweep and sweep-k), the demo's defaults, and the Prometheus work kept off the measured path
(monitoring)."""
