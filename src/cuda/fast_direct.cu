/*
 * fast_direct.cu - register-streaming direct convolution: 2-D square odd
 * filters on float32 or uint8 rows of interleaved channels, dense (K = 3..17)
 * or separable fused in one pass (K = 3..33), and 1-D float32 filters
 * (K = 3..33, each warp walking along the signal).
 *
 * Each warp owns a segment of 32*V consecutive row elements (V per lane)
 * and walks down a strip of rows. For every input row a lane takes its
 * window of V + 2*R*C elements. K rolling accumulator rows hold the outputs
 * the row contributes to; the oldest is complete after each row and is
 * stored. A separable filter
 * first reduces the window with its horizontal taps (K FMAs an output) and
 * feeds that one value per column to the accumulators with the vertical taps:
 * the intermediate never leaves registers. So every input element
 * crosses DRAM once (plus the strip's K-1 halo rows, mostly from L2), and
 * each weight is an FMA operand read from the kernel's parameter bank
 * (constant memory) at a compile-time offset.
 *
 * 2-D: each warp keeps a ring of FD_RING row segments in shared memory,
 * filled by cp.async (16-byte chunks, halo included) several rows ahead, and
 * reads its window from there; warps whose segment reaches past the row's
 * ends (or all, when rows are not 16-byte aligned) fill their slots element by
 * element through cvi_boundary_index, so every mode is exact in one kernel.
 * 1-D: windows come from neighbouring lanes by shuffles, and the few outputs
 * near the ends from fd_edge_kernel. A non-zero horizontal origin shifts
 * where outputs are stored, not what is loaded, so loads stay aligned.
 */
#include "fast_direct.h"

#include "../kernel_math.h"
#include "device_common.cuh"

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
    long long W, WC;     /* pixels and elements per row */
    long long N;         /* 1-D: samples (= WC) */
    long long first;     /* centred element of the first fast segment's lane 0 */
    long long nwarps;    /* fast segments along a row */
    int koffy, shift;    /* vertical offset; output element = centred element + shift */
    int mode, out_type;
    int strip;           /* rows per block */
    int vec_store;       /* outputs allow vector stores */
    int aligned;         /* 2-D: input rows allow 16-byte copies */
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

__device__ __forceinline__ void fd_load_vec(const float *p, float (&v)[8])
{
    float4 q = __ldg((const float4 *)p), r = __ldg((const float4 *)p + 1);
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
    v[4] = r.x, v[5] = r.y, v[6] = r.z, v[7] = r.w;
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
    if (type == FD_F32 && V % 4 == 0) {
#pragma unroll
        for (int i = 0; i < V; i += 4)
            *(float4 *)((float *)row + e + i) = make_float4(v[i], v[i + 1], v[i + 2], v[i + 3]);
    } else if (type == FD_F32 && V == 2) {
        float2 q;
        q.x = v[0], q.y = v[1 % V];
        *(float2 *)((float *)row + e) = q;
    } else if (type == FD_U8 && V % 4 == 0) {
#pragma unroll
        for (int i = 0; i < V; i += 4) {
            unsigned int q = (unsigned int)cvi_saturate_u8f(v[i]) |
                             (unsigned int)cvi_saturate_u8f(v[(i + 1) % V]) << 8 |
                             (unsigned int)cvi_saturate_u8f(v[(i + 2) % V]) << 16 |
                             (unsigned int)cvi_saturate_u8f(v[(i + 3) % V]) << 24;
            *(unsigned int *)((unsigned char *)row + e + i) = q;
        }
    } else {
#pragma unroll
        for (int i = 0; i < V; i++)
            fd_store_one(type, row, e + i, v[i]);
    }
}

/* Loads a lane's part of a warp segment of a row (lane 0's first element at
 * we0, V elements a lane): its own V elements, and in r[V] one element of
 * the segment's halo (lanes 0..HALO-1 the left halo, lanes 32-HALO..31 the
 * right). The segment and its halo lie inside the row. */
