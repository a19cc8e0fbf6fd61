#!/usr/bin/env bash
# Runs the main job end to end: real services, topics, Steward stages and sample agents, with a live summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
# The demo keeps its trust debt across restarts (an already running Redis keeps its own setting).
STEWARD_REDIS_PERSIST=1 bash scripts/services.sh up
eval "$(bash scripts/services.sh env)"
exec npx tsx src/cli/main.ts demo "$@"
