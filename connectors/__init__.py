"""Connectors for real networks: ``occustream ingest SOURCE`` (docs/CONNECT.md).

Each source module turns a vendor's feed into ``wifi.observations`` records through the
shared edge (:mod:`connectors.edge`): validation, keyed-HMAC pseudonyms (a raw MAC never
leaves the receiver), the DLQ with a reason and redacted payload, health and ``/metrics``.

* :mod:`connectors.meraki` — Meraki Scanning API v3 receiver (HTTP);
* :mod:`connectors.spaces` — Cisco Spaces Firehose NDJSON (file, stdin or HTTP stream);
* :mod:`connectors.syslog` — controller syslog (RFC 3164 / 5424, UDP and TCP);
* :mod:`connectors.radius` — RADIUS accounting (RFC 2866, UDP);
* :mod:`connectors.buildings_import` — CSV → building JSON, export, Meraki skeleton (the
  ``occustream buildings`` command is :mod:`occustream.buildings_cli`).
"""
