/*
 * gen.c - plans and launches of the generated direct kernels (gen.h): the
 * choice of family and block geometry for a problem, the kernel itself (run-
 * time compiled for the exact shape through jit.c, else a precompiled
 * instance), the weights (parameter bank or device memory), and the launch
 * on any layout of device memory.
 */
#include "gen_plan.h"
#include "jit.h"
#include "plan.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cvcu_gen_plan {
    cvk_gen_shape shape;
    cvk_gen_params params;    /* pointers and layout flags set per launch */
    const void *jit_fn;       /* a cudaKernel_t, or NULL */
    cvk_gen_launch_fn pre_fn; /* a precompiled launcher, or NULL */
    void *bank;               /* shape.nw weights of the accumulation type (or one) */
    void *d_weights;          /* the weights in device memory (shape.nw == 0) */
    size_t smem;
    unsigned block;
    unsigned blocks; /* persistent grid: blocks launched */
    /* separable 3-D in two passes: this plan filters x and y plane by plane
     * (planes as batches) into `temp`, then `zpass` filters z into the output */
    long long planes; /* > 0: this plan's batches are the input's planes */
    cvcu_gen_plan *zpass;
    void *temp;
    long long temp_strides[3]; /* elements of the accumulation type */
    int in_size, out_size, interleaved;
};

static const char *type_name(int t)
{
    static const char *const names[] = {"float", "double", "unsigned char", "unsigned short"};
    return t >= 0 && t < 4 ? names[t] : "?";
}

/* The kernel's C++ name with its template arguments, for NVRTC; 0 if buf is too small. */
static int kernel_name(const cvk_gen_shape *s, char *buf, size_t size)
{
    const char *T = type_name(s->in_type), *A = s->acc_double ? "double" : "float";
    int n;
    if (s->family == CVK_GEN_STRIP)
        n = snprintf(buf, size, "cvk_gen_strip<%s, %s, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d>", T,
                     A, s->out_type, s->C, s->kx, s->ky, s->ox, s->bx, s->by, s->tx, s->ty, s->nw);
    else
        n = snprintf(buf, size,
                     "cvk_gen_tile<%s, %s, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d>", T, A,
                     s->out_type, s->C, s->kx, s->ky, s->kz, s->ox, s->sep, s->bx, s->by, s->tx,
                     s->ty, s->nw);
    return n > 0 && (size_t)n < size;
}

/* The dynamic shared memory a block of shape s needs for extents k and C channels. */
static size_t shared_bytes(const cvk_gen_shape *s, const int k[3], int C)
{
    cvk_gen_geom g;
    const int in_size = (int)(s->in_type == 0 ? 4 : s->in_type == 1 ? 8 : s->in_type == 2 ? 1 : 2);
    cvk_gen_geometry(s->family, in_size, C, k, s->ox >= 0 ? s->ox : 0, s->sep, s->bx, s->by, s->tx,
                     s->ty, s->nw == 0, &g);
    return (size_t)g.elems * (s->acc_double ? 8 : 4);
}

/* ---- geometry ---------------------------------------------------------------- */

/* The block shape for problem p in family fam (bx elements and by rows a
 * thread; tx x ty threads). Interleaved channels widen a thread's run of
 * elements to whole pixels, so each staged row feeds more FMAs. */
static void choose_geometry(const cvi_problem *p, int fam, int dbl, int C, cvk_gen_shape *s)
{
    const int px = C >= 2 && C <= 4 ? C : 1;
    s->bx = (dbl ? 2 : 4) * px;
    s->tx = 32, s->ty = 8, s->by = 2;
    if (p->ndim == 1) {
        /* 1-D: one row; long runs a thread, so each stage carries work */
        s->tx = 256, s->ty = 1, s->by = 1;
        /* long filters: half the run, as 16 outputs and a window of taps
         * spilled registers at 65 taps (Nsight Compute, H100) */
        if (px == 1)
            s->bx = p->ksize[2] > 32 ? (dbl ? 4 : 8) : (dbl ? 8 : 16);
    } else if (fam == CVK_GEN_STRIP) {
        /* the ring holds ky + rows a stage of x-filtered rows, each tx * bx wide */
        s->by = s->bx >= 8 ? 2 : 4;
        if (s->bx >= 8)
            s->tx = 16;
    } else if (p->ndim == 2) {
        s->by = p->ksize[1] >= 7 ? 8 : 4;
        if (s->bx >= 8)
            s->by /= 2;
    } else {
        /* rolling accumulators along z: kz * by * bx of them */
        s->by = p->ksize[0] * 2 * (size_t)s->bx <= 64 ? 2 : 1;
    }
}

