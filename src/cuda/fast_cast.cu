/*
 * fast_cast.cu - scipy's cast (CVI_CAST_TRUNCATE) on uint8 and uint16
 * images of 1 to 4 interleaved channels, for separable filters and 1-D
 * passes (fast_cast.h): every sum in double, each output cast exactly as
 * the CPU reference does.
 *
 * A block of CAST_THREADS threads takes a tile of about CAST_THREADS / C
 * pixels (CAST_THREADS elements of a row at most) by a few rows. A thread
 * takes an element (a column) of the tile and computes the vertical sums of
 * CAST_R rows at once from a window of CAST_R input values rotating through
 * registers (each input element loaded and converted once for CAST_R
 * outputs; loads coalesced along the rows, rows above and below the tile
 * from L1 and L2; columns whose taps all lie inside skip the boundary rule).
 * A vertical pass alone (one x tap, cvk_cast_pass_kernel) stores those sums
 * directly, CAST_TH_PASS rows a tile. With taps along x
 * (cvk_cast_sep_kernel) the tile is CAST_TH_SEP rows: the vertical sums of
 * its columns and of the kx - 1 halo columns are staged in shared memory as
 * doubles (20 to 33 KiB a block); a halo column past the image's edge is
 * the vertical sum of the column the mode maps it to (cval in every row
 * under CONSTANT), which is the dense outer product's meaning. Then a thread
 * sums the x taps of CAST_P consecutive pixels of one channel from a
 * rotating window likewise (a quarter of the shared-memory reads of one
 * output a thread; the staged rows are stored by phase so that a warp reads
 * consecutive doubles: no bank conflicts) and stores the cast results.
 * nvcc 13.0, sm_90: 56 to 62 registers, no spills (4 blocks of 256 threads a
 * multiprocessor by __launch_bounds__).
 */
#include "fast_cast.h"

#include "../kernel_math.h"
#include "device_common.cuh"

#define CAST_THREADS 256
#define CAST_TH_SEP 8   /* rows a tile with x taps (its shared-memory size) */
#define CAST_TH_PASS 32 /* rows a tile of a vertical pass */
#define CAST_R 4        /* rows whose sums a thread computes at once */
#define CAST_P 4        /* pixels whose x sums a thread computes at once */

/* An input element as double. On the device through the exponent of 2^52
 * (a double add, where a conversion instruction runs at a quarter of the
 * FMA rate on sm_90); exact for every uint16. */
__device__ __forceinline__ double cast_value(unsigned v)
{
#ifdef __CUDA_ARCH__
    return __hiloint2double(0x43300000, (int)v) - 4503599627370496.0;
#else
    return (double)v;
#endif
}

/* The input element at row j of the column at col (whose pixel is inside):
 * `inside` says j is, else the mode maps it; cval for a column outside
 * under CONSTANT (col NULL). */
template <typename T>
__device__ __forceinline__ double cast_load(const cvk_cast_args &a, const T *col, long long j,
                                            bool inside)
{
    if (!col)
        return a.cval;
    if (!inside) {
        j = cvi_boundary_index(j, a.height, a.mode);
        if (j < 0)
            return a.cval;
    }
    return cast_value(__ldg(col + j * a.is[1]));
}

/* The vertical sums s[r] at rows y0 + r (r < R; rows past the image are
 * computed too, through the mode) of the column at col: each sum over the
 * y taps in order, fused multiply-adds in double. The R rows share a window
 * of R input values: at tap k, slot (r + k) % R holds row y0 + r + k of the
 * output r; the slot of output 0's row is then reloaded with the row the
 * last output needs next, so each input element is loaded and converted
 * once for the R outputs, and the taps unrolled by R keep every slot a
 * register (no moves). */
template <typename T, int R>
__device__ __forceinline__ void cast_columns(const cvk_cast_args &a, const T *col, long long y0,
                                             double (&s)[R])
{
    const long long y1 = y0 - a.koffy; /* the row of tap 0 of output row y0 */
    const bool inside = y1 >= 0 && y1 + R - 1 + a.ky <= a.height;
    double win[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        s[r] = 0.0;
        win[r] = cast_load<T>(a, col, y1 + r, inside);
    }
    for (int k0 = 0; k0 < a.ky; k0 += R) {
#pragma unroll
        for (int u = 0; u < R; u++) {
            const int k = k0 + u;
            if (k < a.ky) {
                const double w = a.ty[k];
#pragma unroll
                for (int r = 0; r < R; r++)
                    s[r] = fma(w, win[(r + u) % R], s[r]);
                if (k + 1 < a.ky)
                    win[u] = cast_load<T>(a, col, y1 + k + R, inside);
            }
        }
    }
}

