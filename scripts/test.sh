#!/usr/bin/env bash
# make test: unit tests (ctest), the ONNX node-test ratchet, and `kiln check` on every model
# (models/ in this repository, plus ../shared/models when it exists). Ends with one summary line.
set -uo pipefail
BUILD=${1:-build}
SHARED_MODELS=${2:-../shared/models}
KILN="$BUILD/kiln"
PWD_REPO=$(pwd)
BUILD_ABS=$(cd "$BUILD" && pwd)
SHARED_ABS=$(cd "$SHARED_MODELS" 2>/dev/null && pwd || echo "$SHARED_MODELS")
passed=0
failed=0
failures=()

# missing WHAT WHY: test material that is not here fails the run under CI (so a green CI run means
# every check ran) and is a skip on a user's machine.
missing() {
  if [ "${CI:-}" = "true" ]; then
    failed=$((failed + 1))
    failures+=("$1")
  else
    echo "  skipped: $2"
  fi
}

# The ONNX Runtime comparisons (a unit test and the Python module's) need the peer
# (onnxruntime-node): under CI, installed first when missing.
peers_setup="$SHARED_ABS/../peers/setup.sh"
if [ "${CI:-}" = "true" ] && [ -f "$peers_setup" ] &&
   [ ! -d "${PEERS_NPM_PREFIX:-/opt/peers}/node_modules/onnxruntime-node" ]; then
  bash "$peers_setup" --no-check 2>&1 | tail -n 3
fi

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

# ONNX 1.20's node tests (opsets up to 25), from Debian's libonnx-testdata 1.20 package in
# ../shared/onnx-tests, unpacked into the build tree once.
echo "== ONNX 1.20 test data: node, pytorch-converted, pytorch-operator, simple, real (light models) (ratchets: tests/conformance/expected_pass_1_20*.txt)"
deb=$(ls "$(dirname "$SHARED_MODELS")"/onnx-tests/libonnx-testdata_1.20*_all.deb 2>/dev/null | head -n 1)
data120="$BUILD/onnx-testdata-1.20/usr/share/libonnx-testdata/data"
if [ -z "$deb" ] && [ ! -d "$data120/node" ]; then
  missing "ONNX 1.20 test data missing (../shared/onnx-tests/libonnx-testdata_1.20*.deb)" \
          "no ../shared/onnx-tests/libonnx-testdata_1.20*.deb"
else
  [ -d "$data120/node" ] || dpkg-deb -x "$deb" "$BUILD/onnx-testdata-1.20"
  for set in node pytorch-converted pytorch-operator simple real; do
    list=tests/conformance/expected_pass_1_20.txt
    [ "$set" = node ] || list=tests/conformance/expected_pass_1_20_$set.txt
    expected=$(grep -cv '^#' "$list")
    log="$BUILD/conformance-1.20-$set.log"
    if "$KILN" conformance "$data120/$set" --expect "$list" --tsv "$BUILD/conformance-1.20-$set.tsv" >"$log" 2>&1; then
      echo "  ok    1.20 $set: $(tail -n 1 "$log") ($expected expected on $list)"
      passed=$((passed + expected))
    else
      echo "  FAIL  1.20 $set:"
      grep -E "REGRESSION" "$log" | sed 's/^/        /' || tail -n 5 "$log"
      failed=$((failed + 1))
      failures+=("ONNX 1.20 $set ratchet")
    fi
  done
fi

