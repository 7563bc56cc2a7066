/*
 * stream.c - streamed execution on host memory (issue 12; src/stream.h):
 * the choice of slab size, the slab geometry and sub-problems, gathering
 * extended input rows into packed buffers and scattering exact output rows
 * back, the shared slab counter, progress and cancellation, worker errors,
 * in place the store of the rows other slabs read (and what a run in slabs
 * takes beyond the array), and the core's own slab drivers for backends
 * without a pipelined executor (the CPU's): windows of the plan's own
 * problem (execute_host_rows: no buffers, no copies) when not in place,
 * else one sub-problem after another through the backend's prepare and
 * execute_host.
 */
#define _DEFAULT_SOURCE /* madvise */
#include "backend.h"
#include "internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/mman.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older headers lack it */
#endif
#endif

/* The CPU slab when a progress callback is set: about this much input, and
 * no more than about this much time by the backend's estimate, so that the
 * callback (Ctrl-C in the CLI and the Python package) is called often
 * enough on slow problems as well; a run estimated shorter than the time
 * is one slab. */
#define CVI_CPU_SLAB_BYTES ((size_t)64 << 20)
#define CVI_CPU_SLAB_MS 25.0
/* The CPU slab in place: each slab's rows are gathered into a buffer and
 * its output scattered back, which costs least with buffers of this size
 * (H100 host, 16 threads, 1-D passes of 17 taps on 4096^2 RGB in place:
 * uint8 20.6-26.7 ms against 27.4-34.2 with 64 MiB slabs, float32 19-46
 * against 36-56; 8 MiB and less slower for float32; docs/architecture.md,
 * "Measured choices"). */
#define CVI_CPU_IN_PLACE_SLAB_BYTES ((size_t)16 << 20)
/* A CPU window has at least this many times the rows of work it repeats
 * (window_cost's extra: the separable passes' rows before it). */
#define CVI_WINDOW_EXTRA_SHARE 16
/* The pipelined executor's slab: at most about this much input plus output
 * (many slabs keep the pipeline's fill and drain short; the staging, three
 * slabs a device, stays within the pinned pool's limit, so that plans of
 * any size share it: src/cuda/pinned_pool.h). */
#define CVI_DEVICE_SLAB_BYTES ((size_t)64 << 20)
/* Several devices: at least this many slabs per device (balance). */
#define CVI_SLABS_PER_DEVICE 4
/* ... in at least this many slabs, for the pipeline's fill and drain to be
 * short, but of at least CVI_STREAM_MIN_SLAB_BYTES each. */
#define CVI_STREAM_MIN_SLABS 8
#define CVI_STREAM_MIN_SLAB_BYTES ((size_t)2 << 20)
/* With a progress callback, seconds between two calls of it while no slab
 * completes (pipelined executors' monitor). */
#define CVI_STREAM_TICK_S 0.05
/* With a progress callback, slabs a worker may be handed beyond those
 * reported (its CVI_STREAM_BUFFERS in flight, and some slack). */
#define CVI_STREAM_LAG_SLABS (CVI_STREAM_BUFFERS + 2)

struct cvi_stream_state {
    pthread_mutex_t mutex;
    pthread_cond_t changed;
    size_t next; /* the next slab to hand out */
    size_t slabs_done, rows_done, bytes_done;
    size_t slabs_reported; /* passed to the callback... */
    size_t slabs_released; /* ...and returned from */
    int monitored;         /* workers on their own threads, a monitor reporting */
    int stop, cancelled;
    convolve_status failed; /* the first worker failure */
    int failed_worker;
    int exited; /* workers that have ended */
    convolve_progress_fn progress;
    void *progress_user;
    double t0;
};

/* ---- geometry -------------------------------------------------------------- */

void cvi_stream_slab(const cvi_stream_job *job, size_t index, cvi_slab *slab)
{
    const cvi_problem *p = job->problem;
    const ptrdiff_t n = (ptrdiff_t)job->rows, K = (ptrdiff_t)p->ksize[job->axis];
    const ptrdiff_t koff = p->koff[job->axis];
    slab->index = index;
    slab->r0 = index * job->slab_rows;
    slab->r1 = slab->r0 + job->slab_rows < job->rows ? slab->r0 + job->slab_rows : job->rows;
    ptrdiff_t lo = (ptrdiff_t)slab->r0 - koff, hi = (ptrdiff_t)slab->r1 + K - 1 - koff;
    if (p->mode == CVI_MODE_CONSTANT) { /* the sub-problem's own edge gives cval */
        lo = lo < 0 ? 0 : lo;
        hi = hi > n ? n : hi;
    }
    slab->ext_lo = lo;
    slab->ext_rows = (size_t)(hi - lo);
    slab->out_first = (size_t)((ptrdiff_t)slab->r0 - lo);
}

void cvi_stream_subproblem(const cvi_stream_job *job, size_t ext_rows, cvi_problem *sub)
{
    *sub = *job->problem;
    sub->whole_interleaved = cvi_rows_interleaved(job->problem);
    sub->shape[job->axis] = ext_rows;
    sub->whole_rows = job->rows;
    const size_t ie = convolve_dtype_size(sub->in_type), oe = convolve_dtype_size(sub->out_type);
    size_t istep = ie * sub->channels, ostep = oe * sub->channels;
    sub->in_cstride = (ptrdiff_t)ie;
    sub->out_cstride = (ptrdiff_t)oe;
    for (int a = 2; a >= 0; a--) {
        sub->in_strides[a] = sub->shape[a] > 1 ? (ptrdiff_t)istep : 0;
        sub->out_strides[a] = sub->shape[a] > 1 ? (ptrdiff_t)ostep : 0;
        istep *= sub->shape[a];
        ostep *= sub->shape[a];
    }
}

/* 1 if a layout's rows along the slab axis are packed C order (channels
 * interleaved), so that consecutive rows are one run of bytes. */
static int packed_rows(const cvi_stream_job *job, const ptrdiff_t strides[3], ptrdiff_t cstride,
                       size_t esize)
{
    const cvi_problem *p = job->problem;
    size_t step = esize;
    if (p->channels > 1 && cstride != (ptrdiff_t)step)
        return 0;
    step *= p->channels;
    for (int a = 2; a >= job->axis; a--) {
        if (p->shape[a] > 1 && strides[a] != (ptrdiff_t)step)
            return 0;
        step *= p->shape[a];
    }
    return 1;
}

/* Copies one row (all of the inner axes and channels) between a strided
 * layout and a packed buffer: to_packed 1 gathers, 0 scatters. */