template <int V, int HALO, typename T>
__device__ __forceinline__ void fd_load_seg(const T *row, long long we0, int lane,
                                            float (&r)[V + 1])
{
    enum { SEG = 32 * V };
    float own[V];
    fd_load_vec(row + we0 + (long long)lane * V, own);
#pragma unroll
    for (int i = 0; i < V; i++)
        r[i] = own[i];
    const long long ex = lane < HALO ? we0 - HALO + lane
                         : lane >= 32 - HALO ? we0 + SEG + (lane - (32 - HALO))
                                             : -1;
    r[V] = ex >= 0 ? fd_to_float(row[ex]) : 0.0f;
}

/* Builds the lane's window, V + 2*HALO elements centred on its own V, from
 * what fd_load_seg gave the warp: neighbours' elements by shuffles, the
 * segment's halo from the edge lanes. */
template <int V, int HALO>
__device__ __forceinline__ void fd_window(const float (&r)[V + 1], int lane,
                                          float (&win)[V + 2 * HALO])
{
    enum { SEG = 32 * V, WIN = V + 2 * HALO };
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

/* ---- 2-D: a shared-memory ring of rows per warp --------------------------- */

#define FD_RING 8 /* rows a warp holds: up to FD_RING - 1 in flight */

#ifdef CVK_EMULATE /* the CPU emulation of tests/emu/ copies at once */
__device__ __forceinline__ void fd_cp16(void *smem, const void *gmem)
{
    for (int i = 0; i < 16; i++)
        ((char *)smem)[i] = ((const char *)gmem)[i];
}
__device__ __forceinline__ void fd_cp_commit() {}
template <int N> __device__ __forceinline__ void fd_cp_wait() {}
#else
__device__ __forceinline__ void fd_cp16(void *smem, const void *gmem)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void fd_cp_commit()
{
    asm volatile("cp.async.commit_group;\n" ::);
}
template <int N> __device__ __forceinline__ void fd_cp_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
#endif

/* The ring's geometry for element type T, V elements a lane, halo HALO
 * elements: a row slot holds the warp's segment and HP >= HALO elements each
 * side, HP a whole number of 16-byte chunks. */
template <typename T, int V, int HALO> struct fd_ring {
    enum {
        SEG = 32 * V,
        PER16 = 16 / (int)sizeof(T),
        HP = (HALO + PER16 - 1) / PER16 * PER16,
        L = SEG + 2 * HP,                     /* elements a slot */
        CHUNKS = L / PER16,                   /* 16-byte copies a row */
        BYTES = L * (int)sizeof(T) * FD_RING  /* a warp's ring */
    };
};

/* Starts loading input row y's segment into ring slot `slot`: interior
 * warps copy it with cp.async; warps whose segment reaches past the row's
 * ends load element by element through cvi_boundary_index (every mode,
 * pixels of C interleaved channels); a row the mode makes all cval is only
 * marked in *cval_rows (uniform per warp). One commit group a row. */
template <typename T, int V, int HALO, int C>
__device__ __forceinline__ void fd_ring_issue(const fd_params &p, long long y, long long we0,
                                              int lane, bool interior, T *ring, int slot,
                                              unsigned *cval_rows)
{
    typedef fd_ring<T, V, HALO> G;
    const long long m = cvi_boundary_index(y, p.H, p.mode);
    if (m < 0) {
        *cval_rows |= 1u << slot;
    } else {
        *cval_rows &= ~(1u << slot);
        const char *row = p.in + m * p.in_row;
        T *dst = ring + slot * G::L;
        if (interior) {
            const char *src = row + (we0 - G::HP) * (long long)sizeof(T);
#pragma unroll
            for (int c = lane; c < G::CHUNKS; c += 32)
                fd_cp16((char *)dst + 16 * c, src + 16 * c);
        } else {
            for (int i = lane; i < G::L; i += 32) {
                const long long g = we0 - G::HP + i; /* element, may lie outside */
                const long long pix = g >= 0 ? g / C : -((-g + C - 1) / C);
                const long long mp = cvi_boundary_index(pix, p.W, p.mode);
                /* CONSTANT past the ends: cval, an exact T (fast.c checks) */
                dst[i] = mp < 0 ? (T)p.cval : ((const T *)row)[mp * C + (g - pix * C)];
            }
        }
    }
    fd_cp_commit();
}

/* Loads V elements at p (aligned to V elements) as floats. */
__device__ __forceinline__ void fd_lds(const float *p, float (&v)[4])
{
    float4 q = *(const float4 *)p;
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}
__device__ __forceinline__ void fd_lds(const float *p, float (&v)[2])
{
    float2 q = *(const float2 *)p;
    v[0] = q.x, v[1] = q.y;
}
__device__ __forceinline__ void fd_lds(const unsigned char *p, float (&v)[8])
{
    uint2 q = *(const uint2 *)p;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        v[i] = (float)((q.x >> (8 * i)) & 0xffu);
        v[4 + i] = (float)((q.y >> (8 * i)) & 0xffu);
    }
}

