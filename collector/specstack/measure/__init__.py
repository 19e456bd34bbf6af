"""Measuring one server: windows bracketed by settled /metrics snapshots (windows, snapshots), the requests
and bench runs inside them (chat, bench), the accounting that reconciles the two views of every draft token
(accounting), the run-window exporter for Prometheus (exporter) and Prometheus's own view (prometheus_view)."""
