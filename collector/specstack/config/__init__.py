"""What is measured, decided before anything runs: the methods and their serve arguments
(services/methods.toml), the workloads, every metric name, and the PromQL the dashboards share."""