/* The lane's window (V + 2*HALO elements centred on its own V) from a slot. */
template <typename T, int V, int HALO>
__device__ __forceinline__ void fd_ring_window(const T *slot, int lane,
                                               float (&win)[V + 2 * HALO])
{
    typedef fd_ring<T, V, HALO> G;
    enum { WIN = V + 2 * HALO, O = G::HP - HALO, Q = (O + WIN + V - 1) / V };
    const T *base = slot + lane * V;
    float sup[V * Q];
#pragma unroll
    for (int q = 0; q < Q; q++) {
        float u[V];
        fd_lds(base + V * q, u);
#pragma unroll
        for (int i = 0; i < V; i++)
            sup[V * q + i] = u[i];
    }
#pragma unroll
    for (int j = 0; j < WIN; j++)
        win[j] = sup[O + j];
}

/* One input row's contribution: window win (row t of the strip) to the
 * accumulator rows; output t-ky takes weight row ky (only outputs 0..rows-1
 * are worth the FMAs). ROT: output o lives in acc[o % K] and u = t % K is a
 * compile-time constant; else acc[K-1-ky] and the rows shift after. */
template <int K, int C, int V, bool SEP, bool ROT>
__device__ __forceinline__ void fd_accumulate(const fd_params &p, const float *win, int u, int t,
                                              int rows, float (&acc)[K][V])
{
    if (SEP) {
        /* a row outside (CONSTANT) holds cval, so h = cval * sum(wx): the
         * dense outer product's meaning; two partial sums for ILP */
        float h[V];
#pragma unroll
        for (int i = 0; i < V; i++) {
            float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
            for (int kx = 0; kx < K; kx += 2)
                s0 = fmaf(p.w[K + kx], win[i + kx * C], s0);
#pragma unroll
            for (int kx = 1; kx < K; kx += 2)
                s1 = fmaf(p.w[K + kx], win[i + kx * C], s1);
            h[i] = s0 + s1;
        }
#pragma unroll
        for (int ky = 0; ky < K; ky++) {
            if (ky > t || ky <= t - rows)
                continue;
            const int a = ROT ? ((u - ky) % K + K) % K : K - 1 - ky;
#pragma unroll
            for (int i = 0; i < V; i++)
                acc[a][i] = fmaf(p.w[ky], h[i], acc[a][i]);
        }
    } else {
#pragma unroll
        for (int ky = 0; ky < K; ky++) {
            if (ky > t || ky <= t - rows)
                continue;
            const int a = ROT ? ((u - ky) % K + K) % K : K - 1 - ky;
#pragma unroll
            for (int kx = 0; kx < K; kx++) {
                const float w = p.w[ky * K + kx];
#pragma unroll
                for (int i = 0; i < V; i++)
                    acc[a][i] = fmaf(w, win[i + kx * C], acc[a][i]);
            }
        }
    }
}

/* Stores a completed output row's V values (those inside the row). */
template <int V>
__device__ __forceinline__ void fd_store_row(const fd_params &p, long long y, long long e,
                                             const float (&v)[V])
{
    char *orow = p.out + y * p.out_row;
    if (p.vec_store && e >= 0 && e + V <= p.WC) {
        fd_store_vec<V>(p.out_type, orow, e, v);
    } else {
#pragma unroll
        for (int i = 0; i < V; i++)
            if (e + i >= 0 && e + i < p.WC)
                fd_store_one(p.out_type, orow, e + i, v[i]);
    }
}

