/*
 * fast_direct3d.cu - 2.5-D streaming convolution for 3-D volumes of one
 * channel and cubic odd filters: float32, uint8 and uint16 dense, K = 3, 5,
 * 7, 9 (summed in float); float32 and float64 separable (three taps
 * vectors), K = 3..17.
 *
 * A block of 8 warps owns an output tile of 8 rows x 128 columns (a warp a
 * row, 4 columns a lane; dense 3x3x3: 16 rows, two a warp) and walks along
 * z through a run of planes. Each input plane's tile, with its y and x
 * halo, is copied to shared memory with cp.async, three planes in a ring:
 * the next planes' copies are in flight while this plane's FMAs run (uint8
 * and uint16 tiles are then widened to float once). K rolling
 * accumulators (one per output plane the input plane touches) stay in
 * registers; the oldest is complete after each plane and is stored.
 * Weights are constant-bank operands at compile-time offsets.
 * The 16-byte chunks of a tile that reach past the volume's x faces (or all
 * of them when the data is not 16-byte aligned) load element by element
 * through boundary maps the block computes once with cvi_boundary_index, so
 * every mode is exact (float32 and float64 tiles copy those after the
 * others, an element a thread). A horizontal origin shifts where outputs are stored
 * (loads stay aligned). How many planes a block's run takes depends on the
 * blocks the device holds at once (cvk_3d_zrun).
 *
 * Separable filters take the same walk in one pass over DRAM: each plane's
 * tile is filtered along y for the block's rows (their x halo included; a
 * thread sums 2 or 4 rows of a 16-byte chunk, so that each tile row it
 * reads feeds all of them) into a second shared buffer, then along x, and
 * that value feeds the z taps' rolling accumulators. Out of range, the tile
 * holds the mode's values, so the result is the dense outer-product
 * filter's on the extended volume (CONSTANT: cval filtered along each
 * axis), as the other kernels define it. The separable kernel is a template
 * on the element type, which is also the accumulation type: float as above;
 * double with 2 columns a lane and 64-column tiles (16-byte copies and
 * vector accesses of 2 doubles, 8-byte copies on the element-by-element
 * path), taps and cval in double, stores rounded from the double sum.
 */
#include "fast_direct3d.h"

#include "../kernel_math.h"
#include "device_common.cuh"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CVK_3D_TY 8   /* warps per block (an output row each, or two) */
#define CVK_3D_TX 128 /* output columns per block (4 per lane) */
#define CVK_3D_THREADS (CVK_3D_TY * 32)

typedef struct cvk_direct3d_params {
    const char *in;
    char *out;
    long long in_str[2], out_str[2]; /* bytes between planes, rows */
    long long D, H, W;
    long long x_base;         /* centred column of block x 0's first output */
    int koffz, koffy, shift;  /* output column = centred column + shift */
    int mode, out_type, zrun; /* planes a block walks */
    int aligned, vec_store;
    float cval;
    float w[CVK_DIRECT3D_MAX_K * CVK_DIRECT3D_MAX_K * CVK_DIRECT3D_MAX_K];
    /* the double separable kernel's: cval, the z, y and x taps, K each */
    double cval64;
    double w64[3 * CVK_SEP3D_MAX_K];
} cvk_direct3d_params;
/* kernel parameters stay within the 4 KB every CUDA version takes */
static_assert(sizeof(cvk_direct3d_params) <= 4096, "cvk_direct3d_params past 4 KB");

/* The separable kernel's element-type-dependent pieces, as overloads (the
 * last argument only selects): cval, taps, one element's asynchronous
 * copy, 16-byte vector load, store, fill and axpy, fma, the output store. */
__device__ __forceinline__ float cvk_3d_cval(const cvk_direct3d_params &p, float)
{
    return p.cval;
}
__device__ __forceinline__ double cvk_3d_cval(const cvk_direct3d_params &p, double)
{
    return p.cval64;
}
__device__ __forceinline__ float cvk_3d_tap(const cvk_direct3d_params &p, int i, float)
{
    return p.w[i];
}
__device__ __forceinline__ double cvk_3d_tap(const cvk_direct3d_params &p, int i, double)
{
    return p.w64[i];
}
__device__ __forceinline__ void cvk_3d_cp(float *dst, const float *src)
{
    cvk_cp4(dst, src);
}
__device__ __forceinline__ void cvk_3d_cp(double *dst, const double *src)
{
    cvk_cp8(dst, src);
}
__device__ __forceinline__ void cvk_3d_ld16(const float *src, float *v)
{
    const float4 q = *(const float4 *)src;
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}
__device__ __forceinline__ void cvk_3d_ld16(const double *src, double *v)
{
    const double2 q = *(const double2 *)src;
    v[0] = q.x, v[1] = q.y;
}
__device__ __forceinline__ void cvk_3d_st16(float *dst, const float *v)
{
    *(float4 *)dst = make_float4(v[0], v[1], v[2], v[3]);
}
__device__ __forceinline__ void cvk_3d_st16(double *dst, const double *v)
{
    *(double2 *)dst = make_double2(v[0], v[1]);
}
/* An output's whole 16-byte store to global memory (the 8- and 4-byte
 * integer ones call __stwb directly). Written as a plain vector
 * assignment, the compiler merged it with the element-by-element
 * fallback's stores beside it into 4-byte stores (every
 * output store of both walks was four STG.E); the store intrinsic
 * (st.global.wb, the default policy) keeps it whole. H200, trial build
 * against plain stores, two rounds: float32 512^3 separable K = 3, 5, 7
 * 0.350, 0.425, 0.523 -> 0.333, 0.369, 0.507 ms, dense 3x3x3 0.361 ->
 * 0.345; the longer filters and float64 256^3 within 2% either way
 * (st.global.cs: between the two). */
