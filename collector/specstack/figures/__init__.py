"""The figures, as pure functions on plain data and records: statistics (stats: bootstrap intervals, spread,
crossover, gain stop, target passes), output equality (equality), capacity at an SLO (capacity), the best K per
load (k_per_load), prefix-cache hit rates (prefix_cache), the host's load at a cell (host_load) and a summary's
acceptance figures recomputed from its records and sums (recompute). No file is written, no server or process
started here; runs/, report/ and compare/ all import these, and nothing here imports
them back (tests/test_import_direction.py)."""