static void copy_row(const cvi_stream_job *job, char *strided, const ptrdiff_t strides[3],
                     ptrdiff_t cstride, size_t esize, char *packed, int to_packed)
{
    const cvi_problem *p = job->problem;
    const size_t C = p->channels;
    size_t n1 = job->axis < 1 ? p->shape[1] : 1, n2 = job->axis < 2 ? p->shape[2] : 1;
    ptrdiff_t s1 = job->axis < 1 ? strides[1] : 0, s2 = job->axis < 2 ? strides[2] : 0;
    for (size_t i1 = 0; i1 < n1; i1++)
        for (size_t i2 = 0; i2 < n2; i2++) {
            char *e = strided + (ptrdiff_t)i1 * s1 + (ptrdiff_t)i2 * s2;
            for (size_t c = 0; c < C; c++, packed += esize) {
                char *v = e + (ptrdiff_t)c * cstride;
                if (to_packed)
                    memcpy(packed, v, esize);
                else
                    memcpy(v, packed, esize);
            }
        }
}

/* memcpy for the large copies of staging: the destination is written with
 * streaming stores (no read of its lines first, and they do not displace
 * the caches), a third less memory traffic than a plain copy of data that
 * is not read again soon. */
static void copy_stream(char *dst, const char *src, size_t n)
{
#if defined(__x86_64__) && defined(__SSE2__)
    if (n >= 4096) {
        size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
        memcpy(dst, src, head);
        dst += head, src += head, n -= head;
        size_t body = n & ~(size_t)63;
        for (size_t i = 0; i < body; i += 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)(src + i));
            __m128i b = _mm_loadu_si128((const __m128i *)(src + i + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(src + i + 32));
            __m128i d = _mm_loadu_si128((const __m128i *)(src + i + 48));
            _mm_stream_si128((__m128i *)(dst + i), a);
            _mm_stream_si128((__m128i *)(dst + i + 16), b);
            _mm_stream_si128((__m128i *)(dst + i + 32), c);
            _mm_stream_si128((__m128i *)(dst + i + 48), d);
        }
        _mm_sfence();
        dst += body, src += body, n -= body;
    }
#endif
    memcpy(dst, src, n);
}

/* Copies `bytes` bytes with up to `threads` threads (parts of at least
 * 256 KiB, two a thread, so that a slab of a few MiB uses them all). */
static void parallel_copy(char *dst, const char *src, size_t bytes, int threads)
{
    size_t chunk = threads > 1 ? bytes / (2 * (size_t)threads) : bytes;
    chunk = chunk < ((size_t)256 << 10) ? (size_t)256 << 10 : (chunk + 4095) / 4096 * 4096;
    if (threads <= 1 || bytes < 2 * chunk) {
        memcpy(dst, src, bytes);
        return;
    }
    const long parts = (long)((bytes + chunk - 1) / chunk);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static)
#endif
    for (long i = 0; i < parts; i++) {
        size_t off = (size_t)i * chunk, len = bytes - off < chunk ? bytes - off : chunk;
        memcpy(dst + off, src + off, len);
    }
}

/* Writes the slab's extended row b (mapped by the mode) to dst, packed. */
static void gather_row(const cvi_stream_job *job, const cvi_slab *slab, ptrdiff_t b, int packed,
                       char *dst)
{
    const cvi_problem *p = job->problem;
    const ptrdiff_t g = cvi_boundary_index(slab->ext_lo + b, (ptrdiff_t)job->rows, p->mode);
    const char *src = (const char *)job->in + g * p->in_strides[job->axis];
    if (packed)
        memcpy(dst, src, job->in_row_bytes);
    else
        copy_row(job, (char *)src, p->in_strides, p->in_cstride, convolve_dtype_size(p->in_type),
                 dst, 1);
}

/* Writes buffer rows [row_begin, row_end) of the slab's input from the
 * caller's array (each mapped by the mode) to dst, where row row_begin goes
 * (packed rows). */
static void gather_span(const cvi_stream_job *job, const cvi_slab *slab, size_t row_begin,
                        size_t row_end, char *dst, int threads)
{
    const cvi_problem *p = job->problem;
    const size_t rb = job->in_row_bytes, es = convolve_dtype_size(p->in_type);
    const ptrdiff_t n = (ptrdiff_t)job->rows, sa = p->in_strides[job->axis];
    const int packed = packed_rows(job, p->in_strides, p->in_cstride, es);
    /* the rows inside the array: [lo, hi) of the buffer */
    ptrdiff_t lo = -slab->ext_lo, hi = n - slab->ext_lo;
    lo = lo < (ptrdiff_t)row_begin ? (ptrdiff_t)row_begin : lo;
    hi = hi > (ptrdiff_t)row_end ? (ptrdiff_t)row_end : hi;
    if (packed && lo < hi)
        parallel_copy(dst + (size_t)(lo - (ptrdiff_t)row_begin) * rb,
                      (const char *)job->in + (slab->ext_lo + lo) * sa, (size_t)(hi - lo) * rb,
                      threads);
    const long count = (long)(row_end - row_begin);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) \
    schedule(static) if (count > 1 && (packed ? rb >= ((size_t)1 << 20) : count > 16))
#endif
    for (long i = 0; i < count; i++) {
        ptrdiff_t b = (ptrdiff_t)row_begin + i;
        if (!packed || b < lo || b >= hi)
            gather_row(job, slab, b, packed, dst + (size_t)i * rb);
    }
}

/* ---- in place: the store of rows other slabs read ------------------------ */

/* The array row that buffer row b of the slab holds (in CONSTANT mode a
 * buffer lies inside the array). */
static size_t array_row(const cvi_stream_job *job, const cvi_slab *slab, size_t b)
{
    return (size_t)cvi_boundary_index(slab->ext_lo + (ptrdiff_t)b, (ptrdiff_t)job->rows,
                                      job->problem->mode);
}

static int own_row(const cvi_slab *slab, size_t g)
{
    return g >= slab->r0 && g < slab->r1;
}

/* A growing list of runs (`at` unset until merged). */
typedef struct {
    cvi_store_run *v;
    size_t n, cap;
    int failed;
} run_list;

