/*
 * fuzz_common.c - the checks the harnesses share (see fuzz_common.h).
 */
#include "fuzz_common.h"

#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

void fuzz_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "%s:%d: fuzz check failed: %s\n", file, line, what);
    abort();
}

convolve_context *fuzz_context(void)
{
    static convolve_context *ctx;
    if (!ctx)
        FUZZ_CHECK(convolve_context_create(&ctx) == CONVOLVE_OK);
    return ctx;
}

void fuzz_check_read(convolve_status st, const convolve_array *a)
{
    convolve_context *ctx = fuzz_context();
    if (st != CONVOLVE_OK) {
        FUZZ_CHECK(a == NULL);
        FUZZ_CHECK(st == CONVOLVE_ERROR_FORMAT || st == CONVOLVE_ERROR_SIZE_OVERFLOW ||
                   st == CONVOLVE_ERROR_OUT_OF_MEMORY);
        FUZZ_CHECK(convolve_last_error(ctx)[0] != '\0');
        return;
    }
    FUZZ_CHECK(a != NULL);
    const convolve_layout *L = convolve_array_layout(a);
    FUZZ_CHECK(L != NULL && convolve_dtype_name(L->dtype) != NULL);
    FUZZ_CHECK(L->ndim >= 1 && L->ndim <= CONVOLVE_MAX_DIMS);
    FUZZ_CHECK(L->channels >= 1);
    size_t esize = convolve_dtype_size(L->dtype), count = L->channels;
    FUZZ_CHECK((size_t)L->channel_stride == esize);
    size_t step = esize * L->channels;
    for (int d = L->ndim - 1; d >= 0; d--) {
        FUZZ_CHECK(L->shape[d] >= 1);
        FUZZ_CHECK(L->strides[d] > 0 && (size_t)L->strides[d] == step);
        FUZZ_CHECK(!__builtin_mul_overflow(count, L->shape[d], &count));
        step *= L->shape[d];
    }
    FUZZ_CHECK(convolve_layout_count(L) == count);
    FUZZ_CHECK(convolve_array_bytes(a) == count * esize);
    const unsigned char *p = convolve_array_const_data(a);
    FUZZ_CHECK(p != NULL);
    unsigned sum = 0;
    for (size_t i = 0; i < count * esize; i++)
        sum += p[i];
    volatile unsigned sink = sum; /* keeps the reads */
    (void)sink;
}

/* Equal elements; NaN equals NaN (text prints every NaN as "nan"). */
static int same_data(const convolve_array *a, const convolve_array *b)
{
    const convolve_layout *L = convolve_array_layout(a);
    size_t n = convolve_layout_count(L);
    const void *pa = convolve_array_const_data(a), *pb = convolve_array_const_data(b);
    if (L->dtype == CONVOLVE_FLOAT64 || L->dtype == CONVOLVE_FLOAT32) {
        for (size_t i = 0; i < n; i++) {
            double x = L->dtype == CONVOLVE_FLOAT64 ? ((const double *)pa)[i]
                                                    : ((const float *)pa)[i];
            double y = L->dtype == CONVOLVE_FLOAT64 ? ((const double *)pb)[i]
                                                    : ((const float *)pb)[i];
            if (isnan(x) ? !isnan(y) : memcmp(&x, &y, sizeof x) != 0)
                return 0;
        }
        return 1;
    }
    return memcmp(pa, pb, convolve_array_bytes(a)) == 0;
}

void fuzz_round_trip(const convolve_array *a, fuzz_writer write, fuzz_reader read, int exact)
{
    convolve_context *ctx = fuzz_context();
    cvi_buf buf = {NULL, 0, 0};
    convolve_status st = write(ctx, a, &buf);
    if (st != CONVOLVE_OK)
        fprintf(stderr, "round trip: writer failed: %s\n", convolve_last_error(ctx));
    FUZZ_CHECK(st == CONVOLVE_OK);
    convolve_array *b = NULL;
    st = read(ctx, buf.data, buf.size, &b);
    if (st != CONVOLVE_OK)
        fprintf(stderr, "round trip: reader failed: %s\n", convolve_last_error(ctx));
    FUZZ_CHECK(st == CONVOLVE_OK);
    fuzz_check_read(st, b);
    const convolve_layout *L = convolve_array_layout(a), *M = convolve_array_layout(b);
    FUZZ_CHECK(L->dtype == M->dtype && L->ndim == M->ndim && L->channels == M->channels);
    for (int d = 0; d < L->ndim; d++)
        FUZZ_CHECK(L->shape[d] == M->shape[d]);
    if (exact)
        FUZZ_CHECK(same_data(a, b));
    convolve_array_free(b);
    cvi_buf_free(&buf);
}

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
} header_err;

static void header_error_exit(j_common_ptr cinfo)
{
    longjmp(((header_err *)cinfo->err)->jump, 1);
}

static void header_message(j_common_ptr cinfo, int level)
{
    (void)cinfo;
    (void)level;
}

uint64_t fuzz_jpeg_pixels(const uint8_t *data, size_t size)
{
    struct jpeg_decompress_struct ci;
    header_err err;
    volatile uint64_t pixels = 0;
    memset(&ci, 0, sizeof ci);
    ci.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = header_error_exit;
    err.pub.emit_message = header_message;
    if (setjmp(err.jump) == 0) {
        jpeg_create_decompress(&ci);
        jpeg_mem_src(&ci, data, (unsigned long)size);
        if (jpeg_read_header(&ci, TRUE) == JPEG_HEADER_OK)
            pixels = (uint64_t)ci.image_width * ci.image_height;
    }
    jpeg_destroy_decompress(&ci);
    return pixels;
}