__device__ __forceinline__ void cvk_3d_stg16(float *dst, const float *v)
{
    __stwb((float4 *)dst, make_float4(v[0], v[1], v[2], v[3]));
}
__device__ __forceinline__ void cvk_3d_stg16(double *dst, const double *v)
{
    __stwb((double2 *)dst, make_double2(v[0], v[1]));
}
__device__ __forceinline__ void cvk_3d_fill16(float *dst, float v)
{
    *(float4 *)dst = make_float4(v, v, v, v);
}
__device__ __forceinline__ void cvk_3d_fill16(double *dst, double v)
{
    *(double2 *)dst = make_double2(v, v);
}
/* v[i] += w * src[i] for the 16 bytes at src */
__device__ __forceinline__ void cvk_3d_axpy16(float w, const float *src, float *v)
{
    const float4 q = *(const float4 *)src;
    v[0] = fmaf(w, q.x, v[0]), v[1] = fmaf(w, q.y, v[1]);
    v[2] = fmaf(w, q.z, v[2]), v[3] = fmaf(w, q.w, v[3]);
}
__device__ __forceinline__ void cvk_3d_axpy16(double w, const double *src, double *v)
{
    const double2 q = *(const double2 *)src;
    v[0] = fma(w, q.x, v[0]), v[1] = fma(w, q.y, v[1]);
}
__device__ __forceinline__ float cvk_3d_fma(float a, float b, float c)
{
    return fmaf(a, b, c);
}
__device__ __forceinline__ double cvk_3d_fma(double a, double b, double c)
{
    return fma(a, b, c);
}
__device__ __forceinline__ void cvk_3d_store(int type, char *row, long long e, float v)
{
    cvk_store_float(type, row, e, v);
}
__device__ __forceinline__ void cvk_3d_store(int type, char *row, long long e, double v)
{
    cvk_store_double(type, row, e, v);
}

/* Integer tiles: one element of type T copied (cp.async takes 4, 8 or 16
 * bytes, so the integer types' element-by-element chunks load and store
 * directly), a chunk filled with cval, and a chunk widened to V floats
 * (cvk_u16_float / cvk_u8_float: permutes and a subtraction). */
template <typename T>
__device__ __forceinline__ T cvk_3d_cval(const cvk_direct3d_params &p, T)
{
    /* whole and in range under CONSTANT (plan.c); the other modes never read it */
    const float top = sizeof(T) == 1 ? 255.0f : 65535.0f;
    return (T)fminf(fmaxf(p.cval, 0.0f), top);
}
__device__ __forceinline__ void cvk_3d_cp(uint16_t *dst, const uint16_t *src)
{
    *dst = *src;
}
__device__ __forceinline__ void cvk_3d_cp(uint8_t *dst, const uint8_t *src)
{
    *dst = *src;
}
__device__ __forceinline__ void cvk_3d_fill16(uint16_t *dst, uint16_t v)
{
    const unsigned w = v * 0x00010001u;
    *(uint4 *)dst = make_uint4(w, w, w, w);
}
__device__ __forceinline__ void cvk_3d_fill16(uint8_t *dst, uint8_t v)
{
    const unsigned w = v * 0x01010101u;
    *(uint4 *)dst = make_uint4(w, w, w, w);
}
__device__ __forceinline__ void cvk_3d_widen16(const uint16_t *src, float *dst)
{
    const uint4 q = *(const uint4 *)src;
    const unsigned w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int i = 0; i < 4; i += 2)
        *(float4 *)(dst + 2 * i) = make_float4(cvk_u16_float<0>(w[i]), cvk_u16_float<1>(w[i]),
                                               cvk_u16_float<0>(w[i + 1]),
                                               cvk_u16_float<1>(w[i + 1]));
}
__device__ __forceinline__ void cvk_3d_widen16(const uint8_t *src, float *dst)
{
    const uint4 q = *(const uint4 *)src;
    const unsigned w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int i = 0; i < 4; i++)
        *(float4 *)(dst + 4 * i) = make_float4(cvk_u8_float<0>(w[i]), cvk_u8_float<1>(w[i]),
                                               cvk_u8_float<2>(w[i]), cvk_u8_float<3>(w[i]));
}
__device__ __forceinline__ void cvk_3d_widen16(const float *, float *) {}

/* A block's maps (long longs, cvk_3d_maps_len of them): cmap, the column
 * each tile column reads (-1: cval), SW of them; rmap, the byte offset of
 * the row each tile row reads (rows the mode makes cval: unused), `rows`;
 * coff, what each 16-byte chunk of the tile (rows x PER_ROW, chunk i at
 * element V i of a tile buffer) copies: the byte offset from its plane's
 * start (a multiple of 16), or one of the odd marks below; then, as ints,
 * the count of the MAPPED chunks and their indices (float32 and float64
 * tiles, see cvk_3d_mapped_list; the others leave them unused). */
#define CVK_3D_CHUNK_CVAL 1   /* the row is cval */
#define CVK_3D_CHUNK_MAPPED 3 /* element by element through cmap */

__host__ __device__ constexpr int cvk_3d_maps_len(int SW, int V, int rows)
{
    return SW + rows + rows * (SW / V) + (rows * (SW / V) + 2) / 2;
}

