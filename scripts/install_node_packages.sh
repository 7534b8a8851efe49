#!/usr/bin/env bash
# Node packages some tests drive (real clients: the Vercel AI SDK, MCP clients, ...): every
# tests/**/node/package-lock.json gets `npm ci` in its folder when node_modules is missing or
# older than the lockfile. Versions are pinned by the committed lockfiles. Run by `make test`.
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

while IFS= read -r -d '' lockfile; do
    dir="$(dirname "$lockfile")"
    case "$dir" in */node_modules/*) continue ;; esac
    if [ ! -d "$dir/node_modules" ] || [ "$lockfile" -nt "$dir/node_modules" ]; then
        echo "install_node_packages: npm ci in $dir"
        (cd "$dir" && npm ci --no-audit --no-fund)
        touch "$dir/node_modules"
    fi
done < <(find tests -path '*/node_modules' -prune -o -path '*/node/package-lock.json' -print0)
