/*
 * fast_direct3d.cu - 2.5-D streaming convolution for 3-D float32 volumes
 * (one channel) and cubic odd filters: dense, K = 3, 5, 7, 9, and separable
 * (three taps vectors), K = 3..17.
 *
 * A block of 8 warps owns an output tile of 8 rows x 128 columns (a warp a
 * row, 4 columns a lane) and walks along z through a run of planes. Each
 * input plane's tile, with its y and x halo, is copied to shared memory with
 * cp.async, double-buffered: the next plane's copy is in flight while this
 * plane's FMAs run. K rolling accumulators (one per output plane the input
 * plane touches) stay in registers; the oldest is complete after each plane
 * and is stored. Weights are constant-bank operands at compile-time offsets.
 * Tiles at the volume's faces, or when the data is not 16-byte aligned, load
 * element by element through cvi_boundary_index, so every mode is exact. A
 * horizontal origin shifts where outputs are stored (loads stay aligned).
 *
 * Separable filters take the same walk in one pass over DRAM: each plane's
 * tile is filtered along x into a second shared buffer (all its rows, halo
 * included), then along y for the block's rows, and that value feeds the z
 * taps' rolling accumulators. Out of range, the tile holds the mode's
 * values, so the result is the dense outer-product filter's on the extended
 * volume (CONSTANT: cval filtered along each axis), as the other kernels
 * define it.
 */
#include "fast_direct3d.h"

#include "../kernel_math.h"
#include "device_common.cuh"

#include <stdint.h>

#define CVK_3D_TY 8   /* output rows per block (one warp each) */
#define CVK_3D_TX 128 /* output columns per block (4 per lane) */
#define CVK_3D_XP 4   /* dense: x halo held in shared memory on each side (r <= 4) */
#define CVK_3D_SW (CVK_3D_TX + 2 * CVK_3D_XP)
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
} cvk_direct3d_params;

/* Starts copying input plane z (tile rows y0 - koffy .. + rows, columns
 * x0 - XP .. + TXL + XP) into buf: asynchronous copies, cval written
 * directly. */
template <int XP, int TXL>
__device__ __forceinline__ void cvk_load_plane(const cvk_direct3d_params &p, float *buf,
                                               long long z, long long y0, long long x0, int rows,
                                               bool fast)
{
    enum { SW = TXL + 2 * XP };
    const long long mz = cvi_boundary_index(z, p.D, p.mode);
    if (fast) {
        const int per_row = SW / 4;
        for (int i = threadIdx.x; i < rows * per_row; i += CVK_3D_THREADS) {
            const int ty = i / per_row, q = i - ty * per_row;
            const long long my = cvi_boundary_index(y0 - p.koffy + ty, p.H, p.mode);
            float *dst = buf + ty * SW + 4 * q;
            if (mz < 0 || my < 0) {
                *(float4 *)dst = make_float4(p.cval, p.cval, p.cval, p.cval);
            } else {
                const float *src = (const float *)(p.in + mz * p.in_str[0] + my * p.in_str[1]) +
                                   (x0 - XP + 4 * q);
                cvk_cp16(dst, src);
            }
        }
    } else {
        for (int i = threadIdx.x; i < rows * SW; i += CVK_3D_THREADS) {
            const int ty = i / SW, s = i - ty * SW;
            const long long my = cvi_boundary_index(y0 - p.koffy + ty, p.H, p.mode);
            const long long mx = cvi_boundary_index(x0 - XP + s, p.W, p.mode);
            float *dst = buf + ty * SW + s;
            if (mz < 0 || my < 0 || mx < 0)
                *dst = p.cval;
            else
                cvk_cp4(dst, (const float *)(p.in + mz * p.in_str[0] + my * p.in_str[1]) + mx);
        }
    }
}

