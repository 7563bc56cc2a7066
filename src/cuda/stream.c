/*
 * stream.c - the CUDA backend's pipelined executor for streamed host-memory
 * plans (cvi_backend.execute_host_streamed; the job and its slabs:
 * src/stream.h). One host thread per device (a worker; the threads are the
 * process's parked set, stream_workers.h, which outlive an execution and
 * keep their OpenMP teams), each with three streams (copies in, kernels,
 * copies out), CVI_STREAM_BUFFERS slots of pinned staging and a device
 * buffer (the slab's input and output images, pitched), and its own
 * sub-plans (one per distinct slab buffer size, made with its device
 * current, of the plan's strategy). A worker takes slabs from the job's
 * shared counter; for each it gathers the extended input rows into a
 * slot's pinned buffer (CPU threads),
 * queues the copy in, the kernel and the copy out of the exact rows, each
 * stream waiting on the previous one's event, and goes on to the next slab
 * while the GPU works; a slot is reused once its copy out has landed, when
 * its rows are scattered to the caller's output and reported. The calling
 * thread meanwhile reports progress (cvi_stream_monitor). The sub-plans are
 * kept in the plan for its next execution; the streams, events and device
 * buffers (a pipeline) go back to the process when an execution ends and
 * serve the next execution of any plan on the device (give_pipe,
 * take_pipe); the pinned staging comes from the process's pool
 * (pinned_pool.h): a slot takes it when a slab first reaches it in an
 * execution (one buffer for its input and output rows, and only the side
 * the slab stages), so the first slab waits for one slot's pinning, not
 * all of them, and gives it back when the execution ends.
 * Every CUDA call is checked.
 *
 * Arrays the caller pinned (convolve_host_register) with packed rows are
 * copied straight from and to (of a slab whose extended rows reach past the
 * array's edges, those rows alone are gathered, while the others copy; in
 * place, a slab's own rows are copied straight and its halo rows gathered
 * from the job's store).
 *
 * CONVOLVE_STREAM_TIMELINE=FILE (a measuring aid for bench/stream_bench.c
 * and docs/scale.md) appends to FILE, after each streamed execution, one CSV
 * line per slab: device, slab, rows, and the start and end (ms since the
 * execution began) of its gather (host), copy in, kernel, copy out, scatter
 * (host) and its slot's taking of staging (host: before the gather; as long
 * as a pinning where a slot takes a new buffer), the device times from CUDA
 * events.
 */
#include "backend.h"
#include "device_images.h"
#include "pinned_pool.h"
#include "plan.h"
#include "stream_workers.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SUBPLANS 6

typedef struct {
    void *h;                    /* pinned staging from the process's pool (pinned_pool.h), taken
                           at the slot's first use in an execution (slot_staging) */
    size_t h_size;              /* its size (0: none held) */
    char *h_in, *h_out;         /* in it: the packed extended input rows (at its start), the
                           exact output rows (at its end); NULL: not needed */
    void *d_buf;                /* device memory for both images (size_buffers) */
    size_t cap;                 /* its bytes */
    void *d_in, *d_out;         /* the device images in it, lines `pitch` bytes apart */
    size_t in_pitch, out_pitch; /* for this execution's geometry (size_buffers) */
    cudaEvent_t copied_in, computed, copied_out;
    cvi_slab slab;
    int busy;
    cudaEvent_t t_in, t_comp, t_out; /* timeline only: the starts, timed */
    size_t rec;                      /* timeline record of the slab in flight */
} slot;

/* One slab's timeline (ms from the execution's start). */
typedef struct {
    int device;
    size_t slab, rows;
    double gather0, gather1, in0, in1, k0, k1, out0, out1, scatter0, scatter1;
    double staging0, staging1; /* its slot's staging taken (slot_staging) */
} timeline_rec;

/* One device's resources: its sub-plans, kept by the plan between
 * executions, and its pipeline (streams, events, device buffers), which
 * goes back to the process's idle pipelines when an execution ends
 * (give_pipe) unless it is large, and is taken from there by the next
 * execution of any plan on the device (take_pipe). */
typedef struct cvcu_stream_worker {
    int device;
    size_t max_ext_rows, slab_rows; /* what the sub-plans were made for */
    cudaStream_t in_stream, compute, out_stream;
    slot slots[CVI_STREAM_BUFFERS];
    size_t sub_rows[SUBPLANS]; /* 0: empty */
    cvcu_plan *sub[SUBPLANS];
    int sub_turn;
    cudaEvent_t t_base; /* timeline only */
    int timed;          /* the events below time */
    int pending;        /* a cancelled execution left slabs in flight: the
                                           streams are drained before the next use */
} worker_res;

struct cvcu_stream_cache {
    int count;
    worker_res *workers;
};

typedef struct {
    cvi_stream_job *job;
    int index;
    worker_res *res;
    timeline_rec *recs;        /* job->slab_count records, or NULL (no timeline) */
    double t0;                 /* host clock at the execution's start (s) */
    double base_ms;            /* timeline: when the worker's t_base was recorded (ms) */
    int prefault;              /* fault the caller's output in first (cvi_stream_prefault_out) */
    int in_direct, out_direct; /* the caller's arrays are pinned and packed: copied
                                   straight from and to them (no staging) */
    size_t lines_per_row;      /* device image lines (x rows) per slab row (2-D, 3-D) */
    size_t in_line, out_line;  /* bytes of a packed line; 1-D: of a slab row (one element) */
} worker_arg;

/* Waits for the work in flight on r's streams (a cancelled execution's
 * slabs), its device made current meanwhile; their errors are not kept. */
static void drain_pipe(worker_res *r)
{
    if (!r->in_stream)
        return;
    int prev = 0;
    if (cudaGetDevice(&prev) != cudaSuccess)
        prev = r->device;
    (void)cudaSetDevice(r->device);
    cudaStream_t streams[3] = {r->in_stream, r->compute, r->out_stream};
    for (int i = 0; i < 3; i++)
        if (streams[i]) /* a pipeline whose making failed has some only */
            (void)cudaStreamSynchronize(streams[i]);
    (void)cudaGetLastError();
    (void)cudaSetDevice(prev);
    r->pending = 0;
}