static int run_order(const void *a, const void *b)
{
    const cvi_store_run *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sorts the runs, merges those that overlap or touch, numbers their store
 * rows; returns the rows they hold. */
static size_t runs_merge(run_list *l)
{
    if (!l->n)
        return 0;
    qsort(l->v, l->n, sizeof *l->v, run_order);
    size_t m = 0;
    for (size_t i = 1; i < l->n; i++) {
        if (l->v[i].lo <= l->v[m].hi) {
            if (l->v[i].hi > l->v[m].hi)
                l->v[m].hi = l->v[i].hi;
        } else {
            l->v[++m] = l->v[i];
        }
    }
    l->n = m + 1;
    size_t at = 0;
    for (size_t i = 0; i < l->n; i++) {
        l->v[i].at = at;
        at += l->v[i].hi - l->v[i].lo;
    }
    return at;
}

static void runs_add(run_list *l, size_t lo, size_t hi)
{
    int grow = l->n == l->cap;
    if (grow && l->n > 0) { /* merged first: the list stays near its distinct runs */
        runs_merge(l);
        grow = l->n > l->cap / 2;
    }
    if (grow) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        cvi_store_run *v = cap <= SIZE_MAX / sizeof *v ? realloc(l->v, cap * sizeof *v) : NULL;
        if (!v) {
            l->failed = 1;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n].lo = lo;
    l->v[l->n].hi = hi;
    l->v[l->n].at = 0;
    l->n++;
}

/* Adds to l the array rows the slab's halo (its buffer rows outside its
 * own) maps to that are not its own rows. */
static void foreign_rows(const cvi_stream_job *job, const cvi_slab *slab, run_list *l)
{
    const size_t own0 = slab->out_first, own1 = own0 + (slab->r1 - slab->r0);
    size_t lo = 0, hi = 0; /* the run being extended (none: lo == hi) */
    for (int part = 0; part < 2; part++)
        for (size_t b = part ? own1 : 0; b < (part ? slab->ext_rows : own0); b++) {
            const size_t g = array_row(job, slab, b);
            if (own_row(slab, g) || (g >= lo && g < hi))
                continue;
            if (lo < hi && g == hi) {
                hi++;
            } else if (lo < hi && g + 1 == lo) {
                lo--;
            } else {
                if (lo < hi)
                    runs_add(l, lo, hi);
                lo = g, hi = g + 1;
            }
        }
    if (lo < hi)
        runs_add(l, lo, hi);
}

/* In place: the store's runs (every array row some slab reads that is not
 * its own, once), sorted, in *runs (NULL: none) and *count; *rows: the
 * rows they hold (at most the array's). Errors: OUT_OF_MEMORY. */
static convolve_status plan_store(convolve_context *ctx, const cvi_stream_job *job,
                                  cvi_store_run **runs, size_t *count, size_t *rows)
{
    run_list l = {NULL, 0, 0, 0};
    for (size_t i = 0; i < job->slab_count && !l.failed; i++) {
        cvi_slab slab;
        cvi_stream_slab(job, i, &slab);
        foreign_rows(job, &slab, &l);
    }
    *rows = runs_merge(&l);
    if (l.failed) {
        free(l.v);
        *runs = NULL, *count = *rows = 0;
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY,
                         "running in place: out of memory listing the slabs' halo rows");
    }
    *runs = l.v;
    *count = l.n;
    return CONVOLVE_OK;
}

/* The store run that holds array row g. */
static const cvi_store_run *find_run(const cvi_stream_job *job, size_t g)
{
    const cvi_store_run *r = job->store_runs;
    size_t lo = 0, hi = job->store_run_count; /* the last run with r.lo <= g */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].lo <= g)
            lo = mid;
        else
            hi = mid;
    }
    return &r[lo];
}

/* In place: buffer rows [b0, b1), outside the slab's own, to buf (the
 * buffer's start): rows that map into its own rows from the array (no other
 * slab writes them), the others from the store. */
static void gather_halo(const cvi_stream_job *job, const cvi_slab *slab, size_t b0, size_t b1,
                        char *buf, int threads)
{
    const size_t rb = job->in_row_bytes;
    size_t b = b0;
    while (b < b1) {
        const size_t g = array_row(job, slab, b);
        size_t e = b + 1;
        if (own_row(slab, g)) {
            while (e < b1 && own_row(slab, array_row(job, slab, e)))
                e++;
            gather_span(job, slab, b, e, buf + b * rb, threads);
        } else { /* consecutive rows of one run in one copy */
            const cvi_store_run *r = find_run(job, g);
            while (e < b1 && g + (e - b) < r->hi && array_row(job, slab, e) == g + (e - b))
                e++;
            parallel_copy(buf + b * rb, job->halo_store + (r->at + (g - r->lo)) * rb, (e - b) * rb,
                          threads);
        }
        b = e;
    }
}

void cvi_stream_gather(const cvi_stream_job *job, const cvi_slab *slab, size_t row_begin,
                       size_t row_end, void *dst, int threads)
{
    const size_t rb = job->in_row_bytes;
    char *buf = dst;
    if (!job->in_place) {
        if (row_begin < row_end)
            gather_span(job, slab, row_begin, row_end, buf + row_begin * rb, threads);
        return;
    }
    /* in place: the own rows [own0, own1) from the array (they lie in it and
     * map to themselves), the halo rows before and after them */
    const size_t own0 = slab->out_first, own1 = own0 + (slab->r1 - slab->r0);
    size_t b0 = row_begin, b1 = row_end < own0 ? row_end : own0;
    if (b0 < b1)
        gather_halo(job, slab, b0, b1, buf, threads);
    b0 = row_begin > own0 ? row_begin : own0, b1 = row_end < own1 ? row_end : own1;
    if (b0 < b1)
        gather_span(job, slab, b0, b1, buf + b0 * rb, threads);
    b0 = row_begin > own1 ? row_begin : own1, b1 = row_end;
    if (b0 < b1)
        gather_halo(job, slab, b0, b1, buf, threads);
}

/* In place: copies the store's rows from the caller's array before any slab
 * is written; *store and *runs are the caller's to free. */
static convolve_status save_store(convolve_context *ctx, cvi_stream_job *job, char **store,
                                  cvi_store_run **runs, size_t *bytes)
{
    *store = NULL;
    *bytes = 0;
    size_t count, rows;
    convolve_status st = plan_store(ctx, job, runs, &count, &rows);
    if (st != CONVOLVE_OK || !rows)
        return st;
    const size_t rb = job->in_row_bytes;
    *bytes = rows * rb; /* rows <= the array's: fits */
    if (!(*store = malloc(*bytes)))
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY,
                         "running in place: out of memory for the slabs' halo rows (%zu bytes)",
                         *bytes);
    cvi_slab whole; /* buffer row b = array row b */
    memset(&whole, 0, sizeof whole);
    const long n = (long)count;
    const int each = n > 16 ? 1 : job->host_threads;
#ifdef _OPENMP
#pragma omp parallel for num_threads(job->host_threads) schedule(dynamic, 4) if (n > 16)
#endif
    for (long i = 0; i < n; i++) {
        const cvi_store_run *r = &(*runs)[i];
        gather_span(job, &whole, r->lo, r->hi, *store + r->at * rb, each);
    }
    job->halo_store = *store;
    job->store_runs = *runs;
    job->store_run_count = count;
    return CONVOLVE_OK;
}

