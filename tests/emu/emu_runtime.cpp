/*
 * emu_runtime.cpp - a CPU stand-in for the CUDA runtime, so that the CUDA
 * backend (kernels and host code) and test_gpu_strategies run on a machine
 * without a GPU (-DCONVOLVE_CUDA_EMULATOR=ON). Device memory is host memory from
 * malloc, filled with 0xFF bytes (NaN for floats) so reads of unwritten
 * memory show; built with AddressSanitizer, out-of-bounds accesses by a
 * kernel are caught as compute-sanitizer's memcheck would. A launch runs one
 * host thread per CUDA thread of a block, the blocks one after another, with
 * a barrier for __syncthreads; dynamic shared memory is poisoned per block.
 * A kernel whose first launch called no barrier, warp sync or shuffle runs
 * its later launches thread after thread on the calling host thread (much
 * faster); should such a kernel then call one, the emulation stops with a
 * message rather than run it wrongly.
 * Timing is by the host clock. Not a model of the GPU's performance.
 *
 * CVK_EMU_NO_DEVICE=1 in the environment makes cudaGetDeviceCount fail, to
 * exercise the "no usable GPU" paths (=2: fail as on a host without a
 * driver, cudaErrorInsufficientDriver with driver version 0). CVK_EMU_DEVICES=N (1 to 16, default 1)
 * makes N devices; the current device is per host thread, as in CUDA, and
 * device memory is not tagged with its device (any device's pointer works).
 * Streams and events: every call is synchronous (a copy or launch has
 * happened when it returns), which is one valid ordering of the real
 * asynchronous ones; an event records the host clock. Pinned host memory
 * (cudaMallocHost, cudaHostRegister) is ordinary host memory, but
 * cudaHostUnregister of memory not registered, and cudaFreeHost of memory
 * not from cudaMallocHost, fail as CUDA would. CVK_EMU_FAIL_MALLOC_DEVICE=D
 * makes every cudaMalloc on device D fail (out of memory), to exercise the
 * error paths of work spread over devices. CVK_EMU_FAIL_MALLOC_NEXT=N makes
 * the next N calls of cudaMalloc fail (out of memory), counted again
 * whenever the variable's text changes. CVK_EMU_FAIL_PIN_AFTER=N lets N
 * more calls of cudaHostRegister and cudaMallocHost succeed, then makes them
 * fail (out of memory); the count starts again whenever the variable's text
 * changes (set, unset, or another value), to exercise pinned staging's
 * error paths and show how much is pinned.
 */
#include "cuda_runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <vector>

thread_local dim3 threadIdx, blockIdx;
static thread_local unsigned t_tid; /* linear thread index in the block */
dim3 blockDim, gridDim;

static pthread_barrier_t g_barrier;
static std::vector<pthread_barrier_t> g_warp_barrier; /* one per warp, for shuffles */
static std::vector<float> g_shfl;                     /* one slot per thread */
static unsigned char *g_smem = nullptr;
static size_t g_smem_size = 0;
static thread_local cudaError_t g_last = cudaSuccess; /* per host thread, as CUDA's */
static std::map<const void *, int> g_dynamic_limit;
static std::map<const void *, bool> g_barrier_free; /* learned on a kernel's first launch */
static std::atomic<bool> g_synced{false};           /* a barrier was called in this launch */
static bool g_sequential = false;                   /* this launch runs thread after thread */
static std::mutex g_mutex;

/* A barrier in a launch that runs thread after thread cannot be kept. */
static void check_threaded(const char *what)
{
    g_synced.store(true, std::memory_order_relaxed);
    if (g_sequential) {
        fprintf(stderr,
                "emu: %s in a kernel whose first launch called none; the emulation "
                "ran it thread after thread and cannot go on\n",
                what);
        abort();
    }
}

static const size_t k_default_shared = 48 * 1024;
static const size_t k_optin_shared = 227 * 1024;

void __syncthreads()
{
    check_threaded("__syncthreads");
    pthread_barrier_wait(&g_barrier);
}

void __syncwarp(unsigned mask)
{
    (void)mask;
    check_threaded("__syncwarp");
    pthread_barrier_wait(&g_warp_barrier[t_tid / 32]);
}

float __shfl_sync(unsigned mask, float v, int src)
{
    (void)mask;
    check_threaded("__shfl_sync");
    const unsigned warp = t_tid / 32;
    g_shfl[t_tid] = v;
    pthread_barrier_wait(&g_warp_barrier[warp]);
    float r = g_shfl[warp * 32 + ((unsigned)src & 31u)];
    pthread_barrier_wait(&g_warp_barrier[warp]);
    return r;
}

unsigned char *cvk_emu_dynamic_shared()
{
    return g_smem;
}

