/*
 * fast_fft.cu - convolution by FFT (cuFFT) for large filters, 1-D to 3-D.
 *
 * For each channel the input is first extended by the boundary mode into a
 * real array of extents n >= shape + K - 1 (7-smooth sizes cuFFT handles
 * well), exactly as the direct kernels read it: ext[i] = input at
 * cvi_boundary_index(i - koff), or cval. Then, with R = FFT(ext) (real to
 * complex, in place) and F = conj(FFT(w)) / prod(n) computed once per plan,
 * the correlation out[i] = sum_k w[k] ext[i + k] is IFFT(R * F) at
 * i < shape: no wrap-around can reach those outputs. float64 data is
 * transformed in double precision, everything else in single.
 *
 * Large arrays are cut into tiles (overlap-save): along an axis, tiles of
 * T points step by B = T - K + 1, each tile holds the extension from its
 * first output on, and its first B outputs are exact (the same argument per
 * tile). Batched cuFFT plans transform the tiles; tiles of a few hundred
 * points transform in fewer passes over memory than one transform of the
 * whole array, which pays more than the K - 1 points each tile repeats
 * (fft_extents weighs the two), and keeps every transform far inside
 * cuFFT's 32-bit sizes.
 *
 * The same bits however the array is cut: the tiles are those of the whole
 * array, and cuFFT runs them in groups of a fixed shape: `group` tiles
 * along the slowest axis by every tile of the others, one channel at a
 * time, one plan for all groups. A streamed slab (src/cuda/stream.c) whose
 * rows start on a group (cvk_fft_slab_align) runs the whole array's groups
 * that write its rows, with the same inputs in each (a tile's points are
 * indexed on the whole array: zero past its extended extent), so every
 * output has the bytes of the one-shot run's.
 */
#include "fast_fft.h"
#include "device_common.cuh"

#include <cufft.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

struct cvk_fft_plan {
    int dbl;               /* double precision */
    int rank;              /* transformed axes: the last `rank` of the 3 */
    int first;             /* the slowest axis (3 - rank): groups and slabs along it */
    long long n[3];        /* transform extents (1 on axes not transformed) */
    long long tiles[3];    /* the whole array's tiles per axis (1: the whole axis in one) */
    long long step[3];     /* outputs per tile along each axis: n - K + 1 */
    long long whole;       /* the whole array's extent along `first` */
    long long group;       /* tiles along `first` one transform call takes */
    long long rest;        /* tiles of the axes after `first` (a group's width) */
    long long groups_held; /* groups the buffer holds */
    long long ntiles;      /* tiles the buffer holds: groups_held * group * rest */
    long long half;        /* n[2] / 2 + 1: complex extent of the last axis */
    long long plane;       /* complex elements of one channel's spectrum */
    int channels;
    void *buf;  /* channels spectra; the real view has rows of 2*half */
    void *filt; /* the filter's spectrum, conjugated and scaled */
    cufftHandle fwd, inv;
    int have_fwd, have_inv;
};

/* The smallest 2^a 3^b 5^c 7^d >= m. */
static long long smooth_at_least(long long m)
{
    for (long long v = m > 1 ? m : 1;; v++) {
        long long r = v;
        static const int primes[4] = {2, 3, 5, 7};
        for (int i = 0; i < 4; i++)
            while (r % primes[i] == 0)
                r /= primes[i];
        if (r == 1)
            return v;
    }
}

/* Relative cost of one transform point: batched tiles of 2^k or 3*2^k
 * points against one transform of a whole array of a 7-smooth size, as
 * measured (docs/architecture.md, "Measured choices"). */
static double fft_point_cost(double total, int whole)
{
    if (whole)
        return total <= 1048576.0 ? 1.15 : 1.7;
    return total <= 4194304.0 ? 1.0 : 1.2;
}

/* The next tile size above t: 2^k or 3 * 2^k. */
static long long next_tile(long long t)
{
    for (long long v = t + 1;; v++) {
        long long r = v;
        while (r % 2 == 0)
            r /= 2;
        if (r == 1 || r == 3)
            return v;
    }
}

/* Transform extents and tiling for p; 0 on overflow. The whole array in one
 * transform per channel (smooth sizes >= shape + K - 1), or tiles of T
 * points per axis (T = 2^k or 3*2^k, max(4K, 256 or 64 in 3-D) <= T <=
 * 16384; an axis that fits one tile keeps its own size), whichever costs
 * less by fft_point_cost. */
