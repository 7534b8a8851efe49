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
)
# Installed when the OS offers them; the feature that uses one has a fallback without it.
OPTIONAL=()
if PG_MAJOR="$(pg_major)" && [ -n "$PG_MAJOR" ]; then
  OPTIONAL+=("postgresql-$PG_MAJOR-pgvector")   # vector search (knowledge embeddings)
fi
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

if [ ${#missing[@]} -eq 0 ] && [ ${#missing_optional[@]} -eq 0 ]; then
  echo "OS packages: all $((${#PACKAGES[@]} + ${#OPTIONAL[@]})) present."
  exit 0
fi

command_line="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
  elif [ ${#missing[@]} -eq 0 ]; then
    echo "OS packages: optional ${missing_optional[*]} not installed (needs root); their features use fallbacks."
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
rm -f "$log"
echo "OS packages: installed ${missing[*]}."
