/*
 * jit.h - run-time compilation of the generated kernels (gen_kernels.cuh)
 * with NVRTC, loaded with dlopen so that a libconvolve without NVRTC still
 * works (on its precompiled kernels). Compiled kernels are kept in memory
 * for the process and on disk (the XDG cache directory), keyed by the
 * kernel's name, the sources' hash, the NVRTC version and the device's
 * architecture; files are written atomically (temporary file, rename), so
 * concurrent processes are safe, and checked on reading (magic, key,
 * checksum), so a corrupt entry is rebuilt, never trusted.
 *
 * Environment: CONVOLVE_JIT=0 turns run-time compilation off;
 * CONVOLVE_CACHE_DIR names the disk cache's folder ("" for none; default
 * $XDG_CACHE_HOME/convolve, else $HOME/.cache/convolve);
 * CONVOLVE_JIT_DEFINES adds NVRTC options (e.g. "-DCVK_GEN_MIN_BLOCKS=3"),
 * for tuning experiments.
 */
#ifndef CONVOLVE_CUDA_JIT_H
#define CONVOLVE_CUDA_JIT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * *fn receives the kernel `name` (a template instance from the generated
 * sources, e.g. "cvk_gen_tile<float, float, 0, 1, 3, 3, 1, 1, 0, 4, 4, 32, 8, 9>")
 * compiled for compute capability major.minor, as a cudaKernel_t to pass to
 * cudaLaunchKernel (as const void *). Thread-safe. Returns 0 on success;
 * else -1 with a message (NVRTC missing or failing, CUDA errors).
 */
int cvcu_jit_kernel(const char *name, int major, int minor, const void **fn, char *msg,
                    size_t msg_size);

#ifdef __cplusplus
}
#endif

#endif
