/*
 * fast_direct.cu - the launchers of the fast direct kernels (the templates are
 * in fast_direct.cuh, their instances in fast_direct_*.cu): the choice of
 * instance, the grid, the strip height and the shared memory of the 2-D
 * kernels, and for 1-D the kernel for the few outputs near the ends.
 */
#include "fast_direct.cuh"
#include "fast_sep_int.h"

/* Threads per block of the edge kernel. */
#define EDGE_THREADS 128

/* The dynamic shared memory a 2-D block needs. */
static size_t ring_bytes(int es, int V, int HALO)
{
    const int per16 = 16 / es, hp = (HALO + per16 - 1) / per16 * per16;
    return (size_t)CVK_DIRECT_WARPS * CVK_RING_ROWS * (size_t)(32 * V + 2 * hp) * (size_t)es;
}

/* The columns the fast kernels leave: one thread per output element of rows
 * [0, H) and elements [0, lo) and [hi, WC) (output coordinates), every tap
 * of the KY x KX box through cvi_boundary_index. Runtime sizes, weights from
 * the parameter bank; a separable filter (wy then wx in p.w) is applied as
 * its outer product, exactly its meaning. Serves 1-D as one row, KY = 1. */
__global__ void cvk_direct_edge_kernel(const __grid_constant__ cvk_direct_params p, int KY, int KX,
                                       int C, int in_u8, int sep, long long lo, long long hi)
{
    const long long n = lo + (p.WC - hi);
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long y = cvk_grid_row();
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
    cvk_store_float(p.out_type, p.out + y * p.out_row, e, acc);
}

/* Launches cvk_direct_edge_kernel over the output elements outside [lo, hi). */
static cudaError_t launch_edges(const cvk_direct_params &p, int KY, int KX, int C, int in_u8,
                                int sep, long long lo, long long hi, cudaStream_t stream)
{
    const long long n = lo + (p.WC - hi);
    if (n <= 0)
        return cudaSuccess;
    dim3 grid;
    if (!cvk_row_grid((n + EDGE_THREADS - 1) / EDGE_THREADS, p.H, &grid))
        return cudaErrorInvalidConfiguration;
    CVK_LAUNCH(cvk_direct_edge_kernel, grid, EDGE_THREADS, 0, stream,
               (p, KY, KX, C, in_u8, sep, lo, hi));
    return cudaGetLastError();
}

/* The cache slot of the blocks a multiprocessor holds, one a float32
 * instance (cvk_launch_ready): dense and separable by K, single-image and
 * batched; the non-square dense ones by KY and K. */
static int *held_slot(int K, int separable, int batched, int KY)
{
    static int held[2 * 2 * 34], held_rect[18 * 18];
    if (KY != K) /* non-square dense instances (extents <= 17) */
        return &held_rect[(KY < 18 ? KY : 17) * 18 + (K < 18 ? K : 17)];
    const int k = K < 34 ? K : 33;
    return &held[(batched * 2 + separable) * 34 + k];
}

/* The instance for a KY x K filter (KY = K but for dense non-square ones). */
static cvk_direct_kernel_fn pick2d(int in_type, int channels, int K, int separable, int batch,
                                   int KY)
{
    if (KY != K)
        return in_type == CVI_DTYPE_FLOAT32 && channels == 1 && !separable && !batch
                   ? cvk_direct2d_dense_f32_rect(KY, K)
                   : 0;
    if (batch)
        return in_type == CVI_DTYPE_FLOAT32 && channels == 1
                   ? (separable ? cvk_direct2d_sep_f32_batch(K) : cvk_direct2d_dense_f32_batch(K))
                   : 0;
    if (in_type == CVI_DTYPE_FLOAT32 && channels == 1)
        return separable ? cvk_direct2d_sep_f32(K) : cvk_direct2d_dense_f32(K);
    if (in_type == CVI_DTYPE_UINT8)
        return cvk_direct2d_u8(channels, K, separable);
    if (in_type == CVI_DTYPE_UINT16)
        return cvk_direct2d_u16(channels, K, separable);
    return 0;
}

