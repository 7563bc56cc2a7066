/*
 * kernels_1d.cu - the 1-D kernels of the convolution chapter, generalised to
 * every boundary mode, any filter extent and offset, four element types,
 * interleaved channels and arbitrary strides: basic (filter in global
 * memory), constant (filter in the constant bank), tiled (input tile plus
 * halo in shared memory), cached (only the tile's own elements in shared
 * memory, halo cells through the caches). Also cvk_launch, the dispatcher.
 *
 * Grid: x walks the output tiles, y the channels; both loop (grid-stride)
 * past the grid's limits. Output i reads input i + k - koff, k in [0, K).
 */
#include "device_common.cuh"

/* basic and constant: one output per thread, weights at w. The window is
 * read straight from global memory; where it lies wholly inside the input
 * no boundary rule is applied. */
template <typename T, typename A>
__device__ __forceinline__ void cvk_1d_per_output(const cvk_args &a, const A *w)
{
    const T *in = (const T *)a.in;
    const i64 n = a.n[2], s = a.is[2];
    const int K = a.k[2];
    for (i64 c = blockIdx.y; c < a.tiles[1]; c += gridDim.y) {
        const T *src = in + c * a.ics;
        for (i64 bx = blockIdx.x; bx < a.tiles[0]; bx += gridDim.x) {
            const i64 i = bx * CVK_BASIC1_X + threadIdx.x;
            if (i >= n)
                continue;
            const i64 j = i - a.koff[2];
            A acc = 0;
            if (j >= 0 && j + K <= n) {
                const T *p = src + j * s;
                for (int k = 0; k < K; k++)
                    acc += w[k] * cvk_ld<T, A>(p + k * s);
            } else {
                for (int k = 0; k < K; k++)
                    acc += w[k] * cvk_fetch_x<T, A>(a, src, j + k);
            }
            cvk_store(a, c * a.ocs + i * a.os[2], acc);
        }
    }
}

template <typename T, typename A>
__global__ void __launch_bounds__(CVK_BASIC1_X, 6) cvk_1d_basic(const __grid_constant__ cvk_args a)
{
    cvk_1d_per_output<T, A>(a, (const A *)a.weights);
}

template <typename T, typename A>
__global__ void __launch_bounds__(CVK_BASIC1_X, 6)
    cvk_1d_constant(const __grid_constant__ cvk_args a, const __grid_constant__ cvk_bank b)
{
    cvk_1d_per_output<T, A>(a, cvk_bank_weights(b, (A)0));
}

/* tiled: the block (CVK_TILED_X threads) is the output tile; its threads
 * loop to stage the input tile of CVK_TILED_X + K - 1 values, ghost cells
 * filled by the mode, in dynamic shared memory. */
template <typename T, typename A>
__global__ void __launch_bounds__(CVK_TILED_X, 16)
    cvk_1d_tiled(const __grid_constant__ cvk_args a, const __grid_constant__ cvk_bank b)
{
    CVK_DYNAMIC_SHARED(cvk_smem);
    A *tile = (A *)cvk_smem;
    const A *w = cvk_bank_weights(b, (A)0);
    const T *in = (const T *)a.in;
    const i64 n = a.n[2];
    const int K = a.k[2];
    const int len = CVK_TILED_X + K - 1;
    const int t = threadIdx.x;
    for (i64 c = blockIdx.y; c < a.tiles[1]; c += gridDim.y) {
        const T *src = in + c * a.ics;
        for (i64 bx = blockIdx.x; bx < a.tiles[0]; bx += gridDim.x) {
            const i64 x0 = bx * CVK_TILED_X;  /* first output of the tile */
            const i64 start = x0 - a.koff[2]; /* input index of tile[0] */
            for (int u = t; u < len; u += CVK_TILED_X)
                tile[u] = cvk_fetch_x<T, A>(a, src, start + u);
            __syncthreads();
            const i64 i = x0 + t;
            if (i < n) {
                /* output x0 + t reads start + t + k = tile[t + k] */
                const A *q = tile + t;
                A acc = 0;
                for (int k = 0; k < K; k++)
                    acc += w[k] * q[k];
                cvk_store(a, c * a.ocs + i * a.os[2], acc);
            }
            __syncthreads(); /* the tile is overwritten next iteration */
        }
    }
}