/* Frees r's pipeline (streams, events, device buffers) after the work in
 * flight on it, its device made current meanwhile. */
static void free_pipe(worker_res *r)
{
    if (!r->in_stream)
        return;
    drain_pipe(r);
    int prev = 0;
    if (cudaGetDevice(&prev) != cudaSuccess)
        prev = r->device;
    (void)cudaSetDevice(r->device);
    for (int i = 0; i < CVI_STREAM_BUFFERS; i++) {
        slot *s = &r->slots[i];
        cudaEvent_t ev[6] = {s->copied_in, s->computed, s->copied_out,
                             s->t_in,      s->t_comp,   s->t_out};
        for (int k = 0; k < 6; k++)
            if (ev[k])
                (void)cudaEventDestroy(ev[k]);
        if (s->d_buf)
            (void)cudaFree(s->d_buf);
        s->copied_in = s->computed = s->copied_out = s->t_in = s->t_comp = s->t_out = NULL;
        s->d_buf = s->d_in = s->d_out = NULL;
        s->cap = 0;
    }
    if (r->t_base)
        (void)cudaEventDestroy(r->t_base);
    cudaStream_t streams[3] = {r->in_stream, r->compute, r->out_stream};
    for (int i = 0; i < 3; i++)
        if (streams[i])
            (void)cudaStreamDestroy(streams[i]);
    r->t_base = NULL;
    r->in_stream = r->compute = r->out_stream = NULL;
    r->timed = r->pending = 0;
    (void)cudaGetLastError();
    (void)cudaSetDevice(prev);
}

/* ---- the process's idle pipelines ----------------------------------------
 * A pipeline (3 streams, 9 or 19 events, 3 device buffers) costs about
 * 0.7 ms to make on the H100 host, a third of a later 2048^2 float32 call
 * from Python, so a plan's first execution takes one an earlier execution
 * of any plan gave back. Pipelines of at most PIPE_KEEP_BYTES of device
 * memory go back when an execution ends (one device's at the default
 * staging size holds 54 MiB: size_buffers); at most IDLE_PIPES are kept,
 * the one given back longest ago freed first; larger ones stay with their
 * plan. */
#define IDLE_PIPES 4
#define PIPE_KEEP_BYTES ((size_t)96 << 20)
#define PIPE_ROUND ((size_t)2 << 20) /* device buffers: whole 2 MiB */

static pthread_mutex_t idle_mutex = PTHREAD_MUTEX_INITIALIZER;
static worker_res idle[IDLE_PIPES]; /* the pipeline fields alone are set */
static int idle_count;
static unsigned long pipes_made;
static unsigned long buffers_made; /* slots' device buffers allocated */
static pthread_once_t idle_fork_once = PTHREAD_ONCE_INIT;

static void idle_fork_prepare(void)
{
    pthread_mutex_lock(&idle_mutex);
}

static void idle_fork_parent(void)
{
    pthread_mutex_unlock(&idle_mutex);
}

static void idle_fork_child(void)
{
    idle_count = 0; /* the parent's CUDA handles serve no child */
    pthread_mutex_unlock(&idle_mutex);
}

static void idle_register_fork(void)
{
    (void)pthread_atfork(idle_fork_prepare, idle_fork_parent, idle_fork_child);
}

void cvcu_stream_pipes_stats(int *idle_pipes, unsigned long *made)
{
    pthread_mutex_lock(&idle_mutex);
    *idle_pipes = idle_count;
    *made = pipes_made;
    pthread_mutex_unlock(&idle_mutex);
}

unsigned long cvcu_stream_buffers_made(void)
{
    pthread_mutex_lock(&idle_mutex);
    const unsigned long made = buffers_made;
    pthread_mutex_unlock(&idle_mutex);
    return made;
}

/* Moves the pipeline fields from *from to *to (whose own are empty). */
static void move_pipe(worker_res *to, worker_res *from)
{
    to->in_stream = from->in_stream, to->compute = from->compute;
    to->out_stream = from->out_stream, to->t_base = from->t_base, to->timed = from->timed;
    from->in_stream = from->compute = from->out_stream = NULL;
    from->t_base = NULL;
    from->timed = 0;
    for (int i = 0; i < CVI_STREAM_BUFFERS; i++) {
        slot *t = &to->slots[i], *f = &from->slots[i];
        t->copied_in = f->copied_in, t->computed = f->computed, t->copied_out = f->copied_out;
        t->t_in = f->t_in, t->t_comp = f->t_comp, t->t_out = f->t_out;
        t->d_buf = f->d_buf, t->cap = f->cap, t->d_in = t->d_out = NULL;
        f->copied_in = f->computed = f->copied_out = f->t_in = f->t_comp = f->t_out = NULL;
        f->d_buf = f->d_in = f->d_out = NULL;
        f->cap = 0;
    }
}

/* Gives r's idle pipeline (nothing in flight) to the process, unless it
 * holds more than PIPE_KEEP_BYTES (it stays in r). */
static void give_pipe(worker_res *r)
{
    if (!r->in_stream || r->pending)
        return;
    size_t bytes = 0;
    for (int i = 0; i < CVI_STREAM_BUFFERS; i++)
        bytes += r->slots[i].cap;
    if (bytes > PIPE_KEEP_BYTES)
        return;
    (void)pthread_once(&idle_fork_once, idle_register_fork);
    worker_res old;
    int evicted = 0;
    pthread_mutex_lock(&idle_mutex);
    if (idle_count == IDLE_PIPES) { /* the oldest goes */
        memset(&old, 0, sizeof old);
        old.device = idle[0].device;
        move_pipe(&old, &idle[0]);
        memmove(&idle[0], &idle[1], (size_t)(IDLE_PIPES - 1) * sizeof idle[0]);
        idle_count--;
        evicted = 1;
    }
    worker_res *e = &idle[idle_count++];
    memset(e, 0, sizeof *e);
    e->device = r->device;
    move_pipe(e, r);
    pthread_mutex_unlock(&idle_mutex);
    if (evicted)
        free_pipe(&old);
}