echo "== model checks (cpu backend at fusion levels 0-3, optimizer levels 0/3 and 2 threads; reference backend)"
check() {  # check NAME DIR ARGS...
  local label=$1 dir=$2
  shift 2
  if out=$("$KILN" check "$dir" "$@" 2>&1); then
    echo "  ok    $label"
    passed=$((passed + 1))
  else
    echo "  FAIL  $label"
    echo "$out" | sed 's/^/        /'
    failed=$((failed + 1))
    failures+=("kiln check $label")
  fi
}
# check_tf LABEL DIR WORK: a TensorFlow model folder (model.json, test_data_set_*/) checked from
# model.json at fusion levels 3 and 0, from the frozen .pb `kiln freeze` writes into WORK (with
# nothing else beside it), and, as ONNX (`kiln optimize`), in ONNX Runtime on every test set.
ort_module=${ORT_NODE_MODULE:-${PEERS_NPM_PREFIX:-/opt/peers}/node_modules/onnxruntime-node}
check_tf() {
  local label=$1 dir=$2 work=$3 set out
  check "$label" "$dir/model.json"
  check "$label --fusion 0" "$dir/model.json" --fusion 0
  mkdir -p "$work"
  rm -rf "$work"/test_data_set_*
  cp -r "$dir"/test_data_set_* "$work/"
  if "$KILN" freeze "$dir/model.json" -o "$work/model.pb" >/dev/null 2>&1; then
    check "$label (frozen .pb)" "$work/model.pb"
  else
    failed=$((failed + 1))
    failures+=("kiln freeze $label")
  fi
  if [ ! -d "$ort_module" ] || ! command -v node >/dev/null; then
    missing "$label as ONNX: no ONNX Runtime peer ($ort_module)" "$label as ONNX (no ONNX Runtime peer)"
    return
  fi
  if ! out=$("$KILN" optimize "$dir/model.json" -o "$work/model.onnx" 2>&1); then
    echo "  FAIL  $label (kiln optimize)"
    echo "$out" | sed 's/^/        /'
    failed=$((failed + 1))
    failures+=("kiln optimize $label")
    return
  fi
  for set in "$dir"/test_data_set_*/; do
    if out=$(KILN_SHARED_PEERS="$SHARED_ABS/../peers" ORT_NODE_MODULE="$ort_module" \
             node tests/tools/ort_check.js "$work/model.onnx" "$set" 2>&1); then
      echo "  ok    $label $(basename "$set") (kiln optimize -> ONNX Runtime)"
      passed=$((passed + 1))
    else
      echo "  FAIL  $label $(basename "$set") (kiln optimize -> ONNX Runtime)"
      echo "$out" | grep -v "MergeShapeInfo" | sed 's/^/        /'
      failed=$((failed + 1))
      failures+=("$label $(basename "$set") as ONNX in ONNX Runtime")
    fi
  done
}
for dir in models/*/ "$SHARED_MODELS"/*/; do
  [ -f "$dir/model.onnx" ] || continue
  name=$(basename "$dir")
  check "$name" "$dir"
  for f in 0 1 2; do check "$name --fusion $f" "$dir" --fusion "$f"; done
  check "$name --level 0 --fusion 3" "$dir" --level 0 --fusion 3
  check "$name --threads 2" "$dir" --threads 2
  check "$name --backend reference" "$dir" --backend reference
done

# TensorFlow models (docs/tensorflow.md): ../shared/tf-models, each checked against its
# TensorFlow.js references from model.json (fusion levels 3 and 0) and from the frozen binary .pb
# `kiln freeze` writes (no JSON or shards beside it). One weight file is not in shared/: the
# set's fetch.sh writes the complete set into the build folder (its tarballs cached in
# ~/.cache/kiln-tf-packages).
echo "== TensorFlow models (../shared/tf-models: model.json and frozen .pb)"
TF_SHARED="$SHARED_ABS/../tf-models"
tf_models="$TF_SHARED/models"
if [ ! -d "$tf_models" ]; then
  missing "TensorFlow models: $TF_SHARED missing" "no $TF_SHARED"
else
  if [ ! -f "$tf_models/nanodet/nanodet.bin" ]; then
    tf_models="$BUILD_ABS/tf-models"
    if [ ! -f "$tf_models/nanodet/nanodet.bin" ]; then
      PKG_CACHE="${KILN_TF_PACKAGES:-$HOME/.cache/kiln-tf-packages}" bash "$TF_SHARED/fetch.sh" "$tf_models" \
        >"$BUILD/tf-fetch.log" 2>&1 || tail -n 5 "$BUILD/tf-fetch.log"
    fi
  fi
  for shared_dir in "$TF_SHARED/models"/*/; do
    name=$(basename "$shared_dir")
    dir="$tf_models/$name"
    if [ ! -f "$dir/model.json" ] || ! ls "$dir"/*.bin >/dev/null 2>&1; then
      missing "TensorFlow model $name: weights missing (fetch.sh failed: $BUILD/tf-fetch.log)" \
              "tf $name (its weights are not here and fetch.sh could not get them: $BUILD/tf-fetch.log)"
      continue
    fi
    check_tf "tf $name" "$dir" "$BUILD/tf-frozen/$name"
  done
fi

# TensorFlow control flow (docs/tensorflow.md): small TF.js graph models written by hand (TF2
# While/If with TensorLists, TF1 while-loop frames with a TensorArray), each checked against its
# TensorFlow.js references (tests/data/tf_control_flow/README.md) at fusion levels 3 and 0, from
# the frozen .pb, and as ONNX (kiln optimize) in ONNX Runtime (check_tf).
echo "== TensorFlow control flow (tests/data/tf_control_flow)"
for dir in tests/data/tf_control_flow/*/; do
  check_tf "tf control flow $(basename "$dir")" "$dir" "$BUILD/tf-control-flow/$(basename "$dir")"
