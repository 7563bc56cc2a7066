/*
 * context.c - contexts: creation, freeing (with the autotune's wisdom), the
 * file settings (pixel limit, PNG compression). The CUDA device a context
 * probes is device.c.
 */
#include "internal.h"
#include "wisdom.h"

#include <stdlib.h>

convolve_status convolve_context_create(convolve_context **ctx)
{
    if (!ctx)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    *ctx = calloc(1, sizeof **ctx);
    if (!*ctx)
        return CONVOLVE_ERROR_OUT_OF_MEMORY;
    (*ctx)->max_pixels = CONVOLVE_DEFAULT_MAX_PIXELS;
    (*ctx)->png_compression = CONVOLVE_DEFAULT_PNG_COMPRESSION;
    return CONVOLVE_OK;
}

convolve_status convolve_context_set_max_pixels(convolve_context *ctx, size_t max_pixels)
{
    if (!ctx)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    ctx->max_pixels = max_pixels;
    return cvi_ok(ctx);
}

size_t convolve_context_max_pixels(const convolve_context *ctx)
{
    return ctx ? ctx->max_pixels : 0;
}

convolve_status convolve_context_set_png_compression(convolve_context *ctx, int level)
{
    if (!ctx)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    if (level < 0 || level > 9)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "PNG compression level %d: use 0 (fastest) to 9 (smallest)", level);
    ctx->png_compression = level;
    return cvi_ok(ctx);
}

int convolve_context_png_compression(const convolve_context *ctx)
{
    return ctx ? ctx->png_compression : -1;
}

void convolve_context_free(convolve_context *ctx)
{
    if (ctx)
        cvi_wisdom_free(ctx->wisdom);
    free(ctx);
}