static int fft_extents(const cvi_problem *p, long long n[3], long long tiles[3], long long step[3],
                       long long *ntiles, long long *half, long long *plane)
{
    const int first = 3 - p->ndim;
    cvi_problem whole_p;
    if (p->whole_rows) { /* a slab: the whole array's tiles */
        whole_p = *p;
        whole_p.shape[first] = p->whole_rows;
        p = &whole_p;
    }
    double whole = 1;
    long long wn[3], ws[3]; /* the whole axes */
    for (int a = 0; a < 3; a++) {
        wn[a] = n[a] = a >= first ? smooth_at_least((long long)(p->shape[a] + p->ksize[a] - 1)) : 1;
        tiles[a] = 1;
        ws[a] = step[a] = a >= first ? n[a] - (long long)p->ksize[a] + 1 : 1;
        whole *= (double)n[a];
    }
    double best = whole * fft_point_cost(whole, 1);
    long long kmax = 1;
    for (int a = first; a < 3; a++)
        if ((long long)p->ksize[a] > kmax)
            kmax = (long long)p->ksize[a];
    /* tiles of at least 4K points, and at least 256 (64 in 3-D): smaller
     * ones measured slower per point than their count says */
    const long long floor_t = p->ndim == 3 ? 64 : 256;
    const long long lo = 4 * kmax > floor_t ? 4 * kmax : floor_t;
    for (long long t = next_tile(lo - 1); t <= 16384; t = next_tile(t)) {
        long long tn[3], tt[3], ts[3];
        double points = 1, per = 1;
        for (int a = 0; a < 3; a++) {
            tn[a] = wn[a], tt[a] = 1, ts[a] = ws[a];
            if (a >= first && wn[a] > t) {
                const long long b = t - (long long)p->ksize[a] + 1;
                tn[a] = t;
                tt[a] = ((long long)p->shape[a] + b - 1) / b;
                ts[a] = b;
            }
            points *= (double)(tn[a] * tt[a]);
            per *= (double)tn[a];
        }
        if (points * fft_point_cost(per, 0) < best) {
            best = points * fft_point_cost(per, 0);
            for (int a = 0; a < 3; a++)
                n[a] = tn[a], tiles[a] = tt[a], step[a] = ts[a];
        }
    }
    *ntiles = 1;
    for (int a = 0; a < 3; a++) {
        if (n[a] > INT_MAX || tiles[a] > INT_MAX ||
            tiles[a] * step[a] < (long long)p->shape[a]) /* the tiles cover the axis */
            return 0;
        *ntiles *= tiles[a];
    }
    *half = n[2] / 2 + 1;
    size_t pl;
    if (!cvi_mul_size((size_t)n[0], (size_t)n[1], &pl) || !cvi_mul_size(pl, (size_t)*half, &pl))
        return 0;
    *plane = (long long)pl;
    return 1;
}

/* Points one transform call should take at least (a group): calls of
 * fewer points pay cuFFT's launch costs more than once per tile.
 * CONVOLVE_FFT_GROUP_POINTS overrides it (tests: groups of one tile, so
 * that small arrays stream in several slabs). */
#define FFT_GROUP_POINTS ((long long)1 << 22)

static long long fft_group_points(void)
{
    const char *e = getenv("CONVOLVE_FFT_GROUP_POINTS");
    long long v = e && *e ? atoll(e) : 0;
    return v > 0 ? v : FFT_GROUP_POINTS;
}

/* The plan's tiles, groups and buffer for p (the whole array's tiles; a
 * slab's buffer holds the groups its rows can need, the whole array's all
 * of them); 0 on overflow. */
static int fft_layout(const cvi_problem *p, cvk_fft_plan *f)
{
    f->first = 3 - p->ndim;
    if (!fft_extents(p, f->n, f->tiles, f->step, &f->ntiles, &f->half, &f->plane))
        return 0;
    const int a0 = f->first;
    f->whole = (long long)(p->whole_rows ? p->whole_rows : p->shape[a0]);
    f->rest = f->ntiles / f->tiles[a0];
    const double per = (double)f->rest * (double)f->n[0] * (double)f->n[1] * (double)f->n[2];
    long long g = (long long)((double)fft_group_points() / per);
    g = g < 1 ? 1 : g > f->tiles[a0] ? f->tiles[a0] : g;
    /* as many groups as that takes, of even size: fewer padding tiles */
    const long long groups = (f->tiles[a0] + g - 1) / g;
    g = (f->tiles[a0] + groups - 1) / groups;
    f->group = g;
    long long held = (f->tiles[a0] + g - 1) / g;
    if (p->whole_rows) {
        /* a slab of up to shape rows, starting on a group */
        const long long t = ((long long)p->shape[a0] + f->step[a0] - 1) / f->step[a0];
        const long long need = (t + g - 1) / g;
        held = need < held ? need : held;
    }
    f->groups_held = held;
    if (held > INT_MAX / g || held * g > INT_MAX / f->rest)
        return 0;
    f->ntiles = held * g * f->rest;
    return 1;
}

