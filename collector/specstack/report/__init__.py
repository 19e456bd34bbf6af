"""Reading a finished run: rows computed from the bundle (speed, acceptance, equality, ksweep) with the figures of
figures/ (statistics, equality, K per load, capacity, prefix cache), the report's sections (sections; a task's
blocks in speed_sections, acceptance_sections, output_sections) drawn by two renderers (render), its plots and tidy
tables (plots, tables), assembled by build; and the console table (console_table)."""
