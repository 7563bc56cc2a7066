/*
 * fuzz_filter_named.c - libFuzzer harness for the public filter-spec parser
 * convolve_filter_create_named. The first byte picks the dimensions (1 + its
 * value mod 3); the rest, up to a NUL, is the spec "NAME[:ARGS]". A filter
 * made must have that many dimensions, positive extents, finite weights (all
 * read) and, for box and gaussian, weights summing to 1 and a separable form;
 * a refusal must be BAD_FILTER (or OUT_OF_MEMORY) with a message, and specs
 * the header promises (box:R for R = 0..10, gaussian:S for 0 < S <= 10, the
 * argument-less names in their dimensions) must not be refused. Box and
 * gaussian filters of 2^20 to 2^24 weights are skipped (see slow()).
 */
#include "fuzz_common.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 if convolve.h promises that spec makes a filter of ndim dimensions. */
static int promised(const char *spec, int ndim)
{
    static const char *const any_dims[] = {"identity", "laplacian"};
    static const char *const two_d[] = {"sobel-x", "sobel-y", "sharpen", "emboss"};
    for (size_t i = 0; i < sizeof any_dims / sizeof any_dims[0]; i++)
        if (!strcmp(spec, any_dims[i]))
            return 1;
    for (size_t i = 0; i < sizeof two_d / sizeof two_d[0]; i++)
        if (!strcmp(spec, two_d[i]))
            return ndim == 2;
    const char *arg = !strncmp(spec, "box:", 4)        ? spec + 4
                      : !strncmp(spec, "gaussian:", 9) ? spec + 9
                                                       : NULL;
    if (!arg || !*arg || (*arg != '.' && (*arg < '0' || *arg > '9')))
        return 0;
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (*end != '\0' || errno == ERANGE || !(v <= 10.0)) /* ERANGE: 1e-400 is no number */
        return 0;
    return spec[0] == 'b' ? v == floor(v) : v > 0.0;
}

/* 1 for a box or gaussian of more than 2^20 weights, up to the library's cap
 * of 2^24: making one takes seconds under the fuzzer's instrumentation, and
 * is the same code as a smaller one. Larger ones are refused at once. */
static int slow(const char *spec, int ndim)
{
    int box = !strncmp(spec, "box:", 4);
    if (!box && strncmp(spec, "gaussian:", 9))
        return 0;
    double v = strtod(spec + (box ? 4 : 9), NULL);
    if (!(v >= 0.0 && v <= 1e6))
        return 0;
    double len = 2.0 * (box ? v : floor(4.0 * v + 0.5)) + 1.0;
    double n = pow(len, ndim);
    return n > (double)(1 << 20) && n <= (double)(1 << 24);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int ndim = 1 + data[0] % 3;
    char *spec = malloc(size);
    FUZZ_CHECK(spec != NULL);
    memcpy(spec, data + 1, size - 1);
    spec[size - 1] = '\0';
    if (slow(spec, ndim)) {
        free(spec);
        return 0;
    }
    convolve_context *ctx = fuzz_context();
    convolve_filter *f = NULL;
    convolve_status st = convolve_filter_create_named(ctx, &f, spec, ndim);
    if (st != CONVOLVE_OK) {
        FUZZ_CHECK(f == NULL);
        FUZZ_CHECK(st == CONVOLVE_ERROR_BAD_FILTER || st == CONVOLVE_ERROR_OUT_OF_MEMORY);
        FUZZ_CHECK(convolve_last_error(ctx)[0] != '\0');
        if (promised(spec, ndim))
            fprintf(stderr, "'%s' (%d-D) refused: %s\n", spec, ndim, convolve_last_error(ctx));
        FUZZ_CHECK(!promised(spec, ndim));
        free(spec);
        return 0;
    }
    FUZZ_CHECK(f != NULL && convolve_filter_ndim(f) == ndim);
    size_t count = 1;
    for (int d = 0; d < ndim; d++) {
        size_t e = convolve_filter_extent(f, d);
        FUZZ_CHECK(e >= 1);
        FUZZ_CHECK(!__builtin_mul_overflow(count, e, &count));
    }
    FUZZ_CHECK(convolve_filter_extent(f, ndim) == 0);
    double *w = malloc(count * sizeof *w);
    FUZZ_CHECK(w != NULL);
    FUZZ_CHECK(convolve_filter_weights(f, w, count) == CONVOLVE_OK);
    double sum = 0.0;
    for (size_t i = 0; i < count; i++) {
        FUZZ_CHECK(isfinite(w[i]));
        sum += w[i];
    }
    if (!strncmp(spec, "box:", 4) || !strncmp(spec, "gaussian:", 9)) {
        FUZZ_CHECK(fabs(sum - 1.0) < 1e-8);
        FUZZ_CHECK(convolve_filter_is_separable(f));
    }
    free(w);
    convolve_filter_free(f);
    free(spec);
    return 0;
}
