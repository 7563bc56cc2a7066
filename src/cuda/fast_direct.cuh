/*
 * fast_direct.cuh - register-streaming direct convolution: 2-D filters on
 * float32, uint8 or uint16 rows of interleaved channels, dense (square,
 * K = 3..17; float32 also 2, 4, 6, an even K's window reaching K / 2 left
 * of an output and K / 2 - 1 right, scipy's even sizes, and non-square KY
 * rows of K weights) or separable fused in one pass (K = 3..33), and 1-D
 * float32 filters (K = 3..33, each warp walking along the signal).
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
 * (This ring beat keeping rows in registers with windows by shuffles at
 * every size but 3x3: docs/architecture.md, "Measured choices".)
 * 2-D: each warp keeps a ring of CVK_RING_ROWS row segments in shared memory,
 * filled by cp.async (16-byte chunks, halo included) several rows ahead, and
 * reads its window from there; warps whose segment reaches past the row's
 * ends (or all, when rows are not 16-byte aligned) fill their slots element by
 * element through cvi_boundary_index (float: 4-byte cp.async copies, so they
 * pipeline too), so every mode is exact in one kernel.
 * 1-D: windows come from neighbouring lanes by shuffles, and the few outputs
 * near the ends from cvk_direct_edge_kernel. A non-zero horizontal origin shifts
 * where outputs are stored, not what is loaded, so loads stay aligned.
 *
 * This header holds the kernel templates; fast_direct_*.cu compile their
 * instances (in parallel), fast_direct.cu the launchers.
 */
#ifndef CONVOLVE_FAST_DIRECT_CUH
#define CONVOLVE_FAST_DIRECT_CUH
#include "fast_direct.h"

#include "../kernel_math.h"
#include "device_common.cuh"

#include <stdint.h>

#define CVK_DIRECT_WARPS 4 /* warps per block, side by side along the row */
#define CVK_FULL_MASK 0xffffffffu

/* Everything a launch needs, passed by value: the weights live in the
 * parameter bank, so FMAs read them as constant operands. */
typedef struct cvk_direct_params {
    const char *in;
    char *out;
    long long in_row, out_row;
    long long H;      /* rows */
    long long W, WC;  /* pixels and elements per row */
    long long N;      /* 1-D: samples (= WC) */
    long long first;  /* centred element of the first fast segment's lane 0 */
    long long nwarps; /* fast segments along a row */
    int koffy, shift; /* vertical offset; output element = centred element + shift */
    int mode, out_type;
    int strip;     /* rows per block */
    int vec_store; /* outputs allow vector stores */
    int aligned;   /* 2-D: input rows allow 16-byte copies */
    float cval;
    /* dense: K*K weights; separable: K vertical then K horizontal taps */
    float w[CVK_DIRECT2D_MAX_K * CVK_DIRECT2D_MAX_K];
    /* batched 2-D instances: bytes between the images of blockIdx.z (last,
     * so that the other instances' parameters keep their offsets) */
    long long in_plane, out_plane;
} cvk_direct_params;

/* w holds a dense 2-D filter, a separable one's 2K taps, or a 1-D filter. */
static_assert(2 * CVK_DIRECT2D_MAX_SEP_K <= CVK_DIRECT2D_MAX_K * CVK_DIRECT2D_MAX_K &&
                  CVK_DIRECT1D_MAX_K <= CVK_DIRECT2D_MAX_K * CVK_DIRECT2D_MAX_K,
              "cvk_direct_params.w is too small");

__device__ __forceinline__ float cvk_to_float(float v)
{
    return v;
}
__device__ __forceinline__ float cvk_to_float(unsigned char v)
{
    return (float)v;
}
__device__ __forceinline__ float cvk_to_float(unsigned short v)
{
    return (float)v;
}

/* Loads V consecutive elements at p (aligned to V * sizeof(T)) as floats. */
__device__ __forceinline__ void cvk_load_vec(const float *p, float (&v)[4])
{
    float4 q = __ldg((const float4 *)p);
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}

__device__ __forceinline__ void cvk_load_vec(const float *p, float (&v)[8])
{
    float4 q = __ldg((const float4 *)p), r = __ldg((const float4 *)p + 1);
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
    v[4] = r.x, v[5] = r.y, v[6] = r.z, v[7] = r.w;
}