/* ---- weights --------------------------------------------------------------------- */

/* The weights in the kernels' order as the accumulation type: dense, C order;
 * separable tile: z, y, x taps; strip: y, x taps. */
static void *pack_weights(const cvi_problem *p, int fam, int sep, int dbl, size_t *count)
{
    size_t n = sep ? p->ksize[0] + p->ksize[1] + p->ksize[2] : p->kcount;
    if (fam == CVK_GEN_STRIP)
        n = p->ksize[1] + p->ksize[2];
    void *w = malloc((n ? n : 1) * (dbl ? 8 : 4));
    if (!w)
        return NULL;
    size_t i = 0;
    for (int a = fam == CVK_GEN_STRIP ? 1 : 0; sep && a < 3; a++)
        for (size_t k = 0; k < p->ksize[a]; k++, i++) {
            if (dbl)
                ((double *)w)[i] = p->taps[a][k];
            else
                ((float *)w)[i] = (float)p->taps[a][k];
        }
    for (; !sep && i < n; i++) {
        if (dbl)
            ((double *)w)[i] = p->weights[i];
        else
            ((float *)w)[i] = (float)p->weights[i];
    }
    *count = n;
    return w;
}

/* ---- plans ----------------------------------------------------------------------- */

void cvcu_gen_release(cvcu_gen_plan *g)
{
    if (!g)
        return;
    cvcu_gen_release(g->zpass);
    if (g->temp)
        (void)cudaFree(g->temp);
    if (g->d_weights)
        (void)cudaFree(g->d_weights);
    free(g->bank);
    free(g);
}

int cvcu_gen_serves(const cvi_problem *p, int separable, char *why, size_t n)
{
    /* a filter along x only (1-D signals, 1 x K rows) is its own separable
     * form: the long separable limit applies (its tile holds one row) */
    const int x_only = p->ksize[0] == 1 && p->ksize[1] == 1;
    for (int a = 0; a < 3; a++) {
        size_t lim = separable || x_only ? CVCU_GEN_MAX_SEP_TAPS : CVCU_GEN_MAX_TAPS;
        if (p->ksize[a] > lim) {
            snprintf(why, n,
                     "filter extent %zu on axis %d is over the %s direct kernels' limit "
                     "of %zu",
                     p->ksize[a], a - (3 - p->ndim),
                     lim == CVCU_GEN_MAX_SEP_TAPS ? "separable" : "dense", lim);
            return 0;
        }
    }
    if (separable && !p->separable) {
        snprintf(why, n,
                 "the filter is not separable (give one 1-D filter per axis, or dense "
                 "weights of rank one)");
        return 0;
    }
    if (p->channels > 65535) {
        snprintf(why, n, "%zu channels are over the direct kernels' limit of 65535", p->channels);
        return 0;
    }
    return 1;
}

/* Shared memory the block needs, within the device's limit? Tries narrower
 * blocks when it is not. */
static int fit_shared(cvk_gen_shape *s, const int k[3], int C, size_t limit, size_t *smem)
{
    for (;;) {
        *smem = shared_bytes(s, k, C);
        if (*smem <= limit)
            return 1;
        if (s->by > 1)
            s->by /= 2;
        else if (s->tx > 8)
            s->tx /= 2;
        else
            return 0;
    }
}

/* The device's compute capability, opt-in shared memory per block and
 * multiprocessors. Errors: DEVICE. */
typedef struct {
    int major, minor, optin, sms;
} gen_device;

static convolve_status query_device(convolve_context *ctx, gen_device *d)
{
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&d->major, cudaDevAttrComputeCapabilityMajor, dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&d->minor, cudaDevAttrComputeCapabilityMinor, dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&d->optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&d->sms, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return cvi_error(ctx, CONVOLVE_ERROR_DEVICE, "CUDA: querying the device failed: %s",
                         cudaGetErrorString(e));
    }
    return CONVOLVE_OK;
}

/* The kernel's compile-time shape for p (family, types, extents, channels,
 * geometry), whether channels are interleaved, and the packed weights in
 * g->bank (*count of them). 0 when out of memory. */
