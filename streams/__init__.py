"""occustream streaming layer.

Faust app, records, agents, building registry, Redis cache, CLI and the embedded
services (Tansu Kafka broker, Redis).
"""