template <int K>
__global__ void __launch_bounds__(CVK_3D_THREADS)
    cvk_direct3d_kernel(const __grid_constant__ cvk_direct3d_params p)
{
    enum { R = K / 2, ROWS = CVK_3D_TY + K - 1 };
    __shared__ __align__(16) float tile[3][ROWS * CVK_3D_SW];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long x0 = p.x_base + (long long)blockIdx.x * CVK_3D_TX; /* centred columns */
    const long long y0 = (long long)blockIdx.y * CVK_3D_TY;
    const long long z0 = (long long)blockIdx.z * p.zrun;
    const int planes = (int)(p.D - z0 < p.zrun ? p.D - z0 : p.zrun);
    const bool fast = p.aligned && x0 - CVK_3D_XP >= 0 && x0 + CVK_3D_TX + CVK_3D_XP <= p.W;
    const long long y = y0 + warp;

    float acc[K][4];
#pragma unroll
    for (int a = 0; a < K; a++)
#pragma unroll
        for (int i = 0; i < 4; i++)
            acc[a][i] = 0.0f;

    const int total = planes + K - 1; /* >= K >= 3 */
    const long long zbase = z0 - p.koffz;
    cvk_load_plane<CVK_3D_XP, CVK_3D_TX>(p, tile[0], zbase, y0, x0, ROWS, fast);
    cvk_cp_commit();
    cvk_load_plane<CVK_3D_XP, CVK_3D_TX>(p, tile[1], zbase + 1, y0, x0, ROWS, fast);
    cvk_cp_commit();

#pragma unroll 1
    for (int t = 0; t < total; t++) {
        cvk_cp_wait<1>();  /* plane t's copies are done (t + 1's may fly on) */
        __syncthreads();   /* ...everyone's; and plane t - 1's readers are done */
        if (t + 2 < total) /* into the buffer plane t - 1 used */
            cvk_load_plane<CVK_3D_XP, CVK_3D_TX>(p, tile[(t + 2) % 3], zbase + t + 2, y0, x0, ROWS,
                                                 fast);
        cvk_cp_commit();
        const float *buf = tile[t % 3];
        /* plane t adds to outputs t-kz (weight slice kz) in acc[K-1-kz] */
#pragma unroll
        for (int ky = 0; ky < K; ky++) {
            /* the lane's columns need tile columns XP-R+4*lane .. +4+2R: read
             * the aligned 12 around them */
            const float *src = buf + (warp + ky) * CVK_3D_SW + 4 * lane;
            float sup[4 + 2 * CVK_3D_XP];
#pragma unroll
            for (int q = 0; q < (4 + 2 * CVK_3D_XP) / 4; q++) {
                float4 v = *(const float4 *)(src + 4 * q);
                sup[4 * q] = v.x, sup[4 * q + 1] = v.y, sup[4 * q + 2] = v.z, sup[4 * q + 3] = v.w;
            }
#pragma unroll
            for (int kz = 0; kz < K; kz++) {
                if (kz > t || kz <= t - planes)
                    continue;
#pragma unroll
                for (int kx = 0; kx < K; kx++) {
                    const float w = p.w[(kz * K + ky) * K + kx];
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        acc[K - 1 - kz][i] = fmaf(w, sup[CVK_3D_XP - R + i + kx],
                                                  acc[K - 1 - kz][i]);
                }
            }
        }
        const int o = t - (K - 1); /* acc[0] is complete */
        if (o >= 0 && y < p.H) {
            char *row = p.out + (z0 + o) * p.out_str[0] + y * p.out_str[1];
            const long long x = x0 + 4 * lane + p.shift;
            if (p.vec_store && p.out_type == CVI_DTYPE_FLOAT32 && x >= 0 && x + 4 <= p.W) {
                *(float4 *)((float *)row + x) = make_float4(acc[0][0], acc[0][1], acc[0][2],
                                                            acc[0][3]);
            } else {
#pragma unroll
                for (int i = 0; i < 4; i++)
                    if (x + i >= 0 && x + i < p.W)
                        cvk_store_float(p.out_type, row, x + i, acc[0][i]);
            }
        }
#pragma unroll
        for (int a = 0; a < K - 1; a++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                acc[a][i] = acc[a + 1][i];
#pragma unroll
        for (int i = 0; i < 4; i++)
            acc[K - 1][i] = 0.0f;
    }
}

/* The separable walk (the file's header): x taps into xrows (ROWS x TX),
 * y taps per output, z taps into the rolling accumulators; p.w holds the
 * z, y and x taps, K each. Dynamic shared memory: cvk_sep3d_smem(K).
 * (Filtering along y first, on 128-column tiles holding the x halo, needs
 * fewer instructions but more registers: measured slower,
 * docs/architecture.md "Measured choices".) */
template <int K>
__global__ void __launch_bounds__(CVK_3D_THREADS)
    cvk_sep3d_kernel(const __grid_constant__ cvk_direct3d_params p)
{
    enum { R = K / 2, XP = (R + 3) / 4 * 4, SW = CVK_3D_TX + 2 * XP, ROWS = CVK_3D_TY + K - 1 };
    CVK_DYNAMIC_SHARED(smem);
    float *tile = (float *)smem;         /* 3 planes' tiles, ROWS x SW each */
    float *xrows = tile + 3 * ROWS * SW; /* the current plane filtered along x */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long x0 = p.x_base + (long long)blockIdx.x * CVK_3D_TX; /* centred columns */
    const long long y0 = (long long)blockIdx.y * CVK_3D_TY;
    const long long z0 = (long long)blockIdx.z * p.zrun;
    const int planes = (int)(p.D - z0 < p.zrun ? p.D - z0 : p.zrun);
    const bool fast = p.aligned && x0 - XP >= 0 && x0 + CVK_3D_TX + XP <= p.W;
    const long long y = y0 + warp;

    float acc[K][4];
#pragma unroll
    for (int a = 0; a < K; a++)
#pragma unroll
        for (int i = 0; i < 4; i++)
            acc[a][i] = 0.0f;

    const int total = planes + K - 1; /* >= K >= 3 */
    const long long zbase = z0 - p.koffz;
    cvk_load_plane<XP, CVK_3D_TX>(p, tile, zbase, y0, x0, ROWS, fast);
    cvk_cp_commit();
    cvk_load_plane<XP, CVK_3D_TX>(p, tile + ROWS * SW, zbase + 1, y0, x0, ROWS, fast);
    cvk_cp_commit();

#pragma unroll 1
    for (int t = 0; t < total; t++) {
        cvk_cp_wait<1>();  /* plane t's copies are done (t + 1's may fly on) */
        __syncthreads();   /* ...everyone's; plane t - 1's readers are done */
        if (t + 2 < total) /* into the buffer plane t - 1 used */
            cvk_load_plane<XP, CVK_3D_TX>(p, tile + (t + 2) % 3 * ROWS * SW, zbase + t + 2, y0, x0,
                                          ROWS, fast);
        cvk_cp_commit();
        const float *buf = tile + t % 3 * ROWS * SW;
        /* x: every tile row, 4 columns a lane from the aligned 4 + 2 XP around them */
#pragma unroll 1
        for (int r = warp; r < ROWS; r += CVK_3D_TY) {
            const float *src = buf + r * SW + 4 * lane;
            float sup[4 + 2 * XP];
#pragma unroll
            for (int q = 0; q < (4 + 2 * XP) / 4; q++) {
                float4 v = *(const float4 *)(src + 4 * q);
                sup[4 * q] = v.x, sup[4 * q + 1] = v.y, sup[4 * q + 2] = v.z, sup[4 * q + 3] = v.w;
            }
            float h[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int kx = 0; kx < K; kx++)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    h[i] = fmaf(p.w[2 * K + kx], sup[XP - R + i + kx], h[i]);
            *(float4 *)(xrows + r * CVK_3D_TX + 4 * lane) = make_float4(h[0], h[1], h[2], h[3]);
        }
        __syncthreads();
        /* y: the warp's row */
        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int ky = 0; ky < K; ky++) {
            const float4 q = *(const float4 *)(xrows + (warp + ky) * CVK_3D_TX + 4 * lane);
            const float w = p.w[K + ky];
            v[0] = fmaf(w, q.x, v[0]), v[1] = fmaf(w, q.y, v[1]);
            v[2] = fmaf(w, q.z, v[2]), v[3] = fmaf(w, q.w, v[3]);
        }
        /* z: plane t adds to outputs t - kz (tap kz) in acc[K-1-kz] */
#pragma unroll
        for (int kz = 0; kz < K; kz++) {
            if (kz > t || kz <= t - planes)
                continue;
#pragma unroll
            for (int i = 0; i < 4; i++)
                acc[K - 1 - kz][i] = fmaf(p.w[kz], v[i], acc[K - 1 - kz][i]);
        }
        const int o = t - (K - 1); /* acc[0] is complete */
        if (o >= 0 && y < p.H) {
            char *row = p.out + (z0 + o) * p.out_str[0] + y * p.out_str[1];
            const long long x = x0 + 4 * lane + p.shift;
            if (p.vec_store && p.out_type == CVI_DTYPE_FLOAT32 && x >= 0 && x + 4 <= p.W) {
                *(float4 *)((float *)row + x) = make_float4(acc[0][0], acc[0][1], acc[0][2],
                                                            acc[0][3]);
            } else {
#pragma unroll
                for (int i = 0; i < 4; i++)
                    if (x + i >= 0 && x + i < p.W)
                        cvk_store_float(p.out_type, row, x + i, acc[0][i]);
            }
        }
#pragma unroll
        for (int a = 0; a < K - 1; a++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                acc[a][i] = acc[a + 1][i];
#pragma unroll
        for (int i = 0; i < 4; i++)
            acc[K - 1][i] = 0.0f;
    }
}

/* Dynamic shared memory of cvk_sep3d_kernel<K>: three tiles and the x-filtered rows. */
static size_t cvk_sep3d_smem(int K)
{
    const int R = K / 2, XP = (R + 3) / 4 * 4, rows = CVK_3D_TY + K - 1;
    return (size_t)(3 * rows * (CVK_3D_TX + 2 * XP) + rows * CVK_3D_TX) * sizeof(float);
}

typedef void (*cvk_direct3d_kernel_fn)(cvk_direct3d_params);

static cvk_direct3d_kernel_fn pick3d(int in_type, int channels, int K, int separable)
{
    if (in_type != CVI_DTYPE_FLOAT32 || channels != 1)
        return 0;
    if (separable) {
        switch (K) {
        case 3: return cvk_sep3d_kernel<3>;
        case 5: return cvk_sep3d_kernel<5>;
        case 7: return cvk_sep3d_kernel<7>;
        case 9: return cvk_sep3d_kernel<9>;
        case 11: return cvk_sep3d_kernel<11>;
        case 13: return cvk_sep3d_kernel<13>;
        case 15: return cvk_sep3d_kernel<15>;
        case 17: return cvk_sep3d_kernel<17>;
        default: return 0;
        }
    }
    switch (K) {
    case 3: return cvk_direct3d_kernel<3>;
    case 5: return cvk_direct3d_kernel<5>;
    case 7: return cvk_direct3d_kernel<7>;
    case 9: return cvk_direct3d_kernel<9>;
    default: return 0;
    }
}

extern "C" int cvk_direct3d_supports(int in_type, int channels, int ksize, int separable)
{
    return pick3d(in_type, channels, ksize, separable) != 0;
}

extern "C" cudaError_t cvk_direct3d_launch(const cvk_direct3d_args *a, cudaStream_t stream)
{
    cvk_direct3d_kernel_fn fn = pick3d(a->in_type, a->channels, a->ksize, a->separable);
    if (!fn)
        return cudaErrorInvalidValue;
    const int K = a->ksize, R = K / 2;
    cvk_direct3d_params p;
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
    p.cval = a->cval;
    if (a->separable) {
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
    p.vec_store = p.shift % 4 == 0 && (uintptr_t)a->out % 16 == 0 && a->out_strides[0] % 16 == 0 &&
                  a->out_strides[1] % 16 == 0;
    /* centred columns x' = x - shift must cover [0, W) */
    const long long lo = -(long long)p.shift, hi = p.W - p.shift;
    p.x_base = lo >= 0 ? 0 : -CVK_3D_TX;
    const long long bx = (hi - p.x_base + CVK_3D_TX - 1) / CVK_3D_TX;
    const long long by = (p.H + CVK_3D_TY - 1) / CVK_3D_TY;
    /* planes a block walks: enough blocks for about four waves of 3 a SM,
     * at least 4(K-1) planes so the z halo stays a small share */
    const long long want = cvk_multiprocessors(a->multiprocessors) * 12;
    long long zrun = (p.D * bx * by + want - 1) / want;
    const long long min_run = 4 * (K - 1);
    zrun = zrun < min_run ? min_run : zrun;
    if (zrun > p.D)
        zrun = p.D;
    p.zrun = (int)zrun;
    const long long bz = (p.D + zrun - 1) / zrun;
    if (bx > CVK_DEVICE_GRID_X || by > CVK_DEVICE_GRID_YZ || bz > CVK_DEVICE_GRID_YZ)
        return cudaErrorInvalidConfiguration;
    const dim3 grid((unsigned)bx, (unsigned)by, (unsigned)bz);
    if (a->separable) {
        const size_t smem = cvk_sep3d_smem(K);
        if (smem > CVK_DEFAULT_SHARED) {
            cudaError_t e = cudaFuncSetAttribute(
                (const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
            if (e != cudaSuccess)
                return e;
        }
        CVK_LAUNCH(fn, grid, CVK_3D_THREADS, smem, stream, (p));
    } else {
        CVK_LAUNCH(fn, grid, CVK_3D_THREADS, 0, stream, (p));
    }
    return cudaGetLastError();
}
