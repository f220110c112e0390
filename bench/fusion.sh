#!/bin/bash
# Kernels launched per run and latency at fusion level 0 vs 3, per shared model, with the graph
# optimizer off (--level 0: fusion does all the fusing) and on (--level 3: the optimizer has
# already folded epilogues into FusedConv/FusedMatMul). kiln alone; `kiln inspect --plan` counts
# kernels, `kiln bench` times them (the lower of two medians, taken in alternating order).
# Prints a markdown table.
#
#   bench/fusion.sh [--threads N] [--runs R] [--models "..."] [--levels "0 3"]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
shared=${KILN_SHARED:-$here/../shared}
threads=1; runs=50; models=""; levels="0 3"
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --levels) levels=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$models" ] || models=$(cd "$shared/models" && ls -d */ | tr -d / | tr '\n' ' ')
kiln="$here/build/kiln"
kernels() { "$kiln" inspect "$1" --plan --json --fusion "$2" --level "$3" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["kernels"])'; }
median() { "$kiln" bench "$1" --threads "$threads" --runs "$runs" --fusion "$2" --level "$3" --json | /usr/bin/python3 -c 'import json,sys; print("%.3f" % json.load(sys.stdin)["median_ms"])'; }
echo "| model | optimizer level | kernels fusion 0 | kernels fusion 3 | ms fusion 0 | ms fusion 3 |"
echo "|---|---|---|---|---|---|"
for m in $models; do
  f="$shared/models/$m/model.onnx"
  for l in $levels; do
    # Alternate the order so drift on a busy machine does not favour one level.
    a0=$(median "$f" 0 "$l"); a3=$(median "$f" 3 "$l"); b3=$(median "$f" 3 "$l"); b0=$(median "$f" 0 "$l")
    ms0=$(/usr/bin/python3 -c "print('%.3g' % min($a0, $b0))"); ms3=$(/usr/bin/python3 -c "print('%.3g' % min($a3, $b3))")
    echo "| $m | $l | $(kernels "$f" 0 "$l") | $(kernels "$f" 3 "$l") | $ms0 | $ms3 |"
  done
done
