"""A sweep as Slurm job arrays: `specstack slurm submit` (script, submit), the task each array element runs
(task), Slurm's own facts (facts) and `specstack slurm gather` (gather) into one ordinary bundle."""
