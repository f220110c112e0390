#!/usr/bin/env bash
# Code generation end to end (docs/codegen.md): for each MODEL[:FLAGS], `kiln compile --target cpp`
# into a folder, copied outside the repository and built there from the copy alone, with
# warnings as errors; then checked: no kiln path in its compile or link commands (nor oneDNN's
# with --no-onednn; without it oneDNN is the one dependency allowed), no kiln interpreter (elementwise evaluator, plan or JSON parser) in its sources, no kiln runtime
# or registry symbol in the program, and its outputs match the model's test data.
#   scripts/test-codegen.sh BUILD MODELS_DIR MODEL[:FLAGS]...     (FLAGS: comma-separated)
set -uo pipefail
BUILD=$1
MODELS=$2
shift 2
KILN="$(cd "$(dirname "$BUILD/kiln")" && pwd)/kiln"
REPO=$(cd "$(dirname "$0")/.." && pwd)
failed=0
for spec in "$@"; do
  name=${spec%%:*}
  flags=""
  [[ $spec == *:* ]] && flags=${spec#*:} && flags=${flags//,/ }
  label="$name${flags:+ $flags}"
  work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-codegen-XXXXXX")
  fail() {
    echo "  FAIL  codegen $label: $1"
    [ -n "${2:-}" ] && echo "$2" | tail -n 20 | sed 's/^/        /'
    failed=$((failed + 1))
  }
  # shellcheck disable=SC2086
  if ! out=$("$KILN" compile "$MODELS/$name/model.onnx" --target cpp -o "$work/emitted" $flags 2>&1); then
    fail "kiln compile failed" "$out"; continue
  fi
  cp -r "$work/emitted" "$work/project"
  rm -rf "$work/emitted"
  if hits=$(grep -rlE 'ElementwiseProgram|nlohmann|json|kiln::' "$work/project" --include='*.cpp' --include='*.h'); then
    fail "the emitted sources hold kiln internals" "$hits"; continue
  fi
  if ! out=$(cd "$work/project" && cmake -S . -B build -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
      -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" 2>&1 && cmake --build build 2>&1); then
    fail "the project does not build" "$out"; continue
  fi
  forbidden="$REPO[^ \"]*|include/kiln|-lkiln( |$)|libkiln\.(so|a)"
  [[ " $flags " == *" --no-onednn "* ]] && forbidden="$forbidden|dnnl|fopenmp|gomp"
  if hits=$(grep -hoE "$forbidden" "$work/project/build/compile_commands.json" \
      "$work/project/build/CMakeFiles/kiln_model_main.dir/link.txt"); then
    fail "its compile or link commands name kiln (or, with --no-onednn, oneDNN)" "$hits"; continue
  fi
  if hits=$(nm -C "$work/project/build/kiln_model_main" | grep -E ' kiln::|Registry|ElementwiseProgram|nlohmann'); then
    fail "the program holds kiln runtime symbols" "$hits"; continue
  fi
  if ! out=$("$work/project/build/kiln_model_main" --runs 3 2>&1) || ! grep -q "check passed" <<<"$out"; then
    fail "its outputs do not match the test data" "$out"; continue
  fi
  echo "  ok    codegen $label ($(grep -m1 latency <<<"$out"))"
  rm -rf "$work"
done
exit $((failed > 0))
