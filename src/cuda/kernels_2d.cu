/*
 * kernels_2d.cu - the 2-D kernels of the convolution chapter, generalised to
 * every boundary mode, any filter extents and offsets, four element types,
 * interleaved channels and arbitrary strides: basic, constant, tiled-in
 * (blocks the size of the input tile, edge threads idle while outputs are
 * computed), tiled-out (blocks the size of the output tile, threads loop to
 * stage the input tile) and cached (only the tile's own elements staged).
 *
 * Axes 1 (y, rows) and 2 (x); axis 0 has extent 1 for 2-D problems. Grid: x
 * and y walk output tiles, z the channels; all three loop (grid-stride) past
 * the grid's limits, with block-uniform bounds so barriers stay legal.
 * Output (i1, i2) reads input (i1 + k1 - koff1, i2 + k2 - koff2).
 */
#include "device_common.cuh"

/* basic and constant: one output per thread, weights at w (C order, K2 per
 * row). Windows wholly inside the image skip the boundary rule. */
template <typename T, typename A>
__device__ __forceinline__ void cvk_2d_per_output(const cvk_args &a, const A *w)
{
    const T *in = (const T *)a.in;
    const i64 n1 = a.n[1], n2 = a.n[2], s1 = a.is[1], s2 = a.is[2];
    const int K1 = a.k[1], K2 = a.k[2];
    for (i64 c = blockIdx.z; c < a.tiles[2]; c += gridDim.z) {
        const T *src = in + c * a.ics;
        for (i64 by = blockIdx.y; by < a.tiles[1]; by += gridDim.y) {
            const i64 i1 = by * CVK_BASIC2_Y + threadIdx.y;
            for (i64 bx = blockIdx.x; bx < a.tiles[0]; bx += gridDim.x) {
                const i64 i2 = bx * CVK_BASIC2_X + threadIdx.x;
                if (i1 >= n1 || i2 >= n2)
                    continue;
                const i64 j1 = i1 - a.koff[1], j2 = i2 - a.koff[2];
                A acc = 0;
                const A *wk = w;
                if (j1 >= 0 && j1 + K1 <= n1 && j2 >= 0 && j2 + K2 <= n2) {
                    const T *p = src + j1 * s1 + j2 * s2;
                    for (int k1 = 0; k1 < K1; k1++, wk += K2) {
                        const T *row = p + k1 * s1;
                        for (int k2 = 0; k2 < K2; k2++)
                            acc += wk[k2] * cvk_ld<T, A>(row + k2 * s2);
                    }
                } else {
                    for (int k1 = 0; k1 < K1; k1++, wk += K2) {
                        const i64 r1 = cvi_boundary_index(j1 + k1, n1, a.mode);
                        if (r1 < 0) { /* CONSTANT: the whole row is cval */
                            for (int k2 = 0; k2 < K2; k2++)
                                acc += wk[k2] * (A)a.cval;
                        } else {
                            const T *row = src + r1 * s1;
                            for (int k2 = 0; k2 < K2; k2++)
                                acc += wk[k2] * cvk_fetch_x<T, A>(a, row, j2 + k2);
                        }
                    }
                }
                cvk_store(a, c * a.ocs + i1 * a.os[1] + i2 * a.os[2], acc);
            }
        }
    }
}

template <typename T, typename A>
__global__ void __launch_bounds__(CVK_BASIC2_X *CVK_BASIC2_Y, 5)
    cvk_2d_basic(const __grid_constant__ cvk_args a)
{
    cvk_2d_per_output<T, A>(a, (const A *)a.weights);
}

template <typename T, typename A>
__global__ void __launch_bounds__(CVK_BASIC2_X *CVK_BASIC2_Y, 5)
    cvk_2d_constant(const __grid_constant__ cvk_args a, const __grid_constant__ cvk_bank b)
{
    cvk_2d_per_output<T, A>(a, cvk_bank_weights(b, (A)0));
}