void cvi_stream_scatter(const cvi_stream_job *job, const cvi_slab *slab, const void *src,
                        int threads)
{
    const cvi_problem *p = job->problem;
    const size_t rb = job->out_row_bytes, es = convolve_dtype_size(p->out_type);
    const ptrdiff_t sa = p->out_strides[job->axis];
    const size_t rows = slab->r1 - slab->r0;
    char *base = (char *)job->out + (ptrdiff_t)slab->r0 * sa;
    if (packed_rows(job, p->out_strides, p->out_cstride, es)) {
        parallel_copy(base, src, rows * rb, threads);
        return;
    }
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) if (rows > 16)
#endif
    for (long i = 0; i < (long)rows; i++)
        copy_row(job, base + i * sa, p->out_strides, p->out_cstride, es,
                 (char *)src + (size_t)i * rb, 0);
}

/* 0 once madvise has refused MADV_POPULATE_WRITE as invalid (a kernel
 * before Linux 5.14, or a mapping it does not populate): the pages are
 * then touched instead, for the rest of the process. */
static int populate_known = 1;

/* Faults in the pages of [lo, hi) for writing, their bytes unchanged. */
static void populate_write(uintptr_t lo, uintptr_t hi, size_t page)
{
#if defined(__linux__)
    if (__atomic_load_n(&populate_known, __ATOMIC_RELAXED)) {
        /* the faults taken in the kernel, no trap a page; a range that
         * cannot be populated (a mapped file past its end) is left to fault
         * where the scatter writes it, as it would have */
        const uintptr_t first = lo / page * page;
        if (madvise((void *)first, hi - first, MADV_POPULATE_WRITE) == 0 || errno != EINVAL)
            return;
        __atomic_store_n(&populate_known, 0, __ATOMIC_RELAXED);
    }
#endif
    /* an atomic add of zero: a write (one fault, for writing) that leaves
     * the byte as it was (a cancelled run's unwritten rows keep what the
     * caller put there) */
    for (uintptr_t a = lo; a < hi; a = (a / page + 1) * page)
        (void)__atomic_fetch_add((volatile unsigned char *)a, 0, __ATOMIC_RELAXED);
}

void cvi_prefault_range(char *begin, size_t bytes, int threads)
{
    /* chunks on their own boundaries of the address space: 2 MiB (one
     * thread a huge page, and with small pages a run of 512) where every
     * thread has at least one, else a share of the bytes a thread (64 KiB
     * multiples), so that a small output's faults are spread over all of
     * them (16 MiB took 1.3 ms on 8 of 16 threads) */
    const size_t huge = (size_t)2 << 20, page = 4096;
    char *const end = begin + bytes;
    const size_t t = threads > 1 ? (size_t)threads : 1, step = (size_t)64 << 10;
    size_t chunk = huge;
    if (bytes / t < huge)
        chunk = ((bytes + t - 1) / t + step - 1) / step * step;
    const uintptr_t first = (uintptr_t)begin / chunk, last = ((uintptr_t)end - 1) / chunk;
    const long count = (long)(last - first + 1);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (count > 1)
#endif
    for (long i = 0; i < count; i++) {
        uintptr_t lo = (first + (uintptr_t)i) * chunk, hi = lo + chunk;
        lo = lo < (uintptr_t)begin ? (uintptr_t)begin : lo;
        hi = hi > (uintptr_t)end ? (uintptr_t)end : hi;
        populate_write(lo, hi, page);
    }
}

void cvi_stream_prefault_out(const cvi_stream_job *job, int threads)
{
    const size_t bytes = job->rows * job->out_row_bytes;
    const long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (bytes == 0 || pages <= 0 || psize <= 0)
        return;
    const size_t ram = (size_t)pages * (size_t)psize, most = (size_t)2 << 30;
    if (bytes > ram / 16 || bytes > most)
        return;
    cvi_prefault_range(job->out, bytes, threads);
}

int cvi_pages_resident(const char *begin, size_t bytes)
{
#if defined(__linux__)
    const long psize = sysconf(_SC_PAGESIZE);
    if (bytes == 0 || psize <= 0)
        return 1;
    enum { SAMPLES = 8 };
    for (int k = 0; k < SAMPLES; k++) {
        const uintptr_t a = (uintptr_t)begin + (uintptr_t)((bytes - 1) / (SAMPLES - 1) * (size_t)k);
        unsigned char v = 0;
        if (mincore((void *)(a - a % (uintptr_t)psize), 1, &v) != 0)
            return 1; /* unknown: left to the run's own faults */
        if (!(v & 1))
            return 0;
    }
#else
    (void)begin;
    (void)bytes;
#endif
    return 1;
}

/* Part k of m of the copy of n bytes: [*off, *off + *len). */
static void share(size_t n, int k, int m, size_t *off, size_t *len)
{
    size_t per = (n + (size_t)m - 1) / (size_t)m;
    per = (per + 63) / 64 * 64; /* whole cache lines */
    *off = per * (size_t)k < n ? per * (size_t)k : n;
    *len = n - *off < per ? n - *off : per;
}

/* Part k of m of gathering the slab's whole buffer (not in place): the rows
 * inside the array as one run of bytes when packed, split in m; the others
 * one by one, every m-th. */
static void gather_part(const cvi_stream_job *job, const cvi_slab *slab, char *dst, int k, int m)
{
    const cvi_problem *p = job->problem;
    const size_t rb = job->in_row_bytes, es = convolve_dtype_size(p->in_type);
    const ptrdiff_t n = (ptrdiff_t)job->rows, sa = p->in_strides[job->axis];
    const int packed = packed_rows(job, p->in_strides, p->in_cstride, es);
    ptrdiff_t lo = -slab->ext_lo, hi = n - slab->ext_lo;
    lo = lo < 0 ? 0 : lo;
    hi = hi > (ptrdiff_t)slab->ext_rows ? (ptrdiff_t)slab->ext_rows : hi;
    if (packed && lo < hi) {
        size_t off, len;
        share((size_t)(hi - lo) * rb, k, m, &off, &len);
        copy_stream(dst + (size_t)lo * rb + off,
                    (const char *)job->in + (slab->ext_lo + lo) * sa + off, len);
    }
    for (ptrdiff_t b = k; b < (ptrdiff_t)slab->ext_rows; b += m)
        if (!packed || b < lo || b >= hi)
            gather_row(job, slab, b, packed, dst + (size_t)b * rb);
}

