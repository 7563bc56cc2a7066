/*
 * kernels_3d.cu - the 3-D kernels: the chapter's strategies carried to
 * volumes, with every boundary mode, any filter extents and offsets, four
 * element types, interleaved channels and arbitrary strides: basic,
 * constant, tiled (blocks the size of the output tile; threads loop to
 * stage the input tile) and cached (only the tile's own elements staged).
 *
 * Grid: x and y walk output tiles, z walks (z tiles) x channels; all loop
 * (grid-stride) past the grid's limits with block-uniform bounds.
 * Output (i0, i1, i2) reads input (i0 + k0 - koff0, i1 + k1 - koff1,
 * i2 + k2 - koff2).
 */
#include "device_common.cuh"

/* basic and constant: one output per thread (blocks of 32 x 8, one z plane
 * each), weights at w in C order. Windows wholly inside skip the boundary
 * rule. */
template <typename T, typename A>
__device__ __forceinline__ void cvk_3d_per_output(const cvk_args &a, const A *w)
{
    const T *in = (const T *)a.in;
    const i64 n0 = a.n[0], n1 = a.n[1], n2 = a.n[2];
    const i64 s0 = a.is[0], s1 = a.is[1], s2 = a.is[2];
    const int K0 = a.k[0], K1 = a.k[1], K2 = a.k[2];
    for (i64 bz = blockIdx.z; bz < a.tiles[2]; bz += gridDim.z) {
        const i64 c = bz / n0, i0 = bz - c * n0;
        const T *src = in + c * a.ics;
        for (i64 by = blockIdx.y; by < a.tiles[1]; by += gridDim.y) {
            const i64 i1 = by * CVK_BASIC3_Y + threadIdx.y;
            for (i64 bx = blockIdx.x; bx < a.tiles[0]; bx += gridDim.x) {
                const i64 i2 = bx * CVK_BASIC3_X + threadIdx.x;
                if (i1 >= n1 || i2 >= n2)
                    continue;
                const i64 j0 = i0 - a.koff[0], j1 = i1 - a.koff[1], j2 = i2 - a.koff[2];
                A acc = 0;
                const A *wk = w;
                if (j0 >= 0 && j0 + K0 <= n0 && j1 >= 0 && j1 + K1 <= n1 && j2 >= 0 &&
                    j2 + K2 <= n2) {
                    const T *p = src + j0 * s0 + j1 * s1 + j2 * s2;
                    for (int k0 = 0; k0 < K0; k0++) {
                        const T *plane = p + k0 * s0;
                        for (int k1 = 0; k1 < K1; k1++, wk += K2) {
                            const T *row = plane + k1 * s1;
                            for (int k2 = 0; k2 < K2; k2++)
                                acc += wk[k2] * cvk_ld<T, A>(row + k2 * s2);
                        }
                    }
                } else {
                    for (int k0 = 0; k0 < K0; k0++) {
                        const i64 r0 = cvi_boundary_index(j0 + k0, n0, a.mode);
                        for (int k1 = 0; k1 < K1; k1++, wk += K2) {
                            const i64 r1 = cvi_boundary_index(j1 + k1, n1, a.mode);
                            if ((r0 | r1) < 0) { /* CONSTANT: the whole row is cval */
                                for (int k2 = 0; k2 < K2; k2++)
                                    acc += wk[k2] * (A)a.cval;
                            } else {
                                const T *row = src + r0 * s0 + r1 * s1;
                                for (int k2 = 0; k2 < K2; k2++)
                                    acc += wk[k2] * cvk_fetch_x<T, A>(a, row, j2 + k2);
                            }
                        }
                    }
                }
                cvk_store(a, c * a.ocs + i0 * a.os[0] + i1 * a.os[1] + i2 * a.os[2], acc);
            }
        }
    }
}

template <typename T, typename A>
__global__ void __launch_bounds__(CVK_BASIC3_X *CVK_BASIC3_Y, 4)
    cvk_3d_basic(const __grid_constant__ cvk_args a)
{
    cvk_3d_per_output<T, A>(a, (const A *)a.weights);
}

template <typename T, typename A>
__global__ void __launch_bounds__(CVK_BASIC3_X *CVK_BASIC3_Y, 4)
    cvk_3d_constant(const __grid_constant__ cvk_args a, const __grid_constant__ cvk_bank b)
{
    cvk_3d_per_output<T, A>(a, cvk_bank_weights(b, (A)0));
}

/* tiled: the 64 x 4 x 4 block is the output tile; its threads loop to stage
 * the (63 + K2) x (3 + K1) x (3 + K0) input tile in dynamic shared memory,
 * ghost cells filled by the mode; then each computes its own output. */
