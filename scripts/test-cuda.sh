#!/usr/bin/env bash
# The CUDA target end to end (docs/codegen.md): for each MODEL[:FLAGS], `kiln compile --target
# cuda` into a folder, copied outside the repository, then
#   - built as host C++ through kernels/cuda/host_shim.h (-DKILN_MODEL_ON_CPU=ON, warnings as
#     errors) and run against the model's test data, its streams run newest first and oldest
#     first: the generated kernels' arithmetic and the streams' waits checked without a GPU;
#   - built with nvcc for sm_90, with cuDNN and without (warnings as errors), compile only: no
#     GPU needed. The builds
#     must have compiled the very same model.cu, unchanged (its path in both compile databases,
#     its hash before and after). Without nvcc this step is skipped with a message, and fails
#     under CI=true.
#   scripts/test-cuda.sh BUILD MODELS_DIR MODEL[:FLAGS]...     (FLAGS: comma-separated)
# KILN_CUDA_SANITIZE=1 builds the host check with AddressSanitizer and UBSan (out-of-bounds
# indices in the generated kernels; `make test-cuda` sets it). KILN_CUDA_CUDNN_SHIM=1 also
# builds and checks it with cuDNN's calls run on the host (`make test-cuda` sets it).
set -uo pipefail
BUILD=$1
MODELS=$2
shift 2
KILN="$(cd "$(dirname "$BUILD/kiln")" && pwd)/kiln"
NVCC=$(command -v nvcc || true)
[ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc
failed=0
for spec in "$@"; do
  name=${spec%%:*}
  flags=""
  [[ $spec == *:* ]] && flags=${spec#*:} && flags=${flags//,/ }
  label="$name${flags:+ $flags}"
  work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-cuda-XXXXXX")
  fail() {
    echo "  FAIL  cuda $label: $1"
    [ -n "${2:-}" ] && echo "$2" | tail -n 20 | sed 's/^/        /'
    failed=$((failed + 1))
  }
  # shellcheck disable=SC2086
  if ! out=$("$KILN" compile "$MODELS/$name/model.onnx" --target cuda -o "$work/emitted" $flags 2>&1); then
    fail "kiln compile failed" "$out"; continue
  fi
  cp -r "$work/emitted" "$work/project"
  rm -rf "$work/emitted"
  p="$work/project"
  if hits=$(grep -rlE 'ElementwiseProgram|nlohmann|json|kiln::' "$p" --include='*.cu' --include='*.cuh' --include='*.cpp' --include='*.h'); then
    fail "the emitted sources hold kiln internals" "$hits"; continue
  fi
  before=$(sha256sum "$p/model.cu" | cut -d' ' -f1)
  cxxflags="-Wall -Wextra -Werror"
  [ "${KILN_CUDA_SANITIZE:-}" = "1" ] && cxxflags="$cxxflags -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
  if ! out=$(cmake -S "$p" -B "$p/build-cpu" -DKILN_MODEL_ON_CPU=ON -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
      -DCMAKE_CXX_FLAGS="$cxxflags" 2>&1 && cmake --build "$p/build-cpu" 2>&1); then
    fail "the host (check-on-cpu) build fails" "$out"; continue
  fi
  # The shim runs the streams out of program order, both ways: a missing wait shows in one.
  for order in newest oldest; do
    if ! out=$(KILN_CUDA_SHIM_ORDER=$order ASAN_OPTIONS=detect_stack_use_after_return=0 "$p/build-cpu/kiln_model_main" --runs 1 --warmup 0 2>&1) ||
        ! grep -q "check passed" <<<"$out"; then
      fail "the host build's outputs do not match the test data (streams run $order first)" "$out"; continue 2
    fi
  done
  # KILN_CUDA_CUDNN_SHIM=1: the same model.cu with cuDNN's calls for what it can express, run as
  # loops (kernels/cuda/cudnn_shim.h): the arguments it gives cuDNN checked too.
  cudnn_note=""
  if [ "${KILN_CUDA_CUDNN_SHIM:-}" = "1" ]; then
    if ! out=$(cmake -S "$p" -B "$p/build-cpu-cudnn" -DKILN_MODEL_ON_CPU=ON -DKILN_MODEL_CUDNN=ON \
        -DCMAKE_CXX_FLAGS="$cxxflags" 2>&1 && cmake --build "$p/build-cpu-cudnn" 2>&1); then
      fail "the host build with cuDNN's calls fails" "$out"; continue
    fi
    if ! out=$(ASAN_OPTIONS=detect_stack_use_after_return=0 "$p/build-cpu-cudnn/kiln_model_main" --runs 1 --warmup 0 2>&1) ||
        ! grep -q "check passed" <<<"$out"; then
      fail "the host build with cuDNN's calls does not match the test data" "$out"; continue
    fi
    cudnn_note=", and with cuDNN's calls"
  fi
  nvcc_note="nvcc: skipped, no nvcc"
  if [ -n "$NVCC" ]; then
    if ! out=$(cmake -S "$p" -B "$p/build-gpu" -DKILN_MODEL_ON_CPU=OFF -DKILN_MODEL_CUDNN=ON -DCMAKE_CUDA_COMPILER="$NVCC" \
        -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
        -DCMAKE_CUDA_FLAGS="-Werror all-warnings -Xcompiler=-Werror" 2>&1 && cmake --build "$p/build-gpu" 2>&1); then
      fail "nvcc does not build it without warnings" "$out"; continue
    fi
    for db in build-cpu build-gpu; do
      grep -q "\"file\": \"$p/model.cu\"" "$p/$db/compile_commands.json" ||
        { fail "$db did not compile $p/model.cu" "$(grep '"file"' "$p/$db/compile_commands.json")"; continue 2; }
    done
    [ "$(sha256sum "$p/model.cu" | cut -d' ' -f1)" = "$before" ] || { fail "model.cu changed between the builds"; continue; }
    # Without cuDNN every convolution takes the im2col path: that build must compile too.
    if ! out=$(cmake -S "$p" -B "$p/build-gpu-im2col" -DKILN_MODEL_ON_CPU=OFF -DKILN_MODEL_CUDNN=OFF \
        -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DCMAKE_CUDA_FLAGS="-Werror all-warnings -Xcompiler=-Werror" 2>&1 && cmake --build "$p/build-gpu-im2col" 2>&1); then
      fail "nvcc does not build it without cuDNN" "$out"; continue
    fi
    [ "$(sha256sum "$p/model.cu" | cut -d' ' -f1)" = "$before" ] || { fail "model.cu changed between the builds"; continue; }
    nvcc_note="nvcc: built with and without cuDNN, the same model.cu"
  elif [ "${CI:-}" = "true" ]; then
    fail "no nvcc (under CI it must be there: /usr/local/cuda/bin/nvcc)"; continue
  fi
  echo "  ok    cuda $label (host check passed$cudnn_note; $nvcc_note)"
  rm -rf "$work"
done
exit $((failed > 0))
