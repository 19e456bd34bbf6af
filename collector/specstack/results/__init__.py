"""The results bundle on disk: every file and folder name (layout), atomic files (files), the writer (bundle), the
request records (records), the per-method tidy tables (method_tables) and the one reader, which checks the schema
version (reader)."""
