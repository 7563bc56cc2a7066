/*
 * runtime.c - the CUDA backend's host side around its plans (src/cuda/
 * backend.h): the device probe, execution on device memory (asynchronous)
 * and on host memory (the chapter's pitched image path: pack, copy into
 * pitched device rows, compute, copy back, scatter; the device images from
 * the process's idle ones, device_images.h), the benchmark with
 * CUDA events, and the device-to-device copy bandwidth. Plans are made and
 * launched by plan.c. Every CUDA call is checked; failures become DEVICE or
 * DEVICE_OUT_OF_MEMORY with the CUDA error named.
 */
#include "backend.h"
#include "device_images.h"
#include "kernels.h"
#include "pinned_pool.h"
#include "plan.h"

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- probe -------------------------------------------------------------- */

/* Fills *device for CUDA device dev (count devices on the host). */
static void probe_device(int dev, int count, cvi_device *device)
{
    convolve_device_info *info = &device->info;
    cudaError_t e;
    info->device_count = count;
    struct cudaDeviceProp prop;
    if ((e = cudaGetDeviceProperties(&prop, dev)) != cudaSuccess) {
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
    device->shared_memory_per_block = prop.sharedMemPerBlockOptin ? prop.sharedMemPerBlockOptin
                                                                  : prop.sharedMemPerBlock;
    if (prop.major < 7) {
        snprintf(info->reason, sizeof info->reason,
                 "%.100s has compute capability %d.%d; libconvolve's CUDA kernels need 7.0 or "
                 "newer",
                 prop.name, prop.major, prop.minor);
        return;
    }
    int prev = dev;
    if ((e = cudaGetDevice(&prev)) == cudaSuccess && prev != dev)
        e = cudaSetDevice(dev);
    if (e == cudaSuccess)
        e = cvk_check_kernel_image();
    if (prev != dev)
        (void)cudaSetDevice(prev);
    if (e != cudaSuccess) {
        snprintf(info->reason, sizeof info->reason,
                 "no kernel of this libconvolve runs on %.60s (compute capability %d.%d): %.80s; "
                 "rebuild with CMAKE_CUDA_ARCHITECTURES=%d%d",
                 prop.name, prop.major, prop.minor, cudaGetErrorString(e), prop.major, prop.minor);
        (void)cudaGetLastError();
        return;
    }
    info->available = 1;
}

/* The number of devices, or -1 with the reason in info. */
static int count_devices(convolve_device_info *info)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    int driver = 0, runtime = 0;
    if (e == cudaErrorInsufficientDriver && cudaDriverGetVersion(&driver) == cudaSuccess &&
        driver == 0) {
        /* the runtime says "insufficient driver" when there is none at all */
        snprintf(info->reason, sizeof info->reason,
                 "no NVIDIA driver was found: no GPU here, or its driver is not installed");
    } else if (e == cudaErrorInsufficientDriver) {
        (void)cudaRuntimeGetVersion(&runtime);
        snprintf(info->reason, sizeof info->reason,
                 "the NVIDIA driver supports CUDA %d.%d, older than this build's runtime "
                 "(%d.%d) needs: update the driver",
                 driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
    } else if (e == cudaErrorNoDevice || (e == cudaSuccess && count < 1)) {
        snprintf(info->reason, sizeof info->reason,
                 "no NVIDIA GPU was found (the driver reports none)");
    } else if (e != cudaSuccess) {
        snprintf(info->reason, sizeof info->reason, "%s (%s)", cudaGetErrorString(e),
                 cudaGetErrorName(e));
    }
    (void)cudaGetLastError();
    if (e != cudaSuccess || count < 1)
        return -1;
    info->device_count = count;
    return count;
}

void cvcu_probe(cvi_device *device)
{
    memset(device, 0, sizeof *device);
    int count = count_devices(&device->info), dev = 0;
    if (count < 0)
        return;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) {
        snprintf(device->info.reason, sizeof device->info.reason,
                 "cannot query the current CUDA device: %s (%s)", cudaGetErrorString(e),
                 cudaGetErrorName(e));
        (void)cudaGetLastError();
        return;
    }
    probe_device(dev, count, device);
}

int cvcu_device_count(void)
{
    convolve_device_info info;
    int count = count_devices(&info);
    return count < 0 ? 0 : count;
}

void cvcu_probe_index(int index, cvi_device *device)
{
    memset(device, 0, sizeof *device);
    int count = count_devices(&device->info);
    if (count < 0)
        return;
    probe_device(index, count, device);
}

