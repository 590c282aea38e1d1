"""The output producer: queue records, then wait until the broker has them all."""

from __future__ import annotations

from typing import Any

from aiokafka import AIOKafkaProducer


class Output:
    """One aiokafka producer per worker (started on first send)."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self._producer: Any = None

    async def send(self, topic: str, key: bytes | None, value: bytes,
                   partition: int | None = None) -> None:
        """Queue one record (delivery is awaited by :meth:`flush`)."""
        if self._producer is None:
            self._producer = AIOKafkaProducer(
                bootstrap_servers=self.bootstrap, linger_ms=2,
                max_batch_size=1 << 20, max_request_size=16 << 20)
            await self._producer.start()
        await self._producer.send(topic, value, key=key, partition=partition)

    async def flush(self) -> None:
        """Wait until the broker has every queued record."""
        if self._producer is not None:
            await self._producer.flush()

    async def aclose(self) -> None:
        """Stop the producer."""
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None