template <int K, int C, typename T, bool SEP, int V>
__global__ void __launch_bounds__(FD_WARPS * 32) fd_kernel(const __grid_constant__ fd_params p)
{
    enum { HALO = (K / 2) * C, WIN = V + 2 * HALO };
    /* rotate the accumulator rows (unrolling rows by K) where the shifts
     * would cost much next to the FMAs (small filters); larger ones shift
     * (code size: an unrolled row per accumulator row) */
    enum { ROT = SEP ? K <= 17 : K <= 9 };
    typedef fd_ring<T, V, HALO> G;
    CVK_DYNAMIC_SHARED(smem);
    const int lane = threadIdx.x & 31, wib = threadIdx.x >> 5;
    const long long warp = (long long)blockIdx.x * FD_WARPS + wib;
    if (warp >= p.nwarps)
        return; /* whole warps only: only warp-level syncs are used */
    T *ring = (T *)(smem + wib * G::BYTES);
    const long long we0 = p.first + warp * G::SEG; /* centred element of lane 0 */
    const bool interior = p.aligned && we0 - G::HP >= 0 && we0 + G::SEG + G::HP <= p.WC;
    const long long y0 = (long long)blockIdx.y * p.strip;
    const int rows = (int)(p.H - y0 < p.strip ? p.H - y0 : p.strip);
    const long long e_out = we0 + (long long)lane * V + p.shift; /* the lane's outputs */

    float acc[K][V];
#pragma unroll
    for (int a = 0; a < K; a++)
#pragma unroll
        for (int i = 0; i < V; i++)
            acc[a][i] = 0.0f;

    const long long ybase = y0 - p.koffy;
    const int total = rows + K - 1;
    unsigned cval_rows = 0;
#pragma unroll
    for (int t = 0; t < FD_RING - 1; t++) {
        if (t < total)
            fd_ring_issue<T, V, HALO, C>(p, ybase + t, we0, lane, interior, ring, t, &cval_rows);
        else
            fd_cp_commit();
    }

#pragma unroll 1
    for (int t0 = 0; t0 < total; t0 += (ROT ? K : 1)) {
#pragma unroll
        for (int u = 0; u < (ROT ? K : 1); u++) {
            const int t = t0 + u;
            if (t >= total)
                break;
            const int ahead = t + FD_RING - 1;
            if (ahead < total)
                fd_ring_issue<T, V, HALO, C>(p, ybase + ahead, we0, lane, interior, ring,
                                             ahead % FD_RING, &cval_rows);
            else
                fd_cp_commit();
            fd_cp_wait<FD_RING - 1>(); /* row t's group is done */
            __syncwarp();
            const int slot = t % FD_RING;
            float win[WIN];
            if (cval_rows >> slot & 1u) {
#pragma unroll
                for (int j = 0; j < WIN; j++)
                    win[j] = p.cval;
            } else {
                fd_ring_window<T, V, HALO>(ring + slot * G::L, lane, win);
            }
            __syncwarp(); /* the slot may be refilled next row */
            fd_accumulate<K, C, V, SEP, ROT>(p, win, u, t, rows, acc);
            const int o = t - (K - 1); /* output row o is complete */
            const int done = ROT ? (u + 1) % K : 0;
            if (o >= 0)
                fd_store_row<V>(p, y0 + o, e_out, acc[done]);
            if (ROT) {
#pragma unroll
                for (int i = 0; i < V; i++)
                    acc[done][i] = 0.0f;
            } else {
#pragma unroll
                for (int a = 0; a < K - 1; a++)
#pragma unroll
                    for (int i = 0; i < V; i++)
                        acc[a][i] = acc[a + 1][i];
#pragma unroll
                for (int i = 0; i < V; i++)
                    acc[K - 1][i] = 0.0f;
            }
        }
    }
}

/* The dynamic shared memory a 2-D block needs. */
static size_t fd_ring_bytes(int es, int V, int HALO)
{
    const int per16 = 16 / es, hp = (HALO + per16 - 1) / per16 * per16;
    return (size_t)FD_WARPS * FD_RING * (size_t)(32 * V + 2 * hp) * (size_t)es;
}

