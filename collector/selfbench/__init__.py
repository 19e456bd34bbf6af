"""Benchmarks of the harness itself, not of speculative decoding: what measuring costs (`harness`: monitoring
CPU, overhead per method run, start-up, collector scale) and how the collector holds up under load (`load`).
Kept out of the product: the collector image copies `specstack/` only. Run with `python -m selfbench`
(`make bench-harness`, `make bench-load`); the figures are machine facts, documented in docs/, not tests."""
