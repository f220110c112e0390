#!/bin/bash
# A model's FP32 efficiency on this machine: its kiln latency against the FMA peak measured in
# the same run (kiln_kernel_bench's FmaPeak, 16 independent AVX-512 FMA chains), interleaved
# round by round, since the machines kiln runs on differ and drift (KERNELS.md's 267 GFLOP/s
# per core was a Zen 5 at 4.2 GHz; a 2.4 GHz Xeon reaches about 152).
#
#   bench/efficiency.sh [--model resnet18] [--mmacs 1814.1] [--threads 1] [--rounds 7]
#
# --mmacs: the model's multiply-accumulates in millions (../shared/models/MANIFEST.md); FLOPs are
# twice that. Needs `make` and `make kernel-bench`.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
shared=${KILN_SHARED:-$here/../shared}
model=resnet18; mmacs=1814.1; threads=1; rounds=7
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; shift 2 ;;
    --mmacs) mmacs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
kiln="$here/build/kiln"; kb="$here/build/kiln_kernel_bench"
[ -x "$kiln" ] && [ -x "$kb" ] || { echo "build kiln and the kernel benchmarks first (make && make kernel-bench)" >&2; exit 2; }
/usr/bin/python3 - "$kiln" "$kb" "$shared/models/$model/model.onnx" "$mmacs" "$threads" "$rounds" "$model" <<'PY'
import json, statistics, subprocess, sys
kiln, kb, onnx, mmacs, threads, rounds, name = sys.argv[1:]
gflop = 2 * float(mmacs) / 1e3
peaks, lats, shares = [], [], []
print(f"| round | FMA peak GFLOP/s | {name} ms | {name} GFLOP/s | % of peak |")
print("|---|---|---|---|---|")
for r in range(int(rounds)):
    out = subprocess.run([kb, f"--benchmark_filter=FmaPeak/{threads}/", "--benchmark_format=json",
                          "--benchmark_min_time=0.3"], capture_output=True, text=True, check=True).stdout
    peak = json.loads(out)["benchmarks"][0]["GFLOPS"]
    out = subprocess.run([kiln, "bench", onnx, "--threads", threads, "--runs", "30", "--warmup", "3", "--json"],
                         capture_output=True, text=True, check=True).stdout
    ms = json.loads(out)["median_ms"]
    peaks.append(peak); lats.append(ms); shares.append(gflop / ms * 1e3 / peak)
    print(f"| {r + 1} | {peak:.1f} | {ms:.2f} | {gflop / ms * 1e3:.1f} | {100 * gflop / ms * 1e3 / peak:.0f}% |")
# The machine's speed drifts from round to round (both numbers move together), so the share is
# taken per round and its median reported.
p, m = statistics.median(peaks), statistics.median(lats)
print(f"| median | {p:.1f} | {m:.2f} | {gflop / m * 1e3:.1f} | {100 * statistics.median(shares):.0f}% |")
PY