/* The columns the fast kernels leave: one thread per output element of rows
 * [0, H) and elements [0, lo) and [hi, WC) (output coordinates), every tap
 * of the KY x KX box through cvi_boundary_index. Runtime sizes, weights from
 * the parameter bank; a separable filter (wy then wx in p.w) is applied as
 * its outer product, exactly its meaning. Serves 1-D as one row, KY = 1. */
__global__ void fd_edge_kernel(const __grid_constant__ fd_params p, int KY, int KX, int C,
                               int in_u8, int sep, long long lo, long long hi)
{
    const long long n = lo + (p.WC - hi);
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long y = blockIdx.y + (long long)blockIdx.z * 65535;
    if (idx >= n || y >= p.H)
        return;
    const long long e = idx < lo ? idx : hi + (idx - lo);
    const long long pix = e / C;
    const int c = (int)(e - pix * C);
    const long long x0 = pix - p.shift / C - KX / 2; /* first tap's pixel, centred window */
    float acc = 0.0f;
    for (int ky = 0; ky < KY; ky++) {
        const long long m = cvi_boundary_index(y - p.koffy + ky, p.H, p.mode);
        const char *row = p.in + (m < 0 ? 0 : m) * p.in_row;
        for (int kx = 0; kx < KX; kx++) {
            const long long mp = cvi_boundary_index(x0 + kx, p.W, p.mode);
            float v;
            if (m < 0 || mp < 0)
                v = p.cval;
            else if (in_u8)
                v = (float)((const unsigned char *)row)[mp * C + c];
            else
                v = ((const float *)row)[mp * C + c];
            acc = fmaf(sep ? p.w[ky] * p.w[KY + kx] : p.w[ky * KX + kx], v, acc);
        }
    }
    fd_store_one(p.out_type, p.out + y * p.out_row, e, acc);
}

/* Launches fd_edge_kernel over the output elements outside [lo, hi). */
static cudaError_t fd_launch_edges(const fd_params &p, int KY, int KX, int C, int in_u8, int sep,
                                   long long lo, long long hi, cudaStream_t stream)
{
    const long long n = lo + (p.WC - hi);
    if (n <= 0)
        return cudaSuccess;
    const long long gz = (p.H + 65534) / 65535;
    if (gz > 65535 || (n + 127) / 128 > 0x7fffffffLL)
        return cudaErrorInvalidConfiguration;
    dim3 grid((unsigned)((n + 127) / 128), (unsigned)(p.H < 65535 ? p.H : 65535), (unsigned)gz);
    CVK_LAUNCH(fd_edge_kernel, grid, 128, 0, stream, (p, KY, KX, C, in_u8, sep, lo, hi));
    return cudaGetLastError();
}

/* 1-D: each warp takes segments of 32*V samples in turn (grid-stride), the
 * next segment's loads issued before the current one is computed; a lane
 * computes V outputs from its window. float32, one channel. */
template <int K, int V>
__global__ void __launch_bounds__(256) fd1_kernel(const __grid_constant__ fd_params p)
{
    enum { HALO = K / 2, SEG = 32 * V, WIN = V + 2 * HALO };
    const int lane = threadIdx.x & 31;
    const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
    long long s = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (s >= p.nwarps)
        return;
    const float *row = (const float *)p.in;
    float cur[V + 1], nxt[V + 1];
    fd_load_seg<V, HALO, float>(row, p.first + s * SEG, lane, cur);
    for (; s < p.nwarps; s += warps) {
        const long long we0 = p.first + s * SEG;
        if (s + warps < p.nwarps)
            fd_load_seg<V, HALO, float>(row, we0 + warps * SEG, lane, nxt);
        float win[WIN];
        fd_window<V, HALO>(cur, lane, win);
        float out[V];
#pragma unroll
        for (int i = 0; i < V; i++) {
            float a = 0.0f;
#pragma unroll
            for (int k = 0; k < K; k++)
                a = fmaf(p.w[k], win[i + k], a);
            out[i] = a;
        }
        const long long e = we0 + (long long)lane * V + p.shift;
        if (p.vec_store && e >= 0 && e + V <= p.N) {
            fd_store_vec<V>(p.out_type, p.out, e, out);
        } else {
#pragma unroll
            for (int i = 0; i < V; i++)
                if (e + i >= 0 && e + i < p.N)
                    fd_store_one(p.out_type, p.out, e + i, out[i]);
        }
#pragma unroll
        for (int i = 0; i <= V; i++)
            cur[i] = nxt[i];
    }
}

