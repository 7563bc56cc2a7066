/*
 * device.c - a context's lazily probed CUDA device, the device queries,
 * host memory registration and the pinned host memory of the pool, through
 * the CUDA backend's table.
 */
#include "backend.h"
#include "internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* Some context of the process found a usable GPU: CUDA has started. */
static atomic_int cuda_started;

int cvi_cuda_usable(convolve_context *ctx)
{
    if (!ctx->cuda_probed) {
        memset(&ctx->cuda, 0, sizeof ctx->cuda);
        if (cvcu_backend.probe)
            cvcu_backend.probe(&ctx->cuda);
        else
            snprintf(ctx->cuda.info.reason, sizeof ctx->cuda.info.reason,
                     "libconvolve was built without CUDA");
        ctx->cuda_probed = 1;
        if (ctx->cuda.info.available)
            atomic_store(&cuda_started, 1);
    }
    return ctx->cuda.info.available;
}

int cvi_cuda_started(const convolve_context *ctx)
{
    return ctx->cuda_probed || atomic_load(&cuda_started);
}

convolve_status convolve_device_query(convolve_context *ctx, convolve_device_info *info)
{
    if (!ctx || !info)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_device_query: NULL argument");
    cvi_cuda_usable(ctx);
    *info = ctx->cuda.info;
    return cvi_ok(ctx);
}

convolve_status convolve_device_count(convolve_context *ctx, int *count)
{
    if (!ctx || !count)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_device_count: NULL argument");
    *count = cvcu_backend.device_count ? cvcu_backend.device_count() : 0;
    return cvi_ok(ctx);
}

convolve_status convolve_device_query_index(convolve_context *ctx, int index,
                                            convolve_device_info *info)
{
    if (!ctx || !info)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_device_query_index: NULL argument");
    int count = cvcu_backend.device_count ? cvcu_backend.device_count() : 0;
    if (index < 0 || index >= count)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_device_query_index: device %d; this host has %d CUDA "
                         "device%s",
                         index, count, count == 1 ? "" : "s");
    cvi_device dev;
    memset(&dev, 0, sizeof dev);
    cvcu_backend.probe_index(index, &dev);
    *info = dev.info;
    return cvi_ok(ctx);
}

/* BACKEND_UNAVAILABLE unless a CUDA device can be used. */
static convolve_status need_cuda(convolve_context *ctx, const char *what)
{
    if (!cvcu_backend.host_register)
        return cvi_error(ctx, CONVOLVE_ERROR_BACKEND_UNAVAILABLE,
                         "%s: libconvolve was built without CUDA", what);
    if (!cvi_cuda_usable(ctx))
        return cvi_error(ctx, CONVOLVE_ERROR_BACKEND_UNAVAILABLE, "%s: no GPU can be used: %s",
                         what, ctx->cuda.info.reason);
    return CONVOLVE_OK;
}

convolve_status convolve_host_register(convolve_context *ctx, void *ptr, size_t bytes)
{
    if (!ctx || !ptr || !bytes)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "convolve_host_register: %s",
                         !ctx   ? "NULL context"
                         : !ptr ? "NULL pointer"
                                : "0 bytes");
    convolve_status st = need_cuda(ctx, "convolve_host_register");
    if (st == CONVOLVE_OK)
        st = cvcu_backend.host_register(ctx, ptr, bytes);
    return st == CONVOLVE_OK ? cvi_ok(ctx) : st;
}

convolve_status convolve_host_unregister(convolve_context *ctx, void *ptr)
{
    if (!ctx || !ptr)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "convolve_host_unregister: %s",
                         !ctx ? "NULL context" : "NULL pointer");
    convolve_status st = need_cuda(ctx, "convolve_host_unregister");
    if (st == CONVOLVE_OK)
        st = cvcu_backend.host_unregister(ctx, ptr);
    return st == CONVOLVE_OK ? cvi_ok(ctx) : st;
}

convolve_status convolve_host_alloc(convolve_context *ctx, size_t bytes, unsigned flags, void **ptr)
{
    if (ptr)
        *ptr = NULL;
    if (!ctx || !ptr || !bytes || (flags & ~CONVOLVE_HOST_ALLOC_POOLED))
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "convolve_host_alloc: %s",
                         !ctx     ? "NULL context"
                         : !ptr   ? "NULL pointer"
                         : !bytes ? "0 bytes"
                                  : "unknown flags (CONVOLVE_HOST_ALLOC_POOLED is the only one)");
    const int pooled = (flags & CONVOLVE_HOST_ALLOC_POOLED) != 0;
    if (pooled && cvcu_backend.host_alloc && !cvi_cuda_started(ctx))
        return cvi_ok(ctx); /* nothing pinned before CUDA starts: not started for this */
    convolve_status st = need_cuda(ctx, "convolve_host_alloc");
    if (st == CONVOLVE_OK)
        st = cvcu_backend.host_alloc(ctx, bytes, pooled, ptr);
    return st == CONVOLVE_OK ? cvi_ok(ctx) : st;
}

void convolve_host_free(void *ptr)
{
    if (ptr && cvcu_backend.host_free)
        cvcu_backend.host_free(ptr);
}

convolve_status convolve_host_reserve(convolve_context *ctx, size_t bytes)
{
    if (!ctx || !bytes)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "convolve_host_reserve: %s",
                         !ctx ? "NULL context" : "0 bytes");
    convolve_status st = need_cuda(ctx, "convolve_host_reserve");
    if (st == CONVOLVE_OK)
        cvcu_backend.host_reserve(bytes);
    return st == CONVOLVE_OK ? cvi_ok(ctx) : st;
}