int cvcu_stream_release_idle(int device)
{
    worker_res gone[IDLE_PIPES];
    int count = 0;
    pthread_mutex_lock(&idle_mutex);
    for (int i = 0; i < idle_count;) {
        if (idle[i].device != device) {
            i++;
            continue;
        }
        memset(&gone[count], 0, sizeof gone[count]);
        gone[count].device = device;
        move_pipe(&gone[count++], &idle[i]);
        memmove(&idle[i], &idle[i + 1], (size_t)(idle_count - i - 1) * sizeof idle[0]);
        idle_count--;
    }
    pthread_mutex_unlock(&idle_mutex);
    for (int i = 0; i < count; i++)
        free_pipe(&gone[i]);
    return count;
}

/* Gives r (its device current, no pipeline) an idle pipeline of its device
 * and kind (timed events or not), the one whose buffers hold `need` bytes a
 * slot with the least to spare, else the latest given; none where there is
 * none. One whose streams no longer work (a reset device) is dropped. */
static void take_pipe(worker_res *r, int timed, size_t need)
{
    pthread_mutex_lock(&idle_mutex);
    int best = -1;
    size_t best_bytes = 0;
    for (int i = 0; i < idle_count; i++) {
        const worker_res *e = &idle[i];
        if (e->device != r->device || e->timed != timed)
            continue;
        const size_t b = e->slots[0].cap;
        const int fits = b >= need;
        const int best_fits = best >= 0 && best_bytes >= need;
        if (best < 0 || (fits && (!best_fits || b < best_bytes)) || (!fits && !best_fits))
            best = i, best_bytes = b;
    }
    if (best >= 0) {
        move_pipe(r, &idle[best]);
        memmove(&idle[best], &idle[best + 1], (size_t)(idle_count - best - 1) * sizeof idle[0]);
        idle_count--;
    }
    pthread_mutex_unlock(&idle_mutex);
    if (r->in_stream) {
        cudaError_t e = cudaStreamQuery(r->in_stream);
        if (e != cudaSuccess && e != cudaErrorNotReady) {
            /* the handles are stale: forgotten, not destroyed */
            worker_res lost;
            memset(&lost, 0, sizeof lost);
            move_pipe(&lost, r);
            (void)cudaGetLastError();
        }
    }
}

/* Frees r's resources but its pipeline, which goes to the process
 * (give_pipe) where it may, once the work in flight on it (a cancelled
 * execution's, which may still use the sub-plans and the staging) is
 * done. */
static void free_worker(worker_res *r)
{
    drain_pipe(r);
    for (int i = 0; i < SUBPLANS; i++)
        if (r->sub_rows[i])
            cvcu_release(r->sub[i]);
    for (int i = 0; i < CVI_STREAM_BUFFERS; i++)
        cvcu_pinned_give(r->slots[i].h, r->slots[i].h_size);
    give_pipe(r);
    free_pipe(r);
    memset(r, 0, sizeof *r);
}

/* Frees r's resources, its pipeline too, keeping which device it is for
 * (after a failure). */
static void free_worker_keep_device(worker_res *r)
{
    int device = r->device;
    free_pipe(r);
    free_worker(r);
    r->device = device;
}

/* Frees what the streamed executor kept in a plan (its stream_free). */
static void cache_free(struct cvcu_stream_cache *c)
{
    if (!c)
        return;
    for (int w = 0; w < c->count; w++)
        free_worker(&c->workers[w]);
    free(c->workers);
    free(c);
}

/* Makes the worker's streams and events (its device current; it has
 * none). */
static convolve_status make_pipe(convolve_context *ctx, int timed, worker_res *r)
{
    pthread_mutex_lock(&idle_mutex);
    pipes_made++;
    pthread_mutex_unlock(&idle_mutex);
    cudaError_t e;
    if ((e = cudaStreamCreateWithFlags(&r->in_stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&r->compute, cudaStreamNonBlocking)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&r->out_stream, cudaStreamNonBlocking)) != cudaSuccess)
        return cvcu_error(ctx, e, "creating the streams of the slab pipeline");
    const unsigned flags = timed ? 0u : (unsigned)cudaEventDisableTiming;
    r->timed = timed;
    if (timed && (e = cudaEventCreate(&r->t_base)) != cudaSuccess)
        return cvcu_error(ctx, e, "creating the events of the slab pipeline");
    for (int i = 0; i < CVI_STREAM_BUFFERS; i++) {
        slot *s = &r->slots[i];
        if ((e = cudaEventCreateWithFlags(&s->copied_in, flags)) != cudaSuccess ||
            (e = cudaEventCreateWithFlags(&s->computed, flags)) != cudaSuccess ||
            (e = cudaEventCreateWithFlags(&s->copied_out, flags)) != cudaSuccess ||
            (timed && ((e = cudaEventCreate(&s->t_in)) != cudaSuccess ||
                       (e = cudaEventCreate(&s->t_comp)) != cudaSuccess ||
                       (e = cudaEventCreate(&s->t_out)) != cudaSuccess)))
            return cvcu_error(ctx, e, "creating the events of the slab pipeline");
    }
    return CONVOLVE_OK;
}

/* The bytes of a slot's device images for this execution and their pitch:
 * lines `lines` of `width` bytes (2-D and 3-D: pitched to 512 bytes, as
 * cudaMallocPitch lays them here; 1-D: one line). */
static void image_bytes(const worker_arg *a, size_t line, size_t *pitch, size_t *bytes)
{
    const cvi_stream_job *job = a->job;
    if (job->axis == 2) { /* 1-D: one line of elements */
        *pitch = line * job->max_ext_rows;
        *bytes = *pitch;
        return;
    }
    *pitch = (line + 511) / 512 * 512;
    *bytes = *pitch * job->max_ext_rows * a->lines_per_row;
}

/* The device bytes a slot needs for this execution's geometry: its input
 * image, then (from a multiple of 512 bytes: *out_at) its output image. */
static size_t slot_need(const worker_arg *a, size_t *in_pitch, size_t *out_pitch, size_t *out_at)
{
    size_t in_bytes, out_bytes;
    image_bytes(a, a->in_line, in_pitch, &in_bytes);
    image_bytes(a, a->out_line, out_pitch, &out_bytes);
    *out_at = (in_bytes + 511) / 512 * 512;
    return *out_at + out_bytes;
}

