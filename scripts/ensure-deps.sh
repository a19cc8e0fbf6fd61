#!/usr/bin/env bash
# Installs node_modules on a fresh clone so that `npm run demo` and `npm test` work as the first command.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x node_modules/.bin/vitest ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  # The registry reachable here serves only this platform's optional packages (e.g. @rollup/rollup-*),
  # so the lock file lacks the others and `npm ci` refuses it; `npm install` honours the same lock.
  npm ci --no-audit --no-fund || npm install --no-audit --no-fund
fi
