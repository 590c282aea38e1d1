"""Access-point simulator: building population model, event generator, Kafka producer, replay."""
