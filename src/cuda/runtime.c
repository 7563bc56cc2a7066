/*
 * runtime.c - the CUDA backend's host side (src/cuda/backend.h): the device
 * probe, the device-side plan (problem copy, weights in device memory or in
 * the filter bank), execution on device memory (asynchronous) and on host
 * memory (the chapter's pitched image path: pack, copy into cudaMallocPitch
 * rows, compute, copy back, scatter), the benchmark with CUDA events, and
 * the device-to-device copy bandwidth. Every CUDA call is checked; failures
 * become DEVICE or DEVICE_OUT_OF_MEMORY with the CUDA error named.
 */
#include "backend.h"
#include "kernels.h"
#include "strategies.h"
#include "fast.h"

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The device-side plan. */
typedef struct cvc_state {
    const cvi_strategy *strategy;
    int kernel;                 /* CVK_* */
    int device;                 /* the device current when the plan was made */
    size_t smem;                /* dynamic shared memory per block, bytes */
    size_t in_esize, out_esize;
    size_t shape[3], channels;
    ptrdiff_t in_strides[3], in_cstride;    /* the caller's layouts, bytes */
    ptrdiff_t out_strides[3], out_cstride;
    int in_packed, out_packed;  /* the caller's layouts are contiguous C order */
    cvk_args args;              /* strides of the caller's layouts, in elements */
    cvk_bank *bank;             /* filter bank (constant, tiled, cached), else NULL */
    void *d_weights;            /* weights in device memory (basic), else NULL */
    /* convolve_execute's buffers: made by its first call, kept for the next */
    void *d_in, *d_out;         /* device images, rows `pitch` bytes apart */
    size_t in_pitch, out_pitch;
    void *h_in, *h_out;         /* host packing buffers for strided layouts */
    cvf_plan *fast;             /* the fast strategies' state (src/cuda/fast.c) */
} cvc_state;

static convolve_status cuda_error(convolve_context *ctx, cudaError_t e, const char *what)
{
    convolve_status st = e == cudaErrorMemoryAllocation ? CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY
                                                        : CONVOLVE_ERROR_DEVICE;
    if (e == cudaErrorMemoryAllocation)
        (void)cudaGetLastError(); /* not sticky: keep it from the next launch check */
    return cvi_error(ctx, st, "CUDA: %s failed: %s (%s)", what, cudaGetErrorString(e),
                     cudaGetErrorName(e));
}

/* Makes the plan's device current; *prev receives the device to restore. */
static cudaError_t enter_device(const cvc_state *s, int *prev)
{
    cudaError_t e = cudaGetDevice(prev);
    if (e == cudaSuccess && *prev != s->device)
        e = cudaSetDevice(s->device);
    return e;
}

static void leave_device(const cvc_state *s, int prev)
{
    if (prev != s->device)
        (void)cudaSetDevice(prev);
}

/* ---- probe -------------------------------------------------------------- */

void cvi_cuda_probe(convolve_device_info *info, size_t *shared_memory_per_block)
{
    memset(info, 0, sizeof *info);
    *shared_memory_per_block = 0;
    int count = 0, dev = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(info->reason, sizeof info->reason, "%s (%s)", cudaGetErrorString(e),
                 cudaGetErrorName(e));
        (void)cudaGetLastError();
        return;
    }
    info->device_count = count;
    if (count < 1) {
        snprintf(info->reason, sizeof info->reason, "no CUDA device found");
        return;
    }
    struct cudaDeviceProp prop;
    if ((e = cudaGetDevice(&dev)) != cudaSuccess ||
        (e = cudaGetDeviceProperties(&prop, dev)) != cudaSuccess) {
        snprintf(info->reason, sizeof info->reason, "cannot query CUDA device %d: %s (%s)", dev,
                 cudaGetErrorString(e), cudaGetErrorName(e));
        (void)cudaGetLastError();
        return;
    }
    snprintf(info->name, sizeof info->name, "%s", prop.name);
    info->total_memory = prop.totalGlobalMem;
    info->compute_major = prop.major;
    info->compute_minor = prop.minor;
    info->multiprocessors = prop.multiProcessorCount;
    *shared_memory_per_block =
        prop.sharedMemPerBlockOptin ? prop.sharedMemPerBlockOptin : prop.sharedMemPerBlock;
    if (prop.major < 7) {
        snprintf(info->reason, sizeof info->reason,
                 "%.100s has compute capability %d.%d; libconvolve's CUDA kernels need 7.0 or "
                 "newer",
                 prop.name, prop.major, prop.minor);
        return;
    }
    if ((e = cvk_check_kernel_image()) != cudaSuccess) {
        snprintf(info->reason, sizeof info->reason,
                 "no kernel of this libconvolve runs on %.60s (compute capability %d.%d): %.80s; "
                 "rebuild with CMAKE_CUDA_ARCHITECTURES=%d%d", prop.name, prop.major, prop.minor,
                 cudaGetErrorString(e), prop.major, prop.minor);
        (void)cudaGetLastError();
        return;
    }
    info->available = 1;
}

