/*
 * internal.h - what only the core (the .c files of src/) sees: the object structs behind
 * the public handles (context, filter, plan), the CUDA device probe and the
 * strategy registry. Backends and readers include problem.h instead.
 * Nothing here is public.
 */
#ifndef CONVOLVE_INTERNAL_H
#define CONVOLVE_INTERNAL_H

#include "problem.h"

#define CVI_MESSAGE_SIZE 1024

/* ---- context ---------------------------------------------------------- */

struct convolve_context {
    char message[CVI_MESSAGE_SIZE]; /* last error; "" after a success */
    int cuda_probed;                /* 1 once the device was looked at */
    cvi_device cuda;                /* what the probe found */
    struct cvi_wisdom *wisdom;      /* autotune results (wisdom.c), or NULL */
    size_t max_pixels;              /* image readers' limit; 0: none (io/array.c) */
    int png_compression;            /* zlib level of PNG writes (io/png.c) */
};

/* Probes the CUDA device once; returns ctx->cuda.info.available. */
int cvi_cuda_usable(convolve_context *ctx);

/* 1 if CUDA's start-up is paid: this context probed the device, or some
 * context of the process found a usable one (the Python package makes a
 * context a plan). Thread-safe. */
int cvi_cuda_started(const convolve_context *ctx);

/* The milliseconds AUTO has forgone so far in this process: what a started
 * GPU would have saved (measured CPU time less the GPU's estimate) on
 * executions of plans given to the CPU because CUDA's start-up was counted
 * (src/plan.c, rent_or_move). Thread-safe. */
double cvi_auto_forgone_ms(void);

/* ---- filters ------------------------------------------------------------ */

struct convolve_filter {
    int ndim;
    size_t shape[CONVOLVE_MAX_DIMS];
    size_t count;                    /* product of shape */
    double *dense;                   /* count weights, C order; NULL when made separable */
    int separable;                   /* taps[] valid: given separable, or rank one found */
    int given_separable;             /* made by convolve_filter_create_separable */
    double *taps[CONVOLVE_MAX_DIMS]; /* shape[a] weights each, when separable */
};

/* ---- strategies --------------------------------------------------------- */

/* The strategy of that name on backend CPU or CUDA, or NULL (strategy.c). */
const cvi_strategy *cvi_strategy_find(convolve_backend backend, const char *name);

/* ---- plans -------------------------------------------------------------- */

struct convolve_plan {
    convolve_context *ctx;
    convolve_layout in, out;
    cvi_problem problem;
    double *weights; /* owned storage behind problem.weights */
    double *taps[3]; /* owned storage behind problem.taps */
    const cvi_strategy *strategy;
    const struct cvi_backend *backend; /* strategy's backend (src/backend.h) */
    void *state;                       /* what its prepare made */
    int cpu_fallback;                  /* AUTO, no strategy named: on device out of
                                   memory, move to the CPU (convolve_execute) */
    double rent_gpu_ms, rent_start_ms; /* AUTO on the CPU only for CUDA's start-up: a
                                   started GPU's estimate of an execution, and the
                                   start-up (> 0 while renting: convolve_execute moves
                                   the plan once the time forgone pays for it) */
    size_t budget;                     /* options.device_memory_budget */
    int budget_deferred;               /* the automatic budget not asked yet: small
                                   arrays out of place on the current device run in
                                   one shot without it (plan.c, choose_budget) */
    int *devices, device_count;        /* a CUDA plan's devices (0: the current one) */
    cvi_device *device_probes;         /* what probing them found: made by the first
                                   streamed execution, kept (stream.c) */
    convolve_progress_fn progress;     /* options.progress and its pointer */
    void *progress_user;
    size_t in_place_extra; /* the last in-place execution: host bytes it took
                                   beyond the array (the store and slab buffers, or
                                   the temporary copy) */
    size_t in_place_store; /* ... of which the store of rows other slabs read */
};

/* ---- streamed execution (stream.c) ----------------------------------------- */

/* The budget CONVOLVE_DEVICE_BUDGET gives (bytes, K/M/G suffixes), or 0. */
size_t cvi_stream_env_budget(void);

/* Whether convolve_execute streams the plan: *slab_rows = output rows per
 * slab, or 0 for one shot. CPU plans stream only with a progress callback
 * and more than a slab of input (about 64 MiB; CONVOLVE_CPU_SLAB_BYTES
 * changes it) or of time (about 25 ms by the backend's plan_estimate_ms);
 * CUDA plans when the one-shot run would not fit plan->budget
 * or devices are listed; in place (in_place, out == in), the slabs it
 * would run in (one, if need be), which convolve_execute weighs against a
 * temporary copy. Errors: DEVICE_OUT_OF_MEMORY (the budget holds no slab). */
convolve_status cvi_stream_choose(convolve_plan *plan, int in_place, size_t *slab_rows);

/* In place, in slabs of slab_rows rows: *bytes = the host memory the run
 * takes beyond the array, the store of the rows other slabs read and the
 * slab buffers (SIZE_MAX past size_t). Errors: OUT_OF_MEMORY. */
convolve_status cvi_stream_in_place_bytes(convolve_plan *plan, size_t slab_rows, size_t *bytes);

/* Runs the plan in slabs of slab_rows rows: through the backend's
 * execute_host_streamed, or one slab after another through its prepare and
 * execute_host; the progress callback is called from here. in == out runs
 * in place: the array rows a slab reads that belong to other slabs are
 * saved, once each, before any slab is written. *wrote = 1 once a slab may
 * have written output rows. Errors: the backend's, OUT_OF_MEMORY,
 * CANCELLED. */
convolve_status cvi_stream_execute(convolve_plan *plan, size_t slab_rows, const void *in, void *out,
                                   int *wrote);

/* Sorts times[0..runs-1] and summarises them (min, median, max) in *t
 * (measure.c). */
void cvi_summarise_times(double *times, int runs, convolve_timing *t);

#endif /* CONVOLVE_INTERNAL_H */
