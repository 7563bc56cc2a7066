/*
 * fast_direct2d.cu - register-streaming 2-D convolution for square odd
 * filters on float32 or uint8 rows of interleaved channels: dense filters
 * (K = 3..17) and separable ones fused in one pass (K = 3..33).
 *
 * Each warp owns a segment of 32*V consecutive row elements (V per lane, one
 * 16- or 8-byte load each) and walks down a strip of rows. For every input
 * row a lane builds its window of V + 2*R*C elements: its own V from the
 * load, the rest from neighbouring lanes with shuffles, and the 2*R*C
 * elements past the warp's ends from one extra load spread over the edge
 * lanes. K rolling accumulator rows hold the outputs the row contributes to;
 * the oldest is complete after each row and is stored. A separable filter
 * first reduces the window with its horizontal taps (K FMAs an output) and
 * feeds that one value per column to the accumulators with the vertical taps:
 * the intermediate never leaves registers. So every input element
 * crosses DRAM once (plus the strip's K-1 halo rows, mostly from L2), and
 * each weight is an FMA operand read from the kernel's parameter bank
 * (constant memory) at a compile-time offset.
 *
 * Warps whose window would reach past the row's ends do nothing here: the
 * columns they would produce (and every column, when the data is not aligned
 * for vector loads) are computed by fd_edge_kernel, one thread per output
 * with every tap loaded through cvi_boundary_index, so every mode is exact
 * and the fast kernel carries no border code. A non-zero horizontal origin
 * shifts where outputs are stored, not what is loaded, so loads stay aligned.
 */
#include "fast_direct2d.h"

#include "../kernel_math.h"

#include <stdint.h>

#define FD_WARPS 4 /* warps per block, side by side along the row */
#define FD_FULL 0xffffffffu

enum { FD_F32 = 0, FD_F64 = 1, FD_U8 = 2, FD_U16 = 3 }; /* convolve_dtype */

/* Everything a launch needs, passed by value: the weights live in the
 * parameter bank, so FMAs read them as constant operands. */
typedef struct fd_params {
    const char *in;
    char *out;
    long long in_row, out_row;
    long long H;         /* rows */
    int W, WC;           /* pixels and elements per row */
    int first;           /* centred element of the first fast warp's lane 0 */
    int nwarps;          /* fast warps along a row */
    int koffy, shift;    /* vertical offset; output element = centred element + shift */
    int mode, out_type;
    int strip;           /* rows per block */
    int vec_store;       /* outputs allow vector stores */
    float cval;
    /* dense: K*K weights; separable: K vertical then K horizontal taps */
    float w[CVI_FD2D_MAX_K * CVI_FD2D_MAX_K];
} fd_params;

/* Elements per lane: 16 bytes of float, 8 of uint8. */
template <typename T> struct fd_lane_width { enum { V = 4 }; };
template <> struct fd_lane_width<unsigned char> { enum { V = 8 }; };

__device__ __forceinline__ float fd_to_float(float v) { return v; }
__device__ __forceinline__ float fd_to_float(unsigned char v) { return (float)v; }

/* Loads V consecutive elements at p (aligned to V * sizeof(T)) as floats. */
__device__ __forceinline__ void fd_load_vec(const float *p, float (&v)[4])
{
    float4 q = __ldg((const float4 *)p);
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}

__device__ __forceinline__ void fd_load_vec(const unsigned char *p, float (&v)[8])
{
    uint2 q = __ldg((const uint2 *)p);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        v[i] = (float)((q.x >> (8 * i)) & 0xffu);
        v[4 + i] = (float)((q.y >> (8 * i)) & 0xffu);
    }
}

/* Stores one float result as the output type. */
__device__ __forceinline__ void fd_store_one(int type, char *row, long long e, float v)
{
    switch (type) {
    case FD_F32: ((float *)row)[e] = v; break;
    case FD_F64: ((double *)row)[e] = (double)v; break;
    case FD_U8: ((unsigned char *)row)[e] = cvi_saturate_u8f(v); break;
    default: ((unsigned short *)row)[e] = cvi_saturate_u16f(v); break;
    }
}

