#!/usr/bin/env bash
# Builds and installs kiln's Python module (python/) against the installed library, offline:
#   BUILD/python-prefix   cmake --install of the build (libkiln, include/kiln)
#   VENV (BUILD/venv)     /usr/bin/python3 -m venv --system-site-packages (Debian's numpy)
# and the module pip-installed into the venv with --no-build-isolation --no-index.
#   scripts/make-python.sh BUILD [VENV]
set -euo pipefail
BUILD=$1
REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
VENV=${2:-$BUILD/venv}
cmake --build "$BUILD" --target libkiln >/dev/null
cmake --install "$BUILD" --prefix "$BUILD/python-prefix" >/dev/null
[ -x "$VENV/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$VENV"
# pip builds in the source folder: a copy keeps the checkout clean.
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-python-XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -r "$REPO/python/setup.py" "$REPO/python/kiln" "$REPO/python/src" "$work/"
KILN_PREFIX="$BUILD/python-prefix" "$VENV/bin/pip" install -q --no-build-isolation --no-index --force-reinstall \
  --no-deps "$work"
echo "kiln's Python module: $VENV/bin/python -c 'import kiln'"
