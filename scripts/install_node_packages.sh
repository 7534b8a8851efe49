#!/usr/bin/env bash
# Install the npm packages of the suite's Node tests: for every tests/**/node/package-lock.json,
# `npm ci` in its folder when node_modules is missing or older than the lockfile. Idempotent:
# with everything installed it changes nothing. Called by `make test` (after the OS packages,
# which bring Node.js) and .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v npm >/dev/null 2>&1; then
  # Debian packages npm apart from nodejs (a nodejs from elsewhere may bundle it).
  if command -v apt-get >/dev/null 2>&1; then
    apt-get install -y --no-install-recommends npm
  else
    echo "install_node_packages: npm is missing; install Node.js with npm" >&2
    exit 1
  fi
fi

installed=0
while IFS= read -r -d '' lockfile; do
  folder="$(dirname "$lockfile")"
  if [ ! -d "$folder/node_modules" ] || [ "$lockfile" -nt "$folder/node_modules" ]; then
    echo "install_node_packages: npm ci in $folder"
    (cd "$folder" && npm ci --no-audit --no-fund --prefer-offline)
    touch "$folder/node_modules"
    installed=$((installed + 1))
  fi
done < <(find tests -path '*/node_modules' -prune -o -path '*/node/package-lock.json' -print0)

if [ "$installed" -eq 0 ]; then
  echo "install_node_packages: every Node test's packages are installed"
fi
