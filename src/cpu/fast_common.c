/*
 * fast_common.c - the parts every fast CPU strategy shares: gathering
 * extended input rows (type conversion, channel and strides, the boundary
 * mode), storing output rows with conversion (non-temporal stores for large
 * float32 outputs), and aligned scratch.
 */
#include "fast.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define CVCPU_HAVE_SSE2 1
#endif

/* ---- memory ------------------------------------------------------------- */

void *cvcpu_alloc(size_t n, size_t size)
{
    size_t bytes;
    if (!cvi_mul_size(n, size, &bytes) || bytes > SIZE_MAX - 64)
        return NULL;
    bytes = (bytes + 63) / 64 * 64;
    void *ptr = aligned_alloc(64, bytes ? bytes : 64);
    if (ptr)
        memset(ptr, 0, bytes ? bytes : 64);
    return ptr;
}

void cvcpu_free(void *ptr)
{
    free(ptr);
}

/* ---- partitions ----------------------------------------------------------- */

/* Ring rows per thread are kept within this many bytes (L2 cache). */
#define CVCPU_RING_BYTES ((size_t)384 << 10)
/* Widest column tile (elements). */
#define CVCPU_TILE_MAX 4096

void cvcpu_plan_tiles(const cvi_problem *p, size_t es, int threads, size_t ring_rows, size_t outer,
                      size_t band_rows_max, size_t *tw, size_t *rb)
{
    const size_t n1 = p->shape[1], n2 = p->shape[2], K1 = p->ksize[1], K2 = p->ksize[2];
    size_t lmax = CVCPU_RING_BYTES / es / (ring_rows ? ring_rows : 1);
    size_t w = lmax > K2 + 64 ? lmax - K2 + 1 : 64;
    if (w > CVCPU_TILE_MAX)
        w = CVCPU_TILE_MAX;
    w = w / 16 * 16;
    if (w < 64)
        w = 64;
    size_t ntw = cvcpu_div_up(n2, w);
    w = cvcpu_round16(cvcpu_div_up(n2, ntw));
    if (w > n2)
        w = n2;
    size_t per = outer * cvcpu_div_up(n2, w);
    size_t want = 8 * (size_t)threads;
    size_t nrb = per >= want ? 1 : cvcpu_div_up(want, per);
    size_t h = cvcpu_div_up(n1, nrb);
    size_t hmin = 4 * (K1 - 1) > 16 ? 4 * (K1 - 1) : 16;
    if (h < hmin)
        h = hmin;
    if (band_rows_max && h > band_rows_max)
        h = band_rows_max;
    /* an item does every channel of its band: with interleaved channels the
     * band's output lines are written once per channel, so keep them cached */
    if (p->channels > 1) {
        size_t cap = ((size_t)192 << 10) / (w * p->channels * convolve_dtype_size(p->out_type));
        if (cap < hmin)
            cap = hmin;
        if (h > cap)
            h = cap;
    }
    if (h > n1)
        h = n1;
    *tw = w;
    *rb = h;
}

/* ---- one execution ------------------------------------------------------ */

/* Float32 outputs at least this large bypass the caches on store. */
#define CVCPU_STREAM_MIN_BYTES ((size_t)16 << 20)

void cvcpu_exec_init(cvcpu_exec *e, const cvi_problem *p, int threads, const void *in, void *out)
{
    memset(e, 0, sizeof *e);
    e->p = p;
    e->in = in;
    e->out = out;
    /* double also for long filters: float sums of hundreds of taps lose
     * digits that scipy's double sums keep */
    e->dbl = cvcpu_compute_double(p);
    e->es = e->dbl ? sizeof(double) : sizeof(float);
    e->isa = cvcpu_isa();
    e->corr = cvcpu_corr_kernel(e->dbl, e->isa);
    e->cvt = cvcpu_cvt_kernels(e->isa);
    e->threads = threads;
    e->in_place = p->in_type == (e->dbl ? CONVOLVE_FLOAT64 : CONVOLVE_FLOAT32) &&
                  p->in_strides[2] == (ptrdiff_t)e->es;
    size_t count = p->shape[0] * p->shape[1] * p->shape[2] * p->channels;
#if CVCPU_HAVE_SSE2
    e->stream = p->out_type == CONVOLVE_FLOAT32 && !e->dbl &&
                p->out_strides[2] == (ptrdiff_t)sizeof(float) &&
                count >= CVCPU_STREAM_MIN_BYTES / sizeof(float);
#else
    (void)count;
#endif
}

