#!/usr/bin/env bash
# Install the OS packages the test suite needs, only those missing. Idempotent: on a machine
# that has them all it prints one line and changes nothing. Called by `make test` and .ci/run.
#
# Add a package here (with the reason) when a feature needs one; never install it by hand only.
set -euo pipefail

# PostgreSQL's major version decides the name of the pgvector package.
pg_major() {
  if command -v pg_config >/dev/null 2>&1; then
    pg_config --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/'
  elif [ -d /etc/postgresql ]; then
    ls /etc/postgresql | sort -n | tail -1
  fi
}

PACKAGES=(
  catdoc                   # knowledge extraction of legacy Word .doc (catdoc) and PowerPoint .ppt (catppt)
  chromium                 # browser tests (Playwright drives Debian's Chromium, no download)
  nodejs                   # tests that drive Node clients (tests/**/node: the Vercel AI SDK, the MCP
                           #   TypeScript SDK's client; npm comes with it from NodeSource, Debian's
                           #   own nodejs needs the npm package, scripts/install_node_packages.sh)
  fonts-noto-cjk           # browser screenshots of CJK text; CJK OCR test images
  tesseract-ocr            # OCR of scanned PDF pages (brings English and script detection, osd)
  tesseract-ocr-ara        # OCR languages: the scripts of the knowledge corpus beyond Latin --
  tesseract-ocr-chi-sim    #   Arabic, Chinese (simplified, traditional), Japanese, Korean,
  tesseract-ocr-chi-tra    #   Russian (Cyrillic), Thai, Hindi (Devanagari)
  tesseract-ocr-jpn
  tesseract-ocr-kor
  tesseract-ocr-rus
  tesseract-ocr-tha
  tesseract-ocr-hin
  postgresql-client        # pg_isready in scripts/ensure_services.sh
  redis-tools              # redis-cli in scripts/ensure_services.sh
  redis-server             # outage tests start their own redis-server to pause or stop
  pgbouncer                # tests/operations/test_pgbouncer.py runs the service behind a private
                           #   PgBouncer in transaction mode (docs/operations.md, scale-out)
  wrk                      # the load generator of benchmarks/api_lists.py (make bench); its tiny run
                           #   in tests/benchmarks/ takes the wrk path and the Python-loop path
)
# Installed when the OS offers them; the feature that uses one has a fallback without it.
OPTIONAL=()
# pgvector (knowledge search by meaning: an HNSW index) is installed after the packages, by
# install_pgvector below: Debian's package where the release has one, else built from Debian's
# own source package (Debian 12 has PostgreSQL 15 but ships pgvector only from Debian 13).
PG_MAJOR="$(pg_major || true)"
PGVECTOR_SOURCE_URL="http://deb.debian.org/debian/pool/main/p/pgvector/pgvector_0.8.0.orig.tar.gz"
PGVECTOR_SOURCE_SHA256="867a2c328d4928a5a9d6f052cd3bc78c7d60228a9b914ad32aa3db88e9de27b0"
# Extra packages from the environment, space-separated (for a feature being tried out).
if [ -n "${EXTRA_OS_PACKAGES:-}" ]; then
  read -r -a extra <<<"$EXTRA_OS_PACKAGES"
  PACKAGES+=("${extra[@]}")
fi

is_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "install_os_packages: not a Debian-family system; install these yourself: ${PACKAGES[*]}" >&2
  exit 0
fi

missing=()
for package in "${PACKAGES[@]}"; do
  is_installed "$package" || missing+=("$package")
done
missing_optional=()
for package in "${OPTIONAL[@]}"; do
  is_installed "$package" || missing_optional+=("$package")
done

pgvector_present() {
  [ -z "$PG_MAJOR" ] || [ -f "/usr/share/postgresql/$PG_MAJOR/extension/vector.control" ]
}

# Debian's pgvector package, or else Debian's pgvector source built against this PostgreSQL.
install_pgvector() {
  pgvector_present && return 0
  if apt-cache show "postgresql-$PG_MAJOR-pgvector" >/dev/null 2>&1; then
    echo "OS packages: installing postgresql-$PG_MAJOR-pgvector..."
    "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "postgresql-$PG_MAJOR-pgvector" \
      >"$log" 2>&1 || { tail -n 15 "$log" >&2; return 1; }
    return 0
  fi
  echo "OS packages: building pgvector for PostgreSQL $PG_MAJOR from Debian's source package..."
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends \
    "postgresql-server-dev-$PG_MAJOR" make gcc libc6-dev curl ca-certificates >"$log" 2>&1 \
    || { tail -n 15 "$log" >&2; return 1; }
  local build
  build="$(mktemp -d)"
  curl -fsSL --retry 3 -o "$build/pgvector.tar.gz" "$PGVECTOR_SOURCE_URL" \
    && echo "$PGVECTOR_SOURCE_SHA256  $build/pgvector.tar.gz" | sha256sum -c --quiet - \
    && tar -xzf "$build/pgvector.tar.gz" -C "$build" --strip-components=1 \
    && make -C "$build" -s PG_CONFIG="/usr/lib/postgresql/$PG_MAJOR/bin/pg_config" >"$log" 2>&1 \
    && "${SUDO[@]}" make -C "$build" -s install \
      PG_CONFIG="/usr/lib/postgresql/$PG_MAJOR/bin/pg_config" >>"$log" 2>&1 \
    || { echo "OS packages: building pgvector failed:" >&2; tail -n 15 "$log" >&2; rm -rf "$build"; return 1; }
  rm -rf "$build"
  echo "OS packages: pgvector built and installed for PostgreSQL $PG_MAJOR."
}

if [ ${#missing[@]} -eq 0 ] && [ ${#missing_optional[@]} -eq 0 ] && pgvector_present; then
  echo "OS packages: all $((${#PACKAGES[@]} + ${#OPTIONAL[@]} + 1)) present (pgvector included)."
  exit 0
fi

command_line="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
  elif [ ${#missing[@]} -eq 0 ]; then
    echo "OS packages: optional ${missing_optional[*]:-} pgvector not installed (needs root); their features use fallbacks."
    exit 0
  else
    echo "OS packages missing (${missing[*]}) and this user cannot install them; run: sudo $command_line" >&2
    exit 1
  fi
else
  SUDO=()
fi

export DEBIAN_FRONTEND=noninteractive
log="$(mktemp)"
if ! "${SUDO[@]}" apt-get update -qq >"$log" 2>&1; then
  echo "OS packages: apt-get update failed:" >&2
  tail -n 5 "$log" >&2
  rm -f "$log"
  exit 1
fi
# An optional package this OS release does not offer is skipped with one line, not an error.
for package in "${missing_optional[@]}"; do
  if apt-cache show "$package" >/dev/null 2>&1; then
    missing+=("$package")
  else
    echo "OS packages: $package is not offered by this OS release; its feature uses its fallback."
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  install_pgvector || { rm -f "$log"; exit 1; }
  rm -f "$log"
  exit 0
fi
command_line="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
echo "OS packages: installing ${missing[*]} (once; later runs skip this)..."
if ! "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
  echo "OS packages: installing failed; the last lines of apt-get say:" >&2
  tail -n 15 "$log" >&2
  echo "Try by hand: $command_line" >&2
  rm -f "$log"
  exit 1
fi
echo "OS packages: installed ${missing[*]}."
install_pgvector || { rm -f "$log"; exit 1; }
rm -f "$log"
