/*
 * filter_named.c - the named filters ("box:R", "gaussian:SIGMA", "sobel-x",
 * ...) behind convolve_filter_create_named. Each is stored so that the
 * default operation, convolution, gives the natural result (sobel-x responds
 * positively where values grow along x); --correlate flips asymmetric ones.
 */
#include "internal.h"

#include <errno.h>
#include <math.h>
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
                             "%zu weights", spec, len, ndim, CVI_NAMED_MAX_WEIGHTS);
    }
    return CONVOLVE_OK;
}

/* Parses all of s as a finite double. */
static int parse_double(const char *s, double *v)
{
    if (!s || !*s)
        return 0;
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (*end != '\0' || errno == ERANGE || !isfinite(d))
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
    char name[32];
    const char *colon = strchr(spec, ':');
    size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
    if (nlen == 0 || nlen >= sizeof name)
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER, "unknown filter '%s'", spec);
    memcpy(name, spec, nlen);
    name[nlen] = '\0';
    const char *arg = colon ? colon + 1 : NULL;
    int wants_arg = !strcmp(name, "box") || !strcmp(name, "gaussian");
    int known = wants_arg || !strcmp(name, "identity") || !strcmp(name, "laplacian") ||
                !strcmp(name, "sobel-x") || !strcmp(name, "sobel-y") ||
                !strcmp(name, "sharpen") || !strcmp(name, "emboss");
    if (!known)
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER,
                         "unknown filter '%s' (known: box:R, gaussian:SIGMA, identity, laplacian, "
                         "sobel-x, sobel-y, sharpen, emboss)", spec);
    if (wants_arg && (!arg || !*arg))
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER,
                         "filter '%s' needs an argument: %s", spec,
                         !strcmp(name, "box") ? "box:R (radius, an integer >= 0)"
                                              : "gaussian:SIGMA (a number > 0)");
    if (!wants_arg && arg)
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER, "filter '%s' takes no argument", name);

    if (!strcmp(name, "box")) {
        double r;
        if (!parse_double(arg, &r) || r < 0 || r != floor(r) || r > CVI_NAMED_MAX_RADIUS)
            return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER,
                             "box:%s: the radius must be an integer from 0 to %d", arg,
                             CVI_NAMED_MAX_RADIUS);
        size_t len = 2 * (size_t)r + 1;
        convolve_status st = check_weights(ctx, spec, len, ndim);
        if (st != CONVOLVE_OK)
            return st;
        double *t = malloc(len * sizeof(double));
        if (!t)
            return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory");
        for (size_t i = 0; i < len; i++)
            t[i] = 1.0 / (double)len;
        st = separable_same(ctx, filter, ndim, t, len);
        free(t);
        return st;
    }
    if (!strcmp(name, "gaussian")) {
        double sigma;
        if (!parse_double(arg, &sigma) || !(sigma > 0))
            return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER,
                             "gaussian:%s: sigma must be a number > 0", arg);
        double rr = floor(4.0 * sigma + 0.5); /* scipy: int(truncate * sigma + 0.5) */
        if (rr > CVI_NAMED_MAX_RADIUS)
            return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER,
                             "gaussian:%s: radius %.0f exceeds %d", arg, rr, CVI_NAMED_MAX_RADIUS);
        size_t r = (size_t)rr, len = 2 * r + 1;
        convolve_status st = check_weights(ctx, spec, len, ndim);
        if (st != CONVOLVE_OK)
            return st;
        double *t = malloc(len * sizeof(double));
        if (!t)
            return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory");
        double sum = 0.0;
        for (size_t i = 0; i < len; i++) {
            double x = (double)i - (double)r;
            /* the centre is 1 even where sigma * sigma underflows to 0 */
            t[i] = x == 0.0 ? 1.0 : exp(-0.5 * x * x / (sigma * sigma));
            sum += t[i];
        }
        for (size_t i = 0; i < len; i++)
            t[i] /= sum;
        st = separable_same(ctx, filter, ndim, t, len);
        free(t);
        return st;
    }
    if (!strcmp(name, "identity")) {
        static const double one = 1.0;
        return separable_same(ctx, filter, ndim, &one, 1);
    }
    if (!strcmp(name, "laplacian")) {
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
    const double *k3 = !strcmp(name, "sobel-x") ? k_sobel_x
                       : !strcmp(name, "sobel-y") ? k_sobel_y
                       : !strcmp(name, "sharpen") ? k_sharpen
                       : !strcmp(name, "emboss")  ? k_emboss
                                                  : NULL;
    if (!k3)
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER,
                         "unknown filter '%s' (known: box:R, gaussian:SIGMA, identity, laplacian, "
                         "sobel-x, sobel-y, sharpen, emboss)", spec);
    if (ndim != 2)
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER,
                         "filter '%s' is 2-D; the input has %d dimension%s", name, ndim,
                         ndim == 1 ? "" : "s");
    size_t shape[2] = {3, 3};
    return convolve_filter_create(ctx, filter, 2, shape, k3);
}