/* The cast of kernel_math.h; without a divisor (1: v / 1 is v) the
 * division is left out. */
__device__ __forceinline__ void cast_store(const cvk_cast_args &a, unsigned char *p, double v)
{
    *p = a.divisor == 1.0 ? (unsigned char)(unsigned long long)cvi_truncate_i64(v, a.snap)
                          : cvi_truncate_u8(v, a.divisor, a.snap);
}
__device__ __forceinline__ void cast_store(const cvk_cast_args &a, unsigned short *p, double v)
{
    *p = a.divisor == 1.0 ? (unsigned short)(unsigned long long)cvi_truncate_i64(v, a.snap)
                          : cvi_truncate_u16(v, a.divisor, a.snap);
}

/* A vertical pass (one x tap): a thread per element of a tile row, its
 * column's sums stored directly. No shared memory, no barrier. */
template <typename T, int C>
__global__ void __launch_bounds__(CAST_THREADS, 4)
    cvk_cast_pass_kernel(const __grid_constant__ cvk_cast_args a)
{
    enum { TW = CAST_THREADS / C, TE = TW * C };
    const long long tiles_x = (a.width + TW - 1) / TW;
    const long long tiles_y = (a.height + CAST_TH_PASS - 1) / CAST_TH_PASS;
    const int t = threadIdx.x, c = t % C;
    if (t >= TE)
        return;
    for (long long z = blockIdx.z; z < a.planes; z += gridDim.z)
        for (long long by = blockIdx.y; by < tiles_y; by += gridDim.y) {
            const long long y0 = by * CAST_TH_PASS;
            const int rows = (int)(a.height - y0 < CAST_TH_PASS ? a.height - y0 : CAST_TH_PASS);
            for (long long bx = blockIdx.x; bx < tiles_x; bx += gridDim.x) {
                const long long x = bx * TW + t / C;
                if (x >= a.width)
                    continue;
                const T *col = (const T *)a.in + z * a.is[0] + x * a.is[2] + c * a.ics;
                T *dst = (T *)a.out + z * a.os[0] + x * a.os[2] + c * a.ocs;
                for (int r0 = 0; r0 < rows; r0 += CAST_R) {
                    double v[CAST_R];
                    cast_columns<T, CAST_R>(a, col, y0 + r0, v);
#pragma unroll
                    for (int r = 0; r < CAST_R; r++)
                        if (r0 + r < rows)
                            cast_store(a, dst + (y0 + r0 + r) * a.os[1], a.tx[0] * v[r]);
                }
            }
        }
}

/* Taps along x (and y): the tile's vertical sums staged in shared memory,
 * then the x taps over them, CAST_P consecutive pixels of one channel a
 * thread. The staged row is stored by phase: pixel q of the row (channel
 * c) at ((q % CAST_P) * L4 + q / CAST_P) * C + c, so that the threads of a
 * warp (consecutive groups g of CAST_P pixels, channels fastest) read
 * consecutive doubles at every tap (no bank conflicts), and each thread's
 * window of CAST_P values slides along the row as cast_columns' does. */
