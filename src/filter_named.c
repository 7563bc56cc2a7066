/*
 * filter_named.c - the named filters ("box:R", "gaussian:SIGMA", "sobel-x",
 * ...) behind convolve_filter_create_named, in one table that also serves
 * convolve_named_filter_get (from which the CLI's help and docs/cli.md are
 * made) and the messages. Each is stored so that the default operation,
 * convolution, gives the natural result (sobel-x responds positively where
 * values grow along x); --correlate flips asymmetric ones.
 */
#include "internal.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Radius cap for box and gaussian: far past any useful filter, and small
 * enough that the taps cannot exhaust memory. */
#define CVI_NAMED_MAX_RADIUS 100000
/* Weight cap for box and gaussian, whose dense form is kept too: 128 MiB
 * (radius 2047 in 2-D, 127 in 3-D), so a short spec cannot ask for petabytes
 * ("box:100000" in 3-D). */
#define CVI_NAMED_MAX_WEIGHTS ((size_t)1 << 24)

/* A BAD_FILTER error if len^ndim weights pass CVI_NAMED_MAX_WEIGHTS. */
static convolve_status check_weights(convolve_context *ctx, const char *spec, size_t len, int ndim)
{
    size_t n = 1;
    for (int a = 0; a < ndim; a++) {
        n *= len; /* at most 2^24 * (2 * CVI_NAMED_MAX_RADIUS + 1): no overflow */
        if (n > CVI_NAMED_MAX_WEIGHTS)
            return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER,
                             "%s: %zu taps per axis in %d dimensions is more than the limit of "
                             "%zu weights",
                             spec, len, ndim, CVI_NAMED_MAX_WEIGHTS);
    }
    return CONVOLVE_OK;
}

/* Parses all of s as a finite double; a number too small for a double
 * gives the nearest one (a subnormal, or 0), as Python's float() does. */
static int parse_double(const char *s, double *v)
{
    if (!s || !*s)
        return 0;
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (*end != '\0' || !isfinite(d) || (errno == ERANGE && fabs(d) > DBL_MIN))
        return 0;
    *v = d;
    return 1;
}

static convolve_status separable_same(convolve_context *ctx, convolve_filter **filter, int ndim,
                                      const double *taps, size_t len)
{
    size_t lengths[3] = {len, len, len};
    const double *t[3] = {taps, taps, taps};
    return convolve_filter_create_separable(ctx, filter, ndim, lengths, t);
}

/* The 3x3 kernels, in the orientation stored (convolution form). */
static const double k_sobel_x[9] = {1, 0, -1, 2, 0, -2, 1, 0, -1};
static const double k_sobel_y[9] = {1, 2, 1, 0, 0, 0, -1, -2, -1};
static const double k_sharpen[9] = {0, -1, 0, -1, 5, -1, 0, -1, 0};
static const double k_emboss[9] = {2, 1, 0, 1, 1, -1, 0, -1, -2};

typedef struct named_filter named_filter;

/* A parsed spec: the table entry, the spec as given, its argument (NULL
 * when none) and the dimensions asked, which the entry serves. */
typedef struct {
    const named_filter *nf;
    const char *spec, *arg;
    int ndim;
} named_request;

/* Builds the filter a request names. */
typedef convolve_status (*named_make)(convolve_context *ctx, convolve_filter **filter,
                                      const named_request *rq);

struct named_filter {
    convolve_named_filter_info info;
    const char *argument_rule; /* what a valid argument is, for messages */
    named_make make;
    const double *kernel3; /* the 3x3 weights of fixed 2-D kernels */
};

/* Builds the separable filter of len taps per axis that fill() computes from
 * param, within the weight cap. */
static convolve_status separable_taps(convolve_context *ctx, convolve_filter **filter,
                                      const char *spec, int ndim, size_t len,
                                      void (*fill)(double *t, size_t len, double param),
                                      double param)
{
    convolve_status st = check_weights(ctx, spec, len, ndim);
    if (st != CONVOLVE_OK)
        return st;
    double *t = malloc(len * sizeof(double));
    if (!t)
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory");
    fill(t, len, param);
    st = separable_same(ctx, filter, ndim, t, len);
    free(t);
    return st;
}

