"""`specstack compare RUN_A RUN_B`: what changed from run A to run B, figure by figure, with a verdict each
(pairing.py decides what is comparable, acceptance.py / speed.py / outputs.py compute the rows, gate.py applies
--fail-on, sections.py + plots.py + build.py write compare.md/.html/.json). Definitions: docs/compare.md."""
