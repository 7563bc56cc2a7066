/*
 * stream.h - streamed execution on host memory (issue 12), what the core
 * (src/stream.c, which implements it) shares with a backend's streamed
 * executor: a job cut into slabs along the slowest axis of the canonical
 * problem, the geometry of each slab's extended-row buffer, the sub-problem
 * such a buffer is, the gathering of input rows into it and the scattering
 * of its exact output rows, the shared slab counter, and progress,
 * cancellation and errors of the workers (one per device).
 *
 * A slab computes output rows [r0, r1) along axis `axis`. Its input buffer
 * holds the extended rows [ext_lo, ext_lo + ext_rows) of the global array,
 * each mapped by the mode (cvi_boundary_index), so that filters longer than
 * the slab or the array, and every mode's global edges, are exact; in
 * CONSTANT mode the range is clipped to the array instead and the
 * sub-problem's own CONSTANT edge gives cval. The buffer is an ordinary
 * problem (same strategy, mode, filter, packed C order) of ext_rows rows;
 * its output rows [out_first, out_first + r1 - r0) are exact and the only
 * ones copied back.
 *
 * The CPU backend's slabs, not in place, need none of this: each is a
 * window of the job's own problem (execute_host_rows, src/backend.h), its
 * output rows computed where they lie from the caller's input.
 *
 * In place (in == out, the same bytes): a slab's buffer rows outside its
 * own output rows (its halo) map, through the mode, to array rows that
 * another slab may already have overwritten. Before any slab runs, each
 * such array row (read by a slab it does not belong to) is copied once to
 * a store, and gathered from there; rows that map into the reading slab's
 * own rows come from the array. The store holds at most the array's rows.
 */
#ifndef CONVOLVE_STREAM_H
#define CONVOLVE_STREAM_H

#include "problem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Slab buffer sets per device in the pipelined executor (counted in the
 * device budget). */
#define CVI_STREAM_BUFFERS 3

/* Host arrays of at least this many bytes in and out stream through a
 * device even when they fit it at once (cvi_stream_choose): faster from a
 * few MiB on (docs/scale.md). */
#define CVI_STREAM_MIN_BYTES ((size_t)8 << 20)
/* The pinned staging a slot aims at (cvi_stream_staging_bytes). */
#define CVI_STREAM_STAGING_BYTES ((size_t)16 << 20)

typedef struct cvi_slab {
    size_t index;
    size_t r0, r1;    /* output rows [r0, r1) along the slab axis */
    ptrdiff_t ext_lo; /* the first extended input row (may lie outside) */
    size_t ext_rows;  /* rows in the buffer */
    size_t out_first; /* the buffer's first exact output row (r0 - ext_lo) */
} cvi_slab;

/* In place: array rows [lo, hi) along the slab axis, saved at store rows
 * [at, at + hi - lo). A job's runs are sorted and disjoint. */
typedef struct cvi_store_run {
    size_t lo, hi, at;
} cvi_store_run;

typedef struct cvi_stream_job cvi_stream_job;

struct cvi_stream_job {
    /* what the backend reads */
    const cvi_problem *problem;   /* the whole problem, in the caller's layouts */
    const cvi_strategy *strategy; /* the plan's strategy: every slab runs it */
    const void *in;               /* the caller's arrays */
    void *out;
    int axis;         /* the slab axis: 3 - ndim */
    size_t rows;      /* the problem's extent along it */
    size_t slab_rows; /* output rows per slab (the last may have fewer) */
    size_t slab_count;
    size_t max_ext_rows;                /* the most rows a slab's buffer holds */
    size_t row_elems;                   /* values per row: the other axes' extents x channels */
    size_t in_row_bytes, out_row_bytes; /* a packed row of input, of output */
    int in_packed, out_packed;          /* the caller's rows are packed C order (a row of
                                       the input starts in + row * in_row_bytes) */
    int worker_count;                   /* one worker per device */
    size_t device_budget;               /* device bytes the plan may use on each device */
    const int *devices;                 /* worker w runs on devices[w]; NULL: the current one */
    const cvi_device *worker_device;    /* worker_count probes (one per device) */
    convolve_context **worker_ctx;      /* worker w's own context (errors, sub-plans) */
    int host_threads;                   /* CPU threads a worker may use to gather and scatter */
    void *backend_state;                /* the plan's state from the backend's prepare (the
                                       executor may keep resources there) */
    int in_place;                       /* in == out: a slab reads only its own rows
                                       [r0, r1) from the array, its other rows
                                       from halo_store (cvi_stream_gather) */
    const char *halo_store;             /* in place: the rows of store_runs, packed,
                                       saved before any slab ran (NULL: none) */
    const cvi_store_run *store_runs;    /* in place: which array rows the store holds */
    size_t store_run_count;
    struct cvi_stream_state *state; /* the core's: counters, progress, errors */
};