done

# Code generation (docs/codegen.md): three shared models emitted as C++ projects, built outside
# the repository and checked against their test data (`make test-codegen`: every shared model).
echo "== code generation (C++ target; scripts/test-codegen.sh)"
codegen_models=(mlp_small:--embed-weights squeezenet1_1:--threads,2 bert_tiny_op13:--threads,2)
if [ ! -d "$SHARED_MODELS/squeezenet1_1" ]; then
  missing "code generation: $SHARED_MODELS missing" "no $SHARED_MODELS"
else
  out=$(bash scripts/test-codegen.sh "$BUILD" "$SHARED_MODELS" "${codegen_models[@]}")
  echo "$out"
  ok=$(grep -c "^  ok" <<<"$out")
  bad=$(grep -c "^  FAIL" <<<"$out")
  passed=$((passed + ok))
  failed=$((failed + bad))
  [ "$bad" -eq 0 ] || failures+=("code generation ($bad)")
fi

# The CUDA target (docs/codegen.md): two shared models emitted as CUDA projects (their branches
# on several streams, and squeezenet1_1 once more on one), built as host C++ through the CUDA
# shim and checked against their test data, and compiled with nvcc (`make test-cuda`: every
# shared model).
echo "== code generation (CUDA target; scripts/test-cuda.sh)"
if [ ! -d "$SHARED_MODELS/squeezenet1_1" ]; then
  missing "CUDA code generation: $SHARED_MODELS missing" "no $SHARED_MODELS"
else
  out=$(bash scripts/test-cuda.sh "$BUILD" "$SHARED_MODELS" squeezenet1_1 bert_tiny_op13 squeezenet1_1:--streams,1)
  echo "$out"
  ok=$(grep -c "^  ok" <<<"$out")
  bad=$(grep -c "^  FAIL" <<<"$out")
  passed=$((passed + ok))
  failed=$((failed + bad))
  [ "$bad" -eq 0 ] || failures+=("CUDA code generation ($bad)")
fi

# The Python module (python/): built against the installed library into a venv outside the
# repository (as make python does into build/venv), its tests run from a temporary folder, so
# that only the installed module can be imported.
echo "== Python module (make python; python/tests)"
pyt=$(mktemp -d "${TMPDIR:-/tmp}/kiln-pytest-XXXXXX")
if out=$(bash scripts/make-python.sh "$BUILD" "$pyt/venv" 2>&1); then
  out=$(cd "$pyt" && KILN_REPO="$PWD_REPO" KILN_SHARED_MODELS="$SHARED_ABS" "$pyt/venv/bin/python" -m pytest -q -p no:cacheprovider -rs "$PWD_REPO/python/tests" 2>&1)
  rc=$?
  rm -rf "$pyt"
  echo "$out" | tail -n 15
  ok=$(grep -oE '[0-9]+ passed' <<<"$out" | grep -oE '[0-9]+' || echo 0)
  passed=$((passed + ok))
  if [ $rc -ne 0 ]; then
    failed=$((failed + 1))
    failures+=("Python module tests")
  fi
else
  echo "$out" | tail -n 20
  rm -rf "$pyt"
  failed=$((failed + 1))
  failures+=("Python module build (make python)")
fi

if [ ${#failures[@]} -gt 0 ]; then
  echo "failed: ${failures[*]}"
fi
echo "kiln-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
