/*
 * backend.h - the one interface between the core and a backend: a table of
 * the backend's strategies and of the calls that pick, prepare, run, time
 * and release a plan. The CPU backend (src/cpu/) and the CUDA backend
 * (src/cuda/) each define one; a build without CUDA has an empty CUDA table
 * (src/cuda/unavailable.c). The core (plan.c, measure.c, tune.c) calls
 * through these tables only.
 */
#ifndef CONVOLVE_BACKEND_H
#define CONVOLVE_BACKEND_H

#include "problem.h"
#include "stream.h"

typedef struct cvi_backend {
    convolve_backend id;
    const cvi_strategy *strategies; /* strategy_count entries (NULL, 0: none) */
    size_t strategy_count;

    /* Fills *dev (info.available = 0 with a reason when no device can be
     * used). Never fails. NULL for a backend without a device. */
    void (*probe)(cvi_device *dev);

    /* The strategy "auto" picks for p, or NULL when none serves (why then
     * says what limits were hit). dev: the probed device (may be NULL). */
    const cvi_strategy *(*pick)(const cvi_device *dev, const cvi_problem *p, char *why,
                                size_t why_size);

    /* Makes the per-plan state of strategy s (of this backend) for p, or for
     * a slab of p (a streamed job's sub-problem), copying or keeping what it
     * needs (p and its arrays outlive the state). s serves p on dev: the
     * core checked (cvi_strategy_check, or the backend's own pick), and
     * prepare does not check again. Errors: UNSUPPORTED, OUT_OF_MEMORY,
     * DEVICE, DEVICE_OUT_OF_MEMORY, with the message on ctx. */
    convolve_status (*prepare)(convolve_context *ctx, const cvi_device *dev, const cvi_strategy *s,
                               const cvi_problem *p, void **state);

    /* Runs on host memory laid out as the problem says; returns when out is
     * written. */
    convolve_status (*execute_host)(convolve_context *ctx, void *state, const void *in, void *out);

    /* Runs on device memory laid out as the problem says, on a cudaStream_t,
     * asynchronously. NULL for a backend without a device. */
    convolve_status (*execute_device)(convolve_context *ctx, void *state, const void *in, void *out,
                                      void *stream);

    /* Times `runs` executions on resident data where the backend computes
     * (host memory for the CPU, device memory for CUDA) after `warmup`;
     * times_ms[0..runs-1] receives each. */
    convolve_status (*benchmark)(convolve_context *ctx, void *state, int warmup, int runs,
                                 double *times_ms);

    /* Frees a state from prepare; NULL is accepted. */
    void (*release)(void *state);

    /* Where p would run, for the autotune's wisdom keys ("cpu:2-threads",
     * "cuda:NVIDIA H100 80GB HBM3"): printable text. */
    void (*device_key)(const cvi_device *dev, const cvi_problem *p, char *key, size_t size);

    /* Device-to-device copy bandwidth (bytes read + written per second, in
     * GB/s). NULL for a backend without a device. */
    convolve_status (*copy_bandwidth)(convolve_context *ctx, size_t bytes, int runs,
                                      double *gb_per_s);
    /* A rough estimate, in milliseconds, of one execution of p on host
     * memory (copies to and from a device included), made without touching
     * any device, for AUTO's choice of backend; `started`: the device is
     * already initialised in this context (otherwise the estimate includes
     * starting it). NULL: no estimate. */
    double (*estimate_ms)(const cvi_problem *p, int started);

    /* Number of devices of the host (0 when none can be found). Never fails.
     * NULL for a backend without a device. */
    int (*device_count)(void);

    /* Fills *dev for device `index` (0 <= index < device_count()) as probe
     * does for the current device. NULL for a backend without a device. */
    void (*probe_index)(int index, cvi_device *dev);

    /* Free and total bytes of device memory on device `index`.
     * Errors: DEVICE. NULL for a backend without a device. */
    convolve_status (*memory_info)(convolve_context *ctx, int index, size_t *free_bytes,
                                   size_t *total_bytes);

    /* Pins host memory for the devices (cudaHostRegister), and unpins it.
     * Errors: INVALID_ARGUMENT (already registered, or not), DEVICE. NULL
     * for a backend without a device. */
    convolve_status (*host_register)(convolve_context *ctx, void *ptr, size_t bytes);
    convolve_status (*host_unregister)(convolve_context *ctx, void *ptr);

    /* convolve_host_alloc, _free and _reserve past the API's checks
     * (bytes > 0): pinned memory of the process's pool. host_alloc with
     * pooled_only sets *ptr = NULL when the pool holds none that fits.
     * Errors: DEVICE_OUT_OF_MEMORY, DEVICE. NULL for a backend without a
     * device. */
    convolve_status (*host_alloc)(convolve_context *ctx, size_t bytes, int pooled_only, void **ptr);
    void (*host_free)(void *ptr);
    void (*host_reserve)(size_t bytes);

    /* Runs job (src/stream.h) on host memory: its slabs, each an ordinary
     * problem of this backend's strategy job->strategy, spread over
     * job->devices, pipelined; progress and cancellation through
     * cvi_stream_report. NULL: the core runs the slabs one after another
     * through prepare and execute_host (the CPU backend). */
    convolve_status (*execute_host_streamed)(convolve_context *ctx, cvi_stream_job *job);

    /* Runs the outputs of rows [r0, r1) along the slowest axis of the plan's
     * whole problem (its window, cvi_problem.win_lo/win_hi) on host memory
     * laid out as the problem says: the bytes execute_host writes there, and
     * nothing elsewhere; the input is read wherever the filter reaches.
     * *memo is NULL before an execution's first window; the backend may
     * leave there what its later windows share (choices that read the whole
     * input, made once; buffers), which rows_end frees after the last (or
     * a failure). NULL: no windows (the core streams sub-problems instead). */
    convolve_status (*execute_host_rows)(convolve_context *ctx, void *state, const void *in,
                                         void *out, size_t r0, size_t r1, void **memo);
    void (*rows_end)(void *state, void *memo);

    /* What a window costs beyond its rows, for the choice of slab size:
     * windows should start at multiples of *align rows (a window that cuts
     * the backend's tiles computes them twice), and each repeats about
     * *extra rows of work. For execute_host_streamed, streamed slabs must
     * start at multiples of *align rows (else their outputs may round
     * otherwise than the one-shot run's). NULL: 1 and 0. */
    void (*window_cost)(void *state, size_t *align, size_t *extra);

    /* A rough estimate, in milliseconds, of one host execution of the
     * prepared plan (its own strategy, its threads), for the size of the
     * slabs a progress callback is called between. NULL: estimate_ms. */
    double (*plan_estimate_ms)(void *state);
} cvi_backend;

/* The two backends' tables (src/cpu/dispatch.c, src/cuda/backend.c or
 * src/cuda/unavailable.c). */
extern const cvi_backend cvcpu_backend;
extern const cvi_backend cvcu_backend;

/* The table of backend CPU or CUDA (AUTO is not a backend). */
const cvi_backend *cvi_backend_of(convolve_backend id);

#endif