/* Four bytes of w as floats (cvk_u8_float). */
__device__ __forceinline__ void cvk_u8_four(unsigned w, float *v)
{
    v[0] = cvk_u8_float<0>(w), v[1] = cvk_u8_float<1>(w);
    v[2] = cvk_u8_float<2>(w), v[3] = cvk_u8_float<3>(w);
}

__device__ __forceinline__ void cvk_load_vec(const unsigned char *p, float (&v)[8])
{
    uint2 q = __ldg((const uint2 *)p);
    cvk_u8_four(q.x, v);
    cvk_u8_four(q.y, v + 4);
}

/* Stores V results at element e (aligned to V elements of the output type).
 * PACK: uint8 and uint16 outputs rounded and packed by cvk_u8_pack4 and
 * cvk_u16_pack2 (the integer kernels; the float ones keep the conversions,
 * which cost them fewer registers). */
template <int V, bool PACK = false>
__device__ __forceinline__ void cvk_store_vec(int type, char *row, long long e, const float (&v)[V])
{
    if (type == CVI_DTYPE_FLOAT32 && V % 4 == 0) {
#pragma unroll
        for (int i = 0; i < V; i += 4)
            *(float4 *)((float *)row + e + i) = make_float4(v[i], v[i + 1], v[i + 2], v[i + 3]);
    } else if (type == CVI_DTYPE_FLOAT32 && V == 2) {
        float2 q;
        q.x = v[0], q.y = v[1 % V];
        *(float2 *)((float *)row + e) = q;
    } else if (type == CVI_DTYPE_UINT8 && V % 4 == 0 && PACK) {
#pragma unroll
        for (int i = 0; i < V; i += 4)
            *(unsigned int *)((unsigned char *)row + e + i) = cvk_u8_pack4(
                v[i], v[(i + 1) % V], v[(i + 2) % V], v[(i + 3) % V]);
    } else if (type == CVI_DTYPE_UINT16 && V % 4 == 0 && PACK) {
#pragma unroll
        for (int i = 0; i < V; i += 4) {
            uint2 q;
            q.x = cvk_u16_pack2(v[i], v[(i + 1) % V]);
            q.y = cvk_u16_pack2(v[(i + 2) % V], v[(i + 3) % V]);
            *(uint2 *)((unsigned short *)row + e + i) = q;
        }
    } else if (type == CVI_DTYPE_UINT8 && V % 4 == 0) {
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
            cvk_store_float(type, row, e + i, v[i]);
    }
}

/* Loads a lane's part of a warp segment of a row (lane 0's first element at
 * we0, V elements a lane): its own V elements, and in r[V] one element of
 * the segment's halo (lanes 0..HALO-1 the left halo, lanes 32-HALO..31 the
 * right). The segment and its halo lie inside the row. */
template <int V, int HALO, typename T>
__device__ __forceinline__ void cvk_load_segment(const T *row, long long we0, int lane,
                                                 float (&r)[V + 1])
{
    enum { SEG = 32 * V };
    float own[V];
    cvk_load_vec(row + we0 + (long long)lane * V, own);
#pragma unroll
    for (int i = 0; i < V; i++)
        r[i] = own[i];
    const long long ex = lane < HALO         ? we0 - HALO + lane
                         : lane >= 32 - HALO ? we0 + SEG + (lane - (32 - HALO))
                                             : -1;
    r[V] = ex >= 0 ? cvk_to_float(row[ex]) : 0.0f;
}

/* Builds the lane's window, V + 2*HALO elements centred on its own V, from
 * what cvk_load_segment gave the warp: neighbours' elements by shuffles, the
 * segment's halo from the edge lanes. */
template <int V, int HALO>
__device__ __forceinline__ void cvk_shuffle_window(const float (&r)[V + 1], int lane,
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
            const int slot = d - dl * V;                         /* 0..V-1 */
            const int q = lane * V + d;                          /* warp-relative element */
            float vm = __shfl_sync(CVK_FULL_MASK, r[slot], (lane + dl) & 31);
            int xl = q < 0 ? q + HALO : q - SEG + (32 - HALO);
            float ve = __shfl_sync(CVK_FULL_MASK, r[V], xl & 31);
            win[j] = (q >= 0 && q < SEG) ? vm : ve;
        }
    }
}