typedef void (*fd_kernel_fn)(fd_params);

/* The compiled instances. Dense: float32 gray for K = 3..17; uint8 gray and
 * RGB for K = 3, 5 (the sizes that stay memory-bound for 8-bit images).
 * Separable: float32 gray for K = 3..33; uint8 gray and RGB for K = 3..9. */
/* Elements a lane: 16 bytes of float (8 bytes, 2 elements, for separable
 * K >= 17, whose K accumulator rows would cost too many registers), 8 of uint8. */
#define FD_LANE(T, K, S) (sizeof(T) == 1 ? 8 : ((S) && (K) >= 17) ? 2 : 4)
#define FD_CASE(K, C, T, S) \
    case K: return fd_kernel<K, C, T, S, FD_LANE(T, K, S)>;

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

typedef void (*fd1_kernel_fn)(fd_params);

static fd1_kernel_fn fd1_pick(int in_type, int channels, int K)
{
    if (in_type != FD_F32 || channels != 1)
        return 0;
#define FD1_CASE(K) \
    case K: return fd1_kernel<K, 8>;
    switch (K) {
        FD1_CASE(3) FD1_CASE(5) FD1_CASE(7) FD1_CASE(9) FD1_CASE(11) FD1_CASE(13) FD1_CASE(15)
        FD1_CASE(17) FD1_CASE(19) FD1_CASE(21) FD1_CASE(23) FD1_CASE(25) FD1_CASE(27)
        FD1_CASE(29) FD1_CASE(31) FD1_CASE(33)
    default: return 0;
    }
#undef FD1_CASE
}

extern "C" int cvi_fd2d_supports(int in_type, int channels, int ksize, int separable)
{
    return fd_pick(in_type, channels, ksize, separable) != 0;
}

extern "C" int cvi_fd1d_supports(int in_type, int channels, int ksize)
{
    return fd1_pick(in_type, channels, ksize) != 0;
}

/* Fills the parameters common to the 1-D and 2-D launches; V elements a
 * lane. Returns 0 if the input cannot take vector loads (then every output
 * goes to the edge kernel). */
static int fd_setup(const cvi_fd2d_args *a, int V, fd_params &p)
{
    const int K = a->ksize, C = a->channels;
    const size_t in_size = a->in_type == FD_U8 ? 1 : 4;
    static const size_t out_sizes[4] = {4, 8, 1, 2};
    const size_t out_size = out_sizes[a->out_type];
    p.in = (const char *)a->in;
    p.out = (char *)a->out;
    p.in_row = a->in_row;
    p.out_row = a->out_row;
    p.H = a->height;
    p.W = a->width;
    p.WC = a->width * C;
    p.N = p.WC;
    p.koffy = a->koffy;
    p.shift = (a->koffx - K / 2) * C;
    p.mode = a->mode;
    p.out_type = a->out_type;
    p.cval = a->cval;
    p.strip = 1;
    if (a->separable) {
        for (int i = 0; i < K; i++) {
            p.w[i] = (float)a->taps_y[i];
            p.w[K + i] = (float)a->taps_x[i];
        }
    } else {
        const int count = a->height_taps * K;
        for (int i = 0; i < count; i++)
            p.w[i] = (float)a->weights[i];
    }
    p.vec_store = (p.shift % V == 0) && ((uintptr_t)a->out % (V * out_size) == 0) &&
                  (a->out_row % (long long)(V * out_size) == 0);
    return ((uintptr_t)a->in % (V * in_size) == 0) && (a->in_row % (long long)(V * in_size) == 0);
}

/* The fast segments: multiples of SEG (centred coordinates) whose window
 * [we0 - HALO, we0 + SEG + HALO) lies in the row; [lo, hi) receives the
 * output elements they cover (empty when there are none). */
