"""Web dashboards (heatmap, alerts, privacy ledger), REST API and alert subscribers."""
