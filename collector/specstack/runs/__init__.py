"""Runs: what a run is asked to do (options), one method end to end (checks, method_run, method_summary), the demo's
defaults, and the Prometheus work kept off the measured path (monitoring). The loop over several methods and the
report after it are pipeline/'s (sweep); runs/ imports neither report/ nor compare/."""