/* Gives every slot of r device images for this execution's geometry, both
 * in one buffer: one too small is replaced by one of whole PIPE_ROUND, and
 * at least the pinned staging's size and one PIPE_ROUND more (a slab on one
 * device is no larger than the staging: every later shape then fits the
 * buffers an earlier execution made, where growing them cost 1.0 ms of a
 * 2048^2 float32 first call of 4.2 ms on an H200) when the device budget
 * holds that for each of CVI_STREAM_BUFFERS slots. */
static convolve_status size_buffers(convolve_context *ctx, const worker_arg *a, worker_res *r)
{
    size_t in_pitch, out_pitch, out_at;
    const size_t need = slot_need(a, &in_pitch, &out_pitch, &out_at);
    size_t least = cvi_stream_staging_bytes() + PIPE_ROUND;
    const size_t share = a->job->device_budget / CVI_STREAM_BUFFERS / PIPE_ROUND * PIPE_ROUND;
    least = least < share ? least : share;
    for (int i = 0; i < CVI_STREAM_BUFFERS; i++) {
        slot *s = &r->slots[i];
        if (s->cap < need) {
            if (s->d_buf)
                (void)cudaFree(s->d_buf);
            s->d_buf = NULL, s->cap = 0;
            size_t bytes = (need + PIPE_ROUND - 1) / PIPE_ROUND * PIPE_ROUND;
            bytes = bytes < least ? least : bytes;
            cudaError_t e = cudaMalloc(&s->d_buf, bytes);
            if (e == cudaErrorMemoryAllocation &&
                cvcu_stream_release_idle(r->device) + cvcu_image_release_idle(r->device) > 0) {
                (void)cudaGetLastError(); /* room made by idle buffers: once more */
                e = cudaMalloc(&s->d_buf, bytes);
            }
            if (e != cudaSuccess) {
                s->d_buf = NULL;
                return cvcu_error(ctx, e, "allocating the device slab buffers");
            }
            s->cap = bytes;
            pthread_mutex_lock(&idle_mutex);
            buffers_made++;
            pthread_mutex_unlock(&idle_mutex);
        }
        s->d_in = s->d_buf;
        s->d_out = (char *)s->d_buf + out_at;
        s->in_pitch = in_pitch, s->out_pitch = out_pitch;
    }
    return CONVOLVE_OK;
}

/* Bytes the output rows take at the end of a slot's staging (whole
 * STAGING_ALIGN, so that they start aligned), 0 where the output is copied
 * straight to the caller's array. */
#define STAGING_ALIGN ((size_t)256)
static size_t staging_out_bytes(const worker_arg *a)
{
    const size_t out = a->job->slab_rows * a->job->out_row_bytes;
    return a->out_direct ? 0 : (out + STAGING_ALIGN - 1) / STAGING_ALIGN * STAGING_ALIGN;
}

/* Gives slot s the pinned staging its next slab needs, when the slot is
 * about to be used (not every slot up front: the first slab waits for one
 * slot's pinning, the other slots are pinned while the device works on it,
 * and a slot no slab reaches takes none): one buffer from the process's
 * pool, the extended input rows at its start where need_in (rows are
 * gathered), the output rows at its end where the output is staged. A
 * buffer held (taken earlier in the execution, or by a cancelled one) that
 * is large enough is kept, a smaller one given back for a larger (nothing
 * in flight uses it: the slot is free). Errors: "allocating pinned staging
 * buffers" (the slot then holds none). */
static convolve_status slot_staging(convolve_context *ctx, const worker_arg *a, slot *s,
                                    int need_in)
{
    const size_t in = need_in ? a->job->max_ext_rows * a->job->in_row_bytes : 0;
    const size_t out = staging_out_bytes(a);
    if (s->h_size < in + out) {
        cvcu_pinned_give(s->h, s->h_size);
        s->h = NULL, s->h_size = 0;
        cudaError_t e = cvcu_pinned_take(in + out, &s->h, &s->h_size);
        if (e != cudaSuccess) {
            s->h = NULL, s->h_size = 0;
            s->h_in = s->h_out = NULL;
            return cvcu_error(ctx, e, "allocating pinned staging buffers");
        }
    }
    s->h_in = in ? s->h : NULL;
    s->h_out = out ? (char *)s->h + s->h_size - out : NULL;
    return CONVOLVE_OK;
}

/* Gives the slots' staging back to the pool (nothing in flight uses it). */
static void give_staging(worker_res *r)
{
    for (int i = 0; i < CVI_STREAM_BUFFERS; i++) {
        slot *s = &r->slots[i];
        cvcu_pinned_give(s->h, s->h_size);
        s->h = NULL, s->h_size = 0;
        s->h_in = s->h_out = NULL;
    }
}

/* Waits for event ev, as cudaEventSynchronize; *left = 1 (and cudaSuccess)
 * instead where the job stops meanwhile and `may_leave`. It polls: the first
 * millisecond without a pause (as the runtime's own spinning wait), then
 * every 20 microseconds or so. */
static cudaError_t wait_event(const cvi_stream_job *job, cudaEvent_t ev, int may_leave, int *left)
{
    *left = 0;
    if (!may_leave)
        return cudaEventSynchronize(ev);
    const double t0 = cvi_now_s();
    for (;;) {
        cudaError_t e = cudaEventQuery(ev);
        if (e != cudaErrorNotReady)
            return e;
        if (cvi_stream_stopped(job)) {
            *left = 1;
            return cudaSuccess;
        }
        if (cvi_now_s() - t0 > 1e-3) {
            struct timespec pause = {0, 20000};
            nanosleep(&pause, NULL);
        }
    }
}

