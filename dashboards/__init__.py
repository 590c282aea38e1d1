"""Web dashboards (heatmap, alerts, privacy ledger), REST API and alert subscribers.

* :mod:`dashboards.app` — ``occustream dashboard``: aiohttp app, auth, REST + SSE.
* :mod:`readmodel.reader` — reads the Redis read model (public fields only).
* :mod:`dashboards.broker` — one Redis reader fanned out to many SSE subscribers.
* :mod:`readmodel.uncertainty` — intervals from public mechanism parameters.
* :mod:`dashboards.webhooks` — signed, retried, dead-lettered alert delivery.
* :mod:`dashboards.subscribers` — ``occustream alerts`` (``--follow``, ``--webhook``).
* :mod:`dashboards.openapi` — the API description served at ``/openapi.json``.
* :mod:`dashboards.synthetic` — a made-up read model for tests, benchmarks, screenshots.
* ``static/`` — the page (plain HTML/JS/CSS, no build step).
"""