static cvk_direct_kernel_fn pick1d(int in_type, int channels, int K)
{
    return in_type == CVI_DTYPE_FLOAT32 && channels == 1 ? cvk_direct1d_f32(K) : 0;
}

extern "C" int cvk_direct2d_supports(int in_type, int channels, int ksize, int separable)
{
    return (separable && cvk_isep2d_supports(in_type, channels, ksize)) ||
           pick2d(in_type, channels, ksize, separable, 0, ksize) != 0;
}

extern "C" int cvk_direct2d_rect_supports(int in_type, int channels, int ky, int kx)
{
    return ky != kx && pick2d(in_type, channels, kx, 0, 0, ky) != 0;
}

extern "C" int cvk_direct2d_batch_supports(int in_type, int ksize, int separable)
{
    return pick2d(in_type, 1, ksize, separable, 1, ksize) != 0;
}

extern "C" int cvk_direct1d_supports(int in_type, int channels, int ksize)
{
    return pick1d(in_type, channels, ksize) != 0;
}

/* Fills the parameters common to the 1-D and 2-D launches; V elements a
 * lane. Returns 0 if the input cannot take vector loads (then every output
 * goes to the edge kernel). */
static int setup_params(const cvk_direct_args *a, int V, cvk_direct_params &p)
{
    const int K = a->ksize, C = a->channels;
    const size_t in_size = (size_t)cvi_dtype_bytes(a->in_type); /* float32, uint8 or uint16 */
    const size_t out_size = (size_t)cvi_dtype_bytes(a->out_type);
    p.in = (const char *)a->in;
    p.out = (char *)a->out;
    p.in_row = a->in_row;
    p.out_row = a->out_row;
    p.in_plane = a->in_plane;
    p.out_plane = a->out_plane;
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
                  (a->out_row % (long long)(V * out_size) == 0) &&
                  (a->out_plane % (long long)(V * out_size) == 0);
    return ((uintptr_t)a->in % (V * in_size) == 0) && (a->in_row % (long long)(V * in_size) == 0);
}

/* The fast segments: multiples of SEG (centred coordinates) whose window
 * [we0 - HALO, we0 + SEG + HALO) lies in the row; [lo, hi) receives the
 * output elements they cover (empty when there are none). */
static void fast_segments(cvk_direct_params &p, int HALO, int SEG, int aligned, long long *lo,
                          long long *hi)
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

