"""Kubernetes: the Helm chart's generated files (chart.py, `specstack k8s generate`) and the run's results
collected from its Jobs into one ordinary bundle (gather.py, `specstack k8s gather`)."""