/* Stores V results at element e (aligned to V elements of the output type). */
template <int V>
__device__ __forceinline__ void fd_store_vec(int type, char *row, long long e, const float (&v)[V])
{
    if (type == FD_F32) {
#pragma unroll
        for (int i = 0; i < V; i += 4)
            *(float4 *)((float *)row + e + i) = make_float4(v[i], v[i + 1], v[i + 2], v[i + 3]);
    } else if (type == FD_U8) {
#pragma unroll
        for (int i = 0; i < V; i += 4) {
            unsigned int q = (unsigned int)cvi_saturate_u8f(v[i]) |
                             (unsigned int)cvi_saturate_u8f(v[i + 1]) << 8 |
                             (unsigned int)cvi_saturate_u8f(v[i + 2]) << 16 |
                             (unsigned int)cvi_saturate_u8f(v[i + 3]) << 24;
            *(unsigned int *)((unsigned char *)row + e + i) = q;
        }
    } else {
#pragma unroll
        for (int i = 0; i < V; i++)
            fd_store_one(type, row, e + i, v[i]);
    }
}

/* The source row for input row y, or -1 when the row is all cval. */
__device__ __forceinline__ long long fd_row(const fd_params &p, long long y)
{
    return cvi_boundary_index(y, p.H, p.mode);
}

/* Loads input row y as a lane holds it before the window is built: its own
 * V elements, and in v[V] one element of the warp's halo (lanes 0..HALO-1
 * the left halo, lanes 32-HALO..31 the right). The warp's window lies inside
 * the row (interior warps only). */
template <int K, int C, typename T>
__device__ __forceinline__ void fd_load_row(const fd_params &p, long long y, int we0, int lane,
                                            float (&r)[fd_lane_width<T>::V + 1])
{
    enum { V = fd_lane_width<T>::V, HALO = (K / 2) * C, SEG = 32 * V };
    const long long m = cvi_boundary_index(y, p.H, p.mode);
    if (m < 0) {
#pragma unroll
        for (int i = 0; i <= V; i++)
            r[i] = p.cval;
        return;
    }
    const T *row = (const T *)(p.in + m * p.in_row);
    float own[V];
    fd_load_vec(row + we0 + lane * V, own);
#pragma unroll
    for (int i = 0; i < V; i++)
        r[i] = own[i];
    const int ex = lane < HALO ? we0 - HALO + lane
                   : lane >= 32 - HALO ? we0 + SEG + (lane - (32 - HALO))
                                       : -1;
    r[V] = ex >= 0 ? fd_to_float(row[ex]) : 0.0f;
}

/* Builds the lane's window: V + 2*HALO elements centred on its own V. */
template <int K, int C, typename T>
__device__ __forceinline__ void fd_window(const float (&r)[fd_lane_width<T>::V + 1], int lane,
                                          float (&win)[fd_lane_width<T>::V + 2 * (K / 2) * C])
{
    enum { V = fd_lane_width<T>::V, HALO = (K / 2) * C, SEG = 32 * V, WIN = V + 2 * HALO };
#pragma unroll
    for (int j = 0; j < WIN; j++) {
        const int d = j - HALO; /* offset from the lane's first element */
        if (d >= 0 && d < V) {
            win[j] = r[d];
        } else {
            const int dl = d >= 0 ? d / V : -((-d + V - 1) / V); /* floor(d / V) */
            const int slot = d - dl * V;                        /* 0..V-1 */
            const int q = lane * V + d;                         /* warp-relative element */
            float vm = __shfl_sync(FD_FULL, r[slot], (lane + dl) & 31);
            int xl = q < 0 ? q + HALO : q - SEG + (32 - HALO);
            float ve = __shfl_sync(FD_FULL, r[V], xl & 31);
            win[j] = (q >= 0 && q < SEG) ? vm : ve;
        }
    }
}