/* ---- plans -------------------------------------------------------------- */

/* 1 if the byte strides describe contiguous C order with interleaved
 * channels (axes of extent one may have any stride). */
static int is_packed(const size_t shape[3], size_t channels, size_t esize,
                     const ptrdiff_t strides[3], ptrdiff_t cstride)
{
    size_t step = esize;
    if (channels > 1 && cstride != (ptrdiff_t)step)
        return 0;
    step *= channels;
    for (int a = 2; a >= 0; a--) {
        if (shape[a] > 1 && strides[a] != (ptrdiff_t)step)
            return 0;
        step *= shape[a];
    }
    return 1;
}

convolve_status cvi_cuda_prepare(convolve_context *ctx, const cvi_strategy *s,
                                 const cvi_problem *p, void **state)
{
    *state = NULL;
    if (!s || s->backend != CONVOLVE_BACKEND_CUDA)
        return cvi_error(ctx, CONVOLVE_ERROR_INTERNAL, "CUDA prepare given a non-CUDA strategy");
    int kernel = cvc_kernel_for(s->id, p->ndim);
    if (kernel < 0 && !cvf_is_fast(s->id))
        return cvi_error(ctx, CONVOLVE_ERROR_UNSUPPORTED,
                         "strategy '%s' does not serve %d-D arrays", s->name, p->ndim);
    char why[CVI_REASON_SIZE] = "";
    if (s->check && s->check(s, p, ctx, why, sizeof why) != CONVOLVE_OK)
        return cvi_error(ctx, CONVOLVE_ERROR_UNSUPPORTED,
                         "strategy '%s' cannot serve this case: %s", s->name, why);

    cvc_state *st = calloc(1, sizeof *st);
    if (!st)
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for a CUDA plan");
    st->strategy = s;
    st->kernel = kernel;
    st->smem = cvc_dynamic_shared(kernel, p);
    st->in_esize = convolve_dtype_size(p->in_type);
    st->out_esize = convolve_dtype_size(p->out_type);
    st->channels = p->channels;
    st->in_cstride = p->in_cstride;
    st->out_cstride = p->out_cstride;
    cvk_args *a = &st->args;
    const ptrdiff_t ie = (ptrdiff_t)st->in_esize, oe = (ptrdiff_t)st->out_esize;
    for (int i = 0; i < 3; i++) {
        st->shape[i] = p->shape[i];
        st->in_strides[i] = p->in_strides[i];
        st->out_strides[i] = p->out_strides[i];
        a->n[i] = (long long)p->shape[i];
        a->is[i] = (long long)(p->in_strides[i] / ie); /* exact: layouts are checked */
        a->os[i] = (long long)(p->out_strides[i] / oe);
        a->k[i] = (int)p->ksize[i];
        a->koff[i] = (int)p->koff[i];
    }
    a->ics = (long long)(p->in_cstride / ie);
    a->ocs = (long long)(p->out_cstride / oe);
    a->channels = (long long)p->channels;
    a->in_type = (int)p->in_type;
    a->out_type = (int)p->out_type;
    a->mode = p->mode;
    a->cval = p->cval;
    st->in_packed = is_packed(st->shape, st->channels, st->in_esize, st->in_strides,
                              st->in_cstride);
    st->out_packed = is_packed(st->shape, st->channels, st->out_esize, st->out_strides,
                               st->out_cstride);

    convolve_status status = CONVOLVE_OK;
    cudaError_t e = cudaGetDevice(&st->device);
    if (e != cudaSuccess) {
        status = cuda_error(ctx, e, "cudaGetDevice");
        goto fail;
    }
    const int dbl = p->in_type == CONVOLVE_FLOAT64;
    if (cvf_is_fast(s->id)) {
        if ((status = cvf_prepare(ctx, s, p, &st->fast)) != CONVOLVE_OK)
            goto fail;
    } else if (s->id == CVS_BASIC) {
        size_t bytes = p->kcount * cvc_acc_size(p); /* kcount <= INT_MAX / 2 (checked) */
        void *host = malloc(bytes);
        if (!host) {
            status = cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for weights");
            goto fail;
        }
        for (size_t i = 0; i < p->kcount; i++) {
            if (dbl)
                ((double *)host)[i] = p->weights[i];
            else
                ((float *)host)[i] = (float)p->weights[i];
        }
        e = cudaMalloc(&st->d_weights, bytes);
        if (e == cudaSuccess)
            e = cudaMemcpy(st->d_weights, host, bytes, cudaMemcpyHostToDevice);
        /* a copy from pageable memory may return before its DMA lands;
         * kernels on the caller's (non-blocking) streams must see it done */
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(0);
        free(host);
        if (e != cudaSuccess) {
            status = cuda_error(ctx, e, "uploading the filter weights");
            goto fail;
        }
        a->weights = st->d_weights;
    } else {
        st->bank = calloc(1, sizeof *st->bank);
        if (!st->bank) {
            status = cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for weights");
            goto fail;
        }
        for (size_t i = 0; i < p->kcount; i++) { /* kcount within the bank (checked) */
            if (dbl)
                st->bank->w.d[i] = p->weights[i];
            else
                st->bank->w.f[i] = (float)p->weights[i];
        }
    }
    *state = st;
    return CONVOLVE_OK;
fail:
    cvi_cuda_release(st);
    return status;
}