/* cached: the block (CVK_CACHED_X threads) stages only its own tile; taps
 * inside [x0, xe) come from shared memory, the others (halo and ghost
 * cells) from global memory through the caches. The taps split into three
 * runs, so no tap tests where it lies. */
template <typename T, typename A>
__global__ void __launch_bounds__(CVK_CACHED_X, 16)
    cvk_1d_cached(const __grid_constant__ cvk_args a, const __grid_constant__ cvk_bank b)
{
    __shared__ A tile[CVK_CACHED_X];
    const A *w = cvk_bank_weights(b, (A)0);
    const T *in = (const T *)a.in;
    const i64 n = a.n[2], s = a.is[2];
    const int K = a.k[2];
    const int t = threadIdx.x;
    for (i64 c = blockIdx.y; c < a.tiles[1]; c += gridDim.y) {
        const T *src = in + c * a.ics;
        for (i64 bx = blockIdx.x; bx < a.tiles[0]; bx += gridDim.x) {
            const i64 x0 = bx * CVK_CACHED_X;
            const i64 xe = cvk_min64(x0 + CVK_CACHED_X, n); /* tile's valid end */
            const i64 i = x0 + t;
            tile[t] = i < n ? cvk_ld<T, A>(src + i * s) : (A)0;
            __syncthreads();
            if (i < n) {
                const i64 j = i - a.koff[2];              /* tap k reads j + k */
                const int klo = cvk_clamp_int(x0 - j, K); /* j + k >= x0 */
                const int khi = cvk_clamp_int(xe - j, K); /* j + k < xe */
                A acc = 0;
                int k = 0;
                for (; k < klo; k++)
                    acc += w[k] * cvk_fetch_x<T, A>(a, src, j + k);
                const int off = (int)(j - x0); /* = t - koff: tile[off + k] is j + k */
                for (; k < khi; k++)
                    acc += w[k] * tile[off + k];
                for (; k < K; k++)
                    acc += w[k] * cvk_fetch_x<T, A>(a, src, j + k);
                cvk_store(a, c * a.ocs + i * a.os[2], acc);
            }
            __syncthreads();
        }
    }
}

static cudaError_t launch_1d(int strategy, const cvk_args *args, const cvk_bank *bank, size_t smem,
                             cudaStream_t stream)
{
    cvk_args a = *args;
    const int T = strategy == CVK_BASIC || strategy == CVK_CONSTANT ? CVK_BASIC1_X
                  : strategy == CVK_TILED                           ? CVK_TILED_X
                                                                    : CVK_CACHED_X;
    a.tiles[0] = cvk_ceil_div(a.n[2], T);
    a.tiles[1] = a.channels;
    a.tiles[2] = 1;
    const dim3 grid(cvk_grid_x(a.tiles[0]), cvk_grid_yz(a.tiles[1]), 1);
    const dim3 block(T, 1, 1);
    cudaError_t err = cudaSuccess;
    switch (strategy) {
    case CVK_BASIC: CVK_LAUNCH_TYPED_CAST(cvk_1d_basic, a, grid, block, 0, stream, (a)); break;
    case CVK_CONSTANT:
        CVK_LAUNCH_TYPED_CAST(cvk_1d_constant, a, grid, block, 0, stream, (a, *bank));
        break;
    case CVK_TILED:
        CVK_OPT_IN_SHARED(cvk_1d_tiled, a, smem, err);
        if (err != cudaSuccess)
            return err;
        CVK_LAUNCH_TYPED(cvk_1d_tiled, a, grid, block, smem, stream, (a, *bank));
        break;
    case CVK_CACHED: CVK_LAUNCH_TYPED(cvk_1d_cached, a, grid, block, 0, stream, (a, *bank)); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t cvk_launch(int strategy, const cvk_args *a, const cvk_bank *bank,
                                  size_t smem, cudaStream_t stream)
{
    switch (a->ndim) {
    case 1: return launch_1d(strategy, a, bank, smem, stream);
    case 2: return cvk_launch_2d(strategy, a, bank, smem, stream);
    case 3: return cvk_launch_3d(strategy, a, bank, smem, stream);
    default: return cudaErrorInvalidValue;
    }
}
