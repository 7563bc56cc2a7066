/*
 * link_bench.c - what moving host arrays to a GPU and back costs, by way:
 * pinned copies (one way, both ways at once), pageable cudaMemcpy, host
 * threads copying pageable memory into pinned buffers (the staging a
 * streamed plan does), and pinning the caller's range in place
 * (cudaHostRegister and cudaHostUnregister) by size, and by several threads
 * at once (each its part, copied on its own stream). The numbers choose how
 * convolve_execute moves pageable host arrays (docs/scale.md).
 *
 *   bench/link_bench [--mib N] [--runs R] [--device D]
 *
 * Prints one line per measurement: what, MiB, median ms, GB/s (bytes moved
 * one way, 1e9). Without CUDA in the build it says so and exits 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef CONVOLVE_WITH_CUDA
#include <cuda_runtime_api.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdint.h>

#include "bench_util.h"

#define CK(x)                                                                    \
    do {                                                                         \
        cudaError_t e_ = (x);                                                    \
        if (e_ != cudaSuccess) {                                                 \
            fprintf(stderr, "link_bench: %s: %s\n", #x, cudaGetErrorString(e_)); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

static void report(const char *what, size_t bytes, double ms)
{
    printf("%-44s %8.0f MiB %9.3f ms %7.1f GB/s\n", what, (double)bytes / 1048576.0, ms,
           (double)bytes / (ms * 1e6));
    fflush(stdout);
}

typedef struct {
    char *dst;
    const char *src;
    size_t bytes;
    int stream;
} copy_part;

/* memcpy with streaming stores (as src/stream.c's staging copies). */
static void copy_nt(char *dst, const char *src, size_t n)
{
#if defined(__x86_64__) && defined(__SSE2__)
    size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
    if (n >= 4096) {
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

static void *copy_thread(void *p)
{
    copy_part *c = p;
    if (c->stream)
        copy_nt(c->dst, c->src, c->bytes);
    else
        memcpy(c->dst, c->src, c->bytes);
    return NULL;
}

static int g_stream_stores;

/* memcpy of bytes split over t threads (page-aligned parts). */
static void threaded_copy(char *dst, const char *src, size_t bytes, int t)
{
    pthread_t th[64];
    copy_part part[64];
    size_t per = (bytes / (size_t)t + 4095) / 4096 * 4096;
    int n = 0;
    for (size_t off = 0; off < bytes && n < t; off += per, n++) {
        part[n].dst = dst + off;
        part[n].src = src + off;
        part[n].bytes = bytes - off < per ? bytes - off : per;
        part[n].stream = g_stream_stores;
        pthread_create(&th[n], NULL, copy_thread, &part[n]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
}

/* Pinning the caller's range in place by several threads: each registers
 * its part, copies it on its own stream, and unregisters it. */
typedef struct {
    char *host, *dev;
    size_t bytes;
    int to_device;
    cudaStream_t stream;
    double reg_ms, copy_ms, unreg_ms;
} reg_part;

static void *reg_thread(void *p)
{
    reg_part *c = p;
    double t0 = bench_now_ms();
    CK(cudaHostRegister(c->host, c->bytes, cudaHostRegisterDefault));
    double t1 = bench_now_ms();
    if (c->to_device)
        CK(cudaMemcpyAsync(c->dev, c->host, c->bytes, cudaMemcpyHostToDevice, c->stream));
    else
        CK(cudaMemcpyAsync(c->host, c->dev, c->bytes, cudaMemcpyDeviceToHost, c->stream));
    CK(cudaStreamSynchronize(c->stream));
    double t2 = bench_now_ms();
    CK(cudaHostUnregister(c->host));
    c->reg_ms = t1 - t0, c->copy_ms = t2 - t1, c->unreg_ms = bench_now_ms() - t2;
    return NULL;
}

/* Wall ms of moving bytes by t threads registering their parts; the
 * largest part's register and unregister ms through reg/unreg. */
static double registered_move(char *host, char *dev, size_t bytes, int t, int to_device,
                              cudaStream_t *streams, double *reg, double *unreg)
{
    pthread_t th[64];
    reg_part part[64];
    size_t per = (bytes / (size_t)t + 4095) / 4096 * 4096;
    int n = 0;
    double t0 = bench_now_ms();
    for (size_t off = 0; off < bytes && n < t; off += per, n++) {
        part[n].host = host + off;
        part[n].dev = dev + off;
        part[n].bytes = bytes - off < per ? bytes - off : per;
        part[n].to_device = to_device;
        part[n].stream = streams[n];
        pthread_create(&th[n], NULL, reg_thread, &part[n]);
    }
    *reg = *unreg = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        *reg = part[i].reg_ms > *reg ? part[i].reg_ms : *reg;
        *unreg = part[i].unreg_ms > *unreg ? part[i].unreg_ms : *unreg;
    }
    return bench_now_ms() - t0;
}

int main(int argc, char **argv)
{
    size_t mib = 256;
    int runs = 7, dev = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mib") && i + 1 < argc)
            mib = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--device") && i + 1 < argc)
            dev = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: link_bench [--mib N] [--runs R] [--device D]\n");
            return 2;
        }
    }
    runs = runs < 1 ? 1 : runs > 64 ? 64 : runs;
    const size_t bytes = mib << 20;
    CK(cudaSetDevice(dev));
    struct cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    printf("link_bench: device %d %s, %zu MiB, median of %d\n", dev, prop.name, mib, runs);
    char *pin_a, *pin_b, *d_a, *d_b;
    CK(cudaMallocHost((void **)&pin_a, bytes));
    CK(cudaMallocHost((void **)&pin_b, bytes));
    CK(cudaMalloc((void **)&d_a, bytes));
    CK(cudaMalloc((void **)&d_b, bytes));
    char *page_a = malloc(bytes), *page_b = malloc(bytes);
    if (!page_a || !page_b)
        return 1;
    memset(page_a, 1, bytes);
    memset(page_b, 2, bytes);
    memset(pin_a, 3, bytes);
    memset(pin_b, 4, bytes);
    cudaStream_t s1, s2;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    double t[64];

    /* pinned: one way, then both ways at once */
    for (int r = 0; r < runs; r++) {
        double t0 = bench_now_ms();
        CK(cudaMemcpyAsync(d_a, pin_a, bytes, cudaMemcpyHostToDevice, s1));
        CK(cudaStreamSynchronize(s1));
        t[r] = bench_now_ms() - t0;
    }
    report("pinned host->device", bytes, bench_median(t, runs));
    for (int r = 0; r < runs; r++) {
        double t0 = bench_now_ms();
        CK(cudaMemcpyAsync(pin_b, d_b, bytes, cudaMemcpyDeviceToHost, s2));
        CK(cudaStreamSynchronize(s2));
        t[r] = bench_now_ms() - t0;
    }
    report("pinned device->host", bytes, bench_median(t, runs));
    for (int r = 0; r < runs; r++) {
        double t0 = bench_now_ms();
        CK(cudaMemcpyAsync(d_a, pin_a, bytes, cudaMemcpyHostToDevice, s1));
        CK(cudaMemcpyAsync(pin_b, d_b, bytes, cudaMemcpyDeviceToHost, s2));
        CK(cudaStreamSynchronize(s1));
        CK(cudaStreamSynchronize(s2));
        t[r] = bench_now_ms() - t0;
    }
    report("pinned both ways at once (bytes each way)", bytes, bench_median(t, runs));

    /* pageable cudaMemcpy */
    for (int r = 0; r < runs; r++) {
        double t0 = bench_now_ms();
        CK(cudaMemcpy(d_a, page_a, bytes, cudaMemcpyHostToDevice));
        t[r] = bench_now_ms() - t0;
    }
    report("pageable cudaMemcpy host->device", bytes, bench_median(t, runs));
    for (int r = 0; r < runs; r++) {
        double t0 = bench_now_ms();
        CK(cudaMemcpy(page_b, d_b, bytes, cudaMemcpyDeviceToHost));
        t[r] = bench_now_ms() - t0;
    }
    report("pageable cudaMemcpy device->host", bytes, bench_median(t, runs));

    /* host threads: pageable -> pinned (staging in), pinned -> pageable (out) */
    static const int threads[] = {1, 2, 4, 8, 16, 32};
    for (size_t k = 0; k < sizeof threads / sizeof *threads; k++) {
        char what[64];
        for (int r = 0; r < runs; r++) {
            double t0 = bench_now_ms();
            threaded_copy(pin_a, page_a, bytes, threads[k]);
            t[r] = bench_now_ms() - t0;
        }
        snprintf(what, sizeof what, "memcpy pageable->pinned, %d threads", threads[k]);
        report(what, bytes, bench_median(t, runs));
        for (int r = 0; r < runs; r++) {
            double t0 = bench_now_ms();
            threaded_copy(page_b, pin_b, bytes, threads[k]);
            t[r] = bench_now_ms() - t0;
        }
        snprintf(what, sizeof what, "memcpy pinned->pageable, %d threads", threads[k]);
        report(what, bytes, bench_median(t, runs));
    }

    /* the same with streaming stores, and both directions at once */
    g_stream_stores = 1;
    for (size_t k = 2; k < sizeof threads / sizeof *threads; k++) {
        char what[64];
        for (int r = 0; r < runs; r++) {
            double t0 = bench_now_ms();
            threaded_copy(pin_a, page_a, bytes, threads[k]);
            t[r] = bench_now_ms() - t0;
        }
        snprintf(what, sizeof what, "stream-store pageable->pinned, %d threads", threads[k]);
        report(what, bytes, bench_median(t, runs));
        for (int r = 0; r < runs; r++) {
            double t0 = bench_now_ms();
            threaded_copy(page_b, pin_b, bytes, threads[k]);
            t[r] = bench_now_ms() - t0;
        }
        snprintf(what, sizeof what, "stream-store pinned->pageable, %d threads", threads[k]);
        report(what, bytes, bench_median(t, runs));
    }
    g_stream_stores = 0;

    /* pinning the caller's range: register, copy, unregister, by size */
    for (size_t part = bytes >> 6; part <= bytes; part <<= 2) {
        double reg[64], unreg[64], cp[64];
        for (int r = 0; r < runs; r++) {
            double t0 = bench_now_ms();
            CK(cudaHostRegister(page_a, part, cudaHostRegisterDefault));
            double t1 = bench_now_ms();
            CK(cudaMemcpyAsync(d_a, page_a, part, cudaMemcpyHostToDevice, s1));
            CK(cudaStreamSynchronize(s1));
            double t2 = bench_now_ms();
            CK(cudaHostUnregister(page_a));
            double t3 = bench_now_ms();
            reg[r] = t1 - t0, cp[r] = t2 - t1, unreg[r] = t3 - t2;
        }
        char what[64];
        snprintf(what, sizeof what, "cudaHostRegister");
        report(what, part, bench_median(reg, runs));
        snprintf(what, sizeof what, "  copy of the registered range host->device");
        report(what, part, bench_median(cp, runs));
        snprintf(what, sizeof what, "  cudaHostUnregister");
        report(what, part, bench_median(unreg, runs));
    }
    /* pinning in place by several threads, each its part on its own stream:
     * malloc'd memory, and memory advised to huge pages (as numpy's) */
    {
        cudaStream_t st[32];
        for (int i = 0; i < 32; i++)
            CK(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
        char *huge = NULL;
        if (posix_memalign((void **)&huge, (size_t)2 << 20, bytes))
            return 1;
#ifdef MADV_HUGEPAGE
        madvise(huge, bytes, MADV_HUGEPAGE);
#endif
        memset(huge, 5, bytes);
        static const int rthreads[] = {1, 2, 4, 8, 16, 32};
        for (int kind = 0; kind < 2; kind++) {
            char *h = kind ? huge : page_a;
            for (size_t k = 0; k < sizeof rthreads / sizeof *rthreads; k++) {
                for (int dir = 1; dir >= 0; dir--) {
                    double reg[64], unreg[64];
                    for (int r = 0; r < runs; r++)
                        t[r] = registered_move(h, d_a, bytes, rthreads[k], dir, st, &reg[r],
                                               &unreg[r]);
                    char what[96];
                    snprintf(what, sizeof what, "registered %s %s, %d threads",
                             kind ? "huge" : "malloc", dir ? "->device" : "<-device", rthreads[k]);
                    report(what, bytes, bench_median(t, runs));
                    printf("    register %.3f ms, unregister %.3f ms (slowest part, median)\n",
                           bench_median(reg, runs), bench_median(unreg, runs));
                }
            }
        }
        free(huge);
        for (int i = 0; i < 32; i++)
            CK(cudaStreamDestroy(st[i]));
    }
    /* registering fresh (untouched) memory: a numpy result before it is written */
    {
        char *fresh = malloc(bytes);
        double t0 = bench_now_ms();
        CK(cudaHostRegister(fresh, bytes, cudaHostRegisterDefault));
        double t1 = bench_now_ms();
        CK(cudaHostUnregister(fresh));
        report("cudaHostRegister of untouched memory", bytes, t1 - t0);
        free(fresh);
    }
    free(page_a);
    free(page_b);
    return 0;
}

#else

int main(void)
{
    printf("link_bench: built without CUDA\n");
    return 0;
}

#endif