/* The worker's sub-plan for buffers of ext_rows rows (made on first use). */
static convolve_status sub_plan(convolve_context *ctx, cvi_stream_job *job, int w, worker_res *r,
                                size_t ext_rows, cvcu_plan **plan)
{
    for (int i = 0; i < SUBPLANS; i++)
        if (r->sub_rows[i] == ext_rows) {
            *plan = r->sub[i];
            return CONVOLVE_OK;
        }
    int i = r->sub_turn++ % SUBPLANS;
    if (r->sub_rows[i]) {
        /* its kernels may still run on the compute stream */
        cudaError_t e = cudaStreamSynchronize(r->compute);
        if (e != cudaSuccess)
            return cvcu_error(ctx, e, "waiting for the slab kernels");
        cvcu_release(r->sub[i]);
        r->sub_rows[i] = 0;
    }
    cvi_problem sub;
    cvi_stream_subproblem(job, ext_rows, &sub);
    void *state = NULL;
    convolve_status st = cvcu_prepare(ctx, &job->worker_device[w], job->strategy, &sub, &state);
    if (st != CONVOLVE_OK)
        return st;
    r->sub[i] = state;
    r->sub_rows[i] = ext_rows;
    *plan = state;
    return CONVOLVE_OK;
}

/* 1 if a stopped job's slabs in flight may be left to run on their own
 * (cancelled): their copies out write staging, not the caller's output.
 * Only a job with a progress callback can be cancelled: the others wait in
 * cudaEventSynchronize, with no polling. */
static int may_leave(const worker_arg *a)
{
    return !a->out_direct && cvi_stream_cancellable(a->job);
}

/* Waits for slot s's copy out (and reads its timeline's device times);
 * *left = 1 instead where the job stopped and may_leave. */
static convolve_status landed(convolve_context *ctx, worker_arg *a, slot *s, int *left)
{
    cudaError_t e = wait_event(a->job, s->copied_out, may_leave(a), left);
    if (e != cudaSuccess)
        return cvcu_error(ctx, e, "running a slab");
    if (*left)
        return CONVOLVE_OK;
    timeline_rec *t = a->recs ? &a->recs[s->rec] : NULL;
    if (t) {
        float ms[6] = {0};
        worker_res *r = a->res;
        cudaEvent_t ev[6] = {s->t_in,     s->copied_in, s->t_comp,
                             s->computed, s->t_out,     s->copied_out};
        for (int i = 0; i < 6; i++)
            if ((e = cudaEventElapsedTime(&ms[i], r->t_base, ev[i])) != cudaSuccess)
                return cvcu_error(ctx, e, "timing a slab");
        /* from the host time of t_base (landed() may run twice for a
         * slab: the last slot is waited for, then finished) */
        const double base = a->base_ms;
        t->in0 = base + ms[0], t->in1 = base + ms[1], t->k0 = base + ms[2];
        t->k1 = base + ms[3], t->out0 = base + ms[4], t->out1 = base + ms[5];
    }
    return CONVOLVE_OK;
}

/* Waits for slot s's copy out, scatters its rows and reports them; *left
 * = 1 instead (the slot still busy) where the job stopped and may_leave. */
static convolve_status finish(convolve_context *ctx, worker_arg *a, slot *s, int deliver, int *left)
{
    *left = 0;
    if (!s->busy)
        return CONVOLVE_OK;
    if (!deliver) { /* after a failure: waited for, its error (if any) not the one reported */
        s->busy = 0;
        (void)cudaEventSynchronize(s->copied_out);
        (void)cudaGetLastError();
        return CONVOLVE_OK;
    }
    convolve_status st = landed(ctx, a, s, left);
    if (st != CONVOLVE_OK || *left)
        return st;
    s->busy = 0;
    timeline_rec *t = a->recs ? &a->recs[s->rec] : NULL;
    if (t)
        t->scatter0 = (cvi_now_s() - a->t0) * 1e3;
    if (!a->out_direct) /* else the copy wrote the caller's rows */
        cvi_stream_scatter(a->job, &s->slab, s->h_out, a->job->host_threads);
    cvi_stream_done(a->job, &s->slab);
    if (t)
        t->scatter1 = (cvi_now_s() - a->t0) * 1e3;
    return CONVOLVE_OK;
}

/* Slot s, whose copy out has landed (landed()), is free: its last slab's
 * rows are scattered while the next slab (geometry in *next) is gathered
 * into it, both at once (cvi_stream_exchange), then reported; s->slab
 * becomes next. For the pinned paths (rows copied straight) and in place,
 * finish() and start() do it one after the other instead: this is only
 * called when the whole buffer is gathered and the output scattered. */
static void exchange(worker_arg *a, slot *s, const cvi_slab *next)
{
    const int had = s->busy;
    timeline_rec *told = had && a->recs ? &a->recs[s->rec] : NULL;
    timeline_rec *tnew = a->recs ? &a->recs[next->index] : NULL;
    s->busy = 0;
    const double t0 = (cvi_now_s() - a->t0) * 1e3;
    cvi_stream_exchange(a->job, had ? &s->slab : NULL, s->h_out, next, s->h_in,
                        a->job->host_threads);
    const double t1 = (cvi_now_s() - a->t0) * 1e3;
    if (had)
        cvi_stream_done(a->job, &s->slab);
    if (told)
        told->scatter0 = t0, told->scatter1 = t1;
    if (tnew) {
        tnew->device = a->res->device, tnew->slab = next->index, tnew->rows = next->r1 - next->r0;
        tnew->gather0 = t0, tnew->gather1 = t1;
    }
    s->slab = *next;
}

/* Queues the copy of extended rows [b0, b1) of slot s's slab to its device
 * image from host memory src, packed rows from row b0 on. */
static cudaError_t copy_in(const worker_arg *a, slot *s, const void *src, size_t b0, size_t b1)
{
    if (b0 >= b1)
        return cudaSuccess;
    if (a->job->axis == 2) /* 1-D: one line of elements */
        return cudaMemcpyAsync((char *)s->d_in + b0 * a->in_line, src, (b1 - b0) * a->in_line,
                               cudaMemcpyHostToDevice, a->res->in_stream);
    /* 2-D and 3-D: lines_per_row lines a row, `in_pitch` apart on the device */
    return cudaMemcpy2DAsync((char *)s->d_in + b0 * a->lines_per_row * s->in_pitch, s->in_pitch,
                             src, a->in_line, a->in_line, (b1 - b0) * a->lines_per_row,
                             cudaMemcpyHostToDevice, a->res->in_stream);
}

