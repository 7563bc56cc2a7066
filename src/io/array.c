/*
 * array.c - host arrays (convolve_array_*): creation, accessors, element type
 * conversion; and the small helpers the readers and writers share (array
 * allocation with messages, image size limits).
 */
#include "io.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

convolve_status cvio_layout_init(convolve_context *ctx, convolve_layout *layout,
                                 convolve_dtype dtype, int ndim, const size_t *shape,
                                 size_t channels, const char *what)
{
    convolve_status st = convolve_layout_init(layout, dtype, ndim, shape, channels);
    switch (st) {
    case CONVOLVE_OK: return CONVOLVE_OK;
    case CONVOLVE_ERROR_INVALID_ARGUMENT:
        return cvi_error(ctx, st, "%s: unknown element type %d", what, (int)dtype);
    case CONVOLVE_ERROR_BAD_LAYOUT:
        if (ndim < 1 || ndim > CONVOLVE_MAX_DIMS)
            return cvi_error(ctx, st, "%s: %d dimensions; 1 to %d are supported", what, ndim,
                             CONVOLVE_MAX_DIMS);
        return cvi_error(ctx, st, "%s: an extent or the channel count is zero", what);
    default:
        return cvi_error(ctx, CONVOLVE_ERROR_SIZE_OVERFLOW,
                         "%s: too large, its byte count "
                         "overflows",
                         what);
    }
}

convolve_status cvio_array_new(convolve_context *ctx, convolve_array **array, convolve_dtype dtype,
                               int ndim, const size_t *shape, size_t channels, const char *what)
{
    *array = NULL;
    convolve_layout L;
    convolve_status st = cvio_layout_init(ctx, &L, dtype, ndim, shape, channels, what);
    if (st != CONVOLVE_OK)
        return st;
    size_t bytes = convolve_layout_count(&L) * convolve_dtype_size(dtype); /* checked by init */
    convolve_array *a = calloc(1, sizeof *a);
    if (!a)
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "%s: out of memory", what);
    a->layout = L;
    a->bytes = bytes;
    a->data = calloc(bytes, 1);
    if (!a->data) {
        free(a);
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "%s: out of memory for %zu bytes", what,
                         bytes);
    }
    *array = a;
    return CONVOLVE_OK;
}

convolve_status cvio_check_pixel_limit(convolve_context *ctx, const char *what, size_t width,
                                       size_t height, size_t pages)
{
    size_t pixels;
    const size_t limit = convolve_context_max_pixels(ctx);
    if (limit && (!cvi_mul_size(width, height, &pixels) || !cvi_mul_size(pixels, pages, &pixels) ||
                  pixels > limit)) {
        if (pages > 1)
            return cvi_error(ctx, CONVOLVE_ERROR_LIMIT,
                             "%s: %zu pages of %zux%zu pixels are more than the limit of %zu "
                             "pixels (raise it with --max-pixels, or "
                             "convolve_context_set_max_pixels, if the file is trusted)",
                             what, pages, width, height, limit);
        return cvi_error(ctx, CONVOLVE_ERROR_LIMIT,
                         "%s: %zux%zu pixels are more than the limit of %zu (raise it with "
                         "--max-pixels, or convolve_context_set_max_pixels, if the file is "
                         "trusted)",
                         what, width, height, limit);
    }
    return CONVOLVE_OK;
}

convolve_status cvio_check_image_size(convolve_context *ctx, const char *what, size_t width,
                                      size_t height, size_t channels, size_t esize)
{
    size_t pixels, bytes;
    if (width == 0 || height == 0)
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "%s: size %zux%zu is empty", what, width,
                         height);
    if (!cvi_mul_size(width, height, &pixels) || pixels > CVIO_MAX_PIXELS)
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                         "%s: %zux%zu pixels is more than the limit of %zu", what, width, height,
                         CVIO_MAX_PIXELS);

    if (!cvi_mul_size(pixels, channels, &bytes) || !cvi_mul_size(bytes, esize, &bytes) ||
        bytes > (size_t)PTRDIFF_MAX)
        return cvi_error(ctx, CONVOLVE_ERROR_SIZE_OVERFLOW, "%s: byte count overflows", what);
    return CONVOLVE_OK;
}

convolve_status convolve_array_create(convolve_context *ctx, convolve_array **array,
                                      convolve_dtype dtype, int ndim, const size_t *shape,
                                      size_t channels)
{
    if (!array || !shape)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "convolve_array_create: %s is NULL",
                         array ? "shape" : "array");
    *array = NULL;
    if (!convolve_dtype_name(dtype))
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_array_create: unknown element type %d", (int)dtype);
    convolve_status st = cvio_array_new(ctx, array, dtype, ndim, shape, channels, "array");
    return st == CONVOLVE_OK ? cvi_ok(ctx) : st;
}

void convolve_array_free(convolve_array *array)
{
    if (!array)
        return;
    free(array->data);
    free(array);
}

const convolve_layout *convolve_array_layout(const convolve_array *array)
{
    return array ? &array->layout : NULL;
}

void *convolve_array_data(convolve_array *array)
{
    return array ? array->data : NULL;
}

const void *convolve_array_const_data(const convolve_array *array)
{
    return array ? array->data : NULL;
}

size_t convolve_array_bytes(const convolve_array *array)
{
    return array ? array->bytes : 0;
}

convolve_status convolve_array_convert(convolve_context *ctx, const convolve_array *src,
                                       convolve_dtype dtype, convolve_array **dst)
{
    if (!src || !dst)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "convolve_array_convert: %s is NULL",
                         src ? "dst" : "src");
    *dst = NULL;
    if (!convolve_dtype_name(dtype))
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_array_convert: unknown element type %d", (int)dtype);
    const convolve_layout *L = &src->layout;
    convolve_array *a;
    convolve_status st = cvio_array_new(ctx, &a, dtype, L->ndim, L->shape, L->channels,
                                        "converted array");
    if (st != CONVOLVE_OK)
        return st;
    if (dtype == L->dtype) {
        memcpy(a->data, src->data, src->bytes);
    } else {
        size_t n = convolve_layout_count(L);
        size_t si = convolve_dtype_size(L->dtype), so = convolve_dtype_size(dtype);
        const unsigned char *s = src->data;
        unsigned char *d = a->data;
        for (size_t i = 0; i < n; i++)
            cvi_store_double(dtype, d + i * so, cvi_load_double(L->dtype, s + i * si));
    }
    *dst = a;
    return cvi_ok(ctx);
}