static int describe_kernel(cvcu_gen_plan *g, const cvi_problem *p, int separable, size_t *count)
{
    const int dbl = p->in_type == CONVOLVE_FLOAT64;
    const int sep = separable && p->separable && p->ndim >= 2;
    const int fam = sep && p->ndim == 2 ? CVK_GEN_STRIP : CVK_GEN_TILE;
    const size_t esize = convolve_dtype_size(p->in_type);
    cvk_gen_shape *s = &g->shape;
    s->family = fam;
    s->in_type = (int)p->in_type;
    s->out_type = (int)p->out_type;
    s->acc_double = dbl;
    s->sep = fam == CVK_GEN_STRIP ? 1 : sep;
    s->kx = (int)p->ksize[2], s->ky = (int)p->ksize[1];
    s->kz = fam == CVK_GEN_STRIP ? 1 : (int)p->ksize[0];
    s->ox = (int)p->koff[2];
    /* interleaved channels go into the x axis; any other layout is a batch */
    g->interleaved = p->channels == 1 || (p->in_cstride == (ptrdiff_t)esize &&
                                          p->in_strides[2] == (ptrdiff_t)(esize * p->channels));
    s->C = g->interleaved ? (int)p->channels : 1;
    choose_geometry(p, fam, dbl, s->C, s);
    *count = 0;
    g->bank = pack_weights(p, fam, s->sep, dbl, count);
    if (!g->bank)
        return 0;
    s->nw = *count * (dbl ? 8 : 4) <= CVK_GEN_PARAM_WEIGHT_BYTES ? (int)*count : 0;
    return 1;
}

/* The kernel itself: the specialised one, compiled now (or found in a
 * cache) or precompiled; else the generic instance (extents, channels and
 * offset at run time). Errors: UNSUPPORTED. */
static convolve_status find_kernel(convolve_context *ctx, cvcu_gen_plan *g, const cvi_problem *p,
                                   const gen_device *d)
{
    cvk_gen_shape *s = &g->shape;
    const int dbl = s->acc_double, C = s->C;
    const int k[3] = {s->kz, s->ky, s->kx};
    char name[256], why[512] = "";
    if (fit_shared(s, k, s->C, (size_t)d->optin, &g->smem) && kernel_name(s, name, sizeof name)) {
        if (cvcu_jit_kernel(name, d->major, d->minor, &g->jit_fn, why, sizeof why) != 0) {
            /* a precompiled instance of this shape (the output type at run time) */
            cvk_gen_shape u = *s;
            u.out_type = -1;
            if ((g->pre_fn = cvk_gen_precompiled(&u)) != NULL)
                *s = u;
        }
    }
    if (g->jit_fn || g->pre_fn)
        return CONVOLVE_OK;
    cvk_gen_shape t = *s;
    t.out_type = -1, t.C = 0, t.kx = t.ky = 0, t.ox = -1, t.nw = 0;
    t.kz = t.family == CVK_GEN_STRIP ? 1 : 0;
    t.bx = dbl ? 2 : 4;
    t.by = t.family == CVK_GEN_TILE && p->ndim == 1 ? 1 : 2;
    t.tx = t.family == CVK_GEN_TILE && p->ndim == 1 ? 256 : 32;
    t.ty = t.family == CVK_GEN_TILE && p->ndim == 1 ? 1 : 8;
    g->pre_fn = cvk_gen_precompiled(&t);
    *s = t;
    s->ox = (int)p->koff[2]; /* the shared memory it needs depends on it */
    const int fits = fit_shared(s, k, C, (size_t)d->optin, &g->smem);
    if (!g->pre_fn || !fits || s->tx != t.tx || s->by != t.by)
        return cvi_error(ctx, CONVOLVE_ERROR_UNSUPPORTED,
                         "the direct kernels cannot serve this "
                         "case: %s%s%s",
                         !g->pre_fn ? "no generic kernel was compiled for it"
                                    : "its tiles need more shared memory than the device's limit",
                         *why ? "; run-time compilation: " : "", why);
    s->ox = -1;
    return CONVOLVE_OK;
}

/* The weights in device memory when they do not fit the parameter bank,
 * and the run-time compiled kernel's shared memory opted in. Errors:
 * DEVICE, DEVICE_OUT_OF_MEMORY. */
static convolve_status ready_kernel(convolve_context *ctx, cvcu_gen_plan *g, size_t count)
{
    if (g->shape.nw == 0) {
        convolve_status st = cvcu_upload(ctx, g->bank, count * (g->shape.acc_double ? 8 : 4),
                                         &g->d_weights);
        if (st != CONVOLVE_OK)
            return st;
    }
    if (g->jit_fn && g->smem > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(g->jit_fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)g->smem);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return cvi_error(ctx, CONVOLVE_ERROR_DEVICE,
                             "CUDA: raising the kernel's shared "
                             "memory to %zu bytes failed: %s",
                             g->smem, cudaGetErrorString(e));
        }
    }
    return CONVOLVE_OK;
}