/* ---- 2-D: a shared-memory ring of rows per warp --------------------------- */

#define CVK_RING_ROWS 8 /* rows a warp holds: up to CVK_RING_ROWS - 1 in flight */

/* The ring's geometry for element type T, V elements a lane, halo HALO
 * elements: a row slot holds the warp's segment and HP >= HALO elements each
 * side, HP a whole number of 16-byte chunks. */
template <typename T, int V, int HALO>
struct cvk_ring {
    enum {
        SEG = 32 * V,
        PER16 = 16 / (int)sizeof(T),
        HP = (HALO + PER16 - 1) / PER16 * PER16,
        L = SEG + 2 * HP,                          /* elements a slot */
        CHUNKS = L / PER16,                        /* 16-byte copies a row */
        BYTES = L * (int)sizeof(T) * CVK_RING_ROWS /* a warp's ring */
    };
};

/* Ring element dst[i] from element g of row `row` (may lie outside;
 * pixels of C interleaved channels) through cvi_boundary_index: cval
 * (CONSTANT, an exact T: plan.c checks), a 4-byte cp.async for floats, a
 * load for integers. */
template <typename T, int C>
__device__ __forceinline__ void cvk_ring_put_mapped(const cvk_direct_params &p, const char *row,
                                                    long long g, T *dst, int i)
{
    const long long pix = g >= 0 ? g / C : -((-g + C - 1) / C);
    const long long mp = cvi_boundary_index(pix, p.W, p.mode);
    if (mp < 0)
        dst[i] = (T)p.cval;
    else if (sizeof(T) == 4)
        cvk_cp4(dst + i, (const T *)row + mp * C + (g - pix * C));
    else
        dst[i] = ((const T *)row)[mp * C + (g - pix * C)];
}

/* Fills a ring slot of a warp whose segment reaches past the row's ends
 * when rows are 16-byte aligned: the 16-byte chunks wholly inside the row
 * by cp.async like an interior warp's, the few elements past the ends
 * through cvi_boundary_index (a chunk's worth each side at most). */
template <typename T, int V, int HALO, int C>
__device__ __forceinline__ void cvk_ring_fill_edge(const cvk_direct_params &p, const char *row,
                                                   long long we0, int lane, T *dst)
{
    typedef cvk_ring<T, V, HALO> G;
    const long long g0 = we0 - G::HP; /* the slot's first element, a multiple of PER16 */
    long long lo = g0 < 0 ? (-g0 + G::PER16 - 1) / G::PER16 : 0;
    long long hi = p.WC > g0 ? (p.WC - g0) / G::PER16 : 0;
    lo = lo < G::CHUNKS ? lo : G::CHUNKS;
    hi = hi < G::CHUNKS ? hi : G::CHUNKS;
    hi = hi > lo ? hi : lo;
    for (int c = (int)lo + lane; c < (int)hi; c += 32)
        cvk_cp16((char *)dst + 16 * c, row + (g0 + (long long)c * G::PER16) * (long long)sizeof(T));
    /* the elements before chunk lo and from chunk hi on */
    const int e_lo = (int)lo * G::PER16, skip = (int)(hi - lo) * G::PER16;
    for (int k = lane; k < G::L - skip; k += 32) {
        const int i = k < e_lo ? k : k + skip;
        cvk_ring_put_mapped<T, C>(p, row, g0 + i, dst, i);
    }
}

/* Fills the ring slot of a warp whose segment reaches past the row's ends:
 * cvk_ring_fill_edge for integers when rows are 16-byte aligned, else element
 * by element through cvi_boundary_index (every mode, pixels of C
 * interleaved channels; floats by asynchronous 4-byte copies: the edge
 * path cost the float instances registers, separable 9 taps 80 -> 86, and
 * was not timed for them). Out of line (code size, registers: two warps a
 * row come here). */