static void fill_box(double *t, size_t len, double param)
{
    (void)param;
    for (size_t i = 0; i < len; i++)
        t[i] = 1.0 / (double)len;
}

static void fill_gaussian(double *t, size_t len, double sigma)
{
    double sum = 0.0, r = (double)(len / 2);
    for (size_t i = 0; i < len; i++) {
        double x = (double)i - r;
        /* the centre is 1 even where sigma * sigma underflows to 0 */
        t[i] = x == 0.0 ? 1.0 : exp(-0.5 * x * x / (sigma * sigma));
        sum += t[i];
    }
    for (size_t i = 0; i < len; i++)
        t[i] /= sum;
}

static convolve_status make_box(convolve_context *ctx, convolve_filter **filter,
                                const named_request *rq)
{
    double r;
    if (!parse_double(rq->arg, &r) || r < 0 || r != floor(r) || r > CVI_NAMED_MAX_RADIUS)
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER,
                         "box:%s: the radius must be an integer from 0 to %d", rq->arg,
                         CVI_NAMED_MAX_RADIUS);
    return separable_taps(ctx, filter, rq->spec, rq->ndim, 2 * (size_t)r + 1, fill_box, 0.0);
}

static convolve_status make_gaussian(convolve_context *ctx, convolve_filter **filter,
                                     const named_request *rq)
{
    double sigma;
    if (!parse_double(rq->arg, &sigma) || !(sigma > 0))
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER, "gaussian:%s: sigma must be a number > 0",
                         rq->arg);
    double rr = floor(4.0 * sigma + 0.5); /* scipy: int(truncate * sigma + 0.5) */
    if (rr > CVI_NAMED_MAX_RADIUS)
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER, "gaussian:%s: radius %.0f exceeds %d",
                         rq->arg, rr, CVI_NAMED_MAX_RADIUS);
    return separable_taps(ctx, filter, rq->spec, rq->ndim, 2 * (size_t)rr + 1, fill_gaussian,
                          sigma);
}

static convolve_status make_identity(convolve_context *ctx, convolve_filter **filter,
                                     const named_request *rq)
{
    static const double one = 1.0;
    return separable_same(ctx, filter, rq->ndim, &one, 1);
}

static convolve_status make_laplacian(convolve_context *ctx, convolve_filter **filter,
                                      const named_request *rq)
{
    const int ndim = rq->ndim;
    size_t shape[3] = {3, 3, 3};
    double w[27] = {0};
    size_t count = 1;
    for (int a = 0; a < ndim; a++)
        count *= 3;
    size_t centre = count / 2, step = 1;
    w[centre] = -2.0 * ndim;
    for (int a = 0; a < ndim; a++, step *= 3) {
        w[centre - step] = 1.0;
        w[centre + step] = 1.0;
    }
    return convolve_filter_create(ctx, filter, ndim, shape, w);
}

static convolve_status make_kernel3(convolve_context *ctx, convolve_filter **filter,
                                    const named_request *rq)
{
    static const size_t shape[2] = {3, 3};
    return convolve_filter_create(ctx, filter, 2, shape, rq->nf->kernel3);
}

#define ALL_DIMS 7u /* 1-D, 2-D and 3-D */
#define ONLY_2D 2u

