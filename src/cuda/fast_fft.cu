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
 */
#include "fast_fft.h"
#include "device_common.cuh"

#include <cufft.h>
#include <stdio.h>
#include <string.h>

struct cvi_fft_plan {
    int dbl;                /* double precision */
    int rank;               /* transformed axes: the last `rank` of the 3 */
    long long n[3];         /* transform extents (1 on axes not transformed) */
    long long half;         /* n[2] / 2 + 1: complex extent of the last axis */
    long long plane;        /* complex elements of one channel's spectrum */
    int channels;
    void *buf;              /* channels spectra; the real view has rows of 2*half */
    void *filt;             /* the filter's spectrum, conjugated and scaled */
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

/* Transform extents for p; 0 on overflow. */
static int fft_extents(const cvi_problem *p, long long n[3], long long *half, long long *plane)
{
    for (int a = 0; a < 3; a++) {
        long long need = (long long)p->shape[a] + (long long)p->ksize[a] - 1;
        n[a] = (a >= 3 - p->ndim) ? smooth_at_least(need) : 1;
        if (n[a] > 0x7fffffffLL)
            return 0;
    }
    *half = n[2] / 2 + 1;
    size_t pl;
    if (!cvi_mul_size((size_t)n[0], (size_t)n[1], &pl) || !cvi_mul_size(pl, (size_t)*half, &pl))
        return 0;
    *plane = (long long)pl;
    return 1;
}

extern "C" size_t cvi_fft_workspace_bytes(const cvi_problem *p)
{
    long long n[3], half, plane;
    if (!fft_extents(p, n, &half, &plane))
        return 0;
    size_t csize = p->in_type == CONVOLVE_FLOAT64 ? 16 : 8, bytes;
    if (!cvi_mul_size((size_t)plane, csize * (p->channels + 1), &bytes))
        return 0;
    return bytes;
}

/* ---- kernels ------------------------------------------------------------ */

template <typename R> __device__ __forceinline__ R fft_load(int type, const char *p)
{
    switch (type) {
    case CONVOLVE_FLOAT32: return (R) * (const float *)p;
    case CONVOLVE_FLOAT64: return (R) * (const double *)p;
    case CONVOLVE_UINT8: return (R) * (const unsigned char *)p;
    default: return (R) * (const unsigned short *)p;
    }
}

__device__ __forceinline__ void fft_store(int type, char *p, double v)
{
    switch (type) {
    case CONVOLVE_FLOAT32: *(float *)p = (float)v; break;
    case CONVOLVE_FLOAT64: *(double *)p = v; break;
    case CONVOLVE_UINT8: *(unsigned char *)p = cvi_saturate_u8(v); break;
    default: *(unsigned short *)p = cvi_saturate_u16(v); break;
    }
}

/* Geometry shared by the kernels, by value. */
typedef struct fft_geom {
    long long shape[3], ksize[3], koff[3], n[3];
    long long in_str[3], in_cstr, out_str[3], out_cstr;
    long long row;          /* real elements per row of the buffer: 2 * half */
    long long plane_real;   /* real elements per channel: n0 * n1 * row */
    int channels, mode, in_type, out_type;
    double cval;
} fft_geom;

/* Grids: x along blockIdx.x (256 threads), rows (z, y) along blockIdx.y and
 * blockIdx.z (65535 each); every thread loops over the channels. */
__device__ __forceinline__ long long fft_row_index()
{
    return (long long)blockIdx.y + (long long)blockIdx.z * 65535;
}

/* buf[c][z][y][x] = extended input at (z, y, x) - koff, zero past the
 * extended extents (shape + K - 1) and in the row padding. */
template <typename R>
__global__ void fft_extend_kernel(const __grid_constant__ fft_geom g, const char *in, R *buf)
{
    const long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long zy = fft_row_index();
    if (x >= g.row || zy >= g.n[0] * g.n[1])
        return;
    const long long y = zy % g.n[1], z = zy / g.n[1];
    R *dst = buf + zy * g.row + x;
    if (x >= g.shape[2] + g.ksize[2] - 1 || y >= g.shape[1] + g.ksize[1] - 1 ||
        z >= g.shape[0] + g.ksize[0] - 1) {
        for (int c = 0; c < g.channels; c++)
            dst[c * g.plane_real] = 0;
        return;
    }
    ptrdiff_t j0 = cvi_boundary_index(z - g.koff[0], g.shape[0], g.mode);
    ptrdiff_t j1 = cvi_boundary_index(y - g.koff[1], g.shape[1], g.mode);
    ptrdiff_t j2 = cvi_boundary_index(x - g.koff[2], g.shape[2], g.mode);
    if (j0 < 0 || j1 < 0 || j2 < 0) {
        for (int c = 0; c < g.channels; c++)
            dst[c * g.plane_real] = (R)g.cval;
        return;
    }
    const char *src = in + j0 * g.in_str[0] + j1 * g.in_str[1] + j2 * g.in_str[2];
    for (int c = 0; c < g.channels; c++)
        dst[c * g.plane_real] = fft_load<R>(g.in_type, src + c * g.in_cstr);
}

/* spectra[c][i] *= filt[i] */
template <typename CX>
__global__ void fft_multiply_kernel(CX *spectra, const CX *filt, long long plane, int channels)
{
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < plane;
         i += (long long)gridDim.x * blockDim.x) {
        const CX b = filt[i];
        for (int c = 0; c < channels; c++) {
            CX a = spectra[c * plane + i], r;
            r.x = a.x * b.x - a.y * b.y;
            r.y = a.x * b.y + a.y * b.x;
            spectra[c * plane + i] = r;
        }
    }
}