/* The extended rows [*lo, *hi) of the slab that are copied straight from
 * the caller's pinned input (none: *lo == *hi == 0); the others are
 * gathered into the slot's staging. From a pinned input, the rows that lie
 * in the array (in place, the slab's own rows; the halo comes from the
 * store); else none. */
static void direct_rows(const worker_arg *a, const cvi_slab *slab, size_t *lo, size_t *hi)
{
    const cvi_stream_job *job = a->job;
    *lo = *hi = 0;
    if (a->in_direct && job->in_place) {
        *lo = slab->out_first;
        *hi = *lo + (slab->r1 - slab->r0);
    } else if (a->in_direct) {
        const ptrdiff_t n = (ptrdiff_t)job->rows;
        *lo = slab->ext_lo < 0 ? (size_t)-slab->ext_lo : 0;
        *hi = slab->ext_lo + (ptrdiff_t)slab->ext_rows > n ? (size_t)(n - slab->ext_lo)
                                                           : slab->ext_rows;
        if (*lo >= *hi)
            *lo = *hi = 0;
    }
}

/* 1 if some of the slab's extended rows are gathered into staging. */
static int gathers(const worker_arg *a, const cvi_slab *slab)
{
    size_t lo, hi;
    direct_rows(a, slab, &lo, &hi);
    return lo == hi || lo > 0 || hi < slab->ext_rows;
}

/* Gathers slab into slot s (unless `gathered`: exchange() did) and queues
 * its copy in, kernel and copy out; the slot holds the staging the slab
 * needs (slot_staging). */
static convolve_status start(convolve_context *ctx, worker_arg *a, slot *s, cvcu_plan *plan,
                             int gathered)
{
    cvi_stream_job *job = a->job;
    worker_res *r = a->res;
    const cvi_slab *slab = &s->slab;
    timeline_rec *t = a->recs ? &a->recs[slab->index] : NULL;
    s->rec = slab->index;
    if (t && !gathered) {
        t->device = r->device, t->slab = slab->index, t->rows = slab->r1 - slab->r0;
        t->gather0 = (cvi_now_s() - a->t0) * 1e3;
    }
    /* extended rows [lo, hi) lie in the array: from a pinned input they are
     * copied straight from it, their copy queued first, and only an edge
     * slab's halo rows (mapped by the mode) are gathered into the staging
     * buffer meanwhile, then copied (gathering a whole edge slab held the
     * first copy back: "Measured choices", docs/architecture.md); else
     * every row is gathered, then copied */
    const size_t ext = slab->ext_rows, rb = job->in_row_bytes;
    size_t lo, hi;
    direct_rows(a, slab, &lo, &hi);
    if (lo == hi && !gathered)
        cvi_stream_gather(job, slab, 0, ext, s->h_in, job->host_threads);
    if (t && !gathered)
        t->gather1 = (cvi_now_s() - a->t0) * 1e3;
    cudaError_t e;
    if (t && (e = cudaEventRecord(s->t_in, r->in_stream)) != cudaSuccess)
        return cvcu_error(ctx, e, "timing a slab");
    const char *staged = s->h_in;
    if (lo < hi) {
        const char *direct = (const char *)job->in + (size_t)(slab->ext_lo + (ptrdiff_t)lo) * rb;
        if ((e = copy_in(a, s, direct, lo, hi)) != cudaSuccess)
            return cvcu_error(ctx, e, "copying a slab to the device");
        if (lo > 0)
            cvi_stream_gather(job, slab, 0, lo, s->h_in, job->host_threads);
        if (hi < ext)
            cvi_stream_gather(job, slab, hi, ext, s->h_in, job->host_threads);
        if (t && (lo > 0 || hi < ext)) /* the halo rows' gather */
            t->gather1 = (cvi_now_s() - a->t0) * 1e3;
        if ((lo > 0 && (e = copy_in(a, s, staged, 0, lo)) != cudaSuccess) ||
            (hi < ext && (e = copy_in(a, s, staged + hi * rb, hi, ext)) != cudaSuccess))
            return cvcu_error(ctx, e, "copying a slab to the device");
    } else if ((e = copy_in(a, s, staged, 0, ext)) != cudaSuccess) {
        return cvcu_error(ctx, e, "copying a slab to the device");
    }
    if ((e = cudaEventRecord(s->copied_in, r->in_stream)) != cudaSuccess ||
        (e = cudaStreamWaitEvent(r->compute, s->copied_in, 0)) != cudaSuccess)
        return cvcu_error(ctx, e, "copying a slab to the device");
    void *dst = a->out_direct ? (char *)job->out + slab->r0 * job->out_row_bytes : s->h_out;
    const int one_d = job->axis == 2;
    const size_t out_lines = one_d ? 1 : (slab->r1 - slab->r0) * a->lines_per_row;
    const size_t out_width = one_d ? (slab->r1 - slab->r0) * a->out_line : a->out_line;
    /* the device images as the one-shot path lays them: channels
     * interleaved, lines `pitch` apart */
    cvk_args k = plan->args;
    const long long C = (long long)plan->p.channels, n1 = (long long)plan->p.shape[1];
    const long long irow = (long long)(s->in_pitch / plan->in_esize);
    const long long orow = (long long)(s->out_pitch / plan->out_esize);
    k.in = s->d_in;
    k.out = s->d_out;
    k.ics = 1, k.is[2] = C, k.is[1] = irow, k.is[0] = irow * n1;
    k.ocs = 1, k.os[2] = C, k.os[1] = orow, k.os[0] = orow * n1;
    k.slab = 1;
    k.slab_lo = (long long)slab->ext_lo;
    k.slab_r0 = (long long)slab->r0;
    k.slab_r1 = (long long)slab->r1;
    if (t && (e = cudaEventRecord(s->t_comp, r->compute)) != cudaSuccess)
        return cvcu_error(ctx, e, "timing a slab");
    if ((e = cvcu_launch(plan, &k, r->compute)) != cudaSuccess)
        return cvcu_launch_error(ctx, plan, e);
    if ((e = cudaEventRecord(s->computed, r->compute)) != cudaSuccess ||
        (e = cudaStreamWaitEvent(r->out_stream, s->computed, 0)) != cudaSuccess)
        return cvcu_error(ctx, e, "running a slab's kernel");
    const char *first = (const char *)s->d_out +
                        (one_d ? slab->out_first * a->out_line
                               : slab->out_first * a->lines_per_row * s->out_pitch);
    const size_t out_pitch = one_d ? out_width : s->out_pitch;
    if (t && (e = cudaEventRecord(s->t_out, r->out_stream)) != cudaSuccess)
        return cvcu_error(ctx, e, "timing a slab");
    if ((e = cudaMemcpy2DAsync(dst, out_width, first, out_pitch, out_width, out_lines,
                               cudaMemcpyDeviceToHost, r->out_stream)) != cudaSuccess ||
        (e = cudaEventRecord(s->copied_out, r->out_stream)) != cudaSuccess)
        return cvcu_error(ctx, e, "copying a slab from the device");
    s->busy = 1;
    return CONVOLVE_OK;
}