template <typename T, typename A>
__global__ void __launch_bounds__(CVK_TILED_X *CVK_TILED_Y *CVK_TILED_Z, 1)
    cvk_3d_tiled(const __grid_constant__ cvk_args a, const __grid_constant__ cvk_bank b)
{
    CVK_DYNAMIC_SHARED(cvk_smem);
    A *tile = (A *)cvk_smem;
    const A *w = cvk_bank_weights(b, (A)0);
    const T *in = (const T *)a.in;
    const i64 n0 = a.n[0], n1 = a.n[1], n2 = a.n[2];
    const i64 s0 = a.is[0], s1 = a.is[1], s2 = a.is[2];
    const int K0 = a.k[0], K1 = a.k[1], K2 = a.k[2];
    const int W = CVK_TILED_X - 1 + K2, H = CVK_TILED_Y - 1 + K1, D = CVK_TILED_Z - 1 + K0;
    const int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
    const i64 ztiles = (n0 + CVK_TILED_Z - 1) / CVK_TILED_Z;
    for (i64 bz = blockIdx.z; bz < a.tiles[2]; bz += gridDim.z) {
        const i64 c = bz / ztiles, z0 = (bz - c * ztiles) * CVK_TILED_Z;
        const T *src = in + c * a.ics;
        for (i64 by = blockIdx.y; by < a.tiles[1]; by += gridDim.y) {
            const i64 y0 = by * CVK_TILED_Y;
            for (i64 bx = blockIdx.x; bx < a.tiles[0]; bx += gridDim.x) {
                const i64 x0 = bx * CVK_TILED_X;
                for (int u0 = tz; u0 < D; u0 += CVK_TILED_Z) {
                    const i64 r0 = cvi_boundary_index(z0 - a.koff[0] + u0, n0, a.mode);
                    for (int u1 = ty; u1 < H; u1 += CVK_TILED_Y) {
                        const i64 r1 = cvi_boundary_index(y0 - a.koff[1] + u1, n1, a.mode);
                        const T *row = src + r0 * s0 + r1 * s1; /* read only if r0, r1 >= 0 */
                        A *trow = tile + (u0 * H + u1) * W;
                        for (int u2 = tx; u2 < W; u2 += CVK_TILED_X) {
                            const i64 r2 = cvi_boundary_index(x0 - a.koff[2] + u2, n2, a.mode);
                            trow[u2] = (r0 | r1 | r2) < 0 ? (A)a.cval : cvk_ld<T, A>(row + r2 * s2);
                        }
                    }
                }
                __syncthreads();
                const i64 i0 = z0 + tz, i1 = y0 + ty, i2 = x0 + tx;
                if (i0 < n0 && i1 < n1 && i2 < n2) {
                    A acc = 0;
                    const A *wk = w;
                    for (int k0 = 0; k0 < K0; k0++) {
                        for (int k1 = 0; k1 < K1; k1++, wk += K2) {
                            const A *trow = tile + ((tz + k0) * H + ty + k1) * W + tx;
                            for (int k2 = 0; k2 < K2; k2++)
                                acc += wk[k2] * trow[k2];
                        }
                    }
                    cvk_store(a, c * a.ocs + i0 * a.os[0] + i1 * a.os[1] + i2 * a.os[2], acc);
                }
                __syncthreads();
            }
        }
    }
}

/* cached: the 64 x 8 x 2 block stages only its own tile. A filter row
 * (k0, k1) whose plane and row fall inside the tile splits into three runs
 * of taps: left of the tile (global), inside (shared), right (global);
 * other rows come wholly from global memory through the caches. */