/* Part k of m of cvi_stream_scatter. */
static void scatter_part(const cvi_stream_job *job, const cvi_slab *slab, const char *src, int k,
                         int m)
{
    const cvi_problem *p = job->problem;
    const size_t rb = job->out_row_bytes, es = convolve_dtype_size(p->out_type);
    const ptrdiff_t sa = p->out_strides[job->axis];
    const size_t rows = slab->r1 - slab->r0;
    char *base = (char *)job->out + (ptrdiff_t)slab->r0 * sa;
    if (packed_rows(job, p->out_strides, p->out_cstride, es)) {
        size_t off, len;
        share(rows * rb, k, m, &off, &len);
        copy_stream(base + off, src + off, len);
        return;
    }
    for (size_t i = (size_t)k; i < rows; i += (size_t)m)
        copy_row(job, base + (ptrdiff_t)i * sa, p->out_strides, p->out_cstride, es,
                 (char *)src + i * rb, 0);
}

void cvi_stream_exchange(const cvi_stream_job *job, const cvi_slab *done, const void *src,
                         const cvi_slab *next, void *dst, int threads)
{
    if (job->in_place || threads < 2 || !done || !next) { /* one after the other */
        if (done)
            cvi_stream_scatter(job, done, src, threads);
        if (next)
            cvi_stream_gather(job, next, 0, next->ext_rows, dst, threads);
        return;
    }
    /* the threads split in proportion to the bytes each side copies */
    const double out_bytes = (double)(done->r1 - done->r0) * (double)job->out_row_bytes;
    const double in_bytes = (double)next->ext_rows * (double)job->in_row_bytes;
    int ts = (int)((double)threads * out_bytes / (out_bytes + in_bytes) + 0.5);
    ts = ts < 1 ? 1 : ts > threads - 1 ? threads - 1 : ts;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
    {
        const int t = omp_get_thread_num(), T = omp_get_num_threads();
        int s = (T * ts + threads / 2) / threads; /* fewer threads than asked: scaled */
        s = s < 1 ? 1 : s > T - 1 ? T - 1 : s;
        if (T < 2) {
            scatter_part(job, done, src, 0, 1);
            gather_part(job, next, dst, 0, 1);
        } else if (t < s) {
            scatter_part(job, done, src, t, s);
        } else {
            gather_part(job, next, dst, t - s, T - s);
        }
    }
#else
    (void)ts;
    scatter_part(job, done, src, 0, 1);
    gather_part(job, next, dst, 0, 1);
#endif
}

/* ---- the shared counter, progress, errors ------------------------------------ */

int cvi_stream_next(cvi_stream_job *job, size_t *index)
{
    struct cvi_stream_state *s = job->state;
    pthread_mutex_lock(&s->mutex);
    /* the monitor reports every slab done, so the wait ends: at most
     * CVI_STREAM_BUFFERS slabs a worker are handed out and not done */
    const size_t lag = (size_t)job->worker_count * CVI_STREAM_LAG_SLABS;
    while (s->progress && s->monitored && !s->stop && s->next < job->slab_count &&
           s->next >= s->slabs_released + lag)
        pthread_cond_wait(&s->changed, &s->mutex);
    int ok = !s->stop && s->next < job->slab_count;
    if (ok)
        *index = s->next++;
    pthread_mutex_unlock(&s->mutex);
    return ok;
}

int cvi_stream_stopped(const cvi_stream_job *job)
{
    return __atomic_load_n(&job->state->stop, __ATOMIC_ACQUIRE);
}

int cvi_stream_cancellable(const cvi_stream_job *job)
{
    return job->state->progress != NULL;
}

void cvi_stream_done(cvi_stream_job *job, const cvi_slab *slab)
{
    struct cvi_stream_state *s = job->state;
    size_t rows = slab->r1 - slab->r0;
    pthread_mutex_lock(&s->mutex);
    s->slabs_done++;
    s->rows_done += rows;
    s->bytes_done += rows * (job->in_row_bytes + job->out_row_bytes);
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->mutex);
}

convolve_status cvi_stream_fail(cvi_stream_job *job, int worker, convolve_status status)
{
    struct cvi_stream_state *s = job->state;
    pthread_mutex_lock(&s->mutex);
    if (s->failed == CONVOLVE_OK) {
        s->failed = status;
        s->failed_worker = worker;
    }
    __atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->mutex);
    return status;
}

void cvi_stream_worker_exit(cvi_stream_job *job)
{
    struct cvi_stream_state *s = job->state;
    pthread_mutex_lock(&s->mutex);
    s->exited++;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->mutex);
}

/* With the mutex held: calls the callback (without the mutex) if slabs were
 * done since the last call; a non-zero answer stops the job. */
static void report_locked(cvi_stream_job *job, struct cvi_stream_state *s, int force)
{
    if (!s->progress || (!force && s->slabs_done == s->slabs_reported) || s->cancelled)
        return;
    convolve_progress pr;
    pr.slabs_done = s->slabs_done;
    pr.slabs_total = job->slab_count;
    pr.rows_done = s->rows_done;
    pr.rows_total = job->rows;
    pr.bytes_done = s->bytes_done;
    s->slabs_reported = s->slabs_done;
    pthread_mutex_unlock(&s->mutex);
    pr.elapsed_s = cvi_now_s() - s->t0;
    int stop = s->progress(s->progress_user, &pr) != 0;
    pthread_mutex_lock(&s->mutex);
    s->slabs_released = pr.slabs_done;
    if (stop && pr.slabs_done < pr.slabs_total) {
        s->cancelled = 1;
        __atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
    }
    pthread_cond_broadcast(&s->changed); /* workers waiting for the release */
}

void cvi_stream_monitor(cvi_stream_job *job, int workers)
{
    struct cvi_stream_state *s = job->state;
    pthread_mutex_lock(&s->mutex);
    while (s->exited < workers) {
        if (s->progress && s->slabs_done != s->slabs_reported && !s->stop) {
            report_locked(job, s, 0);
        } else if (s->progress && !s->stop) {
            /* no slab done for CVI_STREAM_TICK_S: the callback again, with
             * the same counts (a cancel, Ctrl-C in Python, lands while long
             * slabs run; later slabs then do not start) */
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += (long)(CVI_STREAM_TICK_S * 1e9);
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            if (pthread_cond_timedwait(&s->changed, &s->mutex, &until) == ETIMEDOUT &&
                s->slabs_done == s->slabs_reported && !s->stop)
                report_locked(job, s, 1);
        } else {
            pthread_cond_wait(&s->changed, &s->mutex);
        }
    }
    if (!s->stop)
        report_locked(job, s, 0);
    pthread_mutex_unlock(&s->mutex);
}

/* ---- the core's slab driver: one slab after another ------------------------ */

#define SUBPLAN_CACHE 6

typedef struct {
    size_t ext_rows;     /* 0: empty */
    cvi_problem problem; /* what state was made for (it may keep a pointer) */
    void *state;
} subplan;