extern "C" size_t cvk_fft_slab_align(const cvi_problem *p)
{
    cvk_fft_plan f;
    memset(&f, 0, sizeof f);
    if (!fft_layout(p, &f))
        return 1;
    return (size_t)(f.group * f.step[f.first]);
}

extern "C" size_t cvk_fft_workspace_bytes(const cvi_problem *p)
{
    cvk_fft_plan f;
    memset(&f, 0, sizeof f);
    if (!fft_layout(p, &f))
        return 0;
    const long long ntiles = f.ntiles, plane = f.plane;
    size_t csize = p->in_type == CONVOLVE_FLOAT64 ? 16 : 8, bytes, batches;
    if (!cvi_mul_size((size_t)ntiles, p->channels, &batches) ||
        !cvi_mul_size((size_t)plane, csize * (batches + 1), &bytes))
        return 0;
    return bytes;
}

/* ---- kernels ------------------------------------------------------------ */

template <typename R>
__device__ __forceinline__ R cvk_fft_load(int type, const char *p)
{
    switch (type) {
    case CONVOLVE_FLOAT32: return (R) * (const float *)p;
    case CONVOLVE_FLOAT64: return (R) * (const double *)p;
    case CONVOLVE_UINT8: return (R) * (const unsigned char *)p;
    default: return (R) * (const unsigned short *)p;
    }
}

/* Geometry shared by the kernels, by value. The buffer holds `ntiles`
 * tiles, tiles[a] along each axis; along the slowest axis (first) its tile
 * 0 is the whole array's tile `base`. A slab's input row j along `first` is
 * the whole array's extended row lo + j, and its output row i the whole
 * array's output lo + i; crop writes the outputs crop_lo + [0, crop_n). */
typedef struct cvk_fft_geom {
    long long shape[3], ksize[3], koff[3], n[3];
    long long tiles[3], step[3], ntiles;
    int first, slab;
    long long whole, base, lo;
    long long crop_lo[3], crop_n[3];
    long long in_str[3], in_cstr, out_str[3], out_cstr;
    long long row;        /* real elements per row of the buffer: 2 * half */
    long long plane_real; /* real elements per tile: n0 * n1 * row */
    int channels, mode, in_type, out_type;
    int ext_xper, crop_xper; /* elements a thread handles along x (1..FFT_XPER) */
    double cval;
} cvk_fft_geom;

/* Grids: x along blockIdx.x (256 threads), rows (z, y) folded into
 * blockIdx.y and blockIdx.z (cvk_grid_row); every thread loops over the
 * channels. */

/* Each thread handles up to FFT_XPER elements of a row (xper: as many as
 * make a block cover the row), blockDim apart, so the row's index
 * arithmetic (64-bit divisions) is paid once per row and thread. */
#define FFT_XPER 8

/* buf[c][tile][z][y][x] = extended input at tile origin + (z, y, x) - koff,
 * zero past the extended extents (shape + K - 1) and in the row padding. */
/* The input index along axis a of the whole array's extended point e:
 * -2 past the extended extent (the transform's zero padding), -1 for cval,
 * else the input's row (along `first`, a slab's own). */
__device__ __forceinline__ long long cvk_fft_source(const cvk_fft_geom &g, int a, long long e)
{
    const long long whole = a == g.first ? g.whole : g.shape[a];
    if (e >= whole + g.ksize[a] - 1)
        return -2;
    const long long r = e - g.koff[a];
    if (a == g.first && g.slab) {
        if (g.mode == CVI_MODE_CONSTANT && (r < 0 || r >= whole))
            return -1;
        return r - g.lo; /* the slab holds the extended rows its tiles read */
    }
    return cvi_boundary_index(r, g.shape[a], g.mode);
}

