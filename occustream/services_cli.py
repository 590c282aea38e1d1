"""``occustream services`` — start the embedded Kafka (Tansu) and Redis, print their URLs, wait.

Use it to run workers, the simulator and the dashboard by hand::

    occustream services            # prints KAFKA_BOOTSTRAP=… and REDIS_URL=…
    export KAFKA_BOOTSTRAP=… REDIS_URL=…
    occustream worker & occustream simulate --kafka $KAFKA_BOOTSTRAP …

Ctrl-C (or SIGTERM) stops both; nothing is left running.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from infra.services import TOPICS, running_services


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``occustream services``."""
    parser = argparse.ArgumentParser(
        prog="occustream services",
        description="Start the embedded Kafka (Tansu) and Redis, print their URLs and wait "
        "until Ctrl-C.",
    )
    parser.add_argument("--partitions", type=int, default=TOPICS["wifi.observations"],
                        help="partitions of wifi.observations (default %(default)s)")
    parser.add_argument("--log-dir", type=Path, default=None,
                        help="where the services write their logs (default: a temp dir)")
    parser.add_argument("--env-file", type=Path, default=None,
                        help="also write KAFKA_BOOTSTRAP/REDIS_URL lines to this file")
    args = parser.parse_args(argv)
    if args.partitions < 1:
        parser.error(f"--partitions must be >= 1, not {args.partitions}")
    topics = {**TOPICS, "wifi.observations": args.partitions, "occupancy.partial": 1}
    with running_services(env={}, log_dir=args.log_dir, topics=topics) as svc:
        lines = f"KAFKA_BOOTSTRAP={svc.kafka_bootstrap}\nREDIS_URL={svc.redis_url}\n"
        print(lines, end="", flush=True)
        if args.env_file:
            args.env_file.write_text(lines)
        print("services running; Ctrl-C to stop", file=sys.stderr, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            print("stopping services", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
