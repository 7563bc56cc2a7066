/*
 * plan.h - the CUDA backend's one plan type, shared by its host files:
 * plan.c makes, frees and launches plans; runtime.c runs them on device or
 * host memory and times them; device.c holds what they all share (errors,
 * devices, uploads). Plain C.
 */
#ifndef CONVOLVE_CUDA_PLAN_H
#define CONVOLVE_CUDA_PLAN_H

#include "../problem.h"
#include "fast_fft.h"
#include "gen_plan.h"
#include "kernels.h"

#include <cuda_runtime_api.h>

/* The device-side plan of one strategy for one problem. */
typedef struct cvcu_plan {
    const cvi_strategy *strategy; /* its id is a CVK_* */
    int device;                   /* the device current when the plan was made */
    int multiprocessors;          /* of that device (0: unknown) */
    cvi_problem p;                /* the problem; its weights and taps point into this plan */
    double *weights, *taps[3];    /* owned copies */
    size_t in_esize, out_esize;
    int in_packed, out_packed; /* the caller's layouts are contiguous C order */
    cvk_args args;             /* the caller's layouts, strides in elements */
    size_t smem;               /* chapter kernels: dynamic shared memory per block */
    cvk_bank *bank;            /* weights in the filter bank, or NULL */
    void *d_weights;           /* weights in device memory (basic, and the fast
                                   direct kernels' fallback when the bank is too small) */
    cvk_fft_plan *fft;         /* fft: cuFFT plans, buffers and the filter's spectrum */
    cvcu_gen_plan *gen;        /* direct, separable: the generated kernels (gen.c), when
                                   they run it; else the legacy ones (fast_direct*.cu) */
    int batch2d;               /* direct, separable: a batched 2-D kernel serves the
                                   filter (plan.c batch2d_serves); the arrays' layout
                                   decides at each launch (batched2d) */
    char message[256];         /* what a failed fast launch said */
    /* convolve_execute's host packing buffers for strided layouts: made by
     * its first call, kept for the next (its device images: device_images.h) */
    void *h_in, *h_out;
    struct cvcu_stream_cache *stream; /* the streamed executor's workers (stream.c) */
    void (*stream_free)(struct cvcu_stream_cache *); /* frees `stream` (set with it) */
} cvcu_plan;

/* ---- device.c ---- */

/* Records CUDA error e as DEVICE (or DEVICE_OUT_OF_MEMORY) on ctx, naming
 * `what`; returns that status. */
convolve_status cvcu_error(convolve_context *ctx, cudaError_t e, const char *what);

/* Makes the plan's device current; *prev receives the device to restore
 * with cvcu_leave_device. */
cudaError_t cvcu_enter_device(const cvcu_plan *plan, int *prev);
void cvcu_leave_device(const cvcu_plan *plan, int prev);

/* Copies `bytes` bytes of weights (or any constant data) from host memory
 * to new device memory *device, and synchronises: a copy from pageable
 * memory may return before its DMA lands, and kernels on the caller's
 * (non-blocking) streams must see it done. The one upload of weights of the
 * CUDA backend. Errors: DEVICE, DEVICE_OUT_OF_MEMORY (*device then NULL). */
convolve_status cvcu_upload(convolve_context *ctx, const void *host, size_t bytes, void **device);

/* ---- plan.c ---- */

/* Launches the plan's kernel on the device arrays of a (pointers and
 * element strides as the chapter's kernels take them) on stream. A layout
 * the legacy fast direct kernels cannot take (they want interleaved,
 * contiguous rows) runs the chapter's constant or basic kernel instead. Returns the
 * launch's error; plan->message may say more. */
cudaError_t cvcu_launch(cvcu_plan *plan, const cvk_args *a, cudaStream_t stream);

/* Records a failed launch of the plan on ctx; returns the status. */
convolve_status cvcu_launch_error(convolve_context *ctx, const cvcu_plan *plan, cudaError_t e);

#endif