/* out[z][y][x][c] = buf[c][z][y][x] over the output's extents. */
template <typename R>
__global__ void fft_crop_kernel(const __grid_constant__ fft_geom g, const R *buf, char *out)
{
    const long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long zy = fft_row_index();
    if (x >= g.shape[2] || zy >= g.shape[0] * g.shape[1])
        return;
    const long long y = zy % g.shape[1], z = zy / g.shape[1];
    const R *src = buf + (z * g.n[1] + y) * g.row + x;
    char *dst = out + z * g.out_str[0] + y * g.out_str[1] + x * g.out_str[2];
    for (int c = 0; c < g.channels; c++)
        fft_store(g.out_type, dst + c * g.out_cstr, (double)src[c * g.plane_real]);
}

/* filt[k0][k1][k2] (real view, rows of `row`) = w[k], zero elsewhere (the
 * buffer is cleared before). */
template <typename R>
__global__ void fft_scatter_weights_kernel(R *filt, const double *w, long long k0, long long k1,
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
__global__ void fft_conj_scale_kernel(CX *f, long long count, R scale)
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
    return (unsigned)(b > 65536 ? 65536 : b < 1 ? 1 : b);
}

/* A grid of 256-thread blocks over `width` columns and `rows` rows. */
static int row_grid(long long width, long long rows, dim3 *grid)
{
    long long gz = (rows + 65534) / 65535;
    if (gz > 65535 || (width + FFT_THREADS - 1) / FFT_THREADS > 0x7fffffffLL)
        return 0;
    *grid = dim3((unsigned)((width + FFT_THREADS - 1) / FFT_THREADS),
                 (unsigned)(rows < 65535 ? rows : 65535), (unsigned)(gz < 1 ? 1 : gz));
    return 1;
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

static void fft_geometry(const cvi_fft_plan *f, const cvi_problem *p, fft_geom *g)
{
    for (int a = 0; a < 3; a++) {
        g->shape[a] = (long long)p->shape[a];
        g->ksize[a] = (long long)p->ksize[a];
        g->koff[a] = p->koff[a];
        g->n[a] = f->n[a];
        g->in_str[a] = p->in_strides[a];
        g->out_str[a] = p->out_strides[a];
    }
    g->in_cstr = p->in_cstride;
    g->out_cstr = p->out_cstride;
    g->row = 2 * f->half;
    g->plane_real = f->n[0] * f->n[1] * g->row;
    g->channels = (int)p->channels;
    g->mode = p->mode;
    g->in_type = p->in_type;
    g->out_type = p->out_type;
    g->cval = p->cval;
}

/* Plans for `batch` transforms of the extents in f, in place. */
static convolve_status make_plans(cvi_fft_plan *f, int batch, cufftHandle *fwd, cufftHandle *inv,
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
    if (rows * 2 * f->half > 0x7fffffffLL) {
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

extern "C" void cvi_fft_destroy(cvi_fft_plan *f)
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

extern "C" convolve_status cvi_fft_create(const cvi_problem *p, cvi_fft_plan **out, char *err,
                                          size_t n)
{
    *out = NULL;
    cvi_fft_plan *f = (cvi_fft_plan *)calloc(1, sizeof *f);
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
    if (!fft_extents(p, f->n, &f->half, &f->plane)) {
        snprintf(err, n, "FFT sizes overflow");
        st = CONVOLVE_ERROR_SIZE_OVERFLOW;
        goto fail;
    }
    if ((st = make_plans(f, f->channels, &f->fwd, &f->inv, err, n)) != CONVOLVE_OK)
        goto fail;
    f->have_fwd = f->have_inv = 1;
    if ((st = cuda_status(cudaMalloc(&f->buf, (size_t)f->plane * csize * f->channels),
                          "cudaMalloc (FFT buffer)", err, n)) != CONVOLVE_OK ||
        (st = cuda_status(cudaMalloc(&f->filt, (size_t)f->plane * csize), "cudaMalloc (filter)",
                          err, n)) != CONVOLVE_OK ||
        (st = cuda_status(cudaMalloc((void **)&d_w, p->kcount * sizeof(double)),
                          "cudaMalloc (weights)", err, n)) != CONVOLVE_OK)
        goto fail;

    /* the filter's spectrum: scatter, transform (one batch), conjugate, scale */
    if ((st = cuda_status(cudaMemcpy(d_w, p->weights, p->kcount * sizeof(double),
                                     cudaMemcpyHostToDevice),
                          "cudaMemcpy (weights)", err, n)) != CONVOLVE_OK ||
        (st = cuda_status(cudaMemset(f->filt, 0, (size_t)f->plane * csize), "cudaMemset", err,
                          n)) != CONVOLVE_OK)
        goto fail;
    {
        long long k0 = (long long)p->ksize[0], k1 = (long long)p->ksize[1],
                  k2 = (long long)p->ksize[2], row = 2 * f->half;
        unsigned b = fft_blocks(k0 * k1 * k2);
        if (f->dbl)
            CVK_LAUNCH(fft_scatter_weights_kernel<double>, b, FFT_THREADS, 0, 0,
                       ((double *)f->filt, d_w, k0, k1, k2, f->n[1], row));
        else
            CVK_LAUNCH(fft_scatter_weights_kernel<float>, b, FFT_THREADS, 0, 0,
                       ((float *)f->filt, d_w, k0, k1, k2, f->n[1], row));
        if ((st = cuda_status(cudaGetLastError(), "filter scatter kernel", err, n)) != CONVOLVE_OK)
            goto fail;
    }
    if ((st = make_plans(f, 1, &f1, &i1, err, n)) != CONVOLVE_OK)
        goto fail;
    have1 = 1;
    st = cufft_status(f->dbl ? cufftExecD2Z(f1, (cufftDoubleReal *)f->filt,
                                            (cufftDoubleComplex *)f->filt)
                             : cufftExecR2C(f1, (cufftReal *)f->filt, (cufftComplex *)f->filt),
                      "filter FFT", err, n);
    if (st != CONVOLVE_OK)
        goto fail;
    {
        double scale = 1.0 / ((double)f->n[0] * (double)f->n[1] * (double)f->n[2]);
        unsigned b = fft_blocks(f->plane);
        if (f->dbl) {
            auto k_ = fft_conj_scale_kernel<cufftDoubleComplex, double>;
            CVK_LAUNCH(k_, b, FFT_THREADS, 0, 0, ((cufftDoubleComplex *)f->filt, f->plane, scale));
        } else {
            auto k_ = fft_conj_scale_kernel<cufftComplex, float>;
            CVK_LAUNCH(k_, b, FFT_THREADS, 0, 0, ((cufftComplex *)f->filt, f->plane, (float)scale));
        }
        if ((st = cuda_status(cudaGetLastError(), "filter scale kernel", err, n)) != CONVOLVE_OK)
            goto fail;
    }
    if ((st = cuda_status(cudaDeviceSynchronize(), "filter spectrum", err, n)) != CONVOLVE_OK)
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
    cvi_fft_destroy(f);
    return st;
}

extern "C" convolve_status cvi_fft_execute(cvi_fft_plan *f, const cvi_problem *p, const void *in,
                                           void *out, cudaStream_t stream, char *err, size_t n)
{
    fft_geom g;
    fft_geometry(f, p, &g);
    convolve_status st;
    if ((st = cufft_status(cufftSetStream(f->fwd, stream), "cufftSetStream", err, n)) != CONVOLVE_OK ||
        (st = cufft_status(cufftSetStream(f->inv, stream), "cufftSetStream", err, n)) != CONVOLVE_OK)
        return st;
    dim3 ext_grid, crop_grid;
    if (!row_grid(g.row, g.n[0] * g.n[1], &ext_grid) ||
        !row_grid(g.shape[2], g.shape[0] * g.shape[1], &crop_grid)) {
        snprintf(err, n, "FFT grid too large");
        return CONVOLVE_ERROR_UNSUPPORTED;
    }
    if (f->dbl) {
        CVK_LAUNCH(fft_extend_kernel<double>, ext_grid, FFT_THREADS, 0, stream, (g, (const char *)in, (double *)f->buf));
        if ((st = cuda_status(cudaGetLastError(), "FFT extend kernel", err, n)) != CONVOLVE_OK)
            return st;
        if ((st = cufft_status(cufftExecD2Z(f->fwd, (cufftDoubleReal *)f->buf,
                                            (cufftDoubleComplex *)f->buf),
                               "forward FFT", err, n)) != CONVOLVE_OK)
            return st;
        CVK_LAUNCH(fft_multiply_kernel<cufftDoubleComplex>, fft_blocks(f->plane), FFT_THREADS, 0, stream, ((cufftDoubleComplex *)f->buf, (const cufftDoubleComplex *)f->filt, f->plane, f->channels));
        if ((st = cuda_status(cudaGetLastError(), "FFT multiply kernel", err, n)) != CONVOLVE_OK)
            return st;
        if ((st = cufft_status(cufftExecZ2D(f->inv, (cufftDoubleComplex *)f->buf,
                                            (cufftDoubleReal *)f->buf),
                               "inverse FFT", err, n)) != CONVOLVE_OK)
            return st;
        CVK_LAUNCH(fft_crop_kernel<double>, crop_grid, FFT_THREADS, 0, stream, (g, (const double *)f->buf, (char *)out));
    } else {
        CVK_LAUNCH(fft_extend_kernel<float>, ext_grid, FFT_THREADS, 0, stream, (g, (const char *)in, (float *)f->buf));
        if ((st = cuda_status(cudaGetLastError(), "FFT extend kernel", err, n)) != CONVOLVE_OK)
            return st;
        if ((st = cufft_status(cufftExecR2C(f->fwd, (cufftReal *)f->buf, (cufftComplex *)f->buf),
                               "forward FFT", err, n)) != CONVOLVE_OK)
            return st;
        CVK_LAUNCH(fft_multiply_kernel<cufftComplex>, fft_blocks(f->plane), FFT_THREADS, 0, stream, ((cufftComplex *)f->buf, (const cufftComplex *)f->filt, f->plane, f->channels));
        if ((st = cuda_status(cudaGetLastError(), "FFT multiply kernel", err, n)) != CONVOLVE_OK)
            return st;
        if ((st = cufft_status(cufftExecC2R(f->inv, (cufftComplex *)f->buf, (cufftReal *)f->buf),
                               "inverse FFT", err, n)) != CONVOLVE_OK)
            return st;
        CVK_LAUNCH(fft_crop_kernel<float>, crop_grid, FFT_THREADS, 0, stream, (g, (const float *)f->buf, (char *)out));
    }
    return cuda_status(cudaGetLastError(), "FFT crop kernel", err, n);
}