template <typename T, int C>
__global__ void __launch_bounds__(CAST_THREADS, 4)
    cvk_cast_sep_kernel(const __grid_constant__ cvk_cast_args a)
{
    enum { P = CAST_P, TW = CAST_THREADS / C / P * P, TH = CAST_TH_SEP, GC = TW / P * C };
    CVK_DYNAMIC_SHARED(smem);
    double *mid = (double *)smem;
    const int NP = TW + a.kx - 1;    /* staged pixels a row */
    const int L4 = (NP + P - 1) / P; /* of each phase */
    const int ROW = P * L4 * C;      /* doubles a staged row */
    const long long tiles_x = (a.width + TW - 1) / TW, tiles_y = (a.height + TH - 1) / TH;
    const int t = threadIdx.x;
    /* block-uniform loop bounds: the barriers below stay legal */
    for (long long z = blockIdx.z; z < a.planes; z += gridDim.z) {
        const T *in = (const T *)a.in + z * a.is[0];
        T *out = (T *)a.out + z * a.os[0];
        for (long long by = blockIdx.y; by < tiles_y; by += gridDim.y) {
            const long long y0 = by * TH;
            const int rows = (int)(a.height - y0 < TH ? a.height - y0 : TH);
            for (long long bx = blockIdx.x; bx < tiles_x; bx += gridDim.x) {
                const long long x0 = bx * TW;
                /* the vertical sums of the tile's columns and halo */
                const long long p0 = x0 - a.koffx; /* first staged pixel */
                for (int j = t; j < NP * C; j += CAST_THREADS) {
                    const int q = j / C, c = j % C;
                    const long long m = cvi_boundary_index(p0 + q, a.width, a.mode);
                    const T *col = m < 0 ? (const T *)0 : in + m * a.is[2] + c * a.ics;
                    double *dst = mid + ((q % P) * L4 + q / P) * C + c;
                    for (int r0 = 0; r0 < rows; r0 += CAST_R) {
                        double v[CAST_R];
                        cast_columns<T, CAST_R>(a, col, y0 + r0, v);
#pragma unroll
                        for (int r = 0; r < CAST_R; r++)
                            if (r0 + r < rows)
                                dst[(r0 + r) * ROW] = v[r];
                    }
                }
                __syncthreads();
                /* the x taps over them: item (row, group g, channel c) */
                for (int i = t; i < rows * GC; i += CAST_THREADS) {
                    const int r = i / GC, g = i % GC / C, c = i % C;
                    const double *m = mid + r * ROW + g * C + c; /* phase 0 of pixel P g */
                    double s[P], win[P];
#pragma unroll
                    for (int o = 0; o < P; o++) {
                        s[o] = 0.0;
                        win[o] = m[o * L4 * C];
                    }
                    /* at tap k, slot (o + k) % P holds staged pixel P g + o + k */
                    for (int k0 = 0; k0 < a.kx; k0 += P) {
#pragma unroll
                        for (int u = 0; u < P; u++) {
                            const int k = k0 + u;
                            if (k < a.kx) {
                                const double w = a.tx[k];
#pragma unroll
                                for (int o = 0; o < P; o++)
                                    s[o] = fma(w, win[(o + u) % P], s[o]);
                                if (k + 1 < a.kx) /* pixel P g + k + P: phase u */
                                    win[u] = m[(u * L4 + k0 / P + 1) * C];
                            }
                        }
                    }
                    const long long x = x0 + P * g;
                    T *dst = out + (y0 + r) * a.os[1] + x * a.os[2] + c * a.ocs;
#pragma unroll
                    for (int o = 0; o < P; o++)
                        if (x + o < a.width)
                            cast_store(a, dst + o * a.os[2], s[o]);
                }
                __syncthreads(); /* mid is refilled for the next tile */
            }
        }
    }
}

typedef void (*cast_kernel_fn)(cvk_cast_args);

template <typename T>
static cast_kernel_fn pick(int C, int pass)
{
    switch (C) {
    case 1: return pass ? cvk_cast_pass_kernel<T, 1> : cvk_cast_sep_kernel<T, 1>;
    case 2: return pass ? cvk_cast_pass_kernel<T, 2> : cvk_cast_sep_kernel<T, 2>;
    case 3: return pass ? cvk_cast_pass_kernel<T, 3> : cvk_cast_sep_kernel<T, 3>;
    case 4: return pass ? cvk_cast_pass_kernel<T, 4> : cvk_cast_sep_kernel<T, 4>;
    default: return 0;
    }
}

extern "C" cudaError_t cvk_cast_launch(const cvk_cast_args *a, cudaStream_t stream)
{
    const int C = a->channels;
    if (C < 1 || C > CVK_CAST_MAX_CHANNELS || a->ky < 1 || a->ky > CVK_CAST_MAX_K || a->kx < 1 ||
        a->kx > CVK_CAST_MAX_K || a->koffy < 0 || a->koffy >= a->ky || a->koffx < 0 ||
        a->koffx >= a->kx || a->planes < 1 || a->height < 1 || a->width < 1 ||
        (a->type != CVI_DTYPE_UINT8 && a->type != CVI_DTYPE_UINT16))
        return cudaErrorInvalidValue;
    const int pass = a->kx == 1;
    cast_kernel_fn fn = a->type == CVI_DTYPE_UINT8 ? pick<unsigned char>(C, pass)
                                                   : pick<unsigned short>(C, pass);
    const long long TW = pass ? CAST_THREADS / C : CAST_THREADS / C / CAST_P * CAST_P;
    const int th = pass ? CAST_TH_PASS : CAST_TH_SEP;
    const long long L4 = (TW + a->kx - 1 + CAST_P - 1) / CAST_P;
    const size_t smem = pass ? 0 : (size_t)th * (size_t)(CAST_P * L4 * C) * sizeof(double);
    const dim3 grid(cvk_grid_x(cvk_ceil_div(a->width, TW)),
                    cvk_grid_yz(cvk_ceil_div(a->height, th)), cvk_grid_yz(a->planes));
    CVK_LAUNCH(fn, grid, CAST_THREADS, smem, stream, (*a));
    return cudaGetLastError();
}