void cvcpu_limit_threads(cvcpu_exec *e, double work)
{
    double most = work / CVCPU_WORK_PER_THREAD;
    if (most < 1.0)
        e->threads = 1;
    else if (most < (double)e->threads)
        e->threads = (int)most;
    if (e->threads > 1 && e->p->threads == 0 && work < CVCPU_SHORT_WORK)
        e->threads = cvcpu_threads_for_free(e->threads, cvcpu_free_cores());
}

int cvcpu_threads_for_free(int threads, int free_cores)
{
    if (free_cores < 0 || free_cores >= threads)
        return threads;
    return free_cores > 1 ? free_cores : 1;
}

/* Reads /proc/loadavg's running tasks: -1 if unknown. */
static int running_tasks(void)
{
#ifdef __linux__
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f)
        return -1;
    int running = -1, total;
    if (fscanf(f, "%*f %*f %*f %d/%d", &running, &total) != 2)
        running = -1;
    fclose(f);
    return running;
#else
    return -1;
#endif
}

int cvcpu_free_cores(void)
{
    static _Atomic long long read_ns = -1;
    static _Atomic int last = -1;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const long long now = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    const long long then = read_ns;
    if (then >= 0 && now - then < 10000000LL)
        return last;
#ifdef _OPENMP
    const long procs = omp_get_num_procs();
#else
    const long procs = 1;
#endif
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    int free_cores = -1;
    const int running = procs == online ? running_tasks() : -1;
    if (running >= 1)
        free_cores = running - 1 >= procs ? 0 : (int)(procs - (running - 1));
    last = free_cores;
    read_ns = now;
    return free_cores;
}

/* ---- loads ---------------------------------------------------------------- */

#define CVCPU_LOAD_LOOP(T, DST)                                                     \
    do {                                                                            \
        if (stride == (ptrdiff_t)sizeof(T))                                         \
            for (size_t i = 0; i < n; i++)                                          \
                (DST)[i] = ((const T *)(const void *)src)[i];                       \
        else                                                                        \
            for (size_t i = 0; i < n; i++)                                          \
                (DST)[i] = *(const T *)(const void *)(src + (ptrdiff_t)i * stride); \
    } while (0)

static void load_float(const cvcpu_cvt *cvt, convolve_dtype t, const char *src, ptrdiff_t stride,
                       size_t n, float *dst)
{
    switch (t) {
    case CONVOLVE_FLOAT32:
        if (stride == (ptrdiff_t)sizeof(float))
            memcpy(dst, src, n * sizeof(float));
        else
            CVCPU_LOAD_LOOP(float, dst);
        break;
    case CONVOLVE_FLOAT64: CVCPU_LOAD_LOOP(double, dst); break;
    case CONVOLVE_UINT8:
        if (cvt && stride == 1)
            cvt->from_u8(dst, src, n);
        else
            CVCPU_LOAD_LOOP(uint8_t, dst);
        break;
    default:
        if (cvt && stride == (ptrdiff_t)sizeof(uint16_t))
            cvt->from_u16(dst, src, n);
        else
            CVCPU_LOAD_LOOP(uint16_t, dst);
        break;
    }
}

static void load_double(convolve_dtype t, const char *src, ptrdiff_t stride, size_t n, double *dst)
{
    switch (t) {
    case CONVOLVE_FLOAT32: CVCPU_LOAD_LOOP(float, dst); break;
    case CONVOLVE_FLOAT64:
        if (stride == (ptrdiff_t)sizeof(double))
            memcpy(dst, src, n * sizeof(double));
        else
            CVCPU_LOAD_LOOP(double, dst);
        break;
    case CONVOLVE_UINT8: CVCPU_LOAD_LOOP(uint8_t, dst); break;
    default: CVCPU_LOAD_LOOP(uint16_t, dst); break;
    }
}

/* Loads n elements of the input's type from src (byte stride) as the compute type. */
static void load_elements(const cvcpu_exec *e, const char *src, ptrdiff_t stride, size_t n,
                          void *dst)
{
    if (e->dbl)
        load_double(e->p->in_type, src, stride, n, dst);
    else
        load_float(e->cvt, e->p->in_type, src, stride, n, dst);
}

void cvcpu_fill(const cvcpu_exec *e, void *dst, size_t n, double v)
{
    if (e->dbl) {
        double *d = dst;
        for (size_t i = 0; i < n; i++)
            d[i] = v;
    } else {
        float *f = dst, fv = (float)v;
        for (size_t i = 0; i < n; i++)
            f[i] = fv;
    }
}