namespace {
struct launch_ctx {
    dim3 grid, block;
    unsigned tid;
    std::function<void()> *body;
    size_t smem;
};
} // namespace

static void *emu_thread(void *p)
{
    launch_ctx *c = (launch_ctx *)p;
    const dim3 b = c->block, g = c->grid;
    threadIdx = dim3(c->tid % b.x, c->tid / b.x % b.y, c->tid / (b.x * b.y));
    t_tid = c->tid;
    for (unsigned z = 0; z < g.z; z++)
        for (unsigned y = 0; y < g.y; y++)
            for (unsigned x = 0; x < g.x; x++) {
                blockIdx = dim3(x, y, z);
                if (c->tid == 0 && c->smem)
                    memset(g_smem, 0xFF, c->smem);
                pthread_barrier_wait(&g_barrier);
                (*c->body)();
                pthread_barrier_wait(&g_barrier);
            }
    return nullptr;
}

/* Runs every thread of every block on this host thread, one after another:
 * for kernels without barriers. */
static void run_sequential(dim3 grid, dim3 block, size_t smem, std::function<void()> &body)
{
    const unsigned threads = block.x * block.y * block.z;
    g_sequential = true;
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                blockIdx = dim3(x, y, z);
                if (smem)
                    memset(g_smem, 0xFF, smem);
                for (unsigned t = 0; t < threads; t++) {
                    threadIdx = dim3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
                    t_tid = t;
                    body();
                }
            }
    g_sequential = false;
}

static cudaError_t fail(cudaError_t e)
{
    g_last = e;
    return e;
}

cudaError_t cvk_emu_launch(const void *fn, dim3 grid, dim3 block, size_t smem,
                           std::function<void()> body)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    const unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    if (threads == 0 || threads > 1024 || block.z > 64)
        return fail(cudaErrorInvalidConfiguration);
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 2147483647u || grid.y > 65535 ||
        grid.z > 65535)
        return fail(cudaErrorInvalidConfiguration);
    size_t limit = k_default_shared;
    auto it = g_dynamic_limit.find(fn);
    if (it != g_dynamic_limit.end())
        limit = (size_t)it->second;
    if (smem > limit) {
        fprintf(stderr, "emu: launch with %zu bytes of dynamic shared memory over the limit %zu\n",
                smem, limit);
        return fail(cudaErrorInvalidValue);
    }
    free(g_smem);
    g_smem_size = smem;
    g_smem = (unsigned char *)aligned_alloc(16, (smem + 15) / 16 * 16 + 16);
    blockDim = block;
    gridDim = grid;
    pthread_barrier_init(&g_barrier, nullptr, (unsigned)threads);
    g_warp_barrier.assign((threads + 31) / 32, pthread_barrier_t());
    for (size_t w = 0; w < g_warp_barrier.size(); w++) {
        unsigned lanes = (unsigned)(threads - 32 * w < 32 ? threads - 32 * w : 32);
        pthread_barrier_init(&g_warp_barrier[w], nullptr, lanes);
    }
    g_shfl.assign(threads, 0.0f);
    auto known = g_barrier_free.find(fn);
    if (known != g_barrier_free.end() && known->second) {
        run_sequential(grid, block, smem, body);
        pthread_barrier_destroy(&g_barrier);
        for (auto &wb : g_warp_barrier)
            pthread_barrier_destroy(&wb);
        return cudaSuccess;
    }
    g_synced.store(false);
    std::vector<launch_ctx> ctxs(threads);
    std::vector<pthread_t> ids(threads);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1 << 20);
    for (unsigned t = 0; t < threads; t++) {
        ctxs[t] = launch_ctx{grid, block, t, &body, smem};
        if (pthread_create(&ids[t], &attr, emu_thread, &ctxs[t]) != 0) {
            fprintf(stderr, "emu: cannot start thread %u\n", t);
            abort();
        }
    }
    for (unsigned t = 0; t < threads; t++)
        pthread_join(ids[t], nullptr);
    g_barrier_free[fn] = !g_synced.load();
    pthread_attr_destroy(&attr);
    pthread_barrier_destroy(&g_barrier);
    for (auto &wb : g_warp_barrier)
        pthread_barrier_destroy(&wb);
    return cudaSuccess;
}

static thread_local int t_device = 0;

static int emu_device_count(void)
{
    const char *e = getenv("CVK_EMU_DEVICES");
    int n = e ? atoi(e) : 1;
    return n < 1 ? 1 : n > 16 ? 16 : n;
}