template <typename R>
__global__ void cvk_fft_extend(const __grid_constant__ cvk_fft_geom g, const char *in, R *buf)
{
    const long long r = cvk_grid_row(); /* (tile, z, y) */
    if (r >= g.ntiles * g.n[0] * g.n[1])
        return;
    const long long zy = r % (g.n[0] * g.n[1]), tile = r / (g.n[0] * g.n[1]);
    const long long t2 = tile % g.tiles[2], t01 = tile / g.tiles[2];
    const long long t1 = t01 % g.tiles[1], t0 = t01 / g.tiles[1];
    const long long b0 = g.first == 0 ? g.base : 0, b1 = g.first == 1 ? g.base : 0;
    const long long b2 = g.first == 2 ? g.base : 0;
    const long long y = zy % g.n[1] + (t1 + b1) * g.step[1];
    const long long z = zy / g.n[1] + (t0 + b0) * g.step[0];
    const long long x0 = (t2 + b2) * g.step[2];
    const long long per_channel = g.ntiles * g.plane_real;
    const long long j0 = cvk_fft_source(g, 0, z), j1 = cvk_fft_source(g, 1, y);
    const bool outside = j0 == -2 || j1 == -2;
    const char *src_row = in + j0 * g.in_str[0] + j1 * g.in_str[1];
    R *dst_row = buf + r * g.row;
    const long long xs = (long long)blockIdx.x * blockDim.x * g.ext_xper + threadIdx.x;
#pragma unroll 1 /* (unrolling this stalls nvcc 13's cicc for many minutes) */
    for (int k = 0; k < g.ext_xper; k++) {
        const long long x = xs + (long long)k * blockDim.x;
        if (x >= g.row)
            break;
        R *dst = dst_row + x;
        const long long j2 = outside || x >= g.n[2] ? -2 : cvk_fft_source(g, 2, x + x0);
        if (j2 == -2) {
            for (int c = 0; c < g.channels; c++)
                dst[c * per_channel] = 0;
            continue;
        }
        if (j0 < 0 || j1 < 0 || j2 < 0) {
            for (int c = 0; c < g.channels; c++)
                dst[c * per_channel] = (R)g.cval;
            continue;
        }
        const char *src = src_row + j2 * g.in_str[2];
        for (int c = 0; c < g.channels; c++)
            dst[c * per_channel] = cvk_fft_load<R>(g.in_type, src + c * g.in_cstr);
    }
}

/* spectra[b][i] *= filt[i] for each of `batches` spectra (channels x
 * tiles): blockIdx.y picks a group of batches, x runs along the plane. */
template <typename CX>
__global__ void cvk_fft_multiply(CX *spectra, const CX *filt, long long plane, int batches)
{
    const int per = (batches + (int)gridDim.y - 1) / (int)gridDim.y;
    const int b0 = (int)blockIdx.y * per, b1 = b0 + per < batches ? b0 + per : batches;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < plane;
         i += (long long)gridDim.x * blockDim.x) {
        const CX w = filt[i];
        for (int c = b0; c < b1; c++) {
            CX a = spectra[c * plane + i], r;
            r.x = a.x * w.x - a.y * w.y;
            r.y = a.x * w.y + a.y * w.x;
            spectra[c * plane + i] = r;
        }
    }
}

/* out[z][y][x][c] = buf[c][tile][z'][y'][x'] over the output's extents,
 * (z, y, x) = tile origin + (z', y', x'), each of those below the step.
 * Along x the tile and the offset in it advance without divisions. */
template <typename R>
__global__ void cvk_fft_crop(const __grid_constant__ cvk_fft_geom g, const R *buf, char *out)
{
    const long long zy = cvk_grid_row();
    if (zy >= g.crop_n[0] * g.crop_n[1])
        return;
    const long long y = g.crop_lo[1] + zy % g.crop_n[1], z = g.crop_lo[0] + zy / g.crop_n[1];
    /* the whole array's output index and tile; the tile's place in the buffer */
    const long long s0 = g.first == 0 ? g.lo : 0, s1 = g.first == 1 ? g.lo : 0;
    const long long s2 = g.first == 2 ? g.lo : 0;
    const long long b0 = g.first == 0 ? g.base : 0, b1 = g.first == 1 ? g.base : 0;
    const long long b2 = g.first == 2 ? g.base : 0;
    const long long wz = z + s0, wy = y + s1;
    const long long t0 = wz / g.step[0], t1 = wy / g.step[1];
    const long long row_off = ((wz - t0 * g.step[0]) * g.n[1] + (wy - t1 * g.step[1])) * g.row;
    const long long tile_row = ((t0 - b0) * g.tiles[1] + (t1 - b1)) * g.tiles[2] - b2;
    const long long per_channel = g.ntiles * g.plane_real;
    char *dst_row = out + z * g.out_str[0] + y * g.out_str[1];
    const long long xs = (long long)blockIdx.x * blockDim.x * g.crop_xper + threadIdx.x;
    const long long wx = g.crop_lo[2] + xs + s2;
    long long t2 = wx / g.step[2], lx = wx - t2 * g.step[2];
#pragma unroll 1 /* (unrolling this stalls nvcc 13's cicc for many minutes) */
    for (int k = 0; k < g.crop_xper; k++) {
        const long long x = xs + (long long)k * blockDim.x;
        if (x >= g.crop_n[2])
            break;
        const R *src = buf + (tile_row + t2) * g.plane_real + row_off + lx;
        char *dst = dst_row + (g.crop_lo[2] + x) * g.out_str[2];
        for (int c = 0; c < g.channels; c++)
            cvi_store_double(g.out_type, dst + c * g.out_cstr, (double)src[c * per_channel]);
        lx += blockDim.x;
        while (lx >= g.step[2]) {
            lx -= g.step[2];
            t2++;
        }
    }
}