extern "C" cudaError_t cvk_direct2d_launch(const cvk_direct_args *a, cudaStream_t stream)
{
    const long long batch = a->batch > 1 ? a->batch : 1;
    /* separable integer images: the fused kernels of fast_sep_int.cu */
    if (a->separable && cvk_isep2d_supports(a->in_type, a->channels, a->ksize))
        return batch == 1 ? cvk_isep2d_launch(a, stream) : cudaErrorInvalidValue;
    const int K = a->ksize, KY = a->height_taps, C = a->channels, HALO = (K / 2) * C;
    cvk_direct_kernel_fn fn = pick2d(a->in_type, C, K, a->separable, batch > 1, KY);
    if (!fn || batch > CVK_DEVICE_GRID_YZ)
        return cudaErrorInvalidValue;
    const int es = cvi_dtype_bytes(a->in_type); /* float32, uint8 or uint16 */
    const int V = es == 1                     ? cvk_direct2d_u8_lanes(C, K, a->separable)
                  : es == 2                   ? cvk_direct2d_u16_lanes(C, K, a->separable)
                  : (a->separable && K >= 17) ? 2
                                              : 4,
              SEG = 32 * V;
    cvk_direct_params p;
    setup_params(a, V, p);
    /* interior warps copy rows in 16-byte chunks: 16-byte aligned rows */
    p.aligned = (uintptr_t)a->in % 16 == 0 && a->in_row % 16 == 0 && a->in_plane % 16 == 0;
    /* Warps at multiples of SEG (centred coordinates) covering the centred
     * elements [-shift, WC - shift) whose outputs land in the row. */
    const long long lo = -(long long)p.shift, hi = p.WC - p.shift;
    p.first = lo >= 0 ? 0 : -((-lo + SEG - 1) / SEG) * SEG;
    p.nwarps = (hi - p.first + SEG - 1) / SEG;
    const size_t smem = ring_bytes(es, V, HALO);
    /* Strip height (over the batch's images): float32, about 8 waves of
     * the blocks the device holds at once (H200, 8192^2, dense 3x3 and
     * 5x5 at 8 blocks a multiprocessor: 1 wave 0.31-0.33 ms, 4 waves
     * 0.23-0.24, 8 to 16 waves 0.21; separable K = 3, 5 0.27-0.29 -> 0.22);
     * uint8 about two waves of 16 blocks a multiprocessor (at 6 blocks a
     * multiprocessor, fast_direct_u8.cu: gray 8192^2 / RGB 4096^2 3x3
     * 0.1145 / 0.0925 ms against 0.1262 / 0.0989 for one wave, 5x5 0.1743 /
     * 0.1784 against 0.1826 / 0.1969; four waves within 1%, strips of 8 or
     * 12 rows within 2% for 3x3 and up to 8% slower for 5x5); never under
     * 2 (KY - 1) rows (4 (K - 1) separable) or 16, so that the halo rows stay
     * a small share. */
    const long long bx = (p.nwarps + CVK_DIRECT_WARPS - 1) / CVK_DIRECT_WARPS;
    long long strip;
    if (es == 4) {
        int per_sm;
        const cudaError_t re = cvk_launch_ready((const void *)fn, CVK_DIRECT_WARPS * 32, smem,
                                                held_slot(K, a->separable, batch > 1, KY), &per_sm);
        if (re != cudaSuccess)
            return re;
        long long by0 = 8 * cvk_multiprocessors(a->multiprocessors) * per_sm / (bx * batch);
        by0 = by0 < 1 ? 1 : by0;
        strip = (p.H + by0 - 1) / by0;
    } else {
        const long long want = cvk_multiprocessors(a->multiprocessors) * 32;
        strip = (p.H * bx * batch + want - 1) / want;
        strip = strip > 128 ? 128 : strip;
    }
    const long long min_strip = (a->separable ? 4 : 2) * (KY - 1) > 16
                                    ? (a->separable ? 4 : 2) * (KY - 1)
                                    : 16;
    strip = strip < min_strip ? min_strip : strip;
    if (strip > p.H)
        strip = p.H;
    p.strip = (int)strip;
    const long long by = (p.H + strip - 1) / strip;
    if (by > CVK_DEVICE_GRID_YZ || bx > CVK_DEVICE_GRID_X)
        return cudaErrorInvalidConfiguration;
    CVK_LAUNCH(fn, dim3((unsigned)bx, (unsigned)by, (unsigned)batch), CVK_DIRECT_WARPS * 32, smem,
               stream, (p));
    return cudaGetLastError();
}

extern "C" cudaError_t cvk_direct1d_launch(const cvk_direct_args *a, cudaStream_t stream)
{
    cvk_direct_kernel_fn fn = pick1d(a->in_type, a->channels, a->ksize);
    if (!fn || a->height != 1 || a->height_taps != 1 || a->separable)
        return cudaErrorInvalidValue;
    const int K = a->ksize, HALO = K / 2, V = 8, SEG = 32 * V;
    cvk_direct_params p;
    const int aligned = setup_params(a, V, p);
    p.koffy = 0;
    long long lo, hi;
    fast_segments(p, HALO, SEG, aligned, &lo, &hi);
    if (p.nwarps > 0) {
        /* enough 8-warp blocks for a few waves; each warp loops over segments */
        const long long want = cvk_multiprocessors(a->multiprocessors) * 8 * 4;
        long long blocks = (p.nwarps + 7) / 8;
        blocks = blocks < want ? blocks : want;
        CVK_LAUNCH(fn, (unsigned)blocks, 256, 0, stream, (p));
        cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess)
            return err;
    }
    return launch_edges(p, 1, K, 1, 0, 0, lo, hi, stream);
}
