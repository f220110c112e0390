#!/bin/bash
# Builds and runs emitted CUDA projects (kiln compile --target cuda) on a machine with an NVIDIA
# GPU, then optionally times PyTorch eager on the same models (bench/torch_cuda_peer.py).
#   bash bench/cuda_device.sh [--torch PEER_MODELS_DIR] [--runs N] PROJECT[:WEIGHTS]...
# PROJECT is an emitted folder; WEIGHTS another weights.bin (a project compiled for another batch
# size has the same weights). Prints each project's check and its host and device latencies.
set -u
runs=200
torch_dir=""
projects=()
while [ $# -gt 0 ]; do
  case "$1" in
    --torch) torch_dir="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    *) projects+=("$1"); shift ;;
  esac
done
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -2
"$nvcc" --version | tail -2
cmake --version | head -1
for p in "${projects[@]}"; do
  dir=${p%%:*}
  weights=""
  [ "$dir" != "$p" ] && weights="--weights ${p#*:}"
  echo "== $dir"
  t0=$(date +%s)
  cmake -S "$dir" -B "$dir/build" -DKILN_MODEL_ON_CPU=OFF -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_CUDA_COMPILER="$nvcc" >"$dir/configure.log" 2>&1 || { tail -20 "$dir/configure.log"; continue; }
  cmake --build "$dir/build" -j 16 >"$dir/build.log" 2>&1 || { grep -E "error|warning" "$dir/build.log" | head -30; continue; }
  echo "built in $(( $(date +%s) - t0 )) s; warnings: $(grep -c warning "$dir/build.log")"
  "$dir/build/kiln_model_main" $weights --runs "$runs" --warmup 20
done
if [ -n "$torch_dir" ]; then
  echo "== PyTorch eager"
  python3 "$(dirname "$0")/torch_cuda_peer.py" "$torch_dir" --runs "$runs"
fi
