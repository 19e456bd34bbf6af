"""specstack: what does turning on speculative decoding in vLLM really change?

The collector, in data-flow order (docs/architecture.md):
  config/   what is measured: methods (services/methods.toml), workloads, metric names, shared PromQL
  server/   the vLLM server: start or attach, pre-flight with vLLM's own parser, model checks, provenance
  measure/  windows between /metrics snapshots, requests, bench, accounting, exporter, Prometheus's view
  runs/     one method end to end, the sweep loop, the Prometheus work kept off the measured path
  results/  the bundle on disk: atomic writer and the one reader (schema-checked)
  report/   the comparison report and the console table
Beside them: cli/ (the commands), events.py (what a run is doing, for listeners), errors.py, fixtures/ (the tiny
models) and host/ (host-side helper of the Compose stack, standard library only: make runs it with the host's
python3, so this file imports nothing).
"""

__version__ = "0.1.0"
