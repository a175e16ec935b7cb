#!/usr/bin/env bash
# Create .venv with Python 3.11+ and install a requirements file into it, once per change
# of that file. Usage: scripts/venv.sh requirements.txt
set -euo pipefail
cd "$(dirname "$0")/.."
requirements="${1:-requirements.txt}"

find_python() {
  for candidate in python3.11 python3.12 python3.13 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  return 1
}

if [ ! -x .venv/bin/python ]; then
  python="$(find_python)" || { echo "Python 3.11 or newer is needed (apt-get install python3)." >&2; exit 1; }
  if ! "$python" -m venv .venv; then
    echo "Could not create .venv: on Debian, install venv support with: apt-get install python3-venv" >&2
    exit 1
  fi
fi

stamp=".venv/.installed-$(basename "$requirements")"
digest="$(cat "$requirements" requirements/*.txt 2>/dev/null | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$digest" ]; then
  echo "Installing $requirements into .venv…"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$requirements"
  echo "$digest" > "$stamp"
fi