/* One device's part of the job, on a thread of the process's parked set
 * (stream_workers.h): it may have run workers of earlier executions. */
static void run_worker(void *p)
{
    worker_arg *a = p;
    cvi_stream_job *job = a->job;
    const int w = a->index;
    convolve_context *ctx = job->worker_ctx[w];
    worker_res *r = a->res;
    convolve_status st = CONVOLVE_OK;
    (void)cudaGetLastError(); /* the thread's last error, left by an earlier execution
                                 (launches read it), is not this one's */
    cudaError_t e = cudaSetDevice(r->device);
    if (e != cudaSuccess) {
        st = cvcu_error(ctx, e, "selecting the device");
        goto out;
    }
    if (a->prefault)
        cvi_stream_prefault_out(job, job->host_threads);
    if (r->pending) /* a cancelled execution's slabs, left running */
        drain_pipe(r);
    const int timed = a->recs != NULL;
    if (r->in_stream && r->timed != timed) { /* timed events, or not */
        give_pipe(r);
        free_pipe(r);
    }
    if (!r->in_stream) {
        size_t in_pitch, out_pitch, out_at;
        take_pipe(r, timed, slot_need(a, &in_pitch, &out_pitch, &out_at));
    }
    if ((!r->in_stream && (st = make_pipe(ctx, timed, r)) != CONVOLVE_OK) ||
        (st = size_buffers(ctx, a, r)) != CONVOLVE_OK)
        goto out;
    r->max_ext_rows = job->max_ext_rows;
    r->slab_rows = job->slab_rows;
    if (a->recs) {
        /* the base: after the last execution's work, on the copy-in stream */
        if ((e = cudaStreamSynchronize(r->in_stream)) != cudaSuccess ||
            (e = cudaEventRecord(r->t_base, r->in_stream)) != cudaSuccess ||
            (e = cudaEventSynchronize(r->t_base)) != cudaSuccess) {
            st = cvcu_error(ctx, e, "timing the pipeline");
            goto out;
        }
        a->base_ms = (cvi_now_s() - a->t0) * 1e3;
    }
    size_t index, turn = 0;
    /* slots in use: with several devices and few slabs, no more than a
     * device's share of them, so that the first device to start does not
     * take three slabs of eight while the others are still starting (3-D
     * 640^3 15^3, 8 slabs on 4 GPUs: 87 ms against 221 on one, as fast as
     * on 3) */
    const size_t share = (job->slab_count + (size_t)job->worker_count - 1) /
                         (size_t)(job->worker_count > 0 ? job->worker_count : 1);
    const size_t nslots = job->worker_count > 1 && share < CVI_STREAM_BUFFERS
                              ? (share > 0 ? share : 1)
                              : CVI_STREAM_BUFFERS;
    /* every row through the staging buffers: the scatter of a slot's last
     * slab and the gather of its next one run at once */
    const int staged = !a->in_direct && !a->out_direct && !job->in_place;
    int left = 0; /* the job stopped while slabs were in flight: they are left */
    while (st == CONVOLVE_OK) {
        /* a free slot first, then a slab: a worker that took the next slab
         * while its slots were busy held it back from an idle device; the
         * slot's staging once it has a slab (a slot no slab reaches takes
         * none) */
        slot *s = &r->slots[turn % nslots];
        timeline_rec *t = NULL;
        double t_staging = 0;
        if (!staged) {
            if ((st = finish(ctx, a, s, 1, &left)) != CONVOLVE_OK || left ||
                !cvi_stream_next(job, &index))
                break;
            cvi_stream_slab(job, index, &s->slab);
            t = a->recs ? &a->recs[index] : NULL;
            t_staging = t ? (cvi_now_s() - a->t0) * 1e3 : 0;
            if ((st = slot_staging(ctx, a, s, gathers(a, &s->slab))) != CONVOLVE_OK)
                break;
        } else {
            /* the slot's copy out first (a slab is taken only once a slot
             * is free), then its scatter and the next slab's gather at once */
            if (s->busy && ((st = landed(ctx, a, s, &left)) != CONVOLVE_OK || left))
                break;
            cvi_slab next;
            if (!cvi_stream_next(job, &index)) {
                st = finish(ctx, a, s, 1, &left);
                break;
            }
            cvi_stream_slab(job, index, &next);
            t = a->recs ? &a->recs[index] : NULL;
            t_staging = t ? (cvi_now_s() - a->t0) * 1e3 : 0;
            if ((st = slot_staging(ctx, a, s, 1)) != CONVOLVE_OK)
                break;
            exchange(a, s, &next);
        }
        if (t) {
            t->staging0 = t_staging;
            t->staging1 = (cvi_now_s() - a->t0) * 1e3;
        }
        turn++;
        cvcu_plan *plan = NULL;
        if ((st = sub_plan(ctx, job, w, r, s->slab.ext_rows, &plan)) != CONVOLVE_OK ||
            (st = start(ctx, a, s, plan, staged)) != CONVOLVE_OK)
            break;
    }
    /* the slabs in flight finish (in the order they started); after a
     * failure they are only waited for; once the job stops (cancelled),
     * those whose copies out write staging are left to run on their own
     * (the next use of the worker drains them first), after their copies
     * in from a pinned input (the caller's memory) have landed: a cancel
     * returns within the monitor's tick, not after the slabs queued */
    for (size_t i = 0; i < nslots; i++) {
        slot *s = &r->slots[(turn + i) % nslots];
        convolve_status fs = CONVOLVE_OK;
        if (!left && s->busy)
            fs = finish(ctx, a, s, st == CONVOLVE_OK, &left);
        if (left && s->busy) {
            if (a->in_direct && cudaEventSynchronize(s->copied_in) != cudaSuccess)
                (void)cudaGetLastError();
            s->busy = 0;
            r->pending = 1;
        }
        if (st == CONVOLVE_OK)
            st = fs;
    }
    if (st == CONVOLVE_OK && !r->pending) { /* for the next execution of any plan */
        give_staging(r);
        give_pipe(r);
    }
out:
    if (st != CONVOLVE_OK) {
        cvi_stream_fail(job, w, st);
        free_worker_keep_device(r); /* made anew by the next execution */
    }
    cvi_stream_worker_exit(job);
}