template <typename T, int V, int HALO, int C>
__device__ __noinline__ void cvk_ring_fill_mapped(const cvk_direct_params &p, const char *row,
                                                  long long we0, int lane, T *dst)
{
    typedef cvk_ring<T, V, HALO> G;
    if (sizeof(T) < 4 && p.aligned) {
        cvk_ring_fill_edge<T, V, HALO, C>(p, row, we0, lane, dst);
    } else if (sizeof(T) == 4) {
        /* float: each element copied alone, asynchronously like the rest */
        for (int i = lane; i < G::L; i += 32)
            cvk_ring_put_mapped<T, C>(p, row, we0 - G::HP + i, dst, i);
    } else {
        /* bytes, halfwords: all of the lane's loads first, then the stores */
        enum { PER = (G::L + 31) / 32 };
        T v[PER];
#pragma unroll
        for (int k = 0; k < PER; k++) {
            const int i = lane + 32 * k;
            const long long g = we0 - G::HP + i;
            const long long pix = g >= 0 ? g / C : -((-g + C - 1) / C);
            const long long mp = cvi_boundary_index(pix, p.W, p.mode);
            /* CONSTANT past the ends: cval, an exact T (plan.c checks) */
            v[k] = i >= G::L ? (T)0 : mp < 0 ? (T)p.cval : ((const T *)row)[mp * C + (g - pix * C)];
        }
#pragma unroll
        for (int k = 0; k < PER; k++)
            if (lane + 32 * k < G::L)
                dst[lane + 32 * k] = v[k];
    }
}

/* Fills ring slot dst with cval (a row the mode makes all cval: rare, out
 * of line; cval is an exact T, plan.c checks). */
template <typename T, int V, int HALO>
__device__ __noinline__ void cvk_ring_fill_cval(const cvk_direct_params &p, int lane, T *dst)
{
    typedef cvk_ring<T, V, HALO> G;
    for (int i = lane; i < G::L; i += 32)
        dst[i] = (T)p.cval;
}

/* Starts loading input row y's segment into ring slot `slot`: interior
 * warps copy it with cp.async; warps whose segment reaches past the row's
 * ends fill it through cvk_ring_fill_mapped; a row the mode makes all cval is
 * filled with cval. One commit group a row. */
template <typename T, int V, int HALO, int C>
__device__ __forceinline__ void cvk_ring_issue(const cvk_direct_params &p, long long in_off,
                                               long long y, long long we0, int lane, bool interior,
                                               T *ring, int slot)
{
    typedef cvk_ring<T, V, HALO> G;
    const long long m = cvi_boundary_index(y, p.H, p.mode);
    T *dst = ring + slot * G::L;
    if (m < 0) {
        cvk_ring_fill_cval<T, V, HALO>(p, lane, dst);
    } else {
        const char *row = p.in + in_off + m * p.in_row;
        if (interior) {
            const char *src = row + (we0 - G::HP) * (long long)sizeof(T);
#pragma unroll
            for (int c = lane; c < G::CHUNKS; c += 32)
                cvk_cp16((char *)dst + 16 * c, src + 16 * c);
        } else {
            cvk_ring_fill_mapped<T, V, HALO, C>(p, row, we0, lane, dst);
        }
    }
    cvk_cp_commit();
}

/* Loads V elements at p (aligned to V elements) as floats. */
__device__ __forceinline__ void cvk_lds(const float *p, float (&v)[4])
{
    float4 q = *(const float4 *)p;
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}
__device__ __forceinline__ void cvk_lds(const float *p, float (&v)[2])
{
    float2 q = *(const float2 *)p;
    v[0] = q.x, v[1] = q.y;
}
__device__ __forceinline__ void cvk_lds(const unsigned char *p, float (&v)[4])
{
    cvk_u8_four(*(const unsigned *)p, v);
}
__device__ __forceinline__ void cvk_lds(const unsigned char *p, float (&v)[8])
{
    uint2 q = *(const uint2 *)p;
    cvk_u8_four(q.x, v);
    cvk_u8_four(q.y, v + 4);
}
/* Two halfwords of w as floats (cvk_u16_float). */
__device__ __forceinline__ void cvk_u16_two(unsigned w, float *v)
{
    v[0] = cvk_u16_float<0>(w), v[1] = cvk_u16_float<1>(w);
}
__device__ __forceinline__ void cvk_lds(const unsigned short *p, float (&v)[4])
{
    uint2 q = *(const uint2 *)p;
    cvk_u16_two(q.x, v);
    cvk_u16_two(q.y, v + 2);
}
__device__ __forceinline__ void cvk_lds(const unsigned short *p, float (&v)[8])
{
    uint4 q = *(const uint4 *)p;
    cvk_u16_two(q.x, v);
    cvk_u16_two(q.y, v + 2);
    cvk_u16_two(q.z, v + 4);
    cvk_u16_two(q.w, v + 6);
}