/* 1 when tiles of T copy their MAPPED chunks apart, an element a thread,
 * after the other chunks: float32 and float64, whose element copies are
 * asynchronous as the chunks' and land by the same wait and barrier. A
 * warp whose chunks mixed the two ran the element path for the lanes of
 * one or two face chunks: on 512^3 float32 with a 13-tap filter, 43% of
 * the copy loop's warp iterations and 12% of the separable walk's
 * instructions.
 * H200, against copying them in place (best of two rounds of 20 runs):
 * float32 512^3 separable Gaussians K = 3..17 except 7 8-22% faster (K =
 * 7 3.8% slower: 76 -> 95 registers), dense 3x3x3..9x9x9 3-10% faster;
 * 96x200x300 K = 5 18% slower (its last column of blocks mostly mapped:
 * 0.053 -> 0.062 ms). float64 since the list's copy loop is not unrolled
 * (no spill; before, K = 17 spilled 100 bytes and was 7% slower): 256^3
 * separable K = 5..17 0.87-0.98 of in place (K = 17 0.288 -> 0.262 ms),
 * K = 3 1.02, dense 3^3..7^3 even. uint8 / uint16 keep them in place (the
 * thread that copies a chunk widens it, before the barrier). */
template <typename T>
struct cvk_3d_mapped_list {
    enum { ON = sizeof(T) == 4 || sizeof(T) == 8 };
};

/* Computes the block's maps into `maps` (the caller synchronises before the
 * first cvk_load_plane). A chunk is one 16-byte copy when p.aligned (the
 * data and rows 16-byte aligned) and all its columns lie in the volume;
 * the chunks past the x faces, a last partial chunk, and all of them on
 * unaligned data go element by element. */
template <typename T, int XP, int TXL>
__device__ __forceinline__ void cvk_3d_maps(const cvk_direct3d_params &p, long long *maps,
                                            long long y0, long long x0, int rows)
{
    enum { SW = TXL + 2 * XP, V = (int)(16 / sizeof(T)), PER_ROW = SW / V };
    long long *cmap = maps, *rmap = maps + SW, *coff = rmap + rows;
    int *mapped = (int *)(coff + rows * PER_ROW); /* count, then the indices */
    if (cvk_3d_mapped_list<T>::ON) {
        if (threadIdx.x == 0)
            mapped[0] = 0;
        __syncthreads();
    }
    for (int s = threadIdx.x; s < SW; s += CVK_3D_THREADS)
        cmap[s] = cvi_boundary_index(x0 - XP + s, p.W, p.mode);
    for (int i = threadIdx.x; i < rows * PER_ROW; i += CVK_3D_THREADS) {
        const int r = i / PER_ROW, q = i - r * PER_ROW;
        const long long my = cvi_boundary_index(y0 - p.koffy + r, p.H, p.mode);
        const long long xs = x0 - XP + V * q; /* the chunk's first column */
        if (q == 0)
            rmap[r] = my < 0 ? 0 : my * p.in_str[1];
        if (my < 0) {
            coff[i] = CVK_3D_CHUNK_CVAL;
        } else if (p.aligned && xs >= 0 && xs + V <= p.W) {
            coff[i] = my * p.in_str[1] + xs * (long long)sizeof(T);
        } else {
            coff[i] = CVK_3D_CHUNK_MAPPED;
            if (cvk_3d_mapped_list<T>::ON)
                mapped[1 + atomicAdd(mapped, 1)] = i;
        }
    }
}

/* Starts copying input plane z (tile rows y0 - koffy .. + rows, columns
 * x0 - XP .. + TXL + XP) of element type T into buf as the block's maps
 * (cvk_3d_maps) say, chunk by chunk: asynchronous copies, cval written
 * directly. Deciding per chunk rather than per tile keeps the tiles at the
 * x faces (on a 512-wide volume, half of them) on 16-byte copies, and the
 * maps made once keep the per-plane work to a load and a copy a chunk. */
template <typename T, int XP, int TXL>
__device__ __forceinline__ void cvk_load_plane(const cvk_direct3d_params &p, T *buf,
                                               const long long *maps, long long z, int rows)
{
    enum { SW = TXL + 2 * XP, V = (int)(16 / sizeof(T)), PER_ROW = SW / V };
    enum { LIST = cvk_3d_mapped_list<T>::ON };
    static_assert(SW % V == 0, "tile rows of whole chunks");
    const long long *cmap = maps, *rmap = maps + SW, *coff = rmap + rows;
    const int *mapped = (const int *)(coff + rows * PER_ROW);
    const long long mz = cvi_boundary_index(z, p.D, p.mode);
    const char *plane = p.in + (mz < 0 ? 0 : mz) * p.in_str[0];
    const T cval = cvk_3d_cval(p, T());
    for (int i = threadIdx.x; i < rows * PER_ROW; i += CVK_3D_THREADS) {
        const long long c = coff[i];
        T *dst = buf + V * i;
        if (mz < 0 || c == CVK_3D_CHUNK_CVAL) {
            cvk_3d_fill16(dst, cval);
        } else if ((c & 15) == 0) {
            cvk_cp16(dst, plane + c);
        } else if (!LIST) {
            const int r = i / PER_ROW, q = i - r * PER_ROW;
            const T *src = (const T *)(plane + rmap[r]);
#pragma unroll
            for (int e = 0; e < V; e++) {
                const long long mx = cmap[V * q + e];
                if (mx < 0)
                    dst[e] = cval;
                else
                    cvk_3d_cp(dst + e, src + mx);
            }
        }
    }
    if (LIST && mz >= 0) { /* the MAPPED chunks, an element a thread */
        const int n = V * mapped[0];
        /* Not unrolled: unrolled, float32 K = 13 spilled 48 bytes and K = 7
         * took 95 registers (88 without); dense 3^3 0.390 -> 0.364 ms. */
#pragma unroll 1
        for (int e = threadIdx.x; e < n; e += CVK_3D_THREADS) {
            const int i = mapped[1 + e / V], k = e % V;
            const int r = i / PER_ROW, q = i - r * PER_ROW;
            const long long mx = cmap[V * q + k];
            T *dst = buf + V * i + k;
            if (mx < 0)
                *dst = cval;
            else
                cvk_3d_cp(dst, (const T *)(plane + rmap[r]) + mx);
        }
    }
}