/* filt[k0][k1][k2] (real view, rows of `row`) = w[k], zero elsewhere (the
 * buffer is cleared before). */
template <typename R>
__global__ void cvk_fft_scatter_weights(R *filt, const double *w, long long k0, long long k1,
                                        long long k2, long long n1, long long row)
{
    const long long total = k0 * k1 * k2;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        long long x = i % k2, zy = i / k2, y = zy % k1, z = zy / k1;
        filt[(z * n1 + y) * row + x] = (R)w[i];
    }
}

template <typename CX, typename R>
__global__ void cvk_fft_conj_scale(CX *f, long long count, R scale)
{
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (long long)gridDim.x * blockDim.x) {
        CX v = f[i];
        v.x *= scale;
        v.y *= -scale;
        f[i] = v;
    }
}

/* ---- host side ---------------------------------------------------------- */

static const int FFT_THREADS = 256;

static unsigned fft_blocks(long long total)
{
    long long b = (total + FFT_THREADS - 1) / FFT_THREADS;
    return (unsigned)(b > CVK_FLAT_MAX_BLOCKS ? CVK_FLAT_MAX_BLOCKS : b < 1 ? 1 : b);
}

/* A grid of 256-thread blocks over `width` columns and `rows` rows. */
static int row_grid(long long width, long long rows, dim3 *grid)
{
    return cvk_row_grid((width + FFT_THREADS - 1) / FFT_THREADS, rows, grid);
}

static convolve_status cuda_status(cudaError_t e, const char *what, char *err, size_t n)
{
    if (e == cudaSuccess)
        return CONVOLVE_OK;
    snprintf(err, n, "%s: %s", what, cudaGetErrorString(e));
    return e == cudaErrorMemoryAllocation ? CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY
                                          : CONVOLVE_ERROR_DEVICE;
}

static convolve_status cufft_status(cufftResult r, const char *what, char *err, size_t n)
{
    if (r == CUFFT_SUCCESS)
        return CONVOLVE_OK;
    snprintf(err, n, "%s: cuFFT error %d", what, (int)r);
    if (r == CUFFT_ALLOC_FAILED)
        return CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY;
    if (r == CUFFT_INVALID_SIZE)
        return CONVOLVE_ERROR_UNSUPPORTED;
    return CONVOLVE_ERROR_DEVICE;
}

/* The kernels' geometry for groups [g0, g1) along the slowest axis, and
 * the outputs along it in [c0, c1) (the problem's own indices). */
static void fft_geometry(const cvk_fft_plan *f, const cvi_problem *p, const cvk_fft_window *w,
                         long long g0, long long g1, long long c0, long long c1, cvk_fft_geom *g)
{
    for (int a = 0; a < 3; a++) {
        g->shape[a] = (long long)p->shape[a];
        g->ksize[a] = (long long)p->ksize[a];
        g->koff[a] = p->koff[a];
        g->n[a] = f->n[a];
        g->tiles[a] = f->tiles[a];
        g->step[a] = f->step[a];
        g->in_str[a] = p->in_strides[a];
        g->out_str[a] = p->out_strides[a];
        g->crop_lo[a] = 0;
        g->crop_n[a] = (long long)p->shape[a];
    }
    g->first = f->first;
    g->slab = w != NULL;
    g->whole = f->whole;
    g->lo = w ? w->lo : 0;
    g->base = g0 * f->group;
    g->tiles[f->first] = (g1 - g0) * f->group;
    g->crop_lo[f->first] = c0;
    g->crop_n[f->first] = c1 - c0;
    g->in_cstr = p->in_cstride;
    g->out_cstr = p->out_cstride;
    g->row = 2 * f->half;
    g->plane_real = f->n[0] * f->n[1] * g->row;
    g->ntiles = g->tiles[0] * g->tiles[1] * g->tiles[2];
    long long e = (g->row + 255) / 256, c = (g->crop_n[2] + 255) / 256;
    g->ext_xper = (int)(e < 1 ? 1 : e > FFT_XPER ? FFT_XPER : e);
    g->crop_xper = (int)(c < 1 ? 1 : c > FFT_XPER ? FFT_XPER : c);
    g->channels = (int)p->channels;
    g->mode = p->mode;
    g->in_type = p->in_type;
    g->out_type = p->out_type;
    g->cval = p->cval;
}