template <int K, int C, typename T, bool SEP>
__global__ void __launch_bounds__(FD_WARPS * 32) fd_kernel(const __grid_constant__ fd_params p)
{
    enum { V = fd_lane_width<T>::V, HALO = (K / 2) * C, SEG = 32 * V, WIN = V + 2 * HALO };
    const int lane = threadIdx.x & 31;
    const int warp = blockIdx.x * FD_WARPS + (threadIdx.x >> 5);
    if (warp >= p.nwarps)
        return; /* whole warps only: no block barrier is used */
    const int we0 = p.first + warp * SEG; /* centred element of lane 0 */
    const long long y0 = (long long)blockIdx.y * p.strip;
    const int rows = (int)(p.H - y0 < p.strip ? p.H - y0 : p.strip);

    float acc[K][V];
#pragma unroll
    for (int a = 0; a < K; a++)
#pragma unroll
        for (int i = 0; i < V; i++)
            acc[a][i] = 0.0f;

    const int el = we0 + lane * V;
    const long long ybase = y0 - p.koffy;
    const int total = rows + K - 1;
    float cur[V + 1], nx1[V + 1], nx2[V + 1];
    fd_load_row<K, C, T>(p, ybase, we0, lane, cur);
    fd_load_row<K, C, T>(p, ybase + 1, we0, lane, nx1);

#pragma unroll 1
    for (int t = 0; t < total; t++) {
        if (t + 2 < total) /* two rows in flight while this one is used */
            fd_load_row<K, C, T>(p, ybase + t + 2, we0, lane, nx2);
        float win[WIN];
        fd_window<K, C, T>(cur, lane, win);
        /* input row t adds to outputs t-ky (weight row ky) in acc[K-1-ky];
         * only outputs 0..rows-1 of the strip are worth the FMAs */
        if (SEP) {
            /* a row outside (CONSTANT) holds cval, so h = cval * sum(wx):
             * the dense outer product's meaning, with no special case */
            float h[V];
#pragma unroll
            for (int i = 0; i < V; i++) {
                float s = 0.0f;
#pragma unroll
                for (int kx = 0; kx < K; kx++)
                    s = fmaf(p.w[K + kx], win[i + kx * C], s);
                h[i] = s;
            }
#pragma unroll
            for (int ky = 0; ky < K; ky++) {
                if (ky > t || ky <= t - rows)
                    continue;
#pragma unroll
                for (int i = 0; i < V; i++)
                    acc[K - 1 - ky][i] = fmaf(p.w[ky], h[i], acc[K - 1 - ky][i]);
            }
        } else {
#pragma unroll
            for (int ky = 0; ky < K; ky++) {
                if (ky > t || ky <= t - rows)
                    continue;
#pragma unroll
                for (int kx = 0; kx < K; kx++) {
                    const float w = p.w[ky * K + kx];
#pragma unroll
                    for (int i = 0; i < V; i++)
                        acc[K - 1 - ky][i] = fmaf(w, win[i + kx * C], acc[K - 1 - ky][i]);
                }
            }
        }
        const int o = t - (K - 1); /* acc[0] is now complete */
        if (o >= 0) {
            char *orow = p.out + (y0 + o) * p.out_row;
            const int e = el + p.shift;
            if (p.vec_store && e >= 0 && e + V <= p.WC) {
                fd_store_vec<V>(p.out_type, orow, e, acc[0]);
            } else {
#pragma unroll
                for (int i = 0; i < V; i++)
                    if (e + i >= 0 && e + i < p.WC)
                        fd_store_one(p.out_type, orow, e + i, acc[0][i]);
            }
        }
#pragma unroll
        for (int a = 0; a < K - 1; a++)
#pragma unroll
            for (int i = 0; i < V; i++)
                acc[a][i] = acc[a + 1][i];
#pragma unroll
        for (int i = 0; i < V; i++)
            acc[K - 1][i] = 0.0f;
#pragma unroll
        for (int i = 0; i <= V; i++) {
            cur[i] = nx1[i];
            nx1[i] = nx2[i];
        }
    }
}

/* The columns the fast kernel leaves: one thread per output element of
 * rows [0, H) and elements [0, lo) and [hi, WC) (centred coordinates shifted
 * by `shift` already undone: these are output elements), every tap through
 * cvi_boundary_index. Runtime K, weights from the parameter bank; a
 * separable filter is applied as its outer product, exactly its meaning. */
