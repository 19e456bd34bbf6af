"""The `specstack` command line: one module per command, each with `register(subparsers)`; the option groups
several commands share are in options.py, the dispatcher in main.py. The engine (config, server, measure,
runs, results, report) has no argparse: it is imported and tested without a command line.

Kept free of imports: `python3 -m specstack.cli.preflight` runs inside the vLLM server image."""