void cvi_cuda_release(void *state)
{
    cvc_state *st = state;
    if (!st)
        return;
    int prev = st->device;
    int entered = enter_device(st, &prev) == cudaSuccess;
    /* errors are ignored here: after a failed kernel the context may be gone */
    if (st->d_weights)
        (void)cudaFree(st->d_weights);
    if (st->d_in)
        (void)cudaFree(st->d_in);
    if (st->d_out)
        (void)cudaFree(st->d_out);
    if (entered)
        leave_device(st, prev);
    (void)cudaGetLastError();
    cvf_release(st->fast);
    free(st->bank);
    free(st->h_in);
    free(st->h_out);
    free(st);
}

/* ---- execution on device memory ---------------------------------------- */

static cudaError_t launch(const cvc_state *st, const cvk_args *a, cudaStream_t stream)
{
    if (st->fast)
        return cvf_launch(st->fast, a, stream);
    return cvk_launch(st->kernel, a, st->bank, st->smem, stream);
}

static convolve_status launch_error(convolve_context *ctx, const cvc_state *st, cudaError_t e)
{
    char what[384];
    const char *detail = st->fast ? cvf_message(st->fast) : "";
    snprintf(what, sizeof what, "launching strategy '%s'%s%s", st->strategy->name,
             *detail ? ": " : "", detail);
    return cuda_error(ctx, e, what);
}

convolve_status cvi_cuda_execute_device(convolve_context *ctx, void *state, const void *in,
                                        void *out, void *stream)
{
    cvc_state *st = state;
    int prev;
    cudaError_t e = enter_device(st, &prev);
    if (e != cudaSuccess)
        return cuda_error(ctx, e, "selecting the plan's device");
    cvk_args a = st->args;
    a.in = in;
    a.out = out;
    e = launch(st, &a, (cudaStream_t)stream);
    leave_device(st, prev);
    return e == cudaSuccess ? CONVOLVE_OK : launch_error(ctx, st, e);
}

/* ---- execution on host memory: the pitched image path ------------------ */

static size_t row_count(const cvc_state *st)
{
    return st->shape[0] * st->shape[1]; /* the layout's element count fits */
}

/* A device image of rows x width bytes: pitched rows (cudaMallocPitch) for
 * 2-D and 3-D, one plain allocation for 1-D or where a pitched one is
 * refused for its shape (then pitch = width). */