template <typename T, typename A>
__global__ void __launch_bounds__(CVK_CACHED_X *CVK_CACHED_Y *CVK_CACHED_Z, 1)
    cvk_3d_cached(const __grid_constant__ cvk_args a, const __grid_constant__ cvk_bank b)
{
    __shared__ A tile[CVK_CACHED_Z][CVK_CACHED_Y][CVK_CACHED_X];
    const A *w = cvk_bank_weights(b, (A)0);
    const T *in = (const T *)a.in;
    const i64 n0 = a.n[0], n1 = a.n[1], n2 = a.n[2];
    const i64 s0 = a.is[0], s1 = a.is[1], s2 = a.is[2];
    const int K0 = a.k[0], K1 = a.k[1], K2 = a.k[2];
    const int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
    const i64 ztiles = (n0 + CVK_CACHED_Z - 1) / CVK_CACHED_Z;
    for (i64 bz = blockIdx.z; bz < a.tiles[2]; bz += gridDim.z) {
        const i64 c = bz / ztiles, z0 = (bz - c * ztiles) * CVK_CACHED_Z;
        const i64 ze = cvk_min64(z0 + CVK_CACHED_Z, n0);
        const i64 i0 = z0 + tz;
        const T *src = in + c * a.ics;
        for (i64 by = blockIdx.y; by < a.tiles[1]; by += gridDim.y) {
            const i64 y0 = by * CVK_CACHED_Y;
            const i64 ye = cvk_min64(y0 + CVK_CACHED_Y, n1);
            const i64 i1 = y0 + ty;
            for (i64 bx = blockIdx.x; bx < a.tiles[0]; bx += gridDim.x) {
                const i64 x0 = bx * CVK_CACHED_X;
                const i64 xe = cvk_min64(x0 + CVK_CACHED_X, n2);
                const i64 i2 = x0 + tx;
                const bool inside = i0 < n0 && i1 < n1 && i2 < n2;
                tile[tz][ty][tx] = inside ? cvk_ld<T, A>(src + i0 * s0 + i1 * s1 + i2 * s2) : (A)0;
                __syncthreads();
                if (inside) {
                    const i64 j0 = i0 - a.koff[0], j1 = i1 - a.koff[1], j2 = i2 - a.koff[2];
                    const int klo = cvk_clamp_int(x0 - j2, K2); /* j2 + k2 >= x0 */
                    const int khi = cvk_clamp_int(xe - j2, K2); /* j2 + k2 < xe */
                    const int off2 = (int)(j2 - x0);            /* = tx - koff2 */
                    A acc = 0;
                    const A *wk = w;
                    for (int k0 = 0; k0 < K0; k0++) {
                        const i64 jj0 = j0 + k0;
                        const bool in0 = jj0 >= z0 && jj0 < ze;
                        const i64 r0 = cvi_boundary_index(jj0, n0, a.mode);
                        for (int k1 = 0; k1 < K1; k1++, wk += K2) {
                            const i64 jj1 = j1 + k1;
                            if (in0 && jj1 >= y0 && jj1 < ye) {
                                const T *row = src + jj0 * s0 + jj1 * s1;
                                const A *trow = tile[jj0 - z0][jj1 - y0];
                                int k2 = 0;
                                for (; k2 < klo; k2++)
                                    acc += wk[k2] * cvk_fetch_x<T, A>(a, row, j2 + k2);
                                for (; k2 < khi; k2++)
                                    acc += wk[k2] * trow[off2 + k2];
                                for (; k2 < K2; k2++)
                                    acc += wk[k2] * cvk_fetch_x<T, A>(a, row, j2 + k2);
                            } else {
                                const i64 r1 = cvi_boundary_index(jj1, n1, a.mode);
                                if ((r0 | r1) < 0) {
                                    for (int k2 = 0; k2 < K2; k2++)
                                        acc += wk[k2] * (A)a.cval;
                                } else {
                                    const T *row = src + r0 * s0 + r1 * s1;
                                    for (int k2 = 0; k2 < K2; k2++)
                                        acc += wk[k2] * cvk_fetch_x<T, A>(a, row, j2 + k2);
                                }
                            }
                        }
                    }
                    cvk_store(a, c * a.ocs + i0 * a.os[0] + i1 * a.os[1] + i2 * a.os[2], acc);
                }
                __syncthreads();
            }
        }
    }
}

extern "C" cudaError_t cvk_launch_3d(int strategy, const cvk_args *args, const cvk_bank *bank,
                                     size_t smem, cudaStream_t stream)
{
    cvk_args a = *args;
    int bx, by, bz; /* block extents = output tile extents */
    switch (strategy) {
    case CVK_BASIC:
    case CVK_CONSTANT: bx = CVK_BASIC3_X, by = CVK_BASIC3_Y, bz = 1; break;
    case CVK_TILED: bx = CVK_TILED_X, by = CVK_TILED_Y, bz = CVK_TILED_Z; break;
    case CVK_CACHED: bx = CVK_CACHED_X, by = CVK_CACHED_Y, bz = CVK_CACHED_Z; break;
    default: return cudaErrorInvalidValue;
    }
    a.tiles[0] = cvk_ceil_div(a.n[2], bx);
    a.tiles[1] = cvk_ceil_div(a.n[1], by);
    a.tiles[2] = cvk_ceil_div(a.n[0], bz) * a.channels;
    /* the direct kernels take one z plane per block: tiles[2] = n0 * channels */
    const dim3 grid(cvk_grid_x(a.tiles[0]), cvk_grid_yz(a.tiles[1]), cvk_grid_yz(a.tiles[2]));
    const dim3 block(bx, by, bz);
    cudaError_t err = cudaSuccess;
    switch (strategy) {
    case CVK_BASIC: CVK_LAUNCH_TYPED_CAST(cvk_3d_basic, a, grid, block, 0, stream, (a)); break;
    case CVK_CONSTANT:
        CVK_LAUNCH_TYPED_CAST(cvk_3d_constant, a, grid, block, 0, stream, (a, *bank));
        break;
    case CVK_TILED:
        CVK_OPT_IN_SHARED(cvk_3d_tiled, a, smem, err);
        if (err != cudaSuccess)
            return err;
        CVK_LAUNCH_TYPED(cvk_3d_tiled, a, grid, block, smem, stream, (a, *bank));
        break;
    default: CVK_LAUNCH_TYPED(cvk_3d_cached, a, grid, block, 0, stream, (a, *bank)); break;
    }
    return cudaGetLastError();
}