static void fd_segments(fd_params &p, int HALO, int SEG, int aligned, long long *lo, long long *hi)
{
    const long long wf = (HALO + SEG - 1) / SEG;  /* first: we0 >= HALO */
    const long long wl = (p.WC - HALO) / SEG - 1; /* last: we0 + SEG + HALO <= WC */
    p.first = wf * SEG;
    p.nwarps = aligned && wl >= wf ? wl - wf + 1 : 0;
    *lo = *hi = p.WC;
    if (p.nwarps > 0) {
        *lo = p.first + p.shift;
        *hi = p.first + p.nwarps * SEG + p.shift;
        *lo = *lo < 0 ? 0 : *lo;
        *hi = *hi > p.WC ? p.WC : *hi;
    }
}

extern "C" cudaError_t cvi_fd2d_launch(const cvi_fd2d_args *a, cudaStream_t stream)
{
    fd_kernel_fn fn = fd_pick(a->in_type, a->channels, a->ksize, a->separable);
    if (!fn || a->height_taps != a->ksize)
        return cudaErrorInvalidValue;
    const int K = a->ksize, C = a->channels, HALO = (K / 2) * C;
    const int es = a->in_type == FD_U8 ? 1 : 4;
    const int V = es == 1 ? 8 : (a->separable && K >= 17) ? 2 : 4, SEG = 32 * V;
    fd_params p;
    fd_setup(a, V, p);
    /* interior warps copy rows in 16-byte chunks: 16-byte aligned rows */
    p.aligned = (uintptr_t)a->in % 16 == 0 && a->in_row % 16 == 0;
    /* Warps at multiples of SEG (centred coordinates) covering the centred
     * elements [-shift, WC - shift) whose outputs land in the row. */
    const long long lo = -(long long)p.shift, hi = p.WC - p.shift;
    p.first = lo >= 0 ? 0 : -((-lo + SEG - 1) / SEG) * SEG;
    p.nwarps = (hi - p.first + SEG - 1) / SEG;
    /* Strip height: about one full wave of 4-warp blocks at full occupancy
     * (16 per SM), long enough that the K - 1 halo rows stay a small share. */
    const long long bx = (p.nwarps + FD_WARPS - 1) / FD_WARPS;
    const long long want = (long long)(a->multiprocessors > 0 ? a->multiprocessors : 132) * 16;
    long long strip = (p.H * bx + want - 1) / want;
    const long long min_strip = (a->separable ? 4 : 2) * (K - 1) > 16
                                    ? (a->separable ? 4 : 2) * (K - 1) : 16;
    strip = strip < min_strip ? min_strip : strip > 128 ? 128 : strip;
    if (strip > p.H)
        strip = p.H;
    p.strip = (int)strip;
    const long long by = (p.H + strip - 1) / strip;
    if (by > 65535 || bx > 0x7fffffffLL)
        return cudaErrorInvalidConfiguration;
    CVK_LAUNCH(fn, dim3((unsigned)bx, (unsigned)by), FD_WARPS * 32, fd_ring_bytes(es, V, HALO),
               stream, (p));
    return cudaGetLastError();
}

extern "C" cudaError_t cvi_fd1d_launch(const cvi_fd2d_args *a, cudaStream_t stream)
{
    fd1_kernel_fn fn = fd1_pick(a->in_type, a->channels, a->ksize);
    if (!fn || a->height != 1 || a->height_taps != 1 || a->separable)
        return cudaErrorInvalidValue;
    const int K = a->ksize, HALO = K / 2, V = 8, SEG = 32 * V;
    fd_params p;
    const int aligned = fd_setup(a, V, p);
    p.koffy = 0;
    long long lo, hi;
    fd_segments(p, HALO, SEG, aligned, &lo, &hi);
    if (p.nwarps > 0) {
        /* enough 8-warp blocks for a few waves; each warp loops over segments */
        const long long want = (long long)(a->multiprocessors > 0 ? a->multiprocessors : 132) * 8 * 4;
        long long blocks = (p.nwarps + 7) / 8;
        blocks = blocks < want ? blocks : want;
        CVK_LAUNCH(fn, (unsigned)blocks, 256, 0, stream, (p));
        cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess)
            return err;
    }
    return fd_launch_edges(p, 1, K, 1, 0, 0, lo, hi, stream);
}