extern "C" {

cudaError_t cudaGetDeviceCount(int *count)
{
    const char *e = getenv("CVK_EMU_NO_DEVICE");
    if (e && (*e == '1' || *e == '2')) {
        *count = 0;
        return *e == '1' ? cudaErrorNoDevice : cudaErrorInsufficientDriver;
    }
    *count = emu_device_count();
    return cudaSuccess;
}

/* No driver (version 0) with CVK_EMU_NO_DEVICE=2, as the CUDA runtime says
 * on a host without one; else 13.0. */
cudaError_t cudaDriverGetVersion(int *version)
{
    const char *e = getenv("CVK_EMU_NO_DEVICE");
    *version = e && *e == '2' ? 0 : 13000;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *version)
{
    *version = 13000;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
    *device = t_device;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    (void)device;
    switch (attr) {
    case cudaDevAttrMultiProcessorCount: *value = 2; break;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = (int)k_optin_shared; break;
    default: *value = 0; break;
    }
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    if (device < 0 || device >= emu_device_count())
        return fail(cudaErrorInvalidDevice);
    t_device = device;
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    *total_bytes = (size_t)16 << 30;
    *free_bytes = (size_t)15 << 30;
    return cudaSuccess;
}

static std::mutex g_pinned_mutex;
struct pinned_range {
    size_t bytes;
    int kind; /* 1: cudaMallocHost, 2: cudaHostRegister */
};
static std::map<const char *, pinned_range> g_pinned; /* by start */

/* The pinned range holding p, or end(). */
static std::map<const char *, pinned_range>::iterator pinned_find(const void *p)
{
    const char *c = (const char *)p;
    auto it = g_pinned.upper_bound(c);
    if (it == g_pinned.begin())
        return g_pinned.end();
    --it;
    return c < it->first + it->second.bytes ? it : g_pinned.end();
}

/* CVK_EMU_FAIL_PIN_AFTER: 1 if this pinning call is to fail. */
static bool pin_fails()
{
    static std::mutex m;
    static std::string seen;
    static long allowed;
    const char *v = getenv("CVK_EMU_FAIL_PIN_AFTER");
    std::lock_guard<std::mutex> lock(m);
    const std::string now = v ? v : "";
    if (now != seen) {
        seen = now;
        allowed = now.empty() ? 0 : atol(now.c_str());
    }
    if (now.empty())
        return false;
    if (allowed <= 0)
        return true;
    allowed--;
    return false;
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    if (pin_fails()) {
        *ptr = nullptr;
        return fail(cudaErrorMemoryAllocation);
    }
    *ptr = malloc(size ? size : 1);
    if (!*ptr)
        return fail(cudaErrorMemoryAllocation);
    memset(*ptr, 0xFF, size);
    std::lock_guard<std::mutex> lock(g_pinned_mutex);
    g_pinned[(const char *)*ptr] = pinned_range{size ? size : 1, 1};
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *ptr)
{
    if (!ptr)
        return cudaSuccess;
    std::lock_guard<std::mutex> lock(g_pinned_mutex);
    auto it = g_pinned.find((const char *)ptr);
    if (it == g_pinned.end() || it->second.kind != 1)
        return fail(cudaErrorInvalidValue);
    g_pinned.erase(it);
    free(ptr);
    return cudaSuccess;
}

cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned flags)
{
    (void)flags;
    if (!ptr || !size)
        return fail(cudaErrorInvalidValue);
    if (pin_fails())
        return fail(cudaErrorMemoryAllocation);
    std::lock_guard<std::mutex> lock(g_pinned_mutex);
    if (pinned_find(ptr) != g_pinned.end() ||
        pinned_find((const char *)ptr + size - 1) != g_pinned.end())
        return fail(cudaErrorHostMemoryAlreadyRegistered);
    g_pinned[(const char *)ptr] = pinned_range{size, 2};
    return cudaSuccess;
}

cudaError_t cudaHostUnregister(void *ptr)
{
    std::lock_guard<std::mutex> lock(g_pinned_mutex);
    auto it = g_pinned.find((const char *)ptr);
    if (it == g_pinned.end() || it->second.kind != 2)
        return fail(cudaErrorHostMemoryNotRegistered);
    g_pinned.erase(it);
    return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attr, const void *ptr)
{
    std::lock_guard<std::mutex> lock(g_pinned_mutex);
    memset(attr, 0, sizeof *attr);
    if (pinned_find(ptr) != g_pinned.end()) {
        attr->type = cudaMemoryTypeHost;
        attr->hostPointer = (void *)ptr;
    }
    return cudaSuccess; /* unregistered host memory: type 0, as CUDA 11+ says */
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags)
{
    (void)stream, (void)event, (void)flags;
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags)
{
    (void)flags;
    return cudaEventCreate(event);
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
    (void)event;
    return cudaSuccess;
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind,
                              cudaStream_t stream)
{
    (void)stream;
    return cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    if (device < 0 || device >= emu_device_count())
        return fail(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "CPU emulation of a CUDA device");
    prop->totalGlobalMem = (size_t)16 << 30;
    prop->sharedMemPerBlock = k_default_shared;
    prop->sharedMemPerBlockOptin = k_optin_shared;
    prop->major = 9;
    prop->minor = 0;
    prop->multiProcessorCount = 1;
    return cudaSuccess;
}

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attr, const void *func)
{
    if (!func)
        return fail(cudaErrorInvalidDeviceFunction);
    attr->maxThreadsPerBlock = 1024;
    attr->numRegs = 32;
    return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value)
{
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
        (size_t)value > k_optin_shared)
        return fail(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> lock(g_mutex);
    g_dynamic_limit[func] = value;
    return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, const void *func,
                                                          int block_size, size_t smem)
{
    (void)func, (void)block_size, (void)smem;
    *blocks = 2;
    return cudaSuccess;
}

