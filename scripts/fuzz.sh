#!/usr/bin/env bash
# make fuzz-run: runs build-fuzz/fuzz/$FUZZ_TARGET (fuzz_load: load, verify, inference,
# optimizer; fuzz_compile: session creation on the CPU backend, plan and kernels included;
# fuzz_kiln: damaged .kiln files, loaded and run, seeded with the seeds compiled) for
# FUZZ_TIME seconds (one worker process in
# fork mode, so it goes on after a crash and collects them all) on a corpus kept in build-fuzz/corpus, seeded with the shared models
# (weights stripped, see fuzz/make_seeds.cpp) and a sample of ONNX's node-test models. Crash
# inputs land in build-fuzz/artifacts/; the log with libFuzzer's final stats in build-fuzz/fuzz.log.
set -euo pipefail
BUILD=${1:-build-fuzz}
SHARED_MODELS=${2:-../shared/models}
SECONDS_TOTAL=${3:-1800}
TARGET=${4:-fuzz_load}
NODE_TESTS=${NODE_TESTS:-/usr/share/libonnx-testdata/data/node}

seeds="$BUILD/seeds"
[ "$TARGET" = fuzz_kiln ] && seeds="$BUILD/seeds-kiln"
corpus="$BUILD/corpus"
[ "$TARGET" = fuzz_load ] || corpus="$BUILD/corpus-$TARGET"
mkdir -p "$seeds" "$corpus" "$BUILD/artifacts"
if [ -z "$(ls -A "$seeds")" ]; then
  models=()
  for m in "$SHARED_MODELS"/*/model.onnx models/*/model.onnx; do [ -f "$m" ] && models+=("$m"); done
  # Every third node test: all op families, a third of the attribute variants.
  if [ -d "$NODE_TESTS" ]; then
    while IFS= read -r m; do models+=("$m"); done < <(ls "$NODE_TESTS"/*/model.onnx | awk 'NR % 3 == 1')
  fi
  if [ "$TARGET" = fuzz_kiln ]; then
    "$BUILD/fuzz/make_seeds" --kiln "$seeds" "${models[@]}"
  else
    "$BUILD/fuzz/make_seeds" "$seeds" "${models[@]}"
  fi
fi
"$BUILD/fuzz/make_seeds" --dict > "$BUILD/onnx.dict"

log="$BUILD/fuzz.log"
[ "$TARGET" = fuzz_load ] || log="$BUILD/fuzz-$TARGET.log"
echo "fuzzing $TARGET for $SECONDS_TOTAL s; log: $log"
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
  "$BUILD/fuzz/$TARGET" -max_total_time="$SECONDS_TOTAL" -rss_limit_mb=2048 -timeout=10 \
  -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
  -max_len=262144 -print_final_stats=1 -dict="$BUILD/onnx.dict" -artifact_prefix="$BUILD/artifacts/" \
  "$corpus" "$seeds" 2>&1 | tee "$log" | grep -E "^#[0-9]+|ERROR|SUMMARY|stat::|crash-|timeout-|oom-" | tail -n 40
