#!/usr/bin/env bash
# make test: unit tests (ctest), the ONNX node-test ratchet, and `kiln check` on every model
# (models/ in this repository, plus ../shared/models when it exists). Ends with one summary line.
set -uo pipefail
BUILD=${1:-build}
SHARED_MODELS=${2:-../shared/models}
KILN="$BUILD/kiln"
passed=0
failed=0
failures=()

echo "== unit tests"
ctest_log="$BUILD/ctest.log"
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)" 2>&1 | tee "$ctest_log"
line=$(grep -E "tests passed, [0-9]+ tests failed out of [0-9]+" "$ctest_log" | tail -n 1)
if [ -n "$line" ]; then
  total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
  bad=$(sed -E 's/.* ([0-9]+) tests failed.*/\1/' <<<"$line")
  passed=$((passed + total - bad))
  failed=$((failed + bad))
  [ "$bad" -eq 0 ] || failures+=("unit tests ($bad)")
else
  failed=$((failed + 1))
  failures+=("unit tests did not run")
fi

echo "== ONNX node tests (ratchet: tests/conformance/expected_pass.txt)"
expected=$(grep -cv '^#' tests/conformance/expected_pass.txt)
if "$KILN" conformance --expect tests/conformance/expected_pass.txt --tsv "$BUILD/conformance.tsv"; then
  passed=$((passed + expected))
else
  failed=$((failed + 1))
  failures+=("conformance ratchet")
fi

echo "== model checks"
for dir in models/*/ "$SHARED_MODELS"/*/; do
  [ -f "$dir/model.onnx" ] || continue
  name=$(basename "$dir")
  if out=$("$KILN" check "$dir" 2>&1); then
    echo "  ok    $name"
    passed=$((passed + 1))
  else
    echo "  FAIL  $name"
    echo "$out" | sed 's/^/        /'
    failed=$((failed + 1))
    failures+=("kiln check $name")
  fi
done

if [ ${#failures[@]} -gt 0 ]; then
  echo "failed: ${failures[*]}"
fi
echo "kiln-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
