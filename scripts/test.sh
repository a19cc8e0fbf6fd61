#!/usr/bin/env bash
# The project's test command (README): unit tests, then integration tests on real services
# (the integration global setup starts Kafka, the registry, Redis and ClickHouse when none are given).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
npx vitest run -c vitest.config.ts "$@"
npx vitest run -c vitest.integration.config.ts "$@"