/* Plans for `batch` transforms of the extents in f, in place. */
static convolve_status make_plans(cvk_fft_plan *f, int batch, cufftHandle *fwd, cufftHandle *inv,
                                  char *err, size_t n)
{
    int dims[3], real_embed[3], cplx_embed[3];
    int rank = f->rank;
    for (int i = 0; i < rank; i++) {
        dims[i] = (int)f->n[3 - rank + i];
        real_embed[i] = cplx_embed[i] = dims[i];
    }
    real_embed[rank - 1] = (int)(2 * f->half);
    cplx_embed[rank - 1] = (int)f->half;
    long long rows = 1;
    for (int i = 0; i < rank - 1; i++)
        rows *= dims[i];
    int real_dist = (int)(rows * 2 * f->half), cplx_dist = (int)(rows * f->half);
    if (rows * 2 * f->half > INT_MAX) {
        snprintf(err, n, "FFT of %lld elements per channel is past cuFFT's 32-bit plans",
                 rows * 2 * f->half);
        return CONVOLVE_ERROR_UNSUPPORTED;
    }
    cufftType tf = f->dbl ? CUFFT_D2Z : CUFFT_R2C, ti = f->dbl ? CUFFT_Z2D : CUFFT_C2R;
    convolve_status st = cufft_status(cufftPlanMany(fwd, rank, dims, real_embed, 1, real_dist,
                                                    cplx_embed, 1, cplx_dist, tf, batch),
                                      "cufftPlanMany (forward)", err, n);
    if (st != CONVOLVE_OK)
        return st;
    st = cufft_status(cufftPlanMany(inv, rank, dims, cplx_embed, 1, cplx_dist, real_embed, 1,
                                    real_dist, ti, batch),
                      "cufftPlanMany (inverse)", err, n);
    if (st != CONVOLVE_OK)
        cufftDestroy(*fwd);
    return st;
}

extern "C" void cvk_fft_destroy(cvk_fft_plan *f)
{
    if (!f)
        return;
    if (f->have_fwd)
        cufftDestroy(f->fwd);
    if (f->have_inv)
        cufftDestroy(f->inv);
    cudaFree(f->buf);
    cudaFree(f->filt);
    free(f);
}

/* cuFFT's in-place real-to-complex and complex-to-real transforms, by
 * precision, and the complex type that goes with a real one. */
static cufftResult fft_forward(cufftHandle h, float *buf)
{
    return cufftExecR2C(h, (cufftReal *)buf, (cufftComplex *)buf);
}
static cufftResult fft_forward(cufftHandle h, double *buf)
{
    return cufftExecD2Z(h, (cufftDoubleReal *)buf, (cufftDoubleComplex *)buf);
}
static cufftResult fft_inverse(cufftHandle h, float *buf)
{
    return cufftExecC2R(h, (cufftComplex *)buf, (cufftReal *)buf);
}
static cufftResult fft_inverse(cufftHandle h, double *buf)
{
    return cufftExecZ2D(h, (cufftDoubleComplex *)buf, (cufftDoubleReal *)buf);
}
template <typename R>
struct fft_complex;
template <>
struct fft_complex<float> {
    typedef cufftComplex type;
};
template <>
struct fft_complex<double> {
    typedef cufftDoubleComplex type;
};

/* The filter's spectrum in f->filt (cleared before): the weights at d_w
 * scattered, transformed with the one-batch plan `one`, conjugated and
 * scaled by 1 / prod(n). Synchronises the device. */
template <typename R>
static convolve_status filter_spectrum(cvk_fft_plan *f, const cvi_problem *p, const double *d_w,
                                       cufftHandle one, char *err, size_t n)
{
    typedef typename fft_complex<R>::type CX;
    const long long k0 = (long long)p->ksize[0], k1 = (long long)p->ksize[1];
    const long long k2 = (long long)p->ksize[2], row = 2 * f->half;
    convolve_status st;
    CVK_LAUNCH(cvk_fft_scatter_weights<R>, fft_blocks(k0 * k1 * k2), FFT_THREADS, 0, 0,
               ((R *)f->filt, d_w, k0, k1, k2, f->n[1], row));
    if ((st = cuda_status(cudaGetLastError(), "filter scatter kernel", err, n)) != CONVOLVE_OK ||
        (st = cufft_status(fft_forward(one, (R *)f->filt), "filter FFT", err, n)) != CONVOLVE_OK)
        return st;
    const R scale = (R)(1.0 / ((double)f->n[0] * (double)f->n[1] * (double)f->n[2]));
    auto conj_scale = cvk_fft_conj_scale<CX, R>;
    CVK_LAUNCH(conj_scale, fft_blocks(f->plane), FFT_THREADS, 0, 0,
               ((CX *)f->filt, f->plane, scale));
    if ((st = cuda_status(cudaGetLastError(), "filter scale kernel", err, n)) != CONVOLVE_OK)
        return st;
    return cuda_status(cudaDeviceSynchronize(), "filter spectrum", err, n);
}