/* The dense kernel's tiles of element type T: 16-byte chunks of V
 * elements, the x halo held on each side a whole chunk (so that the
 * chunks' global addresses stay 16-byte aligned); float32 keeps the halo
 * of 4 it was measured with, which is also one chunk. */
template <typename T>
struct cvk_d3_shape {
    enum { V = (int)(16 / sizeof(T)), XP = V, SW = CVK_3D_TX + 2 * XP, F32 = sizeof(T) == 4 };
};

/* The dense walk on input elements of type T, summed in float; each warp
 * computes RW output rows (a block 8 RW), so that a tile row read from
 * shared memory feeds up to RW of them. float32 tiles are read as copied.
 * uint8 and uint16 tiles (3 planes of raw elements in flight, as
 * float32's) are widened to a float tile, double buffered, by the thread
 * that copied each chunk, once its own copies have landed: one barrier a
 * plane, as float32's, and one conversion a tile element instead of one
 * for each of the 3 lanes and K rows that read it. */
template <typename T, int K, int RW>
__global__ void __launch_bounds__(CVK_3D_THREADS)
    cvk_direct3d_kernel(const __grid_constant__ cvk_direct3d_params p)
{
    typedef cvk_d3_shape<T> S;
    enum { R = K / 2, TY = CVK_3D_TY * RW, ROWS = TY + K - 1, PER_ROW = S::SW / S::V };
    static_assert(R <= 4, "a lane reads the aligned 12 columns around its 4");
    __shared__ __align__(16) T tile[3][ROWS * S::SW];
    __shared__ __align__(16) float wide[S::F32 ? 1 : 2][S::F32 ? 4 : ROWS * S::SW];
    __shared__ long long maps[cvk_3d_maps_len(S::SW, S::V, ROWS)];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long x0 = p.x_base + (long long)blockIdx.x * CVK_3D_TX; /* centred columns */
    const long long y0 = (long long)blockIdx.y * TY;
    const long long z0 = (long long)blockIdx.z * p.zrun;
    const int planes = (int)(p.D - z0 < p.zrun ? p.D - z0 : p.zrun);
    const long long y = y0 + warp * RW; /* the warp's first row */

    float acc[RW][K][4];
#pragma unroll
    for (int r = 0; r < RW; r++)
#pragma unroll
        for (int a = 0; a < K; a++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                acc[r][a][i] = 0.0f;

    const int total = planes + K - 1; /* >= K >= 3 */
    const long long zbase = z0 - p.koffz;
    cvk_3d_maps<T, S::XP, CVK_3D_TX>(p, maps, y0, x0, ROWS);
    __syncthreads();
    cvk_load_plane<T, S::XP, CVK_3D_TX>(p, tile[0], maps, zbase, ROWS);
    cvk_cp_commit();
    cvk_load_plane<T, S::XP, CVK_3D_TX>(p, tile[1], maps, zbase + 1, ROWS);
    cvk_cp_commit();

#pragma unroll 1
    for (int t = 0; t < total; t++) {
        cvk_cp_wait<1>(); /* plane t's copies are done (t + 1's may fly on) */
        if (!S::F32)      /* the chunks this thread copied (cvk_load_plane's order) */
            for (int i = threadIdx.x; i < ROWS * PER_ROW; i += CVK_3D_THREADS)
                cvk_3d_widen16(tile[t % 3] + S::V * i, wide[t & 1] + S::V * i);
        __syncthreads();   /* ...everyone's; and plane t - 1's readers are done */
        if (t + 2 < total) /* into the buffer plane t - 1 used */
            cvk_load_plane<T, S::XP, CVK_3D_TX>(p, tile[(t + 2) % 3], maps, zbase + t + 2, ROWS);
        cvk_cp_commit();
        const float *buf = S::F32 ? (const float *)tile[t % 3] : wide[t & 1];
        /* plane t adds to outputs t-kz (weight slice kz) in acc[.][K-1-kz];
         * tile row j of the warp's feeds its output row r with weight row
         * ky = j - r */
#pragma unroll
        for (int j = 0; j < K + RW - 1; j++) {
            /* the lane's columns need tile columns XP-R+4*lane .. +4+2R: read
             * the aligned 12 around them */
            const float *src = buf + (warp * RW + j) * S::SW + (S::XP - 4) + 4 * lane;
            float sup[12];
#pragma unroll
            for (int q = 0; q < 3; q++) {
                float4 v = *(const float4 *)(src + 4 * q);
                sup[4 * q] = v.x, sup[4 * q + 1] = v.y, sup[4 * q + 2] = v.z, sup[4 * q + 3] = v.w;
            }
#pragma unroll
            for (int r = 0; r < RW; r++) {
                const int ky = j - r;
                if (ky < 0 || ky >= K)
                    continue;
#pragma unroll
                for (int kz = 0; kz < K; kz++) {
                    if (kz > t || kz <= t - planes)
                        continue;
#pragma unroll
                    for (int kx = 0; kx < K; kx++) {
                        const float w = p.w[(kz * K + ky) * K + kx];
#pragma unroll
                        for (int i = 0; i < 4; i++)
                            acc[r][K - 1 - kz][i] = fmaf(w, sup[4 - R + i + kx],
                                                         acc[r][K - 1 - kz][i]);
                    }
                }
            }
        }
        const int o = t - (K - 1); /* acc[.][0] is complete */
#pragma unroll
        for (int r = 0; r < RW; r++) {
            if (o >= 0 && y + r < p.H) {
                char *row = p.out + (z0 + o) * p.out_str[0] + (y + r) * p.out_str[1];
                const long long x = x0 + 4 * lane + p.shift;
                const bool vec = p.vec_store && x >= 0 && x + 4 <= p.W;
                const float *v = acc[r][0];
                /* float32's test spelled out: written with `vec`, it
                 * changes the float32 instances' code */
                if (p.vec_store && p.out_type == CVI_DTYPE_FLOAT32 && x >= 0 && x + 4 <= p.W) {
                    cvk_3d_stg16((float *)row + x, v);
                } else if (!S::F32 && vec && p.out_type == CVI_DTYPE_UINT16) {
                    __stwb((uint2 *)((uint16_t *)row + x),
                           make_uint2(cvk_u16_pack2(v[0], v[1]), cvk_u16_pack2(v[2], v[3])));
                } else if (!S::F32 && vec && p.out_type == CVI_DTYPE_UINT8) {
                    __stwb((unsigned *)((uint8_t *)row + x), cvk_u8_pack4(v[0], v[1], v[2], v[3]));
                } else {
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        if (x + i >= 0 && x + i < p.W)
                            cvk_store_float(p.out_type, row, x + i, v[i]);
                }
            }
#pragma unroll
            for (int a = 0; a < K - 1; a++)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    acc[r][a][i] = acc[r][a + 1][i];
#pragma unroll
            for (int i = 0; i < 4; i++)
                acc[r][K - 1][i] = 0.0f;
        }
    }
}

/* The separable walk (the file's header) on elements of type T, summed in
 * T: y taps for the block's rows over the tile's columns, x halo included
 * (a thread an item of YM rows x one 16-byte chunk, reading each of its
 * YM + K - 1 tile rows once), into yrows (TY x SW); x taps per output; z
 * taps into the rolling accumulators; the taps (z, y, x, K each) in p.w
 * (float) or p.w64 (double). A lane holds V = 16 / sizeof(T) columns, a
 * block TX = 32 V. Dynamic shared memory: cvk_sep3d_smem(K, sizeof(T)).
 * (x first, over every tile row, took TY + K - 1 rows of x taps for TY
 * outputs: docs/architecture.md "Measured choices".)
 *
 * Per instance, as measured fastest (H200, float32 512^3 and float64
 * 256^3 Gaussians, K = 3..17, five combinations of the two choices below
 * in one build): SPLIT walks the planes where every z tap lands in the
 * block's run (all but the first K - 1 and the last K - 1) in a loop of
 * their own without the run test (float32 K = 5, 7: 0.518 -> 0.493 ms,
 * 0.647 -> 0.609; float64 K = 17 0.386 -> 0.362), at the cost of a second
 * copy of the body and its registers (float32 K = 9..13 keep one loop:
 * with 80 registers K = 13 spilled 248 bytes, 1.005 -> 1.109 ms); MINB is
 * the blocks a multiprocessor the registers must allow (float32 K = 7 at
 * 3 rather than 1: 95 -> 77 registers, 0.592 -> 0.525 ms). YM: the output
 * rows of a y item (1 row a warp and the halo's chunks on the first warp
 * before; H200, the same benchmark, YM = 1, 2, 4 as trial instances of one
 * build against the kernel before, two rounds, best of 20 runs, ms, K = 3,
 * 5, ..., 17: float32 0.417, 0.492, 0.606, 0.750, 0.876, 1.002, 1.244,
 * 1.357 before, 0.419, 0.492, 0.595, 0.716, 0.837, 0.939, 1.132, 1.220 at
 * YM = 2, 0.410, 0.498, 0.568, 0.708, 0.825, 0.961, 1.117, 1.240 at 4;
 * float64 0.097, 0.121, 0.166, 0.221, 0.259, 0.296, 0.338, 0.359 before,
 * 0.097, 0.130, 0.157, 0.206, 0.239, 0.278, 0.309, 0.329 at 2, 0.097,
 * 0.126, 0.180, 0.203, 0.242, 0.275, 0.305, 0.321 at 4; YM = 1 1-2% slower
 * than before). float32 K = 15 took 4 then; on the kernel since the face
 * chunks' list, 2 measured faster (H200, 2026-11-30, three rounds
 * alternating: 1.005-1.006 -> 0.974-0.975 ms, the other K within 0.3%). */
template <typename T, int K>
struct cvk_sep3d_shape {
    enum {
        R = K / 2,
        V = (int)(16 / sizeof(T)), /* columns a lane */
        TX = 32 * V,               /* columns a block */
        XP = (R + V - 1) / V * V,  /* x halo held on each side */
        SW = TX + 2 * XP,          /* tile row */
        EX = 2 * XP / V,           /* halo chunks a row */
        NC = 32 + EX,              /* chunks a tile row */
        ROWS = CVK_3D_TY + K - 1,  /* tile rows */
        F32 = sizeof(T) == 4,
        SPLIT = F32 ? (K <= 7 || K >= 15) : 1,
        YM = F32 ? (K == 7 || K == 9 || K == 11 ? 4 : 2) : (K == 7 || K == 11 || K == 13 ? 2 : 4),
        MINB = F32 ? (K >= 7 && K <= 13 ? 3 : 2) : (K >= 11 ? 2 : 1)
    };
};

/* One plane t of cvk_sep3d_kernel's walk (its locals passed along); RAMP:
 * plane t may add to outputs outside the block's run (the first K - 1
 * planes and those past `planes`), which are skipped. */
template <typename T, int K, bool RAMP>
__device__ __forceinline__ void cvk_sep3d_plane(const cvk_direct3d_params &p, T *tile, T *yrows,
                                                const long long *maps, T (&acc)[K][16 / sizeof(T)],
                                                int t, int total, int planes, long long zbase,
                                                long long z0, long long x0, long long y)
{
    typedef cvk_sep3d_shape<T, K> S;
    enum { YM = S::YM };
    const int own_type = sizeof(T) == 4 ? CVI_DTYPE_FLOAT32 : CVI_DTYPE_FLOAT64;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    cvk_cp_wait<1>();  /* plane t's copies are done (t + 1's may fly on) */
    __syncthreads();   /* ...everyone's; plane t - 1's readers are done */
    if (t + 2 < total) /* into the buffer plane t - 1 used */
        cvk_load_plane<T, S::XP, S::TX>(p, tile + (t + 2) % 3 * S::ROWS * S::SW, maps,
                                        zbase + t + 2, S::ROWS);
    cvk_cp_commit();
    const T *buf = tile + t % 3 * S::ROWS * S::SW;
    /* y: items of YM rows x one 16-byte chunk (NC chunks a row, the x
     * halo's included), each tile row an item reads loaded once */
#pragma unroll 1
    for (int it = threadIdx.x; it < S::NC * (CVK_3D_TY / YM); it += CVK_3D_THREADS) {
        const int g = it / S::NC, c = it - g * S::NC;
        const T *src = buf + g * YM * S::SW + S::V * c;
        T v[YM][S::V];
#pragma unroll
        for (int m = 0; m < YM; m++)
#pragma unroll
            for (int i = 0; i < S::V; i++)
                v[m][i] = T(0);
#pragma unroll
        for (int j = 0; j < YM + K - 1; j++) {
            T q[S::V];
            cvk_3d_ld16(src + j * S::SW, q);
#pragma unroll
            for (int m = 0; m < YM; m++)
                if (j - m >= 0 && j - m < K)
#pragma unroll
                    for (int i = 0; i < S::V; i++)
                        v[m][i] = cvk_3d_fma(cvk_3d_tap(p, K + j - m, T()), q[i], v[m][i]);
        }
#pragma unroll
        for (int m = 0; m < YM; m++)
            cvk_3d_st16(yrows + (g * YM + m) * S::SW + S::V * c, v[m]);
    }
    __syncthreads();
    /* x: V columns a lane from the aligned V + 2 XP around them */
    T h[S::V];
    {
        const T *src = yrows + warp * S::SW + S::V * lane;
        T sup[S::V + 2 * S::XP];
#pragma unroll
        for (int q = 0; q < (S::V + 2 * S::XP) / S::V; q++)
            cvk_3d_ld16(src + S::V * q, sup + S::V * q);
#pragma unroll
        for (int i = 0; i < S::V; i++)
            h[i] = T(0);
#pragma unroll
        for (int kx = 0; kx < K; kx++)
#pragma unroll
            for (int i = 0; i < S::V; i++)
                h[i] = cvk_3d_fma(cvk_3d_tap(p, 2 * K + kx, T()), sup[S::XP - S::R + i + kx], h[i]);
    }
    /* z: plane t adds to outputs t - kz (tap kz) in acc[K-1-kz] */
#pragma unroll
    for (int kz = 0; kz < K; kz++) {
        if (RAMP && (kz > t || kz <= t - planes))
            continue;
#pragma unroll
        for (int i = 0; i < S::V; i++)
            acc[K - 1 - kz][i] = cvk_3d_fma(cvk_3d_tap(p, kz, T()), h[i], acc[K - 1 - kz][i]);
    }
    const int o = t - (K - 1); /* acc[0] is complete */
    if ((!RAMP || o >= 0) && y < p.H) {
        char *row = p.out + (z0 + o) * p.out_str[0] + y * p.out_str[1];
        const long long x = x0 + S::V * lane + p.shift;
        if (p.vec_store && p.out_type == own_type && x >= 0 && x + S::V <= p.W) {
            cvk_3d_stg16((T *)row + x, acc[0]);
        } else {
#pragma unroll
            for (int i = 0; i < S::V; i++)
                if (x + i >= 0 && x + i < p.W)
                    cvk_3d_store(p.out_type, row, x + i, acc[0][i]);
        }
    }
#pragma unroll
    for (int a = 0; a < K - 1; a++)
#pragma unroll
        for (int i = 0; i < S::V; i++)
            acc[a][i] = acc[a + 1][i];
#pragma unroll
    for (int i = 0; i < S::V; i++)
        acc[K - 1][i] = T(0);
}

template <typename T, int K>
__global__ void __launch_bounds__(CVK_3D_THREADS, cvk_sep3d_shape<T, K>::MINB)
    cvk_sep3d_kernel(const __grid_constant__ cvk_direct3d_params p)
{
    typedef cvk_sep3d_shape<T, K> S;
    static_assert(CVK_3D_TY * S::EX <= CVK_3D_THREADS, "one halo chunk a thread at most");
    CVK_DYNAMIC_SHARED(smem);
    T *tile = (T *)smem;                   /* 3 planes' tiles, ROWS x SW each */
    T *yrows = tile + 3 * S::ROWS * S::SW; /* the block's rows filtered along y */
    long long *maps = (long long *)(yrows + CVK_3D_TY * S::SW); /* cvk_3d_maps */
    const int warp = threadIdx.x >> 5;
    const long long x0 = p.x_base + (long long)blockIdx.x * S::TX; /* centred columns */
    const long long y0 = (long long)blockIdx.y * CVK_3D_TY;
    const long long z0 = (long long)blockIdx.z * p.zrun;
    const int planes = (int)(p.D - z0 < p.zrun ? p.D - z0 : p.zrun);
    const long long y = y0 + warp;

    T acc[K][S::V];
#pragma unroll
    for (int a = 0; a < K; a++)
#pragma unroll
        for (int i = 0; i < S::V; i++)
            acc[a][i] = T(0);

    const int total = planes + K - 1; /* >= K >= 3 */
    const long long zbase = z0 - p.koffz;
    cvk_3d_maps<T, S::XP, S::TX>(p, maps, y0, x0, S::ROWS);
    __syncthreads();
    cvk_load_plane<T, S::XP, S::TX>(p, tile, maps, zbase, S::ROWS);
    cvk_cp_commit();
    cvk_load_plane<T, S::XP, S::TX>(p, tile + S::ROWS * S::SW, maps, zbase + 1, S::ROWS);
    cvk_cp_commit();

    if (S::SPLIT) {
        int t = 0;
#pragma unroll 1
        for (; t < K - 1; t++)
            cvk_sep3d_plane<T, K, true>(p, tile, yrows, maps, acc, t, total, planes, zbase, z0, x0,
                                        y);
#pragma unroll 1
        for (; t < planes; t++)
            cvk_sep3d_plane<T, K, false>(p, tile, yrows, maps, acc, t, total, planes, zbase, z0, x0,
                                         y);
#pragma unroll 1
        for (; t < total; t++)
            cvk_sep3d_plane<T, K, true>(p, tile, yrows, maps, acc, t, total, planes, zbase, z0, x0,
                                        y);
    } else {
#pragma unroll 1
        for (int t = 0; t < total; t++)
            cvk_sep3d_plane<T, K, true>(p, tile, yrows, maps, acc, t, total, planes, zbase, z0, x0,
                                        y);
    }
}

/* Columns a block of cvk_sep3d_kernel covers for elements of esize bytes. */
static int cvk_sep3d_tx(size_t esize)
{
    return (int)(32 * (16 / esize));
}

/* Dynamic shared memory of cvk_sep3d_kernel<T, K>, esize = sizeof(T): three
 * tiles, the y-filtered rows and the block's boundary maps. */
static size_t cvk_sep3d_smem(int K, size_t esize)
{
    const int V = (int)(16 / esize), TX = cvk_sep3d_tx(esize);
    const int R = K / 2, XP = (R + V - 1) / V * V, rows = CVK_3D_TY + K - 1;
    return (size_t)(3 * rows + CVK_3D_TY) * (TX + 2 * XP) * esize +
           (size_t)cvk_3d_maps_len(TX + 2 * XP, V, rows) * sizeof(long long);
}

typedef void (*cvk_direct3d_kernel_fn)(cvk_direct3d_params);

template <typename T>
static cvk_direct3d_kernel_fn pick_sep3d(int K)
{
    switch (K) {
    case 3: return cvk_sep3d_kernel<T, 3>;
    case 5: return cvk_sep3d_kernel<T, 5>;
    case 7: return cvk_sep3d_kernel<T, 7>;
    case 9: return cvk_sep3d_kernel<T, 9>;
    case 11: return cvk_sep3d_kernel<T, 11>;
    case 13: return cvk_sep3d_kernel<T, 13>;
    case 15: return cvk_sep3d_kernel<T, 15>;
    case 17: return cvk_sep3d_kernel<T, 17>;
    default: return 0;
    }
}

/* Dense instances; 3x3x3 takes two output rows a warp (H200, 512^3
 * mirror, against one: float32 0.459 -> 0.418 ms, uint8 0.551 -> 0.454,
 * uint16 0.507 -> 0.491; 5x5x5 measured 1-13% slower with two). */
template <typename T>
static cvk_direct3d_kernel_fn pick_dense3d(int K, int *rw)
{
    *rw = K == 3 ? 2 : 1;
    switch (K) {
    case 3: return cvk_direct3d_kernel<T, 3, 2>;
    case 5: return cvk_direct3d_kernel<T, 5, 1>;
    case 7: return cvk_direct3d_kernel<T, 7, 1>;
    case 9: return cvk_direct3d_kernel<T, 9, 1>;
    default: return 0;
    }
}

/* The kernel for the case, or 0; *rw: the output rows a warp of a dense
 * kernel computes (1 for the separable ones). */
static cvk_direct3d_kernel_fn pick3d(int in_type, int channels, int K, int separable, int *rw)
{
    *rw = 1;
    if (channels != 1)
        return 0;
    if (separable && in_type == CVI_DTYPE_FLOAT64)
        return pick_sep3d<double>(K);
    if (separable)
        return in_type == CVI_DTYPE_FLOAT32 ? pick_sep3d<float>(K) : 0;
    switch (in_type) {
    case CVI_DTYPE_FLOAT32: return pick_dense3d<float>(K, rw);
    case CVI_DTYPE_UINT16: return pick_dense3d<uint16_t>(K, rw);
    case CVI_DTYPE_UINT8: return pick_dense3d<uint8_t>(K, rw);
    default: return 0;
    }
}

/* Planes a block walks (p.zrun) for a volume of D planes, `columns`
 * blocks a run of planes, a K-plane filter, `sms` multiprocessors holding
 * per_sm blocks each. A block walks zrun + K - 1 planes for zrun outputs.
 * Separable walks of at most 2 blocks a multiprocessor (latency-bound:
 * float64, the longest float32 filters) take the run count with the
 * fewest rounds of blocks x planes a block: a part-filled last round costs
 * a whole block's time there (H200, float64 256^3 K = 17: 2 runs 0.289
 * ms, 3 runs 0.362, 4 runs 0.321). The others take about 12 blocks a
 * multiprocessor, which spreads unequal blocks (the x faces' copies) best
 * (float32 512^3 K = 13: 1 to 7 runs 1.086, 1.059, 1.017, 0.989, 0.960,
 * 0.957, 0.965 ms; the dense walks' fewer, longer runs measured 3-11%
 * slower on 512^3), in runs of at least 4 (K - 1) planes unless that
 * leaves multiprocessors without a block (float32 128^3 K = 9: 0.060 ->
 * 0.037 ms). */
static int cvk_3d_zrun(long long D, long long columns, int K, int separable, long long sms,
                       int per_sm)
{
    const long long slots = sms * per_sm;
    if (per_sm > 2 || !separable) {
        const long long want = sms * 12, full = (D * columns + slots - 1) / slots;
        long long zrun = (D * columns + want - 1) / want, min_run = 4 * (K - 1);
        min_run = min_run < full ? min_run : full;
        zrun = zrun < min_run ? min_run : zrun;
        return (int)(zrun > D ? D : zrun);
    }
    long long best = D, best_cost = -1;
    long long most = 16 * slots / columns + 1; /* past 16 rounds the halo only grows */
    most = most < D ? most : D;
    most = most < CVK_DEVICE_GRID_YZ ? most : CVK_DEVICE_GRID_YZ;
    for (long long n = 1; n <= most; n++) {
        const long long zrun = (D + n - 1) / n;
        if ((D + zrun - 1) / zrun != n)
            continue; /* the same runs as a smaller count */
        const long long cost = (columns * n + slots - 1) / slots * (zrun + K - 1);
        if (best_cost < 0 || cost < best_cost) {
            best_cost = cost;
            best = zrun;
        }
    }
    return (int)best;
}

extern "C" int cvk_direct3d_supports(int in_type, int channels, int ksize, int separable)
{
    int rw;
    return pick3d(in_type, channels, ksize, separable, &rw) != 0;
}

extern "C" cudaError_t cvk_direct3d_launch(const cvk_direct3d_args *a, cudaStream_t stream)
{
    int rw;
    cvk_direct3d_kernel_fn fn = pick3d(a->in_type, a->channels, a->ksize, a->separable, &rw);
    if (!fn)
        return cudaErrorInvalidValue;
    const int K = a->ksize, R = K / 2;
    /* element size of the kernel's type; V of them a lane, TX a block */
    const size_t esize = a->separable && a->in_type == CVI_DTYPE_FLOAT64 ? 8 : 4;
    const int V = (int)(16 / esize), TX = a->separable ? cvk_sep3d_tx(esize) : CVK_3D_TX;
    cvk_direct3d_params p;
    memset(&p, 0, sizeof p);
    p.in = (const char *)a->in;
    p.out = (char *)a->out;
    for (int i = 0; i < 2; i++) {
        p.in_str[i] = a->in_strides[i];
        p.out_str[i] = a->out_strides[i];
    }
    p.D = a->depth;
    p.H = a->height;
    p.W = a->width;
    p.koffz = a->koffz;
    p.koffy = a->koffy;
    p.shift = a->koffx - R;
    p.mode = a->mode;
    p.out_type = a->out_type;
    p.cval = (float)a->cval;
    p.cval64 = a->cval;
    if (a->separable && esize == 8) {
        for (int i = 0; i < K; i++) {
            p.w64[i] = a->taps_z[i];
            p.w64[K + i] = a->taps_y[i];
            p.w64[2 * K + i] = a->taps_x[i];
        }
    } else if (a->separable) {
        for (int i = 0; i < K; i++) {
            p.w[i] = (float)a->taps_z[i];
            p.w[K + i] = (float)a->taps_y[i];
            p.w[2 * K + i] = (float)a->taps_x[i];
        }
    } else {
        for (int i = 0; i < K * K * K; i++)
            p.w[i] = (float)a->weights[i];
    }
    p.aligned = (uintptr_t)a->in % 16 == 0 && a->in_strides[0] % 16 == 0 &&
                a->in_strides[1] % 16 == 0;
    p.vec_store = p.shift % V == 0 && (uintptr_t)a->out % 16 == 0 && a->out_strides[0] % 16 == 0 &&
                  a->out_strides[1] % 16 == 0;
    /* centred columns x' = x - shift must cover [0, W) */
    const long long lo = -(long long)p.shift, hi = p.W - p.shift;
    p.x_base = lo >= 0 ? 0 : -TX;
    const long long bx = (hi - p.x_base + TX - 1) / TX;
    const long long by = (p.H + CVK_3D_TY * rw - 1) / (CVK_3D_TY * rw);
    const size_t smem = a->separable ? cvk_sep3d_smem(K, esize) : 0;
    /* blocks a multiprocessor holds, per instance: separable float32 and
     * float64 by K, then dense float32, uint16 and uint8 by K */
    static int held[28];
    const int dense_type = a->in_type == CVI_DTYPE_UINT16  ? 1
                           : a->in_type == CVI_DTYPE_UINT8 ? 2
                                                           : 0;
    const int slot = a->separable ? (esize == 8 ? 8 : 0) + (K - 3) / 2
                                  : 16 + 4 * dense_type + (K - 3) / 2;
    int per_sm;
    const cudaError_t re = cvk_launch_ready((const void *)fn, CVK_3D_THREADS, smem, &held[slot],
                                            &per_sm);
    if (re != cudaSuccess)
        return re;
    p.zrun = cvk_3d_zrun(p.D, bx * by, K, a->separable, cvk_multiprocessors(a->multiprocessors),
                         per_sm);
    /* CONVOLVE_3D_ZRUN overrides it (tests: runs of several outputs, and
     * several runs, on volumes so small that the rule gives a plane each) */
    const char *zenv = getenv("CONVOLVE_3D_ZRUN");
    const long long zset = zenv && *zenv ? atoll(zenv) : 0;
    if (zset > 0)
        p.zrun = (int)(zset < p.D ? zset : p.D);
    const long long bz = (p.D + p.zrun - 1) / p.zrun;
    if (bx > CVK_DEVICE_GRID_X || by > CVK_DEVICE_GRID_YZ || bz > CVK_DEVICE_GRID_YZ)
        return cudaErrorInvalidConfiguration;
    const dim3 grid((unsigned)bx, (unsigned)by, (unsigned)bz);
    CVK_LAUNCH(fn, grid, CVK_3D_THREADS, smem, stream, (p));
    return cudaGetLastError();
}