/* Runs the job on the calling thread through b's prepare and execute_host:
 * gather, run the slab's sub-plan (one per distinct buffer size), scatter. */
static convolve_status run_in_turn(convolve_context *ctx, const cvi_backend *b,
                                   const cvi_device *dev, cvi_stream_job *job)
{
    struct cvi_stream_state *s = job->state;
    subplan cache[SUBPLAN_CACHE];
    memset(cache, 0, sizeof cache);
    size_t max_ext = job->max_ext_rows;
    char *in = NULL, *out = NULL;
    convolve_status st = CONVOLVE_OK;
    if (!(in = malloc(max_ext * job->in_row_bytes)) ||
        !(out = malloc(max_ext * job->out_row_bytes))) {
        st = cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for the slab buffers");
        goto done;
    }
    size_t index;
    int turn = 0;
    while (cvi_stream_next(job, &index)) {
        cvi_slab slab;
        cvi_stream_slab(job, index, &slab);
        subplan *sp = NULL;
        for (int i = 0; i < SUBPLAN_CACHE && !sp; i++)
            if (cache[i].ext_rows == slab.ext_rows)
                sp = &cache[i];
        if (!sp) {
            sp = &cache[turn++ % SUBPLAN_CACHE];
            if (sp->ext_rows)
                b->release(sp->state);
            sp->ext_rows = 0;
            cvi_stream_subproblem(job, slab.ext_rows, &sp->problem);
            if ((st = b->prepare(ctx, dev, job->strategy, &sp->problem, &sp->state)) != CONVOLVE_OK)
                goto done;
            sp->ext_rows = slab.ext_rows;
        }
        cvi_stream_gather(job, &slab, 0, slab.ext_rows, in, job->host_threads);
        if ((st = b->execute_host(ctx, sp->state, in, out)) != CONVOLVE_OK)
            goto done;
        cvi_stream_scatter(job, &slab, out + slab.out_first * job->out_row_bytes,
                           job->host_threads);
        cvi_stream_done(job, &slab);
        pthread_mutex_lock(&s->mutex);
        report_locked(job, s, 0);
        pthread_mutex_unlock(&s->mutex);
    }
done:
    for (int i = 0; i < SUBPLAN_CACHE; i++)
        if (cache[i].ext_rows)
            b->release(cache[i].state);
    free(in);
    free(out);
    return st;
}

/* ---- the core's window driver: the CPU, not in place ------------------------- */

/* Runs the job on the calling thread as windows of the plan's own problem
 * (b's execute_host_rows): each slab's output rows computed where they lie,
 * from the caller's input, with no buffer, gather or scatter. */
static convolve_status run_windows(convolve_context *ctx, const cvi_backend *b, void *state,
                                   cvi_stream_job *job)
{
    struct cvi_stream_state *s = job->state;
    void *memo = NULL;
    convolve_status st = CONVOLVE_OK;
    size_t index;
    while (st == CONVOLVE_OK && cvi_stream_next(job, &index)) {
        cvi_slab slab;
        cvi_stream_slab(job, index, &slab);
        st = b->execute_host_rows(ctx, state, job->in, job->out, slab.r0, slab.r1, &memo);
        if (st != CONVOLVE_OK)
            break;
        cvi_stream_done(job, &slab);
        pthread_mutex_lock(&s->mutex);
        report_locked(job, s, 0);
        pthread_mutex_unlock(&s->mutex);
    }
    b->rows_end(state, memo);
    return st;
}

/* ---- choosing slabs and running ---------------------------------------------- */

/* Bytes from a text such as "512M" (K, M, G: powers of 1024); 0 if malformed. */
static size_t parse_bytes(const char *text)
{
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    size_t shift = 0;
    if (end == text)
        return 0;
    switch (*end) {
    case 'k':
    case 'K': shift = 10, end++; break;
    case 'm':
    case 'M': shift = 20, end++; break;
    case 'g':
    case 'G': shift = 30, end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || v > (SIZE_MAX >> shift))
        return 0;
    return (size_t)v << shift;
}

size_t cvi_stream_env_budget(void)
{
    const char *e = getenv("CONVOLVE_DEVICE_BUDGET");
    return e && *e ? parse_bytes(e) : 0;
}

/* The job's rows, row sizes and axis from the plan's problem. */
static void describe(const convolve_plan *plan, cvi_stream_job *job)
{
    const cvi_problem *p = &plan->problem;
    memset(job, 0, sizeof *job);
    job->problem = p;
    job->strategy = plan->strategy;
    job->axis = 3 - p->ndim;
    job->rows = p->shape[job->axis];
    job->row_elems = p->channels;
    for (int a = job->axis + 1; a < 3; a++)
        job->row_elems *= p->shape[a];
    job->in_row_bytes = job->row_elems * convolve_dtype_size(p->in_type);
    job->out_row_bytes = job->row_elems * convolve_dtype_size(p->out_type);
}

size_t cvi_stream_staging_bytes(void)
{
    const char *e = getenv("CONVOLVE_STREAM_STAGING_MIB");
    if (e && *e) {
        char *end;
        unsigned long mib = strtoul(e, &end, 10);
        if (*end == '\0' && mib >= 1 && mib <= 4096)
            return (size_t)mib << 20;
    }
    return CVI_STREAM_STAGING_BYTES;
}

