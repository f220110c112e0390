#!/bin/bash
# kiln vs ONNX Runtime on every shared model, interleaved in the same run (shared/peers/
# interleave.py: alternating order per round, medians over rounds), at 1 and 2 threads; writes
# a markdown table with the ratio kiln/ORT of the medians, the median of the per-round ratios,
# and the ratio of each side's fastest round.
#
#   bench/compare.sh [--rounds R] [--threads 1,2] [--models "resnet18 mobilenet_v2"] [--out FILE]
#                    [--dir DIR] [--runs N]
#
# --dir DIR: the models are DIR's folders (model.onnx and test data each: export_models.py's
# layout) instead of the shared models; --runs N: timed runs of each side per round (default 50).
# kiln times at least N runs and at least one second, the window shared/peers/ort_bench.js
# times ORT in (its --runs and --min-seconds): a small model's 50 runs take a tenth of a second,
# and a window that short makes a round's median whatever the machine did in it.
# After the table: the geometric mean of kiln/ORT per thread count, and each model's speed-up
# from 1 to 2 threads, kiln's beside ORT's.
#
# Needs the peers (bash ../shared/peers/setup.sh, once) and a built kiln (make). The table goes
# to stdout and to --out (default bench/results/compare-<date>.md). KILN_SHARED=DIR: the shared
# folder (models/ and peers/) when it is not ../shared beside the checkout.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
shared=${KILN_SHARED:-$here/../shared}
if [ ! -d "$shared/models" ] || [ ! -f "$shared/peers/interleave.py" ]; then
  echo "no shared folder at $shared (models/ and peers/interleave.py): set KILN_SHARED=DIR" >&2
  exit 2
fi
rounds=5; threads=1,2; models=""; out=""; dir=""; runs=50
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$dir" ] || dir="$shared/models"
[ -n "$models" ] || models=$(cd "$dir" && ls -d */ | tr -d / | tr '\n' ' ')
[ -n "$out" ] || out="$here/bench/results/compare-$(date +%Y%m%d-%H%M).md"
mkdir -p "$(dirname "$out")"
kiln="$here/build/kiln"
[ -x "$kiln" ] || { echo "build kiln first (make)" >&2; exit 2; }
json=$(mktemp)
trips=$(mktemp)
trap 'rm -f "$json" "$trips"' EXIT
# The core-to-core round trip before and after each model (`kiln machine`): on a virtual machine
# it moves between two levels as the host places the vCPUs, and a second thread gains far less
# in the slow one, so each model's 2-thread times are read beside it.
probe() { "$kiln" machine --json --trips 500 | /usr/bin/python3 -c 'import json,sys; v=json.load(sys.stdin)["core_round_trip_ns"]; print("n/a" if v is None else round(v))'; }
for m in $models; do
  before=$(probe)
  /usr/bin/python3 "$shared/peers/interleave.py" "$dir/$m" --threads "$threads" --rounds "$rounds" \
    --ours "$kiln bench {model_onnx} --threads {threads} --runs $runs --min-seconds 1 --warmup 5 --json" --json "$json" >&2
  echo "$m $before $(probe)" >> "$trips"
done
{
  echo "# kiln vs ONNX Runtime ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $rounds interleaved rounds)"
  echo
  echo "| model | threads | ORT ms | kiln ms | kiln/ORT | per-round kiln/ORT: median (range) | fastest rounds: ORT / kiln ms, kiln/ORT |"
  echo "|---|---|---|---|---|---|---|"
  /usr/bin/python3 - "$json" "$trips" <<'PY'
import json, math, sys
trips = {m: (a, b) for m, a, b in (line.split() for line in open(sys.argv[2]))}
for line in open(sys.argv[1]):
    r = json.loads(line)
    o, k = r["ort_median_ms"], r["ours_median_ms"]
    # The machines flip between a fast and a slow state for seconds at a time, so the ratio of
    # medians moves with which rounds caught which state. Two views that move less: the median
    # of the per-round ratios (each round times both back to back), and the fastest round of
    # each (both engines in the fast state).
    ratios = sorted(x["ratio"] for x in r["rounds"])
    mid = ratios[len(ratios) // 2] if len(ratios) % 2 else (ratios[len(ratios) // 2 - 1] + ratios[len(ratios) // 2]) / 2
    fo = min(x["ort"]["median_ms"] for x in r["rounds"])
    fk = min(x["ours"]["median_ms"] for x in r["rounds"])
    print(f"| {r['model']} | {r['threads']} | {o:.3g} | {k:.3g} | {k / o:.2f} | {mid:.2f} ({ratios[0]:.2f}-{ratios[-1]:.2f}) "
          f"| {fo:.3g} / {fk:.3g}, {fk / fo:.2f} |")
rows = [json.loads(line) for line in open(sys.argv[1])]
print()
for t in sorted({r["threads"] for r in rows}):
    rs = [r["ours_median_ms"] / r["ort_median_ms"] for r in rows if r["threads"] == t]
    worst = max(rs)
    print(f"{t} thread(s): geometric mean of kiln/ORT {math.exp(sum(map(math.log, rs)) / len(rs)):.3f} over "
          f"{len(rs)} models, largest {worst:.3f}")
by = {}
for r in rows:
    by.setdefault(r["model"], {})[r["threads"]] = r
pairs = [(m, v[1], v[2]) for m, v in by.items() if 1 in v and 2 in v]
if pairs:
    print()
    print("| model | kiln 1T/2T | ORT 1T/2T | kiln's speed-up at least ORT's | core round trip ns, before / after |")
    print("|---|---|---|---|---|")
    for m, a, b in pairs:
        ks, os_ = a["ours_median_ms"] / b["ours_median_ms"], a["ort_median_ms"] / b["ort_median_ms"]
        t = trips.get(m, ("n/a", "n/a"))
        print(f"| {m} | {ks:.2f} | {os_:.2f} | {'yes' if ks >= os_ else 'no'} | {t[0]} / {t[1]} |")
PY
} | tee "$out"