void cvcpu_convert_weights(const cvcpu_exec *e, void *dst, const double *w, size_t n, double scale)
{
    if (e->dbl)
        for (size_t i = 0; i < n; i++)
            ((double *)dst)[i] = w[i] * scale;
    else
        for (size_t i = 0; i < n; i++)
            ((float *)dst)[i] = (float)(w[i] * scale);
}

/* cvi_boundary_index without a division for j within one period of the
 * edges (the common case: filters shorter than the input). */
static inline ptrdiff_t boundary_index(ptrdiff_t j, ptrdiff_t n, int mode)
{
    if (j >= -n && j < 2 * n) {
        switch (mode) {
        case CVI_MODE_CONSTANT: return j >= 0 && j < n ? j : -1;
        case CVI_MODE_NEAREST: return j < 0 ? 0 : j >= n ? n - 1 : j;
        case CVI_MODE_WRAP: return j < 0 ? j + n : j >= n ? j - n : j;
        case CVI_MODE_REFLECT: return j < 0 ? -1 - j : j >= n ? 2 * n - 1 - j : j;
        default: /* MIRROR */
            if (n > 1 && j > -n && j < 2 * n - 1)
                return j < 0 ? -j : j >= n ? 2 * n - 2 - j : j;
            break;
        }
    }
    return cvi_boundary_index(j, n, mode);
}

void cvcpu_gather(const cvcpu_exec *e, const char *row, ptrdiff_t q0, size_t L, void *dst)
{
    const cvi_problem *p = e->p;
    if (!row) {
        cvcpu_fill(e, dst, L, p->cval);
        return;
    }
    const ptrdiff_t n = (ptrdiff_t)p->shape[2], s = p->in_strides[2], q1 = q0 + (ptrdiff_t)L;
    ptrdiff_t a = q0 > 0 ? q0 : 0, b = q1 < n ? q1 : n;
    char *d = dst;
    if (a < b)
        load_elements(e, row + a * s, s, (size_t)(b - a), d + (size_t)(a - q0) * e->es);
    /* the columns outside [0, n), element by element (at most K - 1 per side
     * unless the filter is longer than the row) */
    for (ptrdiff_t q = q0; q < q1; q++) {
        if (q == a && a < b) {
            q = b - 1;
            continue;
        }
        ptrdiff_t j = boundary_index(q, n, p->mode);
        void *t = d + (size_t)(q - q0) * e->es;
        if (j < 0)
            cvcpu_fill(e, t, 1, p->cval);
        else
            load_elements(e, row + j * s, s, 1, t);
    }
}

void cvcpu_prefetch(const cvcpu_exec *e, const char *row, ptrdiff_t q0, size_t L)
{
#if defined(__GNUC__) || defined(__clang__)
    const cvi_problem *p = e->p;
    const ptrdiff_t n = (ptrdiff_t)p->shape[2], s = p->in_strides[2];
    ptrdiff_t a = q0 > 0 ? q0 : 0, b = q0 + (ptrdiff_t)L < n ? q0 + (ptrdiff_t)L : n;
    if (!row || a >= b || s > 64 || s < -64)
        return;
    const char *lo = row + (s >= 0 ? a : b - 1) * s, *hi = row + (s >= 0 ? b - 1 : a) * s;
    for (const char *q = lo; q <= hi; q += 64)
        __builtin_prefetch(q, 0, 2);
#else
    (void)e, (void)row, (void)q0, (void)L;
#endif
}

void cvcpu_split_columns(const cvcpu_exec *e, size_t xa, size_t wdt, size_t *xl, size_t *xr)
{
    const cvi_problem *p = e->p;
    const size_t K2 = p->ksize[2];
    const ptrdiff_t koff2 = p->koff[2];
    *xl = *xr = xa + wdt;
    if (!e->in_place)
        return;
    size_t lo = xa + cvcpu_round16((size_t)koff2 > xa ? (size_t)koff2 - xa : 0);
    /* the middle ends by here */
    ptrdiff_t lim = (ptrdiff_t)p->shape[2] - (ptrdiff_t)K2 + 1 + koff2;
    size_t end = lim < (ptrdiff_t)(xa + wdt) ? (lim > 0 ? (size_t)lim : 0) : xa + wdt;
    if (end > lo && (end - lo) / 16 > 0) {
        *xl = lo;
        *xr = lo + (end - lo) / 16 * 16;
    }
}

