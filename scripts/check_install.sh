#!/usr/bin/env bash
# The installed package, checked as a user outside the tree would use it:
#   scripts/check_install.sh BUILD_DIR [MODEL_DIR]
# installs BUILD_DIR into a temporary prefix (outside the build tree), builds examples/cpp
# against it with find_package(kiln) and with pkg-config, runs both on MODEL_DIR (default
# models/squeezenet1_1: each compares its output with the reference) and checks that the
# programs load libkiln from the prefix and that nothing installed points into the build tree.
# A tool it needs that is missing skips the check, except under CI=true, where it fails.
set -euo pipefail
BUILD=$(realpath "${1:?usage: check_install.sh BUILD_DIR [MODEL_DIR]}")
SRC=$(realpath "$(dirname "$0")/..")
MODEL=$(realpath "${2:-$SRC/models/squeezenet1_1}")

fail() { echo "check_install: FAIL: $*" >&2; exit 1; }
for tool in cmake pkg-config readelf ldd "${CXX:-c++}" make; do
  if ! command -v "$tool" >/dev/null; then
    [ "${CI:-}" = "true" ] && fail "$tool is missing"
    echo "check_install: skipped ($tool is missing)"
    exit 0
  fi
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/kiln-install.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PREFIX=$TMP/prefix
case "$PREFIX/" in "$BUILD"/*) fail "the prefix $PREFIX lies inside the build tree" ;; esac

echo "== install into $PREFIX"
cmake --install "$BUILD" --prefix "$PREFIX" >"$TMP/install.log" || { cat "$TMP/install.log"; fail "cmake --install"; }
for f in include/kiln/session.h lib/cmake/kiln/kilnConfig.cmake lib/cmake/kiln/kilnConfigVersion.cmake \
         lib/cmake/kiln/kilnTargets.cmake lib/pkgconfig/kiln.pc; do
  [ -f "$PREFIX/$f" ] || fail "$f was not installed"
done
LIB=$(ls "$PREFIX"/lib/libkiln.so.*.*.* 2>/dev/null | head -n 1)
[ -n "$LIB" ] || fail "no libkiln.so.X.Y.Z in $PREFIX/lib"
runpath=$(readelf -d "$LIB" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')
echo "   $(basename "$LIB"): RUNPATH ${runpath:-(none)}"
for entry in ${runpath//:/ }; do
  case "$entry" in '$ORIGIN'|'$ORIGIN/'*|"$PREFIX"/*) ;; *) fail "libkiln's RUNPATH entry '$entry' is not inside the prefix" ;; esac
done
if grep -rlF "$BUILD" "$PREFIX" >/dev/null; then fail "installed files name the build tree: $(grep -rlF "$BUILD" "$PREFIX" | tr '\n' ' ')"; fi

# Each program: built its way, linked to the prefix's libkiln, and right on the model.
check_program() {  # check_program LABEL EXE
  local label=$1 exe=$2 resolved
  resolved=$(ldd "$exe" | awk '/libkiln\.so/ {print $3}')
  [ -n "$resolved" ] && resolved=$(realpath -m "$resolved")
  case "$resolved" in "$PREFIX"/lib/*) ;; *) fail "$label: libkiln resolves to '${resolved:-nothing}', not inside $PREFIX" ;; esac
  echo "   $label: libkiln from $resolved"
  "$exe" "$MODEL" || fail "$label: the example's output does not match the reference"
}

echo "== examples/cpp with find_package(kiln)"
cmake -S "$SRC/examples/cpp" -B "$TMP/cmake-build" -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_BUILD_TYPE=Release \
  >"$TMP/cmake.log" 2>&1 && cmake --build "$TMP/cmake-build" >>"$TMP/cmake.log" 2>&1 ||
  { cat "$TMP/cmake.log"; fail "building the example with find_package(kiln)"; }
check_program find_package "$TMP/cmake-build/squeezenet"

echo "== examples/cpp with pkg-config"
mkdir -p "$TMP/pc-build"
PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig" make --no-print-directory -C "$SRC/examples/cpp" OUT="$TMP/pc-build" \
  >"$TMP/make.log" 2>&1 || { cat "$TMP/make.log"; fail "building the example with pkg-config"; }
check_program pkg-config "$TMP/pc-build/squeezenet"

echo "check_install: ok"