/* CVK_EMU_FAIL_MALLOC_NEXT: 1 if this cudaMalloc is to fail. */
static bool malloc_fails()
{
    static std::mutex m;
    static std::string seen;
    static long left;
    const char *v = getenv("CVK_EMU_FAIL_MALLOC_NEXT");
    std::lock_guard<std::mutex> lock(m);
    const std::string now = v ? v : "";
    if (now != seen) {
        seen = now;
        left = now.empty() ? 0 : atol(now.c_str());
    }
    if (left <= 0)
        return false;
    left--;
    return true;
}

cudaError_t cudaMalloc(void **ptr, size_t size)
{
    const char *failing = getenv("CVK_EMU_FAIL_MALLOC_DEVICE");
    if ((failing && *failing && atoi(failing) == t_device) || malloc_fails()) {
        *ptr = nullptr;
        return fail(cudaErrorMemoryAllocation);
    }
    *ptr = malloc(size ? size : 1);
    if (!*ptr)
        return fail(cudaErrorMemoryAllocation);
    memset(*ptr, 0xFF, size);
    return cudaSuccess;
}

cudaError_t cudaMallocPitch(void **ptr, size_t *pitch, size_t width, size_t height)
{
    *pitch = (width + 511) / 512 * 512;
    return cudaMalloc(ptr, *pitch * height);
}

cudaError_t cudaFree(void *ptr)
{
    free(ptr);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    (void)kind;
    memmove(dst, src, count);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream)
{
    (void)stream;
    return cudaMemcpy(dst, src, count, kind);
}

cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, enum cudaMemcpyKind kind)
{
    (void)kind;
    if (width > dpitch || width > spitch)
        return fail(cudaErrorInvalidValue);
    for (size_t r = 0; r < height; r++)
        memcpy((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
    return cudaSuccess;
}

cudaError_t cudaMemset(void *ptr, int value, size_t count)
{
    memset(ptr, value, count);
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags)
{
    (void)flags;
    *stream = (cudaStream_t)malloc(1);
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    free(stream);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    (void)stream;
    return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    (void)stream;
    return cudaSuccess; /* the emulation runs every call at once */
}

cudaError_t cudaDeviceSynchronize(void)
{
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    *event = (cudaEvent_t)calloc(1, sizeof(double));
    return *event ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    (void)stream;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *(double *)event = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    (void)event;
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    *ms = (float)(*(double *)end - *(double *)start);
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    free(event);
    return cudaSuccess;
}

cudaError_t cudaLibraryLoadData(cudaLibrary_t *library, const void *code, void *jit_options,
                                void **jit_values, unsigned n_jit, void *lib_options,
                                void **lib_values, unsigned n_lib)
{
    (void)code, (void)jit_options, (void)jit_values, (void)n_jit, (void)lib_options;
    (void)lib_values, (void)n_lib;
    *library = nullptr;
    return cudaErrorInvalidValue; /* no machine code runs here */
}

cudaError_t cudaLibraryGetKernel(cudaKernel_t *kernel, cudaLibrary_t library, const char *name)
{
    (void)library, (void)name;
    *kernel = nullptr;
    return cudaErrorInvalidValue;
}

cudaError_t cudaLibraryUnload(cudaLibrary_t library)
{
    (void)library;
    return cudaSuccess;
}
}

cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t smem,
                             cudaStream_t stream)
{
    (void)func, (void)grid, (void)block, (void)args, (void)smem, (void)stream;
    return cudaErrorInvalidValue;
}

extern "C" {

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = g_last;
    g_last = cudaSuccess;
    return e;
}

const char *cudaGetErrorName(cudaError_t error)
{
    switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorInvalidDeviceFunction: return "cudaErrorInvalidDeviceFunction";
    default: return "cudaErrorUnknown";
    }
}

const char *cudaGetErrorString(cudaError_t error)
{
    switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected (emulated)";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    default: return cudaGetErrorName(error);
    }
}

} /* extern "C" */