__global__ void fd_edge_kernel(const __grid_constant__ fd_params p, int K, int C, int in_u8,
                               int sep, int lo, int hi)
{
    const long long n = (long long)lo + (p.WC - hi);
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n)
        return;
    const long long y = blockIdx.y + (long long)blockIdx.z * 65535;
    if (y >= p.H)
        return;
    const int e = idx < lo ? (int)idx : hi + (int)(idx - lo);
    const int pix = e / C, c = e - pix * C;
    const int cx = pix - (p.shift / C) - K / 2; /* first tap's pixel, centred window */
    float acc = 0.0f;
    for (int ky = 0; ky < K; ky++) {
        const long long m = cvi_boundary_index(y - p.koffy + ky, p.H, p.mode);
        const char *row = p.in + (m < 0 ? 0 : m) * p.in_row;
        for (int kx = 0; kx < K; kx++) {
            const long long mp = cvi_boundary_index(cx + kx, p.W, p.mode);
            float v;
            if (m < 0 || mp < 0)
                v = p.cval;
            else if (in_u8)
                v = (float)((const unsigned char *)row)[mp * C + c];
            else
                v = ((const float *)row)[mp * C + c];
            acc = fmaf(sep ? p.w[ky] * p.w[K + kx] : p.w[ky * K + kx], v, acc);
        }
    }
    fd_store_one(p.out_type, p.out + y * p.out_row, e, acc);
}

typedef void (*fd_kernel_fn)(fd_params);

/* The compiled instances. Dense: float32 gray for K = 3..17; uint8 gray and
 * RGB for K = 3, 5 (the sizes that stay memory-bound for 8-bit images).
 * Separable: float32 gray for K = 3..33; uint8 gray and RGB for K = 3..9. */
#define FD_CASE(K, C, T, S) \
    case K: return fd_kernel<K, C, T, S>;

template <typename T, int C> static fd_kernel_fn fd_dense_small(int K)
{
    switch (K) { FD_CASE(3, C, T, false) FD_CASE(5, C, T, false) default: return 0; }
}

template <typename T, int C> static fd_kernel_fn fd_sep_small(int K)
{
    switch (K) {
        FD_CASE(3, C, T, true) FD_CASE(5, C, T, true) FD_CASE(7, C, T, true) FD_CASE(9, C, T, true)
    default: return 0;
    }
}

static fd_kernel_fn fd_dense_f32(int K)
{
    switch (K) {
        FD_CASE(3, 1, float, false) FD_CASE(5, 1, float, false) FD_CASE(7, 1, float, false)
        FD_CASE(9, 1, float, false) FD_CASE(11, 1, float, false) FD_CASE(13, 1, float, false)
        FD_CASE(15, 1, float, false) FD_CASE(17, 1, float, false)
    default: return 0;
    }
}

static fd_kernel_fn fd_sep_f32(int K)
{
    switch (K) {
        FD_CASE(3, 1, float, true) FD_CASE(5, 1, float, true) FD_CASE(7, 1, float, true)
        FD_CASE(9, 1, float, true) FD_CASE(11, 1, float, true) FD_CASE(13, 1, float, true)
        FD_CASE(15, 1, float, true) FD_CASE(17, 1, float, true) FD_CASE(19, 1, float, true)
        FD_CASE(21, 1, float, true) FD_CASE(23, 1, float, true) FD_CASE(25, 1, float, true)
        FD_CASE(27, 1, float, true) FD_CASE(29, 1, float, true) FD_CASE(31, 1, float, true)
        FD_CASE(33, 1, float, true)
    default: return 0;
    }
}

static fd_kernel_fn fd_pick(int in_type, int channels, int K, int separable)
{
    if (in_type == FD_F32 && channels == 1)
        return separable ? fd_sep_f32(K) : fd_dense_f32(K);
    if (in_type == FD_U8 && channels == 1)
        return separable ? fd_sep_small<unsigned char, 1>(K) : fd_dense_small<unsigned char, 1>(K);
    if (in_type == FD_U8 && channels == 3)
        return separable ? fd_sep_small<unsigned char, 3>(K) : fd_dense_small<unsigned char, 3>(K);
    return 0;
}

extern "C" int cvi_fd2d_supports(int in_type, int channels, int ksize, int separable)
{
    return fd_pick(in_type, channels, ksize, separable) != 0;
}