static cudaError_t alloc_image(int ndim, size_t width, size_t rows, void **ptr, size_t *pitch)
{
    cudaError_t e;
    if (ndim >= 2 && rows > 1) {
        e = cudaMallocPitch(ptr, pitch, width, rows);
        if (e == cudaSuccess || e == cudaErrorMemoryAllocation)
            return e;
        (void)cudaGetLastError(); /* e.g. a width beyond the pitch limit: go plain */
    }
    *pitch = width;
    return cudaMalloc(ptr, width * rows);
}

static cudaError_t copy_rows(void *dst, size_t dpitch, const void *src, size_t spitch,
                             size_t width, size_t rows, enum cudaMemcpyKind kind)
{
    if (dpitch == width && spitch == width)
        return cudaMemcpy(dst, src, width * rows, kind);
    return cudaMemcpy2D(dst, dpitch, src, spitch, width, rows, kind);
}

static inline void copy_element(char *d, const char *s, size_t esize)
{
    switch (esize) {
    case 1: memcpy(d, s, 1); break;
    case 2: memcpy(d, s, 2); break;
    case 4: memcpy(d, s, 4); break;
    default: memcpy(d, s, 8); break;
    }
}

/* Gathers the strided input into contiguous C order (channels interleaved). */
static void pack_input(const cvc_state *st, const char *src, char *dst)
{
    const size_t es = st->in_esize, C = st->channels;
    for (size_t i0 = 0; i0 < st->shape[0]; i0++)
        for (size_t i1 = 0; i1 < st->shape[1]; i1++) {
            const char *row = src + (ptrdiff_t)i0 * st->in_strides[0] +
                              (ptrdiff_t)i1 * st->in_strides[1];
            for (size_t i2 = 0; i2 < st->shape[2]; i2++) {
                const char *e = row + (ptrdiff_t)i2 * st->in_strides[2];
                for (size_t c = 0; c < C; c++, dst += es)
                    copy_element(dst, e + (ptrdiff_t)c * st->in_cstride, es);
            }
        }
}

/* Scatters contiguous C-order results into the strided output. */
static void scatter_output(const cvc_state *st, const char *src, char *dst)
{
    const size_t es = st->out_esize, C = st->channels;
    for (size_t i0 = 0; i0 < st->shape[0]; i0++)
        for (size_t i1 = 0; i1 < st->shape[1]; i1++) {
            char *row = dst + (ptrdiff_t)i0 * st->out_strides[0] +
                        (ptrdiff_t)i1 * st->out_strides[1];
            for (size_t i2 = 0; i2 < st->shape[2]; i2++) {
                char *e = row + (ptrdiff_t)i2 * st->out_strides[2];
                for (size_t c = 0; c < C; c++, src += es)
                    copy_element(e + (ptrdiff_t)c * st->out_cstride, src, es);
            }
        }
}

/* Makes the buffers convolve_execute needs, once per plan. */
static convolve_status ensure_host_path(convolve_context *ctx, cvc_state *st)
{
    const size_t rows = row_count(st), per = st->shape[2] * st->channels;
    const size_t in_row = per * st->in_esize, out_row = per * st->out_esize;
    const int ndim = st->kernel <= CVK_1D_CACHED ? 1 : st->kernel <= CVK_2D_CACHED ? 2 : 3;
    cudaError_t e;
    if (!st->d_in && (e = alloc_image(ndim, in_row, rows, &st->d_in, &st->in_pitch)) != cudaSuccess) {
        st->d_in = NULL;
        return cuda_error(ctx, e, "allocating the device input image");
    }
    if (!st->d_out &&
        (e = alloc_image(ndim, out_row, rows, &st->d_out, &st->out_pitch)) != cudaSuccess) {
        st->d_out = NULL;
        return cuda_error(ctx, e, "allocating the device output image");
    }
    if (!st->in_packed && !st->h_in && !(st->h_in = malloc(in_row * rows)))
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory packing the input");
    if (!st->out_packed && !st->h_out && !(st->h_out = malloc(out_row * rows)))
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for the output");
    return CONVOLVE_OK;
}

