"""Infrastructure: embedded services (Tansu Kafka, Redis), topic creation, service URLs.

Layer 1 (docs/ARCHITECTURE.md): imports only :mod:`mechanisms` (errors); every layer
above may use it.
"""