convolve_status cvi_stream_choose(convolve_plan *plan, int in_place, size_t *slab_rows)
{
    cvi_stream_job job;
    describe(plan, &job);
    const cvi_problem *p = &plan->problem;
    const size_t n = job.rows, halo = p->ksize[job.axis] - 1;
    const size_t row_io = job.in_row_bytes + job.out_row_bytes; /* fits: the arrays do */
    *slab_rows = 0;
    if (plan->strategy->backend == CONVOLVE_BACKEND_CPU) {
        if (!plan->progress && !in_place)
            return CONVOLVE_OK;
        const char *e = getenv("CONVOLVE_CPU_SLAB_BYTES");
        size_t rows, forced = e && *e ? parse_bytes(e) : 0;
        if (forced) { /* exactly that (tests: slabs shorter than the filter) */
            rows = forced / job.in_row_bytes;
        } else if (!in_place && plan->backend->execute_host_rows) {
            /* windows: what each repeats at most 1/CVI_WINDOW_EXTRA_SHARE
             * of its rows, and starts on the backend's tiles */
            size_t align = 1, extra = 0;
            plan->backend->window_cost(plan->state, &align, &extra);
            rows = CVI_CPU_SLAB_BYTES / job.in_row_bytes;
            const double ms = plan->backend->plan_estimate_ms
                                  ? plan->backend->plan_estimate_ms(plan->state)
                              : plan->backend->estimate_ms ? plan->backend->estimate_ms(p, 1)
                                                           : 0.0;
            if (ms > CVI_CPU_SLAB_MS && (double)n * CVI_CPU_SLAB_MS / ms < (double)rows)
                rows = (size_t)((double)n * CVI_CPU_SLAB_MS / ms);
            rows = rows < CVI_WINDOW_EXTRA_SHARE * extra ? CVI_WINDOW_EXTRA_SHARE * extra : rows;
            align = align < 1 ? 1 : align;
            rows = rows > align ? rows / align * align : align;
        } else {
            rows = (in_place ? CVI_CPU_IN_PLACE_SLAB_BYTES : CVI_CPU_SLAB_BYTES) / job.in_row_bytes;
            rows = rows < 4 * halo ? 4 * halo : rows; /* keep the halo's share small */
        }
        rows = rows < 1 ? 1 : rows;
        if (rows < n || in_place)
            *slab_rows = rows < n ? rows : n;
        return CONVOLVE_OK;
    }
    /* CUDA: stream when the one-shot run would not fit the budget, when
     * devices are listed, in place, and whenever the arrays pass
     * CVI_STREAM_MIN_BYTES: pageable rows then move through pinned staging
     * buffers, filled and emptied by host threads at once while the device
     * copies other slabs (faster than cudaMemcpy of pageable memory, which
     * one shot uses: docs/architecture.md, "Measured choices").
     * Slabs start where the backend asks (window_cost's align: the FFT's
     * groups of tiles), so that they compute what the one shot does. FFT
     * plans stream only when they must: their slabs hold whole groups of
     * tiles, the whole array unless it is past 16384 rows (fast_fft.cu),
     * so streaming them overlaps nothing */
    size_t budget = plan->budget;
    size_t total;
    /* (a deferred budget: small arrays out of place on the current device) */
    int fits = cvi_mul_size(n, row_io, &total) && (plan->budget_deferred || total <= budget);
    const int fft = strcmp(plan->strategy->name, "fft") == 0;
    if (fits && plan->device_count == 0 && !in_place && (total < CVI_STREAM_MIN_BYTES || fft))
        return CONVOLVE_OK;
    size_t per_row = row_io * CVI_STREAM_BUFFERS;
    size_t rows = budget / per_row;
    if (rows <= halo)
        return cvi_error(plan->ctx, CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY,
                         "the device memory budget of %zu bytes holds no slab: %d buffers of one "
                         "row and the filter's %zu halo rows need %zu bytes",
                         budget, CVI_STREAM_BUFFERS, halo, (halo + 1) * per_row);
    rows -= halo;
    size_t target = CVI_DEVICE_SLAB_BYTES / row_io;
    target = target < 8 * halo ? 8 * halo : target;
    target = target < 1 ? 1 : target;
    rows = rows < target ? rows : target;
    /* CVI_STREAM_MIN_SLABS slabs, unless that makes them tiny */
    size_t few = (n + CVI_STREAM_MIN_SLABS - 1) / CVI_STREAM_MIN_SLABS;
    size_t least_rows = (CVI_STREAM_MIN_SLAB_BYTES + row_io - 1) / row_io;
    few = few < least_rows ? least_rows : few;
    few = few < 4 * halo ? 4 * halo : few; /* the halo's share small */
    rows = rows < few ? rows : few;
    /* on one device, a slot's pinned staging (extended input rows and
     * output rows, the latter 256-aligned) within the pool's buffer size,
     * so that every shape's slabs take buffers earlier runs pinned: unless
     * slabs would be thinner than 4 halos (3-D planes with long filters).
     * Several devices keep the slabs their balance was measured with */
    int workers = plan->device_count > 0 ? plan->device_count : 1;
    const size_t staging = cvi_stream_staging_bytes(), align_out = 256;
    if (workers == 1 && staging > halo * job.in_row_bytes + align_out) {
        const size_t cap = (staging - halo * job.in_row_bytes - align_out) / row_io;
        if (cap >= 1 && cap >= 4 * halo && cap < rows)
            rows = cap;
    }
    if (workers > 1) {
        /* CVI_SLABS_PER_DEVICE slabs a device, but not below 8 halos (a
         * thinner slab spends more of its kernel on the halo: "Measured
         * choices" in docs/architecture.md) unless that leaves a device
         * without a slab */
        const size_t w = (size_t)workers;
        size_t share = (n + w * CVI_SLABS_PER_DEVICE - 1) / (w * CVI_SLABS_PER_DEVICE);
        size_t least = (n + w - 1) / w;
        least = least < 8 * halo ? least : 8 * halo;
        share = share > least ? share : least;
        rows = rows < share ? rows : share;
        /* a whole number of slabs a device: 640 planes in 8 slabs left a
         * third device with 2 slabs against the others' 3 (3-D 640^3 15^3
         * on 3 H100s: 89.1 ms against 225.1 on one, 2.53x); 9 slabs split
         * 3, 3, 3 */
        size_t count = (n + rows - 1) / rows;
        if (count > w && count % w) {
            count = (count + w - 1) / w * w;
            rows = (n + count - 1) / count;
        }
    }
    size_t align = 1, extra = 0;
    if (plan->backend->window_cost)
        plan->backend->window_cost(plan->state, &align, &extra);
    if (align > 1 && rows < n) {
        rows = rows >= align ? rows / align * align : align;
        if (rows < n && budget / per_row < rows + halo)
            return cvi_error(plan->ctx, CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY,
                             "the device memory budget of %zu bytes holds no slab: strategy "
                             "'%s' computes slabs of multiples of %zu rows (%d buffers of %zu "
                             "rows need %zu bytes)",
                             budget, plan->strategy->name, align, CVI_STREAM_BUFFERS, rows + halo,
                             (rows + halo) * per_row);
    }
    *slab_rows = rows < n ? rows : n;
    return CONVOLVE_OK;
}

/* The job's slabs and workers for slabs of slab_rows rows. */
static void set_slabs(const convolve_plan *plan, size_t slab_rows, cvi_stream_job *job)
{
    describe(plan, job);
    job->slab_rows = slab_rows;
    job->device_budget = plan->budget;
    job->slab_count = (job->rows + slab_rows - 1) / slab_rows;
    job->max_ext_rows = slab_rows + plan->problem.ksize[job->axis] - 1;
    job->host_threads = plan->problem.threads;
#ifdef _OPENMP
    if (job->host_threads <= 0)
        job->host_threads = omp_get_max_threads();
#endif
    if (job->host_threads <= 0)
        job->host_threads = 1;
    const int streamed = plan->backend->execute_host_streamed != NULL;
    job->worker_count = streamed && plan->device_count > 0 ? plan->device_count : 1;
    job->devices = streamed && plan->device_count > 0 ? plan->devices : NULL;
    if (job->worker_count > 1) {
        job->host_threads /= job->worker_count;
        job->host_threads = job->host_threads < 1 ? 1 : job->host_threads;
    }
}

