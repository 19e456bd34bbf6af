"""A run end to end, above runs/, report/ and compare/: the sweep loop (sweep: sweep and sweep-k, then the
run's report and its sealed tables) and reproduce (the recorded run again, then compared with the original).
The only folder that imports both the measuring side (runs/) and the reading side (report/, compare/); nothing
but cli/ imports it (tests/test_import_direction.py), except host/, make's compose flows, which drive its
standard-library loops: serial.py (one method after another) and slots.py (the parallel sweep's queue). So this
file imports nothing: host/ runs under the host's plain python3 (3.8, no venv)."""