convolve_status cvcu_memory_info(convolve_context *ctx, int index, size_t *free_bytes,
                                 size_t *total_bytes)
{
    int prev = 0;
    cudaError_t e = cudaGetDevice(&prev);
    if (e == cudaSuccess && index >= 0 && index != prev)
        e = cudaSetDevice(index);
    if (e == cudaSuccess)
        e = cudaMemGetInfo(free_bytes, total_bytes);
    if (index >= 0 && index != prev)
        (void)cudaSetDevice(prev);
    return e == cudaSuccess ? CONVOLVE_OK : cvcu_error(ctx, e, "querying the device's memory");
}

convolve_status cvcu_host_register(convolve_context *ctx, void *ptr, size_t bytes)
{
    cudaError_t e = cudaHostRegister(ptr, bytes, cudaHostRegisterPortable);
    if (e == cudaErrorHostMemoryAlreadyRegistered || e == cudaErrorInvalidValue) {
        (void)cudaGetLastError();
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_host_register: the memory cannot be registered: %s",
                         cudaGetErrorString(e));
    }
    return e == cudaSuccess ? CONVOLVE_OK : cvcu_error(ctx, e, "cudaHostRegister");
}

convolve_status cvcu_host_unregister(convolve_context *ctx, void *ptr)
{
    cudaError_t e = cudaHostUnregister(ptr);
    if (e == cudaErrorHostMemoryNotRegistered || e == cudaErrorInvalidValue) {
        (void)cudaGetLastError();
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_host_unregister: no memory registered there: %s",
                         cudaGetErrorString(e));
    }
    return e == cudaSuccess ? CONVOLVE_OK : cvcu_error(ctx, e, "cudaHostUnregister");
}

convolve_status cvcu_host_alloc(convolve_context *ctx, size_t bytes, int pooled_only, void **ptr)
{
    cudaError_t e = cvcu_pinned_alloc(bytes, pooled_only, ptr);
    return e == cudaSuccess ? CONVOLVE_OK : cvcu_error(ctx, e, "convolve_host_alloc");
}

/* ---- execution on device memory ---------------------------------------- */

convolve_status cvcu_execute_device(convolve_context *ctx, void *state, const void *in, void *out,
                                    void *stream)
{
    cvcu_plan *plan = state;
    int prev;
    cudaError_t e = cvcu_enter_device(plan, &prev);
    if (e != cudaSuccess)
        return cvcu_error(ctx, e, "selecting the plan's device");
    cvk_args a = plan->args;
    a.in = in;
    a.out = out;
    e = cvcu_launch(plan, &a, (cudaStream_t)stream);
    cvcu_leave_device(plan, prev);
    return e == cudaSuccess ? CONVOLVE_OK : cvcu_launch_error(ctx, plan, e);
}

/* ---- execution on host memory: the pitched image path ------------------ */

static size_t row_count(const cvcu_plan *plan)
{
    return plan->p.shape[0] * plan->p.shape[1]; /* the layout's element count fits */
}

static cudaError_t copy_rows(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                             size_t rows, enum cudaMemcpyKind kind)
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
static void pack_input(const cvcu_plan *plan, const char *src, char *dst)
{
    const size_t es = plan->in_esize, C = plan->p.channels;
    for (size_t i0 = 0; i0 < plan->p.shape[0]; i0++)
        for (size_t i1 = 0; i1 < plan->p.shape[1]; i1++) {
            const char *row = src + (ptrdiff_t)i0 * plan->p.in_strides[0] +
                              (ptrdiff_t)i1 * plan->p.in_strides[1];
            for (size_t i2 = 0; i2 < plan->p.shape[2]; i2++) {
                const char *e = row + (ptrdiff_t)i2 * plan->p.in_strides[2];
                for (size_t c = 0; c < C; c++, dst += es)
                    copy_element(dst, e + (ptrdiff_t)c * plan->p.in_cstride, es);
            }
        }
}

/* Scatters contiguous C-order results into the strided output. */
static void scatter_output(const cvcu_plan *plan, const char *src, char *dst)
{
    const size_t es = plan->out_esize, C = plan->p.channels;
    for (size_t i0 = 0; i0 < plan->p.shape[0]; i0++)
        for (size_t i1 = 0; i1 < plan->p.shape[1]; i1++) {
            char *row = dst + (ptrdiff_t)i0 * plan->p.out_strides[0] +
                        (ptrdiff_t)i1 * plan->p.out_strides[1];
            for (size_t i2 = 0; i2 < plan->p.shape[2]; i2++) {
                char *e = row + (ptrdiff_t)i2 * plan->p.out_strides[2];
                for (size_t c = 0; c < C; c++, src += es)
                    copy_element(e + (ptrdiff_t)c * plan->p.out_cstride, src, es);
            }
        }
}

/* Makes the host packing buffers convolve_execute needs for strided
 * layouts, once per plan. */