/* tiled-in: the 32 x 32 block is the input tile; each thread stages one
 * value (ghost cells filled by the mode). The output tile is
 * ox x oy = (33 - K2) x (33 - K1), left-aligned: thread (tx, ty) with
 * tx < ox, ty < oy computes output (y0 + ty, x0 + tx) from
 * tile[ty + k1][tx + k2]; the others idle. Needs K1, K2 <= 31. */
template <typename T, typename A>
__global__ void __launch_bounds__(CVK_TILED_IN_X *CVK_TILED_IN_Y, 2)
    cvk_2d_tiled_in(const __grid_constant__ cvk_args a, const __grid_constant__ cvk_bank b)
{
    __shared__ A tile[CVK_TILED_IN_Y][CVK_TILED_IN_X];
    const A *w = cvk_bank_weights(b, (A)0);
    const T *in = (const T *)a.in;
    const i64 n1 = a.n[1], n2 = a.n[2];
    const int K1 = a.k[1], K2 = a.k[2];
    const int ox = CVK_TILED_IN_X + 1 - K2, oy = CVK_TILED_IN_Y + 1 - K1;
    const int tx = threadIdx.x, ty = threadIdx.y;
    for (i64 c = blockIdx.z; c < a.tiles[2]; c += gridDim.z) {
        const T *src = in + c * a.ics;
        for (i64 by = blockIdx.y; by < a.tiles[1]; by += gridDim.y) {
            const i64 y0 = by * oy; /* first output row of the tile */
            for (i64 bx = blockIdx.x; bx < a.tiles[0]; bx += gridDim.x) {
                const i64 x0 = bx * ox;
                tile[ty][tx] = cvk_fetch_yx<T, A>(a, src, y0 - a.koff[1] + ty, x0 - a.koff[2] + tx);
                __syncthreads();
                const i64 i1 = y0 + ty, i2 = x0 + tx;
                if (tx < ox && ty < oy && i1 < n1 && i2 < n2) {
                    A acc = 0;
                    const A *wk = w;
                    for (int k1 = 0; k1 < K1; k1++, wk += K2) {
                        const A *row = &tile[ty + k1][tx];
                        for (int k2 = 0; k2 < K2; k2++)
                            acc += wk[k2] * row[k2];
                    }
                    cvk_store(a, c * a.ocs + i1 * a.os[1] + i2 * a.os[2], acc);
                }
                __syncthreads();
            }
        }
    }
}

/* tiled-out: the 32 x 32 block is the output tile; its threads loop to
 * stage the (31 + K2) x (31 + K1) input tile in dynamic shared memory (row
 * pitch W = 31 + K2), then each computes its own output. */