extern "C" cudaError_t cvi_fd2d_launch(const cvi_fd2d_args *a, cudaStream_t stream)
{
    fd_kernel_fn fn = fd_pick(a->in_type, a->channels, a->ksize, a->separable);
    if (!fn || a->width * a->channels > 0x3fffffffLL)
        return cudaErrorInvalidValue;
    const int K = a->ksize, C = a->channels, HALO = (K / 2) * C;
    const int V = a->in_type == FD_U8 ? 8 : 4, SEG = 32 * V;
    const size_t in_size = a->in_type == FD_U8 ? 1 : 4;
    static const size_t out_sizes[4] = {4, 8, 1, 2};
    const size_t out_size = out_sizes[a->out_type];

    fd_params p;
    p.in = (const char *)a->in;
    p.out = (char *)a->out;
    p.in_row = a->in_row;
    p.out_row = a->out_row;
    p.H = a->height;
    p.W = (int)a->width;
    p.WC = (int)(a->width * C);
    p.koffy = a->koffy;
    p.shift = (a->koffx - K / 2) * C;
    p.mode = a->mode;
    p.out_type = a->out_type;
    p.cval = a->cval;
    if (a->separable) {
        for (int i = 0; i < K; i++) {
            p.w[i] = (float)a->taps_y[i];
            p.w[K + i] = (float)a->taps_x[i];
        }
    } else {
        for (int i = 0; i < K * K; i++)
            p.w[i] = (float)a->weights[i];
    }
    p.vec_store = (p.shift % V == 0) && ((uintptr_t)a->out % (V * out_size) == 0) &&
                  (a->out_row % (long long)(V * out_size) == 0);
    const int aligned = ((uintptr_t)a->in % (V * in_size) == 0) &&
                        (a->in_row % (long long)(V * in_size) == 0);

    /* Fast warps: segments at multiples of SEG (centred coordinates) whose
     * window [we0 - HALO, we0 + SEG + HALO) lies in the row. */
    const int wf = (HALO + SEG - 1) / SEG;           /* first: we0 >= HALO */
    const int wl = (p.WC - HALO) / SEG - 1;          /* last: we0 + SEG + HALO <= WC */
    p.first = wf * SEG;
    p.nwarps = aligned && wl >= wf ? wl - wf + 1 : 0;
    /* output elements they cover: [lo, hi); the edge kernel does the rest */
    int lo = p.WC, hi = p.WC;
    if (p.nwarps > 0) {
        lo = p.first + p.shift;
        hi = p.first + p.nwarps * SEG + p.shift;
        lo = lo < 0 ? 0 : lo;
        hi = hi > p.WC ? p.WC : hi;
    }

    if (p.nwarps > 0) {
        /* Strip height: about one full wave of 4-warp blocks at full
         * occupancy (16 per SM), at least 2(K-1) rows so halo rows stay a
         * small share. */
        const long long bx = (p.nwarps + FD_WARPS - 1) / FD_WARPS;
        const long long want = (long long)(a->multiprocessors > 0 ? a->multiprocessors : 132) * 16;
        long long strip = (p.H * bx + want - 1) / want;
        const long long min_strip = 2 * (K - 1) > 16 ? 2 * (K - 1) : 16;
        strip = strip < min_strip ? min_strip : strip > 128 ? 128 : strip;
        if (strip > p.H)
            strip = p.H;
        p.strip = (int)strip;
        const long long by = (p.H + strip - 1) / strip;
        if (by > 65535)
            return cudaErrorInvalidConfiguration;
        fn<<<dim3((unsigned)bx, (unsigned)by), FD_WARPS * 32, 0, stream>>>(p);
        cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess)
            return err;
    }
    const long long n_edge = (long long)lo + (p.WC - hi);
    if (n_edge > 0) {
        const long long gz = (p.H + 65534) / 65535;
        if (gz > 65535)
            return cudaErrorInvalidConfiguration;
        dim3 grid((unsigned)((n_edge + 127) / 128), (unsigned)(p.H < 65535 ? p.H : 65535),
                  (unsigned)gz);
        fd_edge_kernel<<<grid, 128, 0, stream>>>(p, K, C, a->in_type == FD_U8, a->separable, lo,
                                                 hi);
        return cudaGetLastError();
    }
    return cudaSuccess;
}
