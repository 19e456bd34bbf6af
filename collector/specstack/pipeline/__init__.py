"""A run end to end, above runs/, report/ and compare/: the sweep loop (sweep: sweep and sweep-k, then the
run's report and its sealed tables) and reproduce (the recorded run again, then compared with the original).
The only folder that imports both the measuring side (runs/) and the reading side (report/, compare/); nothing
but cli/ imports it (tests/test_import_direction.py)."""
