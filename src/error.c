/*
 * error.c - the last-error message on a context: every failure of the
 * library is recorded through cvi_error, every success clears it.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

convolve_status cvi_error(convolve_context *ctx, convolve_status status, const char *fmt, ...)
{
    if (ctx) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->message, sizeof ctx->message, fmt, ap);
        va_end(ap);
    }
    return status;
}

convolve_status cvi_error_prefix(convolve_context *ctx, convolve_status status, const char *fmt,
                                 ...)
{
    if (ctx) {
        char msg[sizeof ctx->message], prefix[sizeof ctx->message];
        memcpy(msg, ctx->message, sizeof msg);
        msg[sizeof msg - 1] = '\0';
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(prefix, sizeof prefix, fmt, ap);
        va_end(ap);
        snprintf(ctx->message, sizeof ctx->message, "%s%s", prefix, msg);
    }
    return status;
}

convolve_status cvi_ok(convolve_context *ctx)
{
    if (ctx)
        ctx->message[0] = '\0';
    return CONVOLVE_OK;
}

const char *convolve_last_error(const convolve_context *ctx)
{
    return ctx ? ctx->message : "no context";
}