/* The launch's fixed part: extents, filter, mode, batches, the persistent
 * grid, and the tiling along x, y (strips) and z; `batches` more batches
 * (planes) will come at launch than p says. */
static void plan_launch(cvcu_gen_plan *g, const cvi_problem *p, size_t count, int sms,
                        long long batches)
{
    const cvk_gen_shape *s = &g->shape;
    const int fam = s->family;
    cvk_gen_params *q = &g->params;
    for (int a = 0; a < 3; a++) {
        q->n[a] = (long long)p->shape[a];
        q->k[a] = (int)p->ksize[a];
        q->koff[a] = (int)p->koff[a];
    }
    if (fam == CVK_GEN_STRIP)
        q->k[0] = 1, q->koff[0] = 0;
    q->cval = p->cval;
    q->mode = p->mode;
    q->out_type = (int)p->out_type;
    q->C = g->interleaved ? (int)p->channels : 1;
    q->nbatch = g->interleaved ? 1 : (int)p->channels;
    q->nw = (int)count;
    g->in_size = (int)convolve_dtype_size(p->in_type);
    g->out_size = (int)convolve_dtype_size(p->out_type);
    g->block = (unsigned)(s->tx * s->ty);
    /* persistent blocks: as many as the device holds at once */
    int occ = 0;
    cudaError_t e = g->jit_fn ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                                    &occ, g->jit_fn, (int)g->block, g->smem)
                              : g->pre_fn(NULL, NULL, NULL, NULL, g->block, g->smem, NULL, &occ);
    if (e != cudaSuccess || occ < 1) {
        (void)cudaGetLastError();
        occ = 1;
    }
    g->blocks = (unsigned)((sms > 0 ? sms : 132) * occ);
    const long long SW = (long long)s->tx * s->bx;
    const long long WC = q->n[2] * q->C;
    q->tiles_x = (WC + SW - 1) / SW;
    if (fam == CVK_GEN_STRIP) {
        /* strips long enough that the ky - 1 rows of each strip's start are a
         * small share, short enough to fill the device a few times over */
        const long long rc = (long long)s->ty * s->by;
        long long len = 4 * (long long)(s->ky - 1) > 64 ? 4 * (long long)(s->ky - 1) : 64;
        const long long blocks_wanted = (long long)sms * 8;
        const long long per = q->tiles_x * q->nbatch * (batches > 1 ? batches : 1);
        while (len > rc && per * ((q->n[1] + len - 1) / len) < blocks_wanted)
            len /= 2;
        len = (len + rc - 1) / rc * rc;
        q->zchunk = len;
        q->tiles_y = (q->n[1] + len - 1) / len;
        q->nz = 1;
    } else {
        q->tiles_y = (q->n[1] + s->ty * s->by - 1) / (s->ty * s->by);
        long long zc = q->n[0];
        if (p->ndim == 3) {
            /* the persistent blocks take tiles in turns of g->blocks; a
             * chunk of zc planes costs zc stages, plus kz - 1 priming ones
             * with rolling accumulators (else kz a plane, none priming):
             * the chunk count whose turns times chunk cost is least (a
             * 3-D 640^3 15^3 slab of 94 planes ran 28-plane chunks, 150
             * stages for 94 planes, and a turn with 4 of 396 blocks busy) */
            const long long per = q->tiles_x * q->tiles_y * q->nbatch, n0 = q->n[0];
            const long long G = g->blocks > 0 ? (long long)g->blocks : 1;
            const long long prime = CVK_GEN_ROLL(s->kz, s->by, s->bx) ? s->kz - 1 : 0;
            long long best = -1;
            for (long long c = 1; c <= n0 && c <= 4096; c++) {
                const long long z = (n0 + c - 1) / c;
                if (c > 1 && z == (n0 + c - 2) / (c - 1))
                    continue; /* the same chunk as c - 1: more tiles, no gain */
                const long long turns = (per * ((n0 + z - 1) / z) + G - 1) / G;
                const long long cost = turns * (z + prime);
                if (best < 0 || cost < best)
                    best = cost, zc = z;
            }
        }
        q->zchunk = zc;
        q->nz = (q->n[0] + zc - 1) / zc;
    }
}