/* The lane's window (V + 2*HALO elements centred on its own V) from a slot. */
template <typename T, int V, int HALO>
__device__ __forceinline__ void cvk_ring_window(const T *slot, int lane, float (&win)[V + 2 * HALO])
{
    typedef cvk_ring<T, V, HALO> G;
    enum { WIN = V + 2 * HALO, O = G::HP - HALO, Q = (O + WIN + V - 1) / V };
    const T *base = slot + lane * V;
    float sup[V * Q];
#pragma unroll
    for (int q = 0; q < Q; q++) {
        float u[V];
        cvk_lds(base + V * q, u);
#pragma unroll
        for (int i = 0; i < V; i++)
            sup[V * q + i] = u[i];
    }
#pragma unroll
    for (int j = 0; j < WIN; j++)
        win[j] = sup[O + j];
}

/* One input row's contribution: window win (row t of the strip) to the
 * KY accumulator rows (KY: the filter's extent along y, K along x);
 * output t-ky takes weight row ky (only outputs 0..rows-1 are worth the
 * FMAs; ALL: the caller knows all KY are). ROT: output o lives in
 * acc[o % KY] and u = t % KY is a compile-time constant; else
 * acc[KY-1-ky] and the rows shift after. SEP: KY = K. */
template <int K, int C, int V, bool SEP
, bool ROT, bool ALL,
    int KY > __device__ __forceinline__ void cvk_accumulate_row(const cvk_direct_params &p,
                                                                const float *win, int u, int t,
                                                                int rows, float (&acc)[KY][V])
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
            if (!ALL && (ky > t || ky <= t - rows))
                continue;
            const int a = ROT ? ((u - ky) % KY + KY) % KY : KY - 1 - ky;
