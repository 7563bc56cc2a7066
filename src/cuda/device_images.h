/*
 * device_images.h - the process's idle device buffers for one-shot
 * executions on host arrays (runtime.c, cvcu_execute_host): an execution
 * takes its two device images here and gives them back when it ends, so
 * that a plan's first execution (a new shape) finds them made by earlier
 * executions of any plan on the device instead of allocating its own.
 */
#ifndef CONVOLVE_CUDA_DEVICE_IMAGES_H
#define CONVOLVE_CUDA_DEVICE_IMAGES_H

#include <cuda_runtime_api.h>
#include <stddef.h>

/* The pitch (bytes between rows) of a device image of rows of `width`
 * bytes: width itself for one row or one dimension (ndim 1), else width
 * rounded up to 128 bytes (16 below 128 bytes). */
size_t cvcu_image_pitch(int ndim, size_t width, size_t rows);

/* *ptr = a buffer of at least `bytes` bytes (bytes > 0) on `device`, the
 * current device, *cap its size: the smallest idle one of that device that
 * holds it, else a new one (cudaMalloc of bytes rounded up: 1 MiB at
 * least, then eighths of a power of two). Where the device has no room,
 * its idle buffers are freed and the allocation tried once more.
 * Thread-safe. Errors: those of cudaMalloc (*ptr is then NULL). */
cudaError_t cvcu_image_take(int device, size_t bytes, void **ptr, size_t *cap);

/* Gives back a buffer of cvcu_image_take (NULL: nothing), no work on it
 * pending: kept idle for the next execution, up to CVCU_IMAGES_KEPT buffers
 * and CVCU_IMAGES_KEPT_BYTES bytes in all (the buffers given back longest
 * ago freed first), else freed. `device` must be current. Thread-safe. */
void cvcu_image_give(int device, void *ptr, size_t cap);

/* Frees the idle buffers of `device` (current); returns how many. */
int cvcu_image_release_idle(int device);

/* The idle buffers now, and the buffers allocated so far (tests). */
void cvcu_image_stats(int *idle, unsigned long *made);

#define CVCU_IMAGES_KEPT 8
#define CVCU_IMAGES_KEPT_BYTES ((size_t)128 << 20)

#endif
