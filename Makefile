# The two set-up commands of the README, and a few conveniences.
#   make demo   build, then blur the bundled photo
#   make test   build, then run every test (GPU tests report "skipped" without a GPU)
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all build demo test clean
all: build

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	./$(BUILD)/convolve demo $(BUILD)/grace_hopper_blurred.png

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD)