/* 1 if host memory [ptr, ptr + bytes) is pinned (cudaHostRegister or
 * cudaMallocHost): its first and last bytes are. */
static int pinned(const void *ptr, size_t bytes)
{
    struct cudaPointerAttributes at;
    for (int i = 0; i < 2; i++) {
        const char *q = (const char *)ptr + (i ? bytes - 1 : 0);
        if (cudaPointerGetAttributes(&at, q) != cudaSuccess) {
            (void)cudaGetLastError();
            return 0;
        }
        if (at.type != cudaMemoryTypeHost)
            return 0;
    }
    return 1;
}

convolve_status cvcu_execute_host_streamed(convolve_context *ctx, cvi_stream_job *job)
{
    cvcu_plan *plan = job->backend_state;
    const int W = job->worker_count;
    cvcu_pinned_prime(cvi_stream_staging_bytes(), CVI_STREAM_BUFFERS); /* once a process */
    struct cvcu_stream_cache *c = plan->stream;
    /* sub-plans made for another geometry (another budget) are remade */
    if (c && (c->count != W || c->workers[0].slab_rows != job->slab_rows ||
              c->workers[0].max_ext_rows != job->max_ext_rows)) {
        cache_free(c);
        plan->stream = c = NULL;
    }
    if (!c) {
        if (!(c = calloc(1, sizeof *c)) || !(c->workers = calloc((size_t)W, sizeof *c->workers))) {
            free(c);
            return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for the workers");
        }
        c->count = W;
        plan->stream = c;
        plan->stream_free = cache_free;
    }
    int current = plan->device;
    for (int w = 0; w < W; w++)
        c->workers[w].device = job->devices ? job->devices[w] : current;

    const cvi_problem *p = job->problem;
    worker_arg args[W > 0 ? W : 1];
    cvcu_worker *threads[W > 0 ? W : 1];
    const size_t per_line = p->shape[2] * p->channels;
    int started = 0;
    const char *timeline = getenv("CONVOLVE_STREAM_TIMELINE");
    timeline_rec *recs = NULL;
    if (timeline && *timeline)
        recs = calloc(job->slab_count, sizeof *recs); /* none: no timeline, no error */
    const double t0 = cvi_now_s();
    const int in_direct = job->in_packed && pinned(job->in, job->rows * job->in_row_bytes);
    const int out_direct = job->out_packed && pinned(job->out, job->rows * job->out_row_bytes);
    /* a pageable output: its pages faulted in at once, in parallel, by the
     * first worker before its first slab (on its own thread: OpenMP on the
     * caller's thread hangs in a fork() child of a process whose caller
     * thread had run a parallel region, libgomp's team not being there) */
    const int prefault = !out_direct && job->out_packed && !job->in_place;
    for (int w = 0; w < W; w++) {
        args[w].prefault = w == 0 && prefault;
        args[w].in_direct = in_direct;
        args[w].out_direct = out_direct;
        args[w].recs = recs;
        args[w].t0 = t0;
        args[w].base_ms = 0;
        args[w].job = job;
        args[w].index = w;
        args[w].res = &c->workers[w];
        args[w].lines_per_row = job->axis == 0 ? p->shape[1] : 1;
        args[w].in_line = job->axis == 2 ? job->in_row_bytes : per_line * plan->in_esize;
        args[w].out_line = job->axis == 2 ? job->out_row_bytes : per_line * plan->out_esize;
        if (cvcu_worker_start(run_worker, &args[w], &threads[w]) != 0) {
            cvi_error(job->worker_ctx[w], CONVOLVE_ERROR_OUT_OF_MEMORY,
                      "cannot start a worker thread");
            cvi_stream_fail(job, w, CONVOLVE_ERROR_OUT_OF_MEMORY);
            break;
        }
        started++;
    }
    /* the monitor stays on the caller's thread: the progress callback (and
     * the Python package's Ctrl-C through it) runs there */
    cvi_stream_monitor(job, started);
    for (int w = 0; w < started; w++)
        cvcu_worker_wait(threads[w]); /* args[w] is not used after; the thread parks */
    /* the pool keeps this execution's staging (given back last) whatever its
     * limit, for the plan's next run; older buffers past the limit go */
    const size_t slot_bytes = job->max_ext_rows * job->in_row_bytes +
                              job->slab_rows * job->out_row_bytes + ((size_t)4 << 20);
    cvcu_pinned_trim(slot_bytes * CVI_STREAM_BUFFERS * (size_t)W);
    if (recs) {
        FILE *f = fopen(timeline, "a");
        if (f) { /* a measuring aid: a file that cannot be written is left out */
            fprintf(f, "# device,slab,rows,gather0,gather1,in0,in1,kernel0,kernel1,out0,out1,"
                       "scatter0,scatter1,staging0,staging1 (ms)\n");
            for (size_t i = 0; i < job->slab_count; i++) {
                const timeline_rec *t = &recs[i];
                if (t->rows)
                    fprintf(f,
                            "%d,%zu,%zu,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,"
                            "%.3f\n",
                            t->device, t->slab, t->rows, t->gather0, t->gather1, t->in0, t->in1,
                            t->k0, t->k1, t->out0, t->out1, t->scatter0, t->scatter1, t->staging0,
                            t->staging1);
            }
            fclose(f);
        }
        free(recs);
    }
    return CONVOLVE_OK;
}
