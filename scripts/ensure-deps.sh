#!/usr/bin/env bash
# Installs node_modules on a fresh clone so that `npm run demo` and `npm test` work as the first command.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x node_modules/.bin/vitest ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