extern "C" convolve_status cvk_fft_create(const cvi_problem *p, cvk_fft_plan **out, char *err,
                                          size_t n)
{
    *out = NULL;
    cvk_fft_plan *f = (cvk_fft_plan *)calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, n, "out of host memory");
        return CONVOLVE_ERROR_OUT_OF_MEMORY;
    }
    f->dbl = p->in_type == CONVOLVE_FLOAT64;
    f->rank = p->ndim;
    f->channels = (int)p->channels;
    convolve_status st = CONVOLVE_OK;
    size_t rsize = f->dbl ? sizeof(double) : sizeof(float), csize = 2 * rsize;
    double *d_w = NULL;
    cufftHandle f1, i1;
    int have1 = 0;
    if (!fft_layout(p, f) || (long long)f->channels * f->ntiles > INT_MAX) {
        snprintf(err, n, "FFT sizes overflow");
        st = CONVOLVE_ERROR_SIZE_OVERFLOW;
        goto fail;
    }
    if ((st = make_plans(f, (int)(f->group * f->rest), &f->fwd, &f->inv, err, n)) != CONVOLVE_OK)
        goto fail;
    f->have_fwd = f->have_inv = 1;
    if ((st = cuda_status(
             cudaMalloc(&f->buf, (size_t)f->plane * csize * f->channels * (size_t)f->ntiles),
             "cudaMalloc (FFT buffer)", err, n)) != CONVOLVE_OK ||
        (st = cuda_status(cudaMalloc(&f->filt, (size_t)f->plane * csize), "cudaMalloc (filter)",
                          err, n)) != CONVOLVE_OK ||
        (st = cuda_status(cudaMalloc((void **)&d_w, p->kcount * sizeof(double)),
                          "cudaMalloc (weights)", err, n)) != CONVOLVE_OK)
        goto fail;
    if ((st = cuda_status(
             cudaMemcpy(d_w, p->weights, p->kcount * sizeof(double), cudaMemcpyHostToDevice),
             "cudaMemcpy (weights)", err, n)) != CONVOLVE_OK ||
        (st = cuda_status(cudaMemset(f->filt, 0, (size_t)f->plane * csize), "cudaMemset", err,
                          n)) != CONVOLVE_OK ||
        (st = make_plans(f, 1, &f1, &i1, err, n)) != CONVOLVE_OK)
        goto fail;
    have1 = 1;
    st = f->dbl ? filter_spectrum<double>(f, p, d_w, f1, err, n)
                : filter_spectrum<float>(f, p, d_w, f1, err, n);
    if (st != CONVOLVE_OK)
        goto fail;
    cufftDestroy(f1);
    cufftDestroy(i1);
    cudaFree(d_w);
    *out = f;
    return CONVOLVE_OK;
fail:
    if (have1) {
        cufftDestroy(f1);
        cufftDestroy(i1);
    }
    cudaFree(d_w);
    cvk_fft_destroy(f);
    return st;
}

/* The forward (inverse = 0) or inverse transforms of every group held in
 * g, one call a group and channel, each of the plan's one shape. */
template <typename R>
static convolve_status transform_groups(const cvk_fft_plan *f, const cvk_fft_geom &g, R *buf,
                                        int inverse, char *err, size_t n)
{
    const long long width = f->group * f->rest * g.plane_real; /* reals a group */
    const long long groups = g.tiles[f->first] / f->group;
    for (int c = 0; c < f->channels; c++)
        for (long long k = 0; k < groups; k++) {
            R *at = buf + c * g.ntiles * g.plane_real + k * width;
            cufftResult r = inverse ? fft_inverse(f->inv, at) : fft_forward(f->fwd, at);
            convolve_status st = cufft_status(r, inverse ? "inverse FFT" : "forward FFT", err, n);
            if (st != CONVOLVE_OK)
                return st;
        }
    return CONVOLVE_OK;
}

/* Extend, forward transform, multiply by the filter's spectrum, inverse
 * transform, crop: the five steps of an execution, on `stream`. */