void cvcpu_filter_row(const cvcpu_exec *e, const char *row, size_t xa, size_t wdt, size_t xl,
                      size_t xr, void *edge, void *ext, void *out, const void *w, size_t K2)
{
    const ptrdiff_t koff2 = e->p->koff[2];
    char *o = out;
    if (xr == xl) {
        cvcpu_gather(e, row, (ptrdiff_t)xa - koff2, wdt + K2 - 1, ext);
        e->corr(o, wdt, (const void *const *)&ext, 1, w, K2);
        return;
    }
    const void *mid = row + ((ptrdiff_t)xl - koff2) * e->p->in_strides[2];
    void *right = (char *)edge + cvcpu_edge_pad(K2) * e->es;
    e->corr(o + (xl - xa) * e->es, xr - xl, &mid, 1, w, K2);
    if (xl > xa) {
        cvcpu_gather(e, row, (ptrdiff_t)xa - koff2, xl - xa + K2 - 1, edge);
        e->corr(o, xl - xa, (const void *const *)&edge, 1, w, K2);
    }
    if (xr < xa + wdt) {
        cvcpu_gather(e, row, (ptrdiff_t)xr - koff2, xa + wdt - xr + K2 - 1, right);
        e->corr(o + (xr - xa) * e->es, xa + wdt - xr, (const void *const *)&right, 1, w, K2);
    }
}

/* ---- stores ---------------------------------------------------------------- */

/* Round to nearest (ties to even) and saturate, from float: the same result
 * as cvi_saturate_u8/u16 of the value widened to double. Adding and taking
 * away 2^23 rounds values below 2^23 in the default rounding mode; larger
 * ones (and infinities) clamp to hi, negative ones and NaN to 0. Free of
 * branches (the selects are max and min), so that it vectorises. */
static inline float sat_round(float v, float hi)
{
    float r = (v + 0x1p23f) - 0x1p23f;
    r = r > 0.0f ? r : 0.0f;
    return r < hi ? r : hi;
}

#if CVCPU_HAVE_SSE2
/* Non-temporal copy of n floats; the destination is only 4-byte aligned. */
static void stream_f32(float *dst, const float *src, size_t n)
{
    size_t i = 0;
    while (i < n && ((uintptr_t)(dst + i) & 15))
        dst[i] = src[i], i++;
    for (; i + 16 <= n; i += 16) {
        _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
        _mm_stream_ps(dst + i + 4, _mm_loadu_ps(src + i + 4));
        _mm_stream_ps(dst + i + 8, _mm_loadu_ps(src + i + 8));
        _mm_stream_ps(dst + i + 12, _mm_loadu_ps(src + i + 12));
    }
    for (; i < n; i++)
        dst[i] = src[i];
}
#endif

#define CVCPU_STORE_LOOP(T, EXPR)                                        \
    do {                                                                 \
        if (stride == (ptrdiff_t)sizeof(T))                              \
            for (size_t i = 0; i < n; i++)                               \
                ((T *)(void *)dst)[i] = (T)(EXPR);                       \
        else                                                             \
            for (size_t i = 0; i < n; i++)                               \
                *(T *)(void *)(dst + (ptrdiff_t)i * stride) = (T)(EXPR); \
    } while (0)

/* Integer outputs with a stride: converted in chunks into a contiguous
 * buffer (vectorised), then copied element by element. */
#define CVCPU_STORE_INT_CHUNKED(T, HI, FN)                          \
    do {                                                            \
        T buf[256];                                                 \
        void (*fn_)(void *, const float *, size_t) = FN;            \
        for (size_t i0 = 0; i0 < n; i0 += 256) {                    \
            size_t m = n - i0 < 256 ? n - i0 : 256;                 \
            if (fn_)                                                \
                fn_(buf, s + i0, m);                                \
            else                                                    \
                for (size_t i = 0; i < m; i++)                      \
                    buf[i] = (T)sat_round(s[i0 + i], HI);           \
            char *d = dst + (ptrdiff_t)i0 * stride;                 \
            for (size_t i = 0; i < m; i++)                          \
                *(T *)(void *)(d + (ptrdiff_t)i * stride) = buf[i]; \
        }                                                           \
    } while (0)