/* In the order messages and listings show them. */
static const named_filter k_named[] = {
    {{"box", "R", ALL_DIMS, "(2R+1) taps per axis, all equal, summing to 1 (separable)"},
     "radius, an integer >= 0",
     make_box,
     NULL},
    {{"gaussian", "SIGMA", ALL_DIMS,
      "scipy's sampled Gaussian of sigma SIGMA > 0, radius int(4*SIGMA + 0.5), normalised "
      "(separable)"},
     "a number > 0",
     make_gaussian,
     NULL},
    {{"identity", NULL, ALL_DIMS, "a single 1: the input unchanged"}, NULL, make_identity, NULL},
    {{"laplacian", NULL, ALL_DIMS,
      "the discrete Laplacian: [1 -2 1] in 1-D, 3x3 4-neighbour in 2-D, 6-neighbour in 3-D"},
     NULL,
     make_laplacian,
     NULL},
    {{"sobel-x", NULL, ONLY_2D, "3x3 Sobel derivative along x (axis 1)"},
     NULL,
     make_kernel3,
     k_sobel_x},
    {{"sobel-y", NULL, ONLY_2D, "3x3 Sobel derivative along y (axis 0)"},
     NULL,
     make_kernel3,
     k_sobel_y},
    {{"sharpen", NULL, ONLY_2D, "3x3 sharpening kernel (5 at the centre, -1 at its 4 neighbours)"},
     NULL,
     make_kernel3,
     k_sharpen},
    {{"emboss", NULL, ONLY_2D, "3x3 emboss kernel"}, NULL, make_kernel3, k_emboss},
};

#define NAMED_COUNT (sizeof k_named / sizeof k_named[0])

size_t convolve_named_filter_count(void)
{
    return NAMED_COUNT;
}

convolve_status convolve_named_filter_get(size_t index, convolve_named_filter_info *info)
{
    if (index >= NAMED_COUNT || !info)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    *info = k_named[index].info;
    return CONVOLVE_OK;
}

/* "unknown filter 'SPEC' (known: box:R, gaussian:SIGMA, ...)". */
static convolve_status unknown_filter(convolve_context *ctx, const char *spec)
{
    char known[256];
    size_t n = 0;
    for (size_t i = 0; i < NAMED_COUNT && n < sizeof known; i++) {
        const convolve_named_filter_info *f = &k_named[i].info;
        n += (size_t)snprintf(known + n, sizeof known - n, "%s%s%s%s", i ? ", " : "", f->name,
                              f->argument ? ":" : "", f->argument ? f->argument : "");
    }
    return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER, "unknown filter '%s' (known: %s)", spec,
                     known);
}

/* "2-D", "1-D or 2-D", ... for a dims mask. */
static void dims_text(unsigned dims, char *out, size_t size)
{
    size_t n = 0;
    out[0] = '\0';
    for (int d = 1; d <= CONVOLVE_MAX_DIMS && n < size; d++)
        if (dims >> (d - 1) & 1)
            n += (size_t)snprintf(out + n, size - n, "%s%d-D", n ? " or " : "", d);
}

convolve_status convolve_filter_create_named(convolve_context *ctx, convolve_filter **filter,
                                             const char *spec, int ndim)
{
    if (!filter || !spec)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_filter_create_named: NULL argument");
    *filter = NULL;
    if (ndim < 1 || ndim > CONVOLVE_MAX_DIMS)
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER,
                         "filter '%s': %d dimensions asked; 1 to 3 are supported", spec, ndim);
    const char *colon = strchr(spec, ':');
    size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
    const named_filter *nf = NULL;
    for (size_t i = 0; i < NAMED_COUNT && !nf; i++)
        if (strlen(k_named[i].info.name) == nlen && !strncmp(k_named[i].info.name, spec, nlen))
            nf = &k_named[i];
    if (!nf)
        return unknown_filter(ctx, spec);
    const char *name = nf->info.name, *arg = colon ? colon + 1 : NULL;
    if (nf->info.argument && (!arg || !*arg))
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER,
                         "filter '%s' needs an argument: %s:%s "
                         "(%s)",
                         spec, name, nf->info.argument, nf->argument_rule);
    if (!nf->info.argument && arg)
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER, "filter '%s' takes no argument", name);
    if (!(nf->info.dims >> (ndim - 1) & 1)) {
        char dims[32];
        dims_text(nf->info.dims, dims, sizeof dims);
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER,
                         "filter '%s' is %s; the input has %d dimension%s", name, dims, ndim,
                         ndim == 1 ? "" : "s");
    }
    const named_request rq = {nf, spec, arg, ndim};
    return nf->make(ctx, filter, &rq);
}