/* Host bytes of the slab buffers: the core's input and output buffer, or
 * a pipelined executor's pinned staging (CVI_STREAM_BUFFERS sets a worker:
 * extended input rows, exact output rows); SIZE_MAX if that overflows. */
static size_t buffer_bytes(const convolve_plan *plan, const cvi_stream_job *job)
{
    size_t in, out, sum;
    if (!cvi_mul_size(job->max_ext_rows, job->in_row_bytes, &in))
        return SIZE_MAX;
    if (!plan->backend->execute_host_streamed)
        return cvi_mul_size(job->max_ext_rows, job->out_row_bytes, &out) &&
                       cvi_add_size(in, out, &sum)
                   ? sum
                   : SIZE_MAX;
    if (!cvi_mul_size(job->slab_rows, job->out_row_bytes, &out) || !cvi_add_size(in, out, &sum) ||
        !cvi_mul_size(sum, (size_t)job->worker_count * CVI_STREAM_BUFFERS, &sum))
        return SIZE_MAX;
    return sum;
}

convolve_status cvi_stream_in_place_bytes(convolve_plan *plan, size_t slab_rows, size_t *bytes)
{
    cvi_stream_job job;
    set_slabs(plan, slab_rows, &job);
    cvi_store_run *runs;
    size_t count, rows, store, total;
    convolve_status st = plan_store(plan->ctx, &job, &runs, &count, &rows);
    free(runs);
    if (st != CONVOLVE_OK)
        return st;
    store = rows * job.in_row_bytes; /* rows <= the array's: fits */
    *bytes = cvi_add_size(store, buffer_bytes(plan, &job), &total) ? total : SIZE_MAX;
    return CONVOLVE_OK;
}

convolve_status cvi_stream_execute(convolve_plan *plan, size_t slab_rows, const void *in, void *out,
                                   int *wrote)
{
    convolve_context *ctx = plan->ctx;
    const cvi_backend *b = plan->backend;
    cvi_stream_job job;
    set_slabs(plan, slab_rows, &job);
    job.in = in;
    job.out = out;
    job.backend_state = plan->state;
    job.in_packed = packed_rows(&job, plan->problem.in_strides, plan->problem.in_cstride,
                                convolve_dtype_size(plan->problem.in_type));
    job.out_packed = packed_rows(&job, plan->problem.out_strides, plan->problem.out_cstride,
                                 convolve_dtype_size(plan->problem.out_type));
    job.in_place = in == out;
    const int streamed = b->execute_host_streamed != NULL;

    struct cvi_stream_state state;
    memset(&state, 0, sizeof state);
    pthread_mutex_init(&state.mutex, NULL);
    pthread_cond_init(&state.changed, NULL);
    state.progress = plan->progress;
    state.progress_user = plan->progress_user;
    state.t0 = cvi_now_s();
    job.state = &state;

    convolve_status st = CONVOLVE_OK;
    convolve_context **wctx = NULL;
    char *store = NULL;
    cvi_store_run *runs = NULL;
    *wrote = 0;
    if (job.in_place) {
        size_t store_bytes = 0, total;
        if ((st = save_store(ctx, &job, &store, &runs, &store_bytes)) != CONVOLVE_OK)
            goto finish;
        plan->in_place_store = store_bytes;
        plan->in_place_extra = cvi_add_size(store_bytes, buffer_bytes(plan, &job), &total)
                                   ? total
                                   : SIZE_MAX;
    }
    if (state.progress) { /* the start */
        pthread_mutex_lock(&state.mutex);
        report_locked(&job, &state, 1);
        pthread_mutex_unlock(&state.mutex);
    }
    if (state.cancelled)
        goto finish;
    if (!streamed && !job.in_place && b->execute_host_rows) {
        st = run_windows(ctx, b, plan->state, &job);
        goto finish;
    }
    if (!streamed) {
        st = run_in_turn(ctx, b, &ctx->cuda, &job);
        goto finish;
    }
    /* the listed devices are probed once (cudaGetDeviceProperties), by the
     * plan's first streamed execution */
    if (job.devices && !plan->device_probes) {
        cvi_device *probes = calloc((size_t)job.worker_count, sizeof *probes);
        if (!probes) {
            st = cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for the workers");
            goto finish;
        }
        for (int w = 0; w < job.worker_count; w++)
            b->probe_index(job.devices[w], &probes[w]);
        /* the plan's strategy was checked on the current device only */
        for (int w = 0; w < job.worker_count && st == CONVOLVE_OK; w++)
            if ((st = cvi_strategy_check(ctx, job.strategy, &plan->problem, &probes[w])) !=
                CONVOLVE_OK)
                cvi_error_prefix(ctx, st, "device %d: ", job.devices[w]);
        if (st != CONVOLVE_OK) {
            free(probes);
            goto finish;
        }
        plan->device_probes = probes;
    }
    wctx = calloc((size_t)job.worker_count, sizeof *wctx);
    if (!wctx) {
        st = cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for the workers");
        goto finish;
    }
    for (int w = 0; w < job.worker_count; w++) {
        if (convolve_context_create(&wctx[w]) != CONVOLVE_OK) {
            st = cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for the workers");
            goto finish;
        }
    }
    job.worker_ctx = wctx;
    job.worker_device = job.devices ? plan->device_probes : &ctx->cuda;
    state.monitored = 1;
    st = b->execute_host_streamed(ctx, &job);
    if (st == CONVOLVE_OK && state.failed != CONVOLVE_OK) {
        st = state.failed;
        cvi_error(ctx, st, "%s", convolve_last_error(wctx[state.failed_worker]));
        if (job.worker_count > 1)
            cvi_error_prefix(ctx, st,
                             "device %d: ", job.devices ? job.devices[state.failed_worker] : 0);
    }
finish:
    *wrote = state.next > 0; /* a slab handed out may have written its rows */
    free(store);
    free(runs);
    if (wctx)
        for (int w = 0; w < job.worker_count; w++)
            convolve_context_free(wctx[w]);
    free(wctx);
    pthread_cond_destroy(&state.changed);
    pthread_mutex_destroy(&state.mutex);
    if (st == CONVOLVE_OK && state.cancelled)
        st = cvi_error(ctx, CONVOLVE_ERROR_CANCELLED,
                       "cancelled by the progress callback after %zu of %zu slabs",
                       state.slabs_done, job.slab_count);
    return st;
}