/* The plan of one kernel for p; `batches` more batches (planes) will come
 * at launch than p says (sizes the strips). */
static convolve_status prepare_one(convolve_context *ctx, const cvi_problem *p, int separable,
                                   long long batches, cvcu_gen_plan **out)
{
    *out = NULL;
    cvcu_gen_plan *g = calloc(1, sizeof *g);
    size_t count = 0;
    if (!g)
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for a CUDA plan");
    if (!describe_kernel(g, p, separable, &count)) {
        cvcu_gen_release(g);
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for weights");
    }
    gen_device d = {0, 0, 0, 0};
    convolve_status st;
    if ((st = query_device(ctx, &d)) != CONVOLVE_OK ||
        (st = find_kernel(ctx, g, p, &d)) != CONVOLVE_OK ||
        (st = ready_kernel(ctx, g, count)) != CONVOLVE_OK) {
        cvcu_gen_release(g);
        return st;
    }
    plan_launch(g, p, count, d.sms, batches);
    *out = g;
    return CONVOLVE_OK;
}

static cudaError_t cvcu_gen_launch_one(const cvcu_gen_plan *g, const void *in, void *out,
                                       const long long is[3], long long ics, const long long os[3],
                                       long long ocs, cudaStream_t stream);

/* Separable 3-D filters whose y or z taps pass this many run in two passes:
 * fused, each plane's y halo is filtered along x again by every tile, and
 * the rolling z accumulators take registers that taller tiles would need. */
#define CVCU_GEN_FUSED_3D_MAX 5

/* The two-pass plan of a separable 3-D filter with interleaved channels:
 * x and y into a temporary volume of the accumulation type, plane by plane,
 * then z (a dense kz x 1 x 1 filter; CONSTANT: the planes outside hold cval
 * filtered along x and y, cval times the sums of those taps). */
static convolve_status prepare_two_pass(convolve_context *ctx, const cvi_problem *p,
                                        cvcu_gen_plan **out)
{
    static const double one = 1.0;
    const int dbl = p->in_type == CONVOLVE_FLOAT64;
    const convolve_dtype at = dbl ? CONVOLVE_FLOAT64 : CONVOLVE_FLOAT32;
    const ptrdiff_t as = dbl ? 8 : 4, C = (ptrdiff_t)p->channels;
    const ptrdiff_t ts[3] = {(ptrdiff_t)(p->shape[1] * p->shape[2]) * C * as,
                             (ptrdiff_t)p->shape[2] * C * as, C * as};
    cvi_problem a = *p, b = *p;
    /* x and y: a 2-D problem over one plane; the launch batches the planes */
    a.ndim = 2;
    a.shape[0] = 1, a.ksize[0] = 1, a.koff[0] = 0, a.taps[0] = &one;
    a.in_strides[0] = a.out_strides[0] = 0;
    a.out_type = at;
    a.out_strides[1] = ts[1], a.out_strides[2] = ts[2], a.out_cstride = as;
    a.kcount = p->ksize[1] * p->ksize[2];
    a.weights = NULL; /* separable: the taps serve */
    /* z: a dense kz x 1 x 1 filter over the temporary volume */
    double sy = 0, sx = 0;
    for (size_t i = 0; i < p->ksize[1]; i++)
        sy += p->taps[1][i];
    for (size_t i = 0; i < p->ksize[2]; i++)
        sx += p->taps[2][i];
    b.in_type = at;
    for (int i = 0; i < 3; i++)
        b.in_strides[i] = ts[i];
    b.in_cstride = as;
    b.ksize[1] = b.ksize[2] = 1, b.koff[1] = b.koff[2] = 0;
    b.kcount = p->ksize[0];
    b.weights = p->taps[0];
    b.separable = 0;
    b.cval = p->cval * sy * sx;
    cvcu_gen_plan *g = NULL;
    convolve_status st = prepare_one(ctx, &a, 1, (long long)p->shape[0], &g);
    if (st == CONVOLVE_OK)
        st = prepare_one(ctx, &b, 0, 1, &g->zpass);
    if (st == CONVOLVE_OK) {
        size_t bytes = (size_t)ts[0] * p->shape[0];
        cudaError_t e = cudaMalloc(&g->temp, bytes);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            g->temp = NULL;
            st = cvi_error(ctx,
                           e == cudaErrorMemoryAllocation ? CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY
                                                          : CONVOLVE_ERROR_DEVICE,
                           "CUDA: the separable filter's intermediate volume (%zu MiB) could not "
                           "be allocated: %s",
                           bytes >> 20, cudaGetErrorString(e));
        }
    }
    if (st != CONVOLVE_OK) {
        cvcu_gen_release(g);
        return st;
    }
    g->planes = (long long)p->shape[0];
    for (int i = 0; i < 3; i++)
        g->temp_strides[i] = ts[i] / as;
    *out = g;
    return CONVOLVE_OK;
}

