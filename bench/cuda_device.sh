#!/bin/bash
# Builds and runs emitted CUDA projects (kiln compile --target cuda) on a machine with an NVIDIA
# GPU, then optionally times PyTorch eager on the same models (bench/torch_cuda_peer.py).
#   bash bench/cuda_device.sh [--torch PEER_MODELS_DIR] [--runs N] [--profile] PROJECT[:WEIGHTS]...
# PROJECT is an emitted folder; WEIGHTS another weights.bin (a project compiled for another batch
# size has the same weights). Prints each project's check and its host and device latencies;
# --profile also builds it with KILN_MODEL_PROFILE and prints its slowest instructions. cuDNN is
# used where found (beside CUDA or in a Python environment's nvidia/cudnn), else the im2col path.
set -u
runs=200
torch_dir=""
profile=""
projects=()
while [ $# -gt 0 ]; do
  case "$1" in
    --torch) torch_dir="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --profile) profile=1; shift ;;
    *) projects+=("$1"); shift ;;
  esac
done
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
# cuDNN: beside CUDA, else in a Python environment's nvidia/cudnn (PyTorch's wheels).
cudnn_h=$(ls /usr/local/cuda/include/cudnn.h /usr/include/cudnn.h 2>/dev/null | head -1)
[ -z "$cudnn_h" ] && cudnn_h=$(find / -path /proc -prune -o -name cudnn.h -print 2>/dev/null | grep -m1 nvidia/cudnn)
if [ -n "$cudnn_h" ]; then
  cudnn_root=$(dirname "$(dirname "$cudnn_h")")
  cudnn_flags=(-DKILN_MODEL_CUDNN=ON -DCUDNN_ROOT="$cudnn_root")
  export LD_LIBRARY_PATH="$cudnn_root/lib:$cudnn_root/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  cudnn_root="none"
  cudnn_flags=(-DKILN_MODEL_CUDNN=OFF)
fi
echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -2
"$nvcc" --version | tail -2
cmake --version | head -1
echo "cuDNN: $cudnn_root"
for p in "${projects[@]}"; do
  dir=${p%%:*}
  weights=""
  [ "$dir" != "$p" ] && weights="--weights ${p#*:}"
  echo "== $dir"
  t0=$(date +%s)
  cmake -S "$dir" -B "$dir/build" -DKILN_MODEL_ON_CPU=OFF -DCMAKE_CUDA_ARCHITECTURES=90 "${cudnn_flags[@]}" \
    -DCMAKE_CUDA_COMPILER="$nvcc" >"$dir/configure.log" 2>&1 || { tail -20 "$dir/configure.log"; continue; }
  cmake --build "$dir/build" -j 16 >"$dir/build.log" 2>&1 || { grep -E "error|warning" "$dir/build.log" | head -30; continue; }
  echo "built in $(( $(date +%s) - t0 )) s; warnings: $(grep -c warning "$dir/build.log")"
  "$dir/build/kiln_model_main" $weights --runs "$runs" --warmup 20
  if [ -n "$profile" ]; then
    # The same with every instruction timed on the GPU (no CUDA graph): the ten slowest.
    cmake -S "$dir" -B "$dir/build-profile" -DKILN_MODEL_ON_CPU=OFF -DCMAKE_CUDA_ARCHITECTURES=90 "${cudnn_flags[@]}" \
      -DKILN_MODEL_PROFILE=ON -DCMAKE_CUDA_COMPILER="$nvcc" >/dev/null 2>&1 &&
      cmake --build "$dir/build-profile" -j 16 >/dev/null 2>&1 &&
      "$dir/build-profile/kiln_model_main" $weights --runs 20 --warmup 2 2>&1 >/dev/null | head -12
  fi
done
if [ -n "$torch_dir" ]; then
  echo "== PyTorch eager"
  python3 "$(dirname "$0")/torch_cuda_peer.py" "$torch_dir" --runs "$runs"
fi