static convolve_status ensure_packing(convolve_context *ctx, cvcu_plan *plan, size_t in_bytes,
                                      size_t out_bytes)
{
    if (!plan->in_packed && !plan->h_in && !(plan->h_in = malloc(in_bytes)))
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory packing the input");
    if (!plan->out_packed && !plan->h_out && !(plan->h_out = malloc(out_bytes)))
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for the output");
    return CONVOLVE_OK;
}

/* A device image of `bytes` (cvcu_image_take); where the device has no
 * room, again after the streamed executor's idle pipelines are freed. */
static cudaError_t take_image(int device, size_t bytes, void **ptr, size_t *cap)
{
    cudaError_t e = cvcu_image_take(device, bytes, ptr, cap);
    if (e == cudaErrorMemoryAllocation && cvcu_stream_release_idle(device) > 0) {
        (void)cudaGetLastError();
        e = cvcu_image_take(device, bytes, ptr, cap);
    }
    return e;
}

/* *bytes = pitch x rows, unless that overflows (0 returned). */
static int image_bytes(size_t pitch, size_t rows, size_t *bytes)
{
    if (rows && pitch > SIZE_MAX / rows)
        return 0;
    *bytes = pitch * rows;
    return 1;
}

convolve_status cvcu_execute_host(convolve_context *ctx, void *state, const void *in, void *out)
{
    cvcu_plan *plan = state;
    /* host arrays on the GPU: the staging a later streamed run takes is
     * pinned in the background meanwhile (once a process) */
    cvcu_pinned_prime(cvi_stream_staging_bytes(), CVI_STREAM_BUFFERS);
    int prev;
    cudaError_t e = cvcu_enter_device(plan, &prev);
    if (e != cudaSuccess)
        return cvcu_error(ctx, e, "selecting the plan's device");
    const size_t rows = row_count(plan), per = plan->p.shape[2] * plan->p.channels;
    const size_t in_row = per * plan->in_esize, out_row = per * plan->out_esize;
    const size_t in_pitch = cvcu_image_pitch(plan->p.ndim, in_row, rows);
    const size_t out_pitch = cvcu_image_pitch(plan->p.ndim, out_row, rows);
    void *d_in = NULL, *d_out = NULL;
    size_t in_cap = 0, out_cap = 0, in_bytes, out_bytes;
    convolve_status status = ensure_packing(ctx, plan, in_row * rows, out_row * rows);
    if (status != CONVOLVE_OK)
        goto done;
    if (!image_bytes(in_pitch, rows, &in_bytes) || !image_bytes(out_pitch, rows, &out_bytes)) {
        status = cvi_error(ctx, CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY,
                           "the device images' size overflows size_t");
        goto done;
    }
    if ((e = take_image(plan->device, in_bytes, &d_in, &in_cap)) != cudaSuccess) {
        status = cvcu_error(ctx, e, "allocating the device input image");
        goto done;
    }
    if ((e = take_image(plan->device, out_bytes, &d_out, &out_cap)) != cudaSuccess) {
        status = cvcu_error(ctx, e, "allocating the device output image");
        goto done;
    }

    const void *src = in;
    if (!plan->in_packed) {
        pack_input(plan, in, plan->h_in);
        src = plan->h_in;
    }
    if ((e = copy_rows(d_in, in_pitch, src, in_row, in_row, rows, cudaMemcpyHostToDevice)) !=
        cudaSuccess) {
        status = cvcu_error(ctx, e, "copying the input to the device");
        goto done;
    }

    /* the device images: channels interleaved, rows `pitch` apart */
    cvk_args a = plan->args;
    const long long C = (long long)plan->p.channels, n1 = (long long)plan->p.shape[1];
    const long long irow = (long long)(in_pitch / plan->in_esize);
    const long long orow = (long long)(out_pitch / plan->out_esize);
    a.in = d_in;
    a.out = d_out;
    a.ics = 1, a.is[2] = C, a.is[1] = irow, a.is[0] = irow * n1;
    a.ocs = 1, a.os[2] = C, a.os[1] = orow, a.os[0] = orow * n1;
    if ((e = cvcu_launch(plan, &a, 0)) != cudaSuccess) {
        status = cvcu_launch_error(ctx, plan, e);
        goto done;
    }
    if ((e = cudaStreamSynchronize(0)) != cudaSuccess) {
        char what[128];
        snprintf(what, sizeof what, "running strategy '%s'", plan->strategy->name);
        status = cvcu_error(ctx, e, what);
        goto done;
    }

    void *dst = plan->out_packed ? out : plan->h_out;
    if ((e = copy_rows(dst, out_row, d_out, out_pitch, out_row, rows, cudaMemcpyDeviceToHost)) !=
        cudaSuccess) {
        status = cvcu_error(ctx, e, "copying the output from the device");
        goto done;
    }
    if (!plan->out_packed)
        scatter_output(plan, plan->h_out, out);
done:
    if (status == CONVOLVE_OK) { /* after an error, work may be pending on them */
        cvcu_image_give(plan->device, d_in, in_cap);
        cvcu_image_give(plan->device, d_out, out_cap);
    } else {
        if (d_in)
            (void)cudaFree(d_in);
        if (d_out)
            (void)cudaFree(d_out);
        (void)cudaGetLastError();
    }
    cvcu_leave_device(plan, prev);
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

static convolve_status time_steps(convolve_context *ctx, step_fn step, void *arg, int warmup, int n,
                                  float *times, const char *what)
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
        status = cvcu_error(ctx, e, "cudaEventCreate");
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
        status = cvcu_error(ctx, e, what);
        (void)cudaDeviceSynchronize();
        goto done;
    }
    if ((e = cudaEventSynchronize(ev[n])) != cudaSuccess) {
        status = cvcu_error(ctx, e, what);
        goto done;
    }
    for (int i = 0; i < n; i++)
        if ((e = cudaEventElapsedTime(&times[i], ev[i], ev[i + 1])) != cudaSuccess) {
            status = cvcu_error(ctx, e, "cudaEventElapsedTime");
            goto done;
        }