template <typename R>
static convolve_status run_fft(const cvk_fft_plan *f, const cvk_fft_geom &g, const dim3 &ext_grid,
                               const dim3 &mul_grid, const dim3 &crop_grid, const void *in,
                               void *out, cudaStream_t stream, char *err, size_t n)
{
    typedef typename fft_complex<R>::type CX;
    R *buf = (R *)f->buf;
    convolve_status st;
    CVK_LAUNCH(cvk_fft_extend<R>, ext_grid, FFT_THREADS, 0, stream, (g, (const char *)in, buf));
    if ((st = cuda_status(cudaGetLastError(), "FFT extend kernel", err, n)) != CONVOLVE_OK ||
        (st = transform_groups<R>(f, g, buf, 0, err, n)) != CONVOLVE_OK)
        return st;
    CVK_LAUNCH(cvk_fft_multiply<CX>, mul_grid, FFT_THREADS, 0, stream,
               ((CX *)buf, (const CX *)f->filt, f->plane, (int)(f->channels * g.ntiles)));
    if ((st = cuda_status(cudaGetLastError(), "FFT multiply kernel", err, n)) != CONVOLVE_OK ||
        (st = transform_groups<R>(f, g, buf, 1, err, n)) != CONVOLVE_OK)
        return st;
    CVK_LAUNCH(cvk_fft_crop<R>, crop_grid, FFT_THREADS, 0, stream, (g, buf, (char *)out));
    return cuda_status(cudaGetLastError(), "FFT crop kernel", err, n);
}

extern "C" convolve_status cvk_fft_execute(cvk_fft_plan *f, const cvi_problem *p, const void *in,
                                           void *out, const cvk_fft_window *w, cudaStream_t stream,
                                           char *err, size_t n)
{
    /* the groups that write the outputs asked for, [c0, c1) of the
     * problem's own along the slowest axis */
    const long long span = f->group * f->step[f->first];
    long long c0 = 0, c1 = (long long)p->shape[f->first], g0 = 0;
    long long g1 = (f->tiles[f->first] + f->group - 1) / f->group;
    if (w) {
        if (w->r0 % span != 0 || (w->r1 % span != 0 && w->r1 != f->whole) || w->r0 < w->lo ||
            w->r1 > w->lo + c1) {
            snprintf(err, n, "internal: an FFT slab [%lld, %lld) not on its groups of %lld rows",
                     w->r0, w->r1, span);
            return CONVOLVE_ERROR_UNSUPPORTED;
        }
        c0 = w->r0 - w->lo;
        c1 = w->r1 - w->lo;
        g0 = w->r0 / span;
        g1 = (w->r1 + span - 1) / span;
        if (g1 - g0 > f->groups_held) {
            snprintf(err, n, "internal: an FFT slab of %lld groups, %lld held", g1 - g0,
                     f->groups_held);
            return CONVOLVE_ERROR_UNSUPPORTED;
        }
    }
    cvk_fft_geom g;
    fft_geometry(f, p, w, g0, g1, c0, c1, &g);
    convolve_status st;
    if ((st = cufft_status(cufftSetStream(f->fwd, stream), "cufftSetStream", err, n)) !=
            CONVOLVE_OK ||
        (st = cufft_status(cufftSetStream(f->inv, stream), "cufftSetStream", err, n)) !=
            CONVOLVE_OK)
        return st;
    dim3 ext_grid, crop_grid;
    /* multiply: enough blocks in all (~4 per thread slot of the GPU) */
    const long long batches = (long long)f->channels * g.ntiles;
    const unsigned mx = fft_blocks(f->plane);
    long long my = (2048 + mx - 1) / mx;
    my = my < 1 ? 1 : my > batches ? batches : my > CVK_DEVICE_GRID_YZ ? CVK_DEVICE_GRID_YZ : my;
    const dim3 mul_grid(mx, (unsigned)my);
    if (!row_grid((g.row + g.ext_xper - 1) / g.ext_xper, g.ntiles * g.n[0] * g.n[1], &ext_grid) ||
        !row_grid((g.crop_n[2] + g.crop_xper - 1) / g.crop_xper, g.crop_n[0] * g.crop_n[1],
                  &crop_grid)) {
        snprintf(err, n, "FFT grid too large");
        return CONVOLVE_ERROR_UNSUPPORTED;
    }
    return f->dbl ? run_fft<double>(f, g, ext_grid, mul_grid, crop_grid, in, out, stream, err, n)
                  : run_fft<float>(f, g, ext_grid, mul_grid, crop_grid, in, out, stream, err, n);
}