/* The pinned staging a slot of the CUDA backend's streamed runs aims at
 * (its extended input rows and output rows): CVI_STREAM_STAGING_BYTES, or
 * CONVOLVE_STREAM_STAGING_MIB MiB (a measuring aid; 1 to 4096). Slabs on
 * one device are made no thicker than that holds (unless that leaves them
 * thinner than 4 halos) and the pinned pool's buffers no smaller, so that
 * after the first streamed run of a process every shape finds its staging
 * pinned. */
size_t cvi_stream_staging_bytes(void);

/* The geometry of slab `index` (< job->slab_count). */
void cvi_stream_slab(const cvi_stream_job *job, size_t index, cvi_slab *slab);

/* *sub = the problem of a buffer of ext_rows rows: the job's problem with
 * that extent along the slab axis and packed C-order layouts (channels
 * interleaved). Its weights and taps point into the job's problem. */
void cvi_stream_subproblem(const cvi_stream_job *job, size_t ext_rows, cvi_problem *sub);

/* Writes buffer rows [row_begin, row_end) of the slab's input (packed, in
 * the input type) to dst (the buffer's start); in place, rows that map to
 * another slab's rows come from the job's store. Uses up to `threads`
 * OpenMP threads. */
void cvi_stream_gather(const cvi_stream_job *job, const cvi_slab *slab, size_t row_begin,
                       size_t row_end, void *dst, int threads);

/* Copies the slab's exact output rows from src (packed: row r0 first) to the
 * caller's output. Uses up to `threads` OpenMP threads. */
void cvi_stream_scatter(const cvi_stream_job *job, const cvi_slab *slab, const void *src,
                        int threads);

/* Faults in every page of the caller's output (packed rows, not in place)
 * for writing without changing it (MADV_POPULATE_WRITE, or where the
 * kernel lacks it an atomic add of zero to one byte a page), with up to
 * `threads` OpenMP threads, each taking whole 2 MiB-aligned chunks (or,
 * for an output of less than 2 MiB a thread, an equal share in 64 KiB
 * steps): the page faults of a newly allocated output (numpy's, with
 * transparent huge pages asked for) are taken in parallel, no two threads
 * on one huge page where there are enough of them, rather than in the
 * scatters, whose threads split a slab's rows and wait on each other's
 * faults. Does nothing for an output past 2 GiB or a sixteenth of the
 * host's memory: one mapped from a larger file, whose pages the CLI's
 * progress callback gives back as slabs land, stays bounded. */
void cvi_stream_prefault_out(const cvi_stream_job *job, int threads);

/* Faults in the pages of [begin, begin + bytes) for writing, their bytes
 * unchanged, with up to `threads` OpenMP threads in chunks on their own
 * 2 MiB boundaries (as cvi_stream_prefault_out, whatever the size). */
void cvi_prefault_range(char *begin, size_t bytes, int threads);

/* 0 when a page of [begin, begin + bytes) is known not to be in memory
 * (mincore on 8 pages spread over the range: a new allocation, or a file
 * not in the page cache), else 1. */
int cvi_pages_resident(const char *begin, size_t bytes);

/* Scatters slab `done`'s output rows from src (as cvi_stream_scatter) and
 * gathers slab `next`'s whole buffer into dst (as cvi_stream_gather) at
 * once, the threads shared between the two in proportion to their bytes,
 * so that host copies out and in overlap each other (and the device's
 * copies of other slabs). Either slab may be NULL; in place, one after the
 * other. */
void cvi_stream_exchange(const cvi_stream_job *job, const cvi_slab *done, const void *src,
                         const cvi_slab *next, void *dst, int threads);

/* The next slab a worker should take (thread-safe), or 0 when none is left
 * or the job stops (cancelled or failed); *index receives it. With a
 * progress callback and workers on their own threads, it waits while the
 * slabs handed out run more than CVI_STREAM_LAG_SLABS per worker ahead of
 * those the callback has returned from: a callback that releases memory
 * (the CLI's mapped pages) bounds what the run holds however slow it is. */
int cvi_stream_next(cvi_stream_job *job, size_t *index);

/* 1 once the job stops (cancelled by the progress callback, or a worker
 * failed): slabs in flight need not be waited for. Thread-safe, lock-free. */
int cvi_stream_stopped(const cvi_stream_job *job);

/* 1 if the job has a progress callback (only then can it be cancelled). */
int cvi_stream_cancellable(const cvi_stream_job *job);

/* Worker reports: the slab's output is written (thread-safe). */
void cvi_stream_done(cvi_stream_job *job, const cvi_slab *slab);

/* Worker w failed with status (its message on job->worker_ctx[w]): the job
 * stops; the first failure is the one reported. Returns status. */
convolve_status cvi_stream_fail(cvi_stream_job *job, int worker, convolve_status status);

/* Worker reports: it has ended (thread-safe; after its last cvi_stream_done). */
void cvi_stream_worker_exit(cvi_stream_job *job);

/* On the calling thread, while the workers run: calls the progress callback
 * as slabs complete (cancelling when it asks) until `workers` workers have
 * called cvi_stream_worker_exit. */
void cvi_stream_monitor(cvi_stream_job *job, int workers);

#ifdef __cplusplus
}
#endif

#endif