convolve_status cvi_cuda_execute_host(convolve_context *ctx, void *state, const void *in,
                                      void *out)
{
    cvc_state *st = state;
    int prev;
    cudaError_t e = enter_device(st, &prev);
    if (e != cudaSuccess)
        return cuda_error(ctx, e, "selecting the plan's device");
    convolve_status status = ensure_host_path(ctx, st);
    if (status != CONVOLVE_OK)
        goto done;
    const size_t rows = row_count(st), per = st->shape[2] * st->channels;
    const size_t in_row = per * st->in_esize, out_row = per * st->out_esize;

    const void *src = in;
    if (!st->in_packed) {
        pack_input(st, in, st->h_in);
        src = st->h_in;
    }
    if ((e = copy_rows(st->d_in, st->in_pitch, src, in_row, in_row, rows,
                       cudaMemcpyHostToDevice)) != cudaSuccess) {
        status = cuda_error(ctx, e, "copying the input to the device");
        goto done;
    }

    /* the device images: channels interleaved, rows `pitch` apart */
    cvk_args a = st->args;
    const long long C = (long long)st->channels, n1 = (long long)st->shape[1];
    const long long irow = (long long)(st->in_pitch / st->in_esize);
    const long long orow = (long long)(st->out_pitch / st->out_esize);
    a.in = st->d_in;
    a.out = st->d_out;
    a.ics = 1, a.is[2] = C, a.is[1] = irow, a.is[0] = irow * n1;
    a.ocs = 1, a.os[2] = C, a.os[1] = orow, a.os[0] = orow * n1;
    if ((e = launch(st, &a, 0)) != cudaSuccess) {
        status = launch_error(ctx, st, e);
        goto done;
    }
    if ((e = cudaStreamSynchronize(0)) != cudaSuccess) {
        char what[128];
        snprintf(what, sizeof what, "running strategy '%s'", st->strategy->name);
        status = cuda_error(ctx, e, what);
        goto done;
    }

    void *dst = st->out_packed ? out : st->h_out;
    if ((e = copy_rows(dst, out_row, st->d_out, st->out_pitch, out_row, rows,
                       cudaMemcpyDeviceToHost)) != cudaSuccess) {
        status = cuda_error(ctx, e, "copying the output from the device");
        goto done;
    }
    if (!st->out_packed)
        scatter_output(st, st->h_out, out);
done:
    leave_device(st, prev);
    return status;
}

/* ---- measurement -------------------------------------------------------- */

static int cmp_float(const void *x, const void *y)
{
    float a = *(const float *)x, b = *(const float *)y;
    return (a > b) - (a < b);
}

/* Records events[0..n] around n calls of `step` on the default stream and
 * stores the n intervals (ms) in times; step returns a CUDA error. */
typedef cudaError_t (*step_fn)(void *arg);

static convolve_status time_steps(convolve_context *ctx, step_fn step, void *arg, int warmup,
                                  int n, float *times, const char *what)
{
    cudaEvent_t *ev = calloc((size_t)n + 1, sizeof *ev);
    if (!ev)
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for events");
    convolve_status status = CONVOLVE_OK;
    cudaError_t e = cudaSuccess;
    int made = 0;
    for (; made <= n; made++)
        if ((e = cudaEventCreate(&ev[made])) != cudaSuccess)
            break;
    if (e != cudaSuccess) {
        status = cuda_error(ctx, e, "cudaEventCreate");
        goto done;
    }
    for (int i = 0; i < warmup && e == cudaSuccess; i++)
        e = step(arg);
    if (e == cudaSuccess)
        e = cudaEventRecord(ev[0], 0);
    for (int i = 0; i < n && e == cudaSuccess; i++) {
        e = step(arg);
        if (e == cudaSuccess)
            e = cudaEventRecord(ev[i + 1], 0);
    }
    if (e != cudaSuccess) {
        status = cuda_error(ctx, e, what);
        (void)cudaDeviceSynchronize();
        goto done;
    }
    if ((e = cudaEventSynchronize(ev[n])) != cudaSuccess) {
        status = cuda_error(ctx, e, what);
        goto done;
    }
    for (int i = 0; i < n; i++)
        if ((e = cudaEventElapsedTime(&times[i], ev[i], ev[i + 1])) != cudaSuccess) {
            status = cuda_error(ctx, e, "cudaEventElapsedTime");
            goto done;
        }
done:
    for (int i = 0; i < made; i++)
        (void)cudaEventDestroy(ev[i]);
    free(ev);
    return status;
}

