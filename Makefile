# kiln: two commands do all the set-up (see README.md).
#   make        build into build/ (the CLI is build/kiln)
#   make demo   install what is missing, build, run a real model
#   make test   install what is missing, build, run every test
BUILD ?= build
JOBS ?= $(shell nproc)
SHARED_MODELS ?= ../shared/models

.PHONY: all deps configure build demo test unit conformance models clean

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

clean:
	rm -rf $(BUILD)