template <typename T, typename A>
__global__ void __launch_bounds__(CVK_TILED_OUT_X *CVK_TILED_OUT_Y, 2)
    cvk_2d_tiled_out(const __grid_constant__ cvk_args a, const __grid_constant__ cvk_bank b)
{
    CVK_DYNAMIC_SHARED(cvk_smem);
    A *tile = (A *)cvk_smem;
    const A *w = cvk_bank_weights(b, (A)0);
    const T *in = (const T *)a.in;
    const i64 n1 = a.n[1], n2 = a.n[2], s1 = a.is[1], s2 = a.is[2];
    const int K1 = a.k[1], K2 = a.k[2];
    const int W = CVK_TILED_OUT_X - 1 + K2, H = CVK_TILED_OUT_Y - 1 + K1;
    const int tx = threadIdx.x, ty = threadIdx.y;
    for (i64 c = blockIdx.z; c < a.tiles[2]; c += gridDim.z) {
        const T *src = in + c * a.ics;
        for (i64 by = blockIdx.y; by < a.tiles[1]; by += gridDim.y) {
            const i64 y0 = by * CVK_TILED_OUT_Y;
            for (i64 bx = blockIdx.x; bx < a.tiles[0]; bx += gridDim.x) {
                const i64 x0 = bx * CVK_TILED_OUT_X;
                for (int u1 = ty; u1 < H; u1 += CVK_TILED_OUT_Y) {
                    const i64 r1 = cvi_boundary_index(y0 - a.koff[1] + u1, n1, a.mode);
                    const T *row = src + r1 * s1; /* only read when r1 >= 0 */
                    for (int u2 = tx; u2 < W; u2 += CVK_TILED_OUT_X) {
                        const i64 r2 = cvi_boundary_index(x0 - a.koff[2] + u2, n2, a.mode);
                        tile[u1 * W + u2] = (r1 | r2) < 0 ? (A)a.cval : cvk_ld<T, A>(row + r2 * s2);
                    }
                }
                __syncthreads();
                const i64 i1 = y0 + ty, i2 = x0 + tx;
                if (i1 < n1 && i2 < n2) {
                    A acc = 0;
                    const A *wk = w;
                    for (int k1 = 0; k1 < K1; k1++, wk += K2) {
                        const A *trow = tile + (ty + k1) * W + tx;
                        for (int k2 = 0; k2 < K2; k2++)
                            acc += wk[k2] * trow[k2];
                    }
                    cvk_store(a, c * a.ocs + i1 * a.os[1] + i2 * a.os[2], acc);
                }
                __syncthreads();
            }
        }
    }
}

/* cached: the 64 x 8 block stages only its own tile. For each filter row
 * that falls inside the tile's rows, the taps split into three runs: left
 * of the tile (global), inside it (shared), right of it (global); other
 * rows are read wholly from global memory, where the caches hold the
 * neighbours' elements (the chapter's halo cells). */
template <typename T, typename A>
__global__ void __launch_bounds__(CVK_CACHED_X *CVK_CACHED_Y, sizeof(A) == 8 ? 2 : 3)
    cvk_2d_cached(const __grid_constant__ cvk_args a, const __grid_constant__ cvk_bank b)
{
    __shared__ A tile[CVK_CACHED_Y][CVK_CACHED_X];
    const A *w = cvk_bank_weights(b, (A)0);
    const T *in = (const T *)a.in;
    const i64 n1 = a.n[1], n2 = a.n[2], s1 = a.is[1], s2 = a.is[2];
    const int K1 = a.k[1], K2 = a.k[2];
    const int tx = threadIdx.x, ty = threadIdx.y;
    for (i64 c = blockIdx.z; c < a.tiles[2]; c += gridDim.z) {
        const T *src = in + c * a.ics;
        for (i64 by = blockIdx.y; by < a.tiles[1]; by += gridDim.y) {
            const i64 y0 = by * CVK_CACHED_Y;
            const i64 ye = cvk_min64(y0 + CVK_CACHED_Y, n1);
            const i64 i1 = y0 + ty;
            for (i64 bx = blockIdx.x; bx < a.tiles[0]; bx += gridDim.x) {
                const i64 x0 = bx * CVK_CACHED_X;
                const i64 xe = cvk_min64(x0 + CVK_CACHED_X, n2);
                const i64 i2 = x0 + tx;
                const bool inside = i1 < n1 && i2 < n2;
                tile[ty][tx] = inside ? cvk_ld<T, A>(src + i1 * s1 + i2 * s2) : (A)0;
                __syncthreads();
                if (inside) {
                    const i64 j1 = i1 - a.koff[1], j2 = i2 - a.koff[2];
                    const int klo = cvk_clamp_int(x0 - j2, K2); /* j2 + k2 >= x0 */
                    const int khi = cvk_clamp_int(xe - j2, K2); /* j2 + k2 < xe */
                    const int off2 = (int)(j2 - x0);            /* = tx - koff2 */
                    A acc = 0;
                    const A *wk = w;
                    for (int k1 = 0; k1 < K1; k1++, wk += K2) {
                        const i64 jj1 = j1 + k1;
                        if (jj1 >= y0 && jj1 < ye) {
                            const T *row = src + jj1 * s1;
                            const A *trow = tile[jj1 - y0];
                            int k2 = 0;
                            for (; k2 < klo; k2++)
                                acc += wk[k2] * cvk_fetch_x<T, A>(a, row, j2 + k2);
                            for (; k2 < khi; k2++)
                                acc += wk[k2] * trow[off2 + k2];
                            for (; k2 < K2; k2++)
                                acc += wk[k2] * cvk_fetch_x<T, A>(a, row, j2 + k2);
                        } else {
                            const i64 r1 = cvi_boundary_index(jj1, n1, a.mode);
                            if (r1 < 0) {
                                for (int k2 = 0; k2 < K2; k2++)
                                    acc += wk[k2] * (A)a.cval;
                            } else {
                                const T *row = src + r1 * s1;
                                for (int k2 = 0; k2 < K2; k2++)
                                    acc += wk[k2] * cvk_fetch_x<T, A>(a, row, j2 + k2);
                            }
                        }
                    }
                    cvk_store(a, c * a.ocs + i1 * a.os[1] + i2 * a.os[2], acc);
                }
                __syncthreads();
            }
        }
    }
}