static void store_float(const cvcpu_exec *e, char *dst, ptrdiff_t stride, size_t n, const float *s)
{
    switch (e->p->out_type) {
    case CONVOLVE_FLOAT32:
#if CVCPU_HAVE_SSE2
        if (e->stream && stride == (ptrdiff_t)sizeof(float)) {
            stream_f32((float *)(void *)dst, s, n);
            break;
        }
#endif
        if (stride == (ptrdiff_t)sizeof(float))
            memcpy(dst, s, n * sizeof(float));
        else
            CVCPU_STORE_LOOP(float, s[i]);
        break;
    case CONVOLVE_FLOAT64: CVCPU_STORE_LOOP(double, s[i]); break;
    case CONVOLVE_UINT8:
        if (stride == 1 && e->cvt)
            e->cvt->to_u8(dst, s, n);
        else if (stride == 1)
            CVCPU_STORE_LOOP(uint8_t, sat_round(s[i], 255.0f));
        else
            CVCPU_STORE_INT_CHUNKED(uint8_t, 255.0f, e->cvt ? e->cvt->to_u8 : NULL);
        break;
    default:
        if (stride == (ptrdiff_t)sizeof(uint16_t) && e->cvt)
            e->cvt->to_u16(dst, s, n);
        else if (stride == (ptrdiff_t)sizeof(uint16_t))
            CVCPU_STORE_LOOP(uint16_t, sat_round(s[i], 65535.0f));
        else
            CVCPU_STORE_INT_CHUNKED(uint16_t, 65535.0f, e->cvt ? e->cvt->to_u16 : NULL);
        break;
    }
}

/* scipy's cast of n doubles to uint8 (es 1) or uint16 (es 2) elements
 * `stride` bytes apart, by the vector kernels: in place when contiguous,
 * else through a small contiguous block (interleaved channels). */
static void trunc_strided(const cvcpu_exec *e, int es, char *dst, ptrdiff_t stride, size_t n,
                          const double *s)
{
    const double dv = e->p->divisor, tol = e->p->snap;
    if (stride == es) {
        (es == 1 ? e->cvt->trunc_u8 : e->cvt->trunc_u16)(dst, s, n, dv, tol);
        return;
    }
    uint16_t blk[256];
    for (size_t i0 = 0; i0 < n; i0 += 256) {
        const size_t m = n - i0 < 256 ? n - i0 : 256;
        char *d = dst + (ptrdiff_t)i0 * stride;
        if (es == 1) {
            uint8_t *b = (uint8_t *)blk;
            e->cvt->trunc_u8(b, s + i0, m, dv, tol);
            for (size_t i = 0; i < m; i++)
                *(uint8_t *)(void *)(d + (ptrdiff_t)i * stride) = b[i];
        } else {
            e->cvt->trunc_u16(blk, s + i0, m, dv, tol);
            for (size_t i = 0; i < m; i++)
                *(uint16_t *)(void *)(d + (ptrdiff_t)i * stride) = blk[i];
        }
    }
}

static void store_double(const cvcpu_exec *e, char *dst, ptrdiff_t stride, size_t n,
                         const double *s)
{
    switch (e->p->out_type) {
    case CONVOLVE_FLOAT32: CVCPU_STORE_LOOP(float, s[i]); break;
    case CONVOLVE_FLOAT64:
        if (stride == (ptrdiff_t)sizeof(double))
            memcpy(dst, s, n * sizeof(double));
        else
            CVCPU_STORE_LOOP(double, s[i]);
        break;
    case CONVOLVE_UINT8:
        if (cvi_truncates(e->p) && e->cvt) {
            trunc_strided(e, 1, dst, stride, n, s);
        } else if (cvi_truncates(e->p)) {
            const double dv = e->p->divisor, tol = e->p->snap;
            CVCPU_STORE_LOOP(uint8_t, cvi_truncate_u8(s[i], dv, tol));
        } else {
            CVCPU_STORE_LOOP(uint8_t, cvi_saturate_u8(s[i]));
        }
        break;
    default:
        if (cvi_truncates(e->p) && e->cvt) {
            trunc_strided(e, 2, dst, stride, n, s);
        } else if (cvi_truncates(e->p)) {
            const double dv = e->p->divisor, tol = e->p->snap;
            CVCPU_STORE_LOOP(uint16_t, cvi_truncate_u16(s[i], dv, tol));
        } else {
            CVCPU_STORE_LOOP(uint16_t, cvi_saturate_u16(s[i]));
        }
        break;
    }
}

void cvcpu_store(const cvcpu_exec *e, char *dst, size_t n, const void *src)
{
    ptrdiff_t stride = e->p->out_strides[2];
    if (e->dbl)
        store_double(e, dst, stride, n, src);
    else
        store_float(e, dst, stride, n, src);
}

void cvcpu_store_done(const cvcpu_exec *e)
{
#if CVCPU_HAVE_SSE2
    if (e->stream)
        _mm_sfence();
#else
    (void)e;
#endif
}