done:
    for (int i = 0; i < made; i++)
        (void)cudaEventDestroy(ev[i]);
    free(ev);
    return status;
}

typedef struct {
    cvcu_plan *plan;
    cvk_args args;
} bench_arg;

static cudaError_t bench_step(void *p)
{
    bench_arg *b = p;
    return cvcu_launch(b->plan, &b->args, 0);
}

convolve_status cvcu_benchmark(convolve_context *ctx, void *state, int warmup, int runs,
                               double *times_ms)
{
    cvcu_plan *plan = state;
    int prev;
    cudaError_t e = cvcu_enter_device(plan, &prev);
    if (e != cudaSuccess)
        return cvcu_error(ctx, e, "selecting the plan's device");
    const size_t count = row_count(plan) * plan->p.shape[2] * plan->p.channels;
    void *d_in = NULL, *d_out = NULL;
    float *times = malloc((size_t)runs * sizeof *times);
    convolve_status status = CONVOLVE_OK;
    if (!times) {
        status = cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    if ((e = cudaMalloc(&d_in, count * plan->in_esize)) != cudaSuccess ||
        (e = cudaMalloc(&d_out, count * plan->out_esize)) != cudaSuccess) {
        status = cvcu_error(ctx, e, "allocating benchmark buffers");
        goto done;
    }
    if ((e = cvk_fill_random(d_in, (long long)count, (int)plan->args.in_type, 0x5EEDBA5Eull, 0)) !=
            cudaSuccess ||
        (e = cudaMemset(d_out, 0, count * plan->out_esize)) != cudaSuccess) {
        status = cvcu_error(ctx, e, "filling benchmark buffers");
        goto done;
    }
    /* contiguous C order, channels interleaved */
    bench_arg b;
    b.plan = plan;
    b.args = plan->args;
    const long long C = (long long)plan->p.channels;
    const long long n1 = (long long)plan->p.shape[1], n2 = (long long)plan->p.shape[2];
    b.args.in = d_in;
    b.args.out = d_out;
    b.args.ics = b.args.ocs = 1;
    b.args.is[2] = b.args.os[2] = C;
    b.args.is[1] = b.args.os[1] = C * n2;
    b.args.is[0] = b.args.os[0] = C * n2 * n1;
    char what[128];
    snprintf(what, sizeof what, "benchmarking strategy '%s'", plan->strategy->name);
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
    cvcu_leave_device(plan, prev);
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

convolve_status cvcu_copy_bandwidth(convolve_context *ctx, size_t bytes, int runs, double *gb_per_s)
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
        status = cvcu_error(ctx, e, "allocating copy buffers");
        goto done;
    }
    if ((e = cudaMemset(src, 0x5A, bytes)) != cudaSuccess) {
        status = cvcu_error(ctx, e, "cudaMemset");
        goto done;
    }
    c.src = src;
    status = time_steps(ctx, copy_step, &c, 2, runs, times, "timing device-to-device copies");
    if (status == CONVOLVE_OK) {
        qsort(times, (size_t)runs, sizeof *times, cmp_float);
        double med = runs % 2 ? times[runs / 2]
                              : 0.5 * ((double)times[runs / 2 - 1] + (double)times[runs / 2]);
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