extern "C" cudaError_t cvk_launch_2d(int strategy, const cvk_args *args, const cvk_bank *bank,
                                     size_t smem, cudaStream_t stream)
{
    cvk_args a = *args;
    int bx, by;       /* block extents */
    long long tx, ty; /* the step between tiles (output tile extents) */
    switch (strategy) {
    case CVK_BASIC:
    case CVK_CONSTANT: bx = CVK_BASIC2_X, by = CVK_BASIC2_Y, tx = bx, ty = by; break;
    case CVK_TILED_IN:
        bx = CVK_TILED_IN_X, by = CVK_TILED_IN_Y;
        tx = CVK_TILED_IN_X + 1 - a.k[2], ty = CVK_TILED_IN_Y + 1 - a.k[1];
        if (tx < 1 || ty < 1)
            return cudaErrorInvalidValue; /* the strategy's check refuses these */
        break;
    case CVK_TILED_OUT: bx = CVK_TILED_OUT_X, by = CVK_TILED_OUT_Y, tx = bx, ty = by; break;
    case CVK_CACHED: bx = CVK_CACHED_X, by = CVK_CACHED_Y, tx = bx, ty = by; break;
    default: return cudaErrorInvalidValue;
    }
    a.tiles[0] = cvk_ceil_div(a.n[2], tx);
    a.tiles[1] = cvk_ceil_div(a.n[1], ty);
    a.tiles[2] = a.channels;
    const dim3 grid(cvk_grid_x(a.tiles[0]), cvk_grid_yz(a.tiles[1]), cvk_grid_yz(a.tiles[2]));
    const dim3 block(bx, by, 1);
    cudaError_t err = cudaSuccess;
    switch (strategy) {
    case CVK_BASIC: CVK_LAUNCH_TYPED_CAST(cvk_2d_basic, a, grid, block, 0, stream, (a)); break;
    case CVK_CONSTANT:
        CVK_LAUNCH_TYPED_CAST(cvk_2d_constant, a, grid, block, 0, stream, (a, *bank));
        break;
    case CVK_TILED_IN:
        CVK_LAUNCH_TYPED(cvk_2d_tiled_in, a, grid, block, 0, stream, (a, *bank));
        break;
    case CVK_TILED_OUT:
        CVK_OPT_IN_SHARED(cvk_2d_tiled_out, a, smem, err);
        if (err != cudaSuccess)
            return err;
        CVK_LAUNCH_TYPED(cvk_2d_tiled_out, a, grid, block, smem, stream, (a, *bank));
        break;
    default: CVK_LAUNCH_TYPED(cvk_2d_cached, a, grid, block, 0, stream, (a, *bank)); break;
    }
    return cudaGetLastError();
}
