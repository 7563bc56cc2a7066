# The two set-up commands of the README, and a few conveniences.
#   make demo   build, then blur the bundled photo
#   make test   build, then run every test (GPU tests report "skipped" without a GPU)
#   make test-sanitize   the same tests, host code built with AddressSanitizer
#               and UndefinedBehaviorSanitizer, without CUDA (in build-sanitize)
#   make test-emu   the CUDA kernels' tests (small cases) on the CPU emulation of
#               tests/emu, and MPI with boxes on emulated devices, no GPU needed (in build-emu)
#   make python          build the Python package into build/python (part of
#               build; this builds the package and the static library only)
#   make install-python  that, then copy it into the interpreter's site directory
#               (docs/python.md; PYTHON=/path/to/python3 picks the interpreter)
#   make format  rewrite the tracked C, C++ and CUDA files with clang-format 14
#               as .clang-format says (scripts/check_format.sh checks them; CI)
# Variables: BUILD (the build folder), JOBS, CMAKE_FLAGS (more -D options),
#   PYTHON (above: a path, or a name looked up on PATH, that must exist; the
#   choice stays in $(BUILD)'s CMake cache, and a later PYTHON replaces it,
#   the site directory install-python uses included; CMAKE_FLAGS naming the
#   interpreter too, -DCONVOLVE_PYTHON=..., is refused beside PYTHON),
#   CUDA=OFF (leave the CUDA backend out: a CPU-only build, much faster to
#   build where nvcc is installed; CUDA=ON puts it back; the choice stays in
#   $(BUILD)'s CMake cache; an environment variable CUDA of another value is
#   not taken for it).
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
ifdef PYTHON
PYTHON_IN_FLAGS := $(filter -DCONVOLVE_PYTHON=% -DCONVOLVE_PYTHON:% CONVOLVE_PYTHON=% CONVOLVE_PYTHON:%,$(CMAKE_FLAGS))
ifneq ($(PYTHON_IN_FLAGS),)
$(error PYTHON=$(PYTHON) and CMAKE_FLAGS' $(PYTHON_IN_FLAGS) both name the interpreter: give one of them)
endif
# a path (made absolute: CMake runs in another folder), or a name on PATH
PYTHON_EXE := $(if $(findstring /,$(PYTHON)),$(abspath $(PYTHON)),$(shell command -v '$(PYTHON)' 2>/dev/null))
ifeq ($(shell test -x '$(PYTHON_EXE)' && test -f '$(PYTHON_EXE)' && echo yes),)
$(error PYTHON=$(PYTHON): not found (an interpreter's path, or a name on PATH))
endif
override CMAKE_FLAGS += -DCONVOLVE_PYTHON=$(PYTHON_EXE)
endif
ifneq ($(filter ON OFF,$(CUDA)),)
override CMAKE_FLAGS += -DCONVOLVE_WITH_CUDA=$(CUDA)
else ifeq ($(origin CUDA),command line)
$(error CUDA=$(CUDA): give ON or OFF)
endif

.PHONY: all build demo test test-sanitize test-emu clean python install-python format
all: build

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	./$(BUILD)/convolve demo $(BUILD)/grace_hopper_blurred.png

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-sanitize:
	cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCONVOLVE_SANITIZE=ON \
	      -DCONVOLVE_WITH_CUDA=OFF
	cmake --build build-sanitize -j $(JOBS)
	cd build-sanitize && ctest --output-on-failure -j $(JOBS)

test-emu:
	cmake -S . -B build-emu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCONVOLVE_CUDA_EMULATOR=ON
	cmake --build build-emu -j $(JOBS) --target test_gpu_strategies test_gpu_fast test_gpu_direct test_gpu_stream \
	      test_gpu_cast
	if cmake --build build-emu --target help | grep -q test_mpi_exact; then \
	    cmake --build build-emu -j $(JOBS) --target test_mpi_exact; fi
	cd build-emu && ctest -L emu --output-on-failure -j $(JOBS)

python:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target convolve_python

install-python: python
	cmake --install $(BUILD) --component python

format:
	CONVOLVE_REQUIRE_FORMAT=1 bash scripts/check_format.sh --fix

clean:
	rm -rf $(BUILD) build-sanitize build-emu build-pip