typedef struct {
    const cvc_state *st;
    cvk_args args;
} bench_arg;

static cudaError_t bench_step(void *p)
{
    bench_arg *b = p;
    return launch(b->st, &b->args, 0);
}

convolve_status cvi_cuda_benchmark(convolve_context *ctx, void *state, int warmup, int runs,
                                   double *times_ms)
{
    cvc_state *st = state;
    int prev;
    cudaError_t e = enter_device(st, &prev);
    if (e != cudaSuccess)
        return cuda_error(ctx, e, "selecting the plan's device");
    const size_t count = row_count(st) * st->shape[2] * st->channels;
    void *d_in = NULL, *d_out = NULL;
    float *times = malloc((size_t)runs * sizeof *times);
    convolve_status status = CONVOLVE_OK;
    if (!times) {
        status = cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    if ((e = cudaMalloc(&d_in, count * st->in_esize)) != cudaSuccess ||
        (e = cudaMalloc(&d_out, count * st->out_esize)) != cudaSuccess) {
        status = cuda_error(ctx, e, "allocating benchmark buffers");
        goto done;
    }
    if ((e = cvk_fill_random(d_in, (long long)count, (int)st->args.in_type,
                             0x5EEDBA5Eull, 0)) != cudaSuccess ||
        (e = cudaMemset(d_out, 0, count * st->out_esize)) != cudaSuccess) {
        status = cuda_error(ctx, e, "filling benchmark buffers");
        goto done;
    }
    /* contiguous C order, channels interleaved */
    bench_arg b;
    b.st = st;
    b.args = st->args;
    const long long C = (long long)st->channels;
    const long long n1 = (long long)st->shape[1], n2 = (long long)st->shape[2];
    b.args.in = d_in;
    b.args.out = d_out;
    b.args.ics = b.args.ocs = 1;
    b.args.is[2] = b.args.os[2] = C;
    b.args.is[1] = b.args.os[1] = C * n2;
    b.args.is[0] = b.args.os[0] = C * n2 * n1;
    char what[128];
    snprintf(what, sizeof what, "benchmarking strategy '%s'", st->strategy->name);
    status = time_steps(ctx, bench_step, &b, warmup, runs, times, what);
    if (status == CONVOLVE_OK)
        for (int i = 0; i < runs; i++)
            times_ms[i] = times[i];
done:
    if (d_in)
        (void)cudaFree(d_in);
    if (d_out)
        (void)cudaFree(d_out);
    free(times);
    leave_device(st, prev);
    return status;
}

typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
} copy_arg;

static cudaError_t copy_step(void *p)
{
    copy_arg *c = p;
    return cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, 0);
}

convolve_status cvi_cuda_copy_bandwidth(convolve_context *ctx, size_t bytes, int runs,
                                        double *gb_per_s)
{
    copy_arg c = {NULL, NULL, bytes};
    void *src = NULL;
    float *times = malloc((size_t)runs * sizeof *times);
    convolve_status status = CONVOLVE_OK;
    cudaError_t e;
    if (!times)
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory");
    if ((e = cudaMalloc(&src, bytes)) != cudaSuccess ||
        (e = cudaMalloc(&c.dst, bytes)) != cudaSuccess) {
        status = cuda_error(ctx, e, "allocating copy buffers");
        goto done;
    }
    if ((e = cudaMemset(src, 0x5A, bytes)) != cudaSuccess) {
        status = cuda_error(ctx, e, "cudaMemset");
        goto done;
    }
    c.src = src;
    status = time_steps(ctx, copy_step, &c, 2, runs, times, "timing device-to-device copies");
    if (status == CONVOLVE_OK) {
        qsort(times, (size_t)runs, sizeof *times, cmp_float);
        double med = runs % 2 ? times[runs / 2] : 0.5 * ((double)times[runs / 2 - 1] +
                                                         (double)times[runs / 2]);
        if (!(med > 0.0)) {
            status = cvi_error(ctx, CONVOLVE_ERROR_DEVICE, "the copy took no measurable time");
            goto done;
        }
        *gb_per_s = 2.0 * (double)bytes / (med * 1e6);
    }
done:
    if (src)
        (void)cudaFree(src);
    if (c.dst)
        (void)cudaFree(c.dst);
    free(times);
    return status;
}