convolve_status cvcu_gen_prepare(convolve_context *ctx, const cvi_problem *p, int separable,
                                 cvcu_gen_plan **out)
{
    const size_t esize = convolve_dtype_size(p->in_type);
    const int interleaved = p->channels == 1 ||
                            (p->in_cstride == (ptrdiff_t)esize &&
                             p->in_strides[2] == (ptrdiff_t)(esize * p->channels));
    if (separable && p->separable && p->ndim == 3 && interleaved &&
        (p->ksize[0] > CVCU_GEN_FUSED_3D_MAX || p->ksize[1] > CVCU_GEN_FUSED_3D_MAX))
        return prepare_two_pass(ctx, p, out);
    return prepare_one(ctx, p, separable, 1, out);
}

cudaError_t cvcu_gen_launch(const cvcu_gen_plan *g, const void *in, void *out,
                            const long long is[3], long long ics, const long long os[3],
                            long long ocs, cudaStream_t stream)
{
    if (g->zpass) {
        /* x and y plane by plane into the temporary volume, then z */
        const cudaError_t e = cvcu_gen_launch_one(g, in, g->temp, is, ics, g->temp_strides, 1,
                                                  stream);
        if (e != cudaSuccess)
            return e;
        return cvcu_gen_launch_one(g->zpass, g->temp, out, g->temp_strides, 1, os, ocs, stream);
    }
    return cvcu_gen_launch_one(g, in, out, is, ics, os, ocs, stream);
}

static cudaError_t cvcu_gen_launch_one(const cvcu_gen_plan *g, const void *in, void *out,
                                       const long long is[3], long long ics, const long long os[3],
                                       long long ocs, cudaStream_t stream)
{
    cvk_gen_params q = g->params;
    q.in = in, q.out = out;
    for (int a = 0; a < 3; a++)
        q.is[a] = is[a], q.os[a] = os[a];
    q.ics = ics, q.ocs = ocs;
    if (g->interleaved) {
        q.ibs = q.obs = 0;
        q.in_contig = is[2] == q.C && (q.C == 1 || ics == 1);
        q.out_contig = os[2] == q.C && (q.C == 1 || ocs == 1);
    } else {
        q.ibs = ics, q.obs = ocs;
        q.ics = q.ocs = 0;
        q.in_contig = is[2] == 1;
        q.out_contig = os[2] == 1;
    }
    if (g->planes > 0) {
        /* the input's planes are this 2-D plan's batches (channels interleaved) */
        q.nbatch = (int)g->planes;
        q.ibs = is[0], q.obs = os[0];
    }
    const long long ib = g->in_size, ob = g->out_size;
    q.in_vec = q.in_contig && (uintptr_t)in % 16 == 0 && (q.n[1] == 1 || is[1] * ib % 16 == 0) &&
               (q.n[0] == 1 || is[0] * ib % 16 == 0) && (q.nbatch == 1 || q.ibs * ib % 16 == 0);
    q.out_vec = q.out_contig && (uintptr_t)out % 16 == 0 && (q.n[1] == 1 || os[1] * ob % 16 == 0) &&
                (q.n[0] == 1 || os[0] * ob % 16 == 0) && (q.nbatch == 1 || q.obs * ob % 16 == 0);
    /* persistent blocks walk the tiles, loading each next tile while they
     * compute the one before: a few blocks a multiprocessor */
    const long long total = q.tiles_x * q.tiles_y * q.nz * q.nbatch;
    const long long want = (long long)g->blocks;
    const unsigned grid[3] = {(unsigned)(total < want ? total : want), 1, 1};
    const void *gw = g->d_weights;
    if (g->jit_fn) {
        void *args[3] = {&q, g->bank, (void *)&gw};
        return cvk_gen_launch_kernel(g->jit_fn, grid, g->block, args, g->smem, stream);
    }
    return g->pre_fn(&q, g->bank, gw, grid, g->block, g->smem, stream, NULL);
}
