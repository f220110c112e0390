# kiln: two commands do all the set-up (see README.md).
#   make        build into build/ (the CLI is build/kiln)
#   make demo   install what is missing, build, run a real model
#   make test   install what is missing, build, run every test
#   make test-codegen  every shared model emitted as C++ (--target cpp), built and checked
#   make test-cuda     every shared model emitted as CUDA (--target cuda): host check and nvcc build
#   make python        the Python module (python/), installed into a venv: $(BUILD)/venv
BUILD ?= build
JOBS ?= $(shell nproc)
SHARED_MODELS ?= ../shared/models

.PHONY: all deps configure build demo test test-codegen test-cuda python kernel-bench asan tsan fuzz fuzz-run clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

configure: $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

demo: deps
	@$(MAKE) --no-print-directory build
	@bash scripts/demo.sh $(BUILD)/kiln

test: deps
	@$(MAKE) --no-print-directory build
	@bash scripts/test.sh $(BUILD) $(SHARED_MODELS)

# Code generation on every shared model: each emitted as a C++ project twice (calling oneDNN
# where the plan does, and with --no-onednn: portable kernels, no dependency), built outside the
# repository, run against its test data (scripts/test-codegen.sh).
CODEGEN_MODELS ?= $(notdir $(patsubst %/,%,$(dir $(wildcard $(SHARED_MODELS)/*/model.onnx))))
test-codegen: build
	@bash scripts/test-codegen.sh $(BUILD) $(SHARED_MODELS) $(CODEGEN_MODELS) $(addsuffix :--no-onednn,$(CODEGEN_MODELS))

# The CUDA target on every shared model: each emitted, built as host C++ through the CUDA shim and
# checked against its test data under ASan and UBSan, and compiled with nvcc (scripts/test-cuda.sh;
# no GPU needed).
test-cuda: build
	@KILN_CUDA_SANITIZE=1 KILN_CUDA_CUDNN_SHIM=1 bash scripts/test-cuda.sh $(BUILD) $(SHARED_MODELS) $(CODEGEN_MODELS) squeezenet1_1:--streams,1

# The Python module (python/): kiln installed into $(BUILD)/python-prefix, a venv over Debian's
# Python with its numpy ($(BUILD)/venv), and the module built against the installed library
# with pip (offline: --no-build-isolation --no-index). Then: $(BUILD)/venv/bin/python.
python: deps
	@$(MAKE) --no-print-directory build
	@bash scripts/make-python.sh $(BUILD)

# Per-kernel microbenchmarks (bench/kernels/; needs libbenchmark-dev): build/kiln_kernel_bench.
kernel-bench: configure
	cmake --build $(BUILD) -j $(JOBS) --target kiln_kernel_bench

# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/).
asan: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE=address
	cmake --build build-asan -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  bash scripts/test.sh build-asan $(SHARED_MODELS)

# The concurrency tests (one session, many threads) under ThreadSanitizer (build-tsan/).
tsan: deps
	cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE=thread
	cmake --build build-tsan -j $(JOBS) --target test_runtime test_backends
	TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/test_runtime --gtest_filter='SessionPlans.*'
	TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/test_backends --gtest_filter='CpuKernels.ConvWinograd*:CpuKernels.ConvChainConcurrentCallers'

# libFuzzer targets (fuzz/, build-fuzz/; clang, ASan+UBSan): fuzz_load (load + verify + shape
# inference + optimizer), fuzz_compile (session creation on the CPU backend: lowering passes,
# executable plan, kernels) and fuzz_kiln (damaged .kiln files: loaded and run).
# `make fuzz` builds them; `make fuzz-run FUZZ_TIME=1800 [FUZZ_TARGET=fuzz_compile]` fuzzes
# (docs/reliability.md).
FUZZ_TIME ?= 1800
FUZZ_TARGET ?= fuzz_load
fuzz:
	cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
	  -DKILN_SANITIZE=fuzzer -DKILN_TESTS=OFF
	cmake --build build-fuzz -j $(JOBS) --target fuzz_load fuzz_compile fuzz_kiln make_seeds

fuzz-run: fuzz
	bash scripts/fuzz.sh build-fuzz $(SHARED_MODELS) $(FUZZ_TIME) $(FUZZ_TARGET)

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
