#!/bin/bash
# kiln vs TensorFlow.js's WebAssembly backend (XNNPACK, one thread) on the TF.js graph models of
# ../shared/tf-models, at one thread, alternating the two per round (medians over rounds); writes
# a markdown table with each side's median of round medians, the spread of the rounds, and the
# ratio kiln/TF.js.
#
#   bench/tfjs_compare.sh [--rounds R] [--runs N] [--models DIR] [--out FILE]
#
# --models: a folder of TF.js models with test_data_set_0/ (default: ../shared/tf-models/models,
# or build/tf-models where `make test` put the complete set). Needs node with @tensorflow/tfjs and
# @tensorflow/tfjs-backend-wasm 4.22.0 under TFJS_NODE_PATH (default /opt/tfjs-peer/node_modules:
#   mkdir -p /opt/tfjs-peer && cd /opt/tfjs-peer && echo '{"private":true}' > package.json &&
#   npm install --ignore-scripts @tensorflow/tfjs@4.22.0 @tensorflow/tfjs-backend-wasm@4.22.0)
# and a built kiln.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=5; runs=20; models=""; out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
if [ -z "$models" ]; then
  models=$here/../shared/tf-models/models
  [ -f "$models/nanodet/nanodet.bin" ] || [ ! -d "$here/build/tf-models" ] || models=$here/build/tf-models
fi
[ -n "$out" ] || out="$here/bench/results/tfjs-$(date +%Y%m%d-%H%M).md"
export NODE_PATH=${TFJS_NODE_PATH:-/opt/tfjs-peer/node_modules}
kiln="$here/build/kiln"
[ -x "$kiln" ] || { echo "build kiln first (make)" >&2; exit 2; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
rows=""
for dir in "$models"/*/; do
  name=$(basename "$dir")
  [ -f "$dir/model.json" ] && ls "$dir"/*.bin >/dev/null 2>&1 || { echo "skip $name: no weights" >&2; continue; }
  k=(); t=()
  for ((r = 0; r < rounds; ++r)); do
    # alternate which side goes first
    for side in $( ((r % 2)) && echo "tfjs kiln" || echo "kiln tfjs"); do
      if [ "$side" = kiln ]; then
        k+=("$("$kiln" bench "$dir" --threads 1 --runs "$runs" --warmup 3 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])')")
      else
        t+=("$(node "$here/bench/tfjs_wasm.js" "$dir" "$runs" 3 | python3 -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])')")
      fi
    done
  done
  km=$(printf '%s\n' "${k[@]}" | median); tm=$(printf '%s\n' "${t[@]}" | median)
  range() { sort -g | sed -n '1p;$p' | xargs printf '%.2f\n' | paste -sd- -; }
  kr=$(printf '%s\n' "${k[@]}" | range); tr_=$(printf '%s\n' "${t[@]}" | range)
  ratio=$(python3 -c "print(f'{$km/$tm:.2f}')")
  echo "$name kiln $km ($kr) tfjs-wasm $tm ($tr_) ratio $ratio" >&2
  rows+="| $name | $(printf %.2f "$km") ($kr) | $(printf %.2f "$tm") ($tr_) | $ratio |"$'\n'
done
{
  echo "# kiln vs TensorFlow.js WebAssembly (XNNPACK), 1 thread, $(date +%Y-%m-%d)"
  echo
  echo "\`bench/tfjs_compare.sh --rounds $rounds --runs $runs\` on $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores."
  echo "Each cell: median over rounds of each round's median latency (ms), the rounds' range in brackets."
  echo
  echo "| model | kiln 1T ms | TF.js wasm ms | kiln / TF.js |"
  echo "|---|---|---|---|"
  printf '%s' "$rows"
} | tee "$out"