#pragma unroll
            for (int i = 0; i < V; i++)
                acc[a][i] = fmaf(p.w[ky], h[i], acc[a][i]);
        }
    } else {
#pragma unroll
        for (int ky = 0; ky < KY; ky++) {
            if (!ALL && (ky > t || ky <= t - rows))
                continue;
            const int a = ROT ? ((u - ky) % KY + KY) % KY : KY - 1 - ky;
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

/* Stores a completed output row's V values (those inside the row); PACK
 * as cvk_store_vec's. vec: the lane's V outputs lie inside the row and
 * allow a vector store, at byte eb of the row (both worked out once). */
template <int V, bool PACK>
__device__ __forceinline__ void cvk_store_row(const cvk_direct_params &p, long long out_off,
                                              long long y, long long e, bool vec, long long eb,
                                              const float (&v)[V])
{
    char *orow = p.out + out_off + y * p.out_row;
    if (vec) {
        cvk_store_vec<V, PACK>(p.out_type, orow + eb, 0, v);
    } else {
#pragma unroll
        for (int i = 0; i < V; i++)
            if (e + i >= 0 && e + i < p.WC)
                cvk_store_float(p.out_type, orow, e + i, v[i]);
    }
}

template <int K, int C, typename T, bool SEP
, int V, int MINB = 0, int ROTATE = -1, bool BATCH = false, bool STEADY = false,
             int KY = K > __global__ void __launch_bounds__(CVK_DIRECT_WARPS * 32, MINB)
                              cvk_direct2d_kernel(const __grid_constant__ cvk_direct_params p)
{
    /* K: the filter's extent along x; KY along y (dense filters may be
     * non-square: KY weight rows of K) */
    static_assert(!SEP || KY == K, "a separable instance is square");
    enum { HALO = (K / 2) * C, WIN = V + 2 * HALO };
    /* ROTATE = 1 rotates the accumulator rows (unrolling rows by K), 0
     * shifts them (one row's code: fewer instruction-cache misses); -1
     * rotates where the shifts would cost much next to the FMAs (separable
     * filters up to 17 taps, dense up to 9). MINB: blocks a multiprocessor
     * must hold (caps the registers). STEADY: the rows whose KY outputs all
     * lie in the strip take a second copy of the row's FMAs without the
     * per-output-row tests (more code; the uint8 instances that gain). */
    enum { ROT = ROTATE >= 0 ? ROTATE : SEP ? K <= 17 : KY <= 9 };
    typedef cvk_ring<T, V, HALO> G;
    CVK_DYNAMIC_SHARED(smem);
    const int lane = threadIdx.x & 31, wib = threadIdx.x >> 5;
    const long long warp = (long long)blockIdx.x * CVK_DIRECT_WARPS + wib;
    if (warp >= p.nwarps)
        return; /* whole warps only: only warp-level syncs are used */
    T *ring = (T *)(smem + wib * G::BYTES);
    const long long we0 = p.first + warp * G::SEG; /* centred element of lane 0 */
    const bool interior = p.aligned && we0 - G::HP >= 0 && we0 + G::SEG + G::HP <= p.WC;
    const long long y0 = (long long)blockIdx.y * p.strip;
    const int rows = (int)(p.H - y0 < p.strip ? p.H - y0 : p.strip);
    const long long e_out = we0 + (long long)lane * V + p.shift; /* the lane's outputs */
    const bool vec_out = p.vec_store && e_out >= 0 && e_out + V <= p.WC;
    const long long eb_out = e_out * cvi_dtype_bytes(p.out_type);
    /* BATCH: the image blockIdx.z of p.in_plane / p.out_plane apart */
    const long long in_off = BATCH ? (long long)blockIdx.z * p.in_plane : 0;
    const long long out_off = BATCH ? (long long)blockIdx.z * p.out_plane : 0;

    float acc[KY][V];
#pragma unroll
    for (int a = 0; a < KY; a++)
#pragma unroll
        for (int i = 0; i < V; i++)
            acc[a][i] = 0.0f;

    const long long ybase = y0 - p.koffy;
    const int total = rows + KY - 1;
#pragma unroll
    for (int t = 0; t < CVK_RING_ROWS - 1; t++) {
        if (t < total)
            cvk_ring_issue<T, V, HALO, C>(p, in_off, ybase + t, we0, lane, interior, ring, t);
        else
            cvk_cp_commit();
    }

#pragma unroll 1
    for (int t0 = 0; t0 < total; t0 += (ROT ? KY : 1)) {
#pragma unroll
        for (int u = 0; u < (ROT ? KY : 1); u++) {
            const int t = t0 + u;
            if (t >= total)
                break;
            const int ahead = t + CVK_RING_ROWS - 1;
            if (ahead < total)
                cvk_ring_issue<T, V, HALO, C>(p, in_off, ybase + ahead, we0, lane, interior, ring,
                                              ahead % CVK_RING_ROWS);
            else
                cvk_cp_commit();
            cvk_cp_wait<CVK_RING_ROWS - 1>(); /* row t's group is done */
            __syncwarp();
            const int slot = t % CVK_RING_ROWS;
            float win[WIN];
            cvk_ring_window<T, V, HALO>(ring + slot * G::L, lane, win);
            __syncwarp(); /* the slot may be refilled next row */
            if (STEADY && t >= KY - 1 && t < rows)
                cvk_accumulate_row < K, C, V, SEP
            , ROT, true, KY > (p, win, u, t, rows, acc);
            else cvk_accumulate_row < K, C, V, SEP
            , ROT, false, KY > (p, win, u, t, rows, acc);
            const int o = t - (KY - 1); /* output row o is complete */
            const int done = ROT ? (u + 1) % KY : 0;
            if (o >= 0)
                cvk_store_row<V, sizeof(T) < 4>(p, out_off, y0 + o, e_out, vec_out, eb_out,
                                                acc[done]);
            if (ROT) {
#pragma unroll
                for (int i = 0; i < V; i++)
                    acc[done][i] = 0.0f;
            } else {
#pragma unroll
                for (int a = 0; a < KY - 1; a++)
#pragma unroll
                    for (int i = 0; i < V; i++)
                        acc[a][i] = acc[a + 1][i];
#pragma unroll
                for (int i = 0; i < V; i++)
                    acc[KY - 1][i] = 0.0f;
            }
        }
    }
}

/* 1-D: each warp takes segments of 32*V samples in turn (grid-stride), the
 * next segment's loads issued before the current one is computed; a lane
 * computes V outputs from its window. float32, one channel. */
template <int K, int V>
__global__ void __launch_bounds__(256)
    cvk_direct1d_kernel(const __grid_constant__ cvk_direct_params p)
{
    enum { HALO = K / 2, SEG = 32 * V, WIN = V + 2 * HALO };
    const int lane = threadIdx.x & 31;
    const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
    long long s = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (s >= p.nwarps)
        return;
    const float *row = (const float *)p.in;
    float cur[V + 1], nxt[V + 1];
    cvk_load_segment<V, HALO, float>(row, p.first + s * SEG, lane, cur);
    for (; s < p.nwarps; s += warps) {
        const long long we0 = p.first + s * SEG;
        if (s + warps < p.nwarps)
            cvk_load_segment<V, HALO, float>(row, we0 + warps * SEG, lane, nxt);
        float win[WIN];
        cvk_shuffle_window<V, HALO>(cur, lane, win);
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
            cvk_store_vec<V>(p.out_type, p.out, e, out);
        } else {
#pragma unroll
            for (int i = 0; i < V; i++)
                if (e + i >= 0 && e + i < p.N)
                    cvk_store_float(p.out_type, p.out, e + i, out[i]);
        }
#pragma unroll
        for (int i = 0; i <= V; i++)
            cur[i] = nxt[i];
    }
}

typedef void (*cvk_direct_kernel_fn)(cvk_direct_params);

/* Float32 elements a lane: 16 bytes (8 bytes, 2 elements, for separable
 * K >= 17, whose K accumulator rows would cost too many registers). The
 * integer instances name theirs (cvk_direct2d_u8_lanes,
 * cvk_direct2d_u16_lanes). */
#define CVK_DIRECT_LANE(T, K, S) (((S) && (K) >= 17) ? 2 : 4)

/* The float32 gray instances' register bound (MINB: blocks a
 * multiprocessor) and row handling (ROT, the kernel's ROTATE; ST, its
 * STEADY), by K and kind, as measured; the single-image instances (fast_direct_f32.cu,
 * fast_direct_sep.cu) and the batched ones (fast_direct_batch.cu) take
 * them from here. Unlisted: the compiler's registers, ROTATE's default.
 *
 * Dense: every K shifts its accumulator rows (the rotation's K-times
 * unrolled loop stalled on instruction fetch); each is held to the blocks a
 * multiprocessor measured fastest: K = 3, 5, 7 to 8, 8 and 6 (64, 64 and
 * 80 registers at most), H200, 8192^2 reflect, 0.196, 0.205 and 0.277 ms
 * against 0.275 (the generated tile), 0.274 and 0.380 before, rotated at
 * the compiler's registers (K = 3 was held to 10 blocks, 48 registers,
 * until rows of cval moved into the ring: then 8, 9, 10, 11 blocks took
 * 0.171, 0.174, 0.182, 0.219 ms); K = 9, 11, 13, 15 to 6, 5, 5 and 4 (80,
 * 90, 96 and 120 registers), H200, 8192^2 constant, 0.361, 0.488, 0.627
 * and 0.782 ms against the generated tile's 0.413, 0.590, 0.727 and 0.909,
 * and the compiler's registers' 0.578, 0.493, 0.651 and 0.797
 * (docs/architecture.md, "Measured choices"). The even K = 2, 4, 6 (the
 * window K / 2 elements left of an output, K / 2 - 1 right: scipy's even
 * sizes) are held as their odd neighbours 3, 5 and 7. K = 5 alone takes
 * STEADY: H200, 8192^2 reflect, three rounds in one build, 0.1911-0.1918
 * ms against 0.1957-0.1966; K = 3 and 7 within 0.5%, K = 9 0.390 against
 * 0.360 (7 and 9 in constant mode).
 *
 * Separable: K = 5 shifts its accumulator rows and is held to 8 blocks a
 * multiprocessor: H200, 8192^2 reflect, two rounds in one build, 0.180 ms
 * against 0.229 rotated at the compiler's registers (64), 0.214 rotated at
 * 8 blocks, 0.288 at 10 (48 registers, spills); K = 3 and 7 rotate at the
 * compiler's registers (K = 3 at 10 or 12 blocks 0.204, 0.268 against
 * 0.172; K = 7 at 8 blocks 0.281 against 0.254). STEADY made K = 3 and 7
 * 3-4% slower (0.1763 against 0.1717 ms for K = 3), K = 9 1%, K = 5 the
 * same. */
template <int K, bool SEP
> struct cvk_f32_tuning {
    enum { MINB = 0, ROT = -1, ST = 0 };
};
#define CVK_F32_TUNED(K, SEP, MB, RT, STEADY)      \
    template <>                                    \
    struct cvk_f32_tuning<K, SEP> {                \
        enum { MINB = MB, ROT = RT, ST = STEADY }; \
    };
CVK_F32_TUNED(2, false, 8, 0, 0)
CVK_F32_TUNED(3, false, 8, 0, 0)
CVK_F32_TUNED(4, false, 8, 0, 0)
CVK_F32_TUNED(5, false, 8, 0, 1)
CVK_F32_TUNED(6, false, 6, 0, 0)
CVK_F32_TUNED(7, false, 6, 0, 0)
CVK_F32_TUNED(9, false, 6, 0, 0)
CVK_F32_TUNED(11, false, 5, 0, 0)
CVK_F32_TUNED(13, false, 5, 0, 0)
CVK_F32_TUNED(15, false, 4, 0, 0)
CVK_F32_TUNED(5, true, 8, 0, 0)
#undef CVK_F32_TUNED

/* A float32 gray instance as tuned (cvk_f32_tuning); _BATCH: its batched
 * twin (blockIdx.z picks the image). S: separable. */
#define CVK_DIRECT_CASE_F32(K, S)                                                                \
    case K:                                                                                      \
        return cvk_direct2d_kernel<K, 1, float, S, CVK_DIRECT_LANE(float, K, S),                 \
                                   cvk_f32_tuning<K, S>::MINB, cvk_f32_tuning<K, S>::ROT, false, \
                                   cvk_f32_tuning<K, S>::ST != 0>;
#define CVK_DIRECT_CASE_F32_BATCH(K, S)                                                         \
    case K:                                                                                     \
        return cvk_direct2d_kernel<K, 1, float, S, CVK_DIRECT_LANE(float, K, S),                \
                                   cvk_f32_tuning<K, S>::MINB, cvk_f32_tuning<K, S>::ROT, true, \
                                   cvk_f32_tuning<K, S>::ST != 0>;

/* The instances, by file: fast_direct_f32.cu (dense float32 gray, K = 3..17,
 * and 1-D), fast_direct_sep.cu (separable float32 gray, K = 3..33),
 * fast_direct_u8.cu and fast_direct_u16.cu (uint8 and uint16 gray and RGB,
 * dense K = 3, 5; separable filters on integer images take
 * fast_sep_int.cu).
 * Each returns 0 for a K it has not. */
cvk_direct_kernel_fn cvk_direct2d_dense_f32(int K);
/* Dense float32 gray, non-square: KY rows of KX weights (fast_direct_f32.cu);
 * 0 for a size it has not. */
cvk_direct_kernel_fn cvk_direct2d_dense_f32_rect(int KY, int KX);
cvk_direct_kernel_fn cvk_direct2d_sep_f32(int K);
/* Batched float32 gray instances (fast_direct_batch.cu): a stack of images
 * or planar channels in one launch; the filters memory-bound enough for it
 * to pay, 0 for other K. */
cvk_direct_kernel_fn cvk_direct2d_dense_f32_batch(int K);
cvk_direct_kernel_fn cvk_direct2d_sep_f32_batch(int K);
cvk_direct_kernel_fn cvk_direct2d_u8(int channels, int K, int separable);
/* uint8 elements a lane of cvk_direct2d_u8's kernel (8, or 4). */
int cvk_direct2d_u8_lanes(int channels, int K, int separable);
cvk_direct_kernel_fn cvk_direct2d_u16(int channels, int K, int separable);
/* uint16 elements a lane of cvk_direct2d_u16's kernel. */
int cvk_direct2d_u16_lanes(int channels, int K, int separable);
cvk_direct_kernel_fn cvk_direct1d_f32(int K);

#endif
