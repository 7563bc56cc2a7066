/*
 * device.c - the CUDA calls the backend's host files share, below them all:
 * recording a CUDA error, entering and leaving a plan's device, uploading
 * weights. Every CUDA call is checked.
 */
#include "plan.h"

convolve_status cvcu_error(convolve_context *ctx, cudaError_t e, const char *what)
{
    convolve_status st = e == cudaErrorMemoryAllocation ? CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY
                                                        : CONVOLVE_ERROR_DEVICE;
    if (e == cudaErrorMemoryAllocation)
        (void)cudaGetLastError(); /* not sticky: keep it from the next launch check */
    return cvi_error(ctx, st, "CUDA: %s failed: %s (%s)", what, cudaGetErrorString(e),
                     cudaGetErrorName(e));
}

cudaError_t cvcu_enter_device(const cvcu_plan *plan, int *prev)
{
    cudaError_t e = cudaGetDevice(prev);
    if (e == cudaSuccess && *prev != plan->device)
        e = cudaSetDevice(plan->device);
    return e;
}

void cvcu_leave_device(const cvcu_plan *plan, int prev)
{
    if (prev != plan->device)
        (void)cudaSetDevice(prev);
}

convolve_status cvcu_upload(convolve_context *ctx, const void *host, size_t bytes, void **device)
{
    *device = NULL;
    cudaError_t e = cudaMalloc(device, bytes);
    if (e == cudaSuccess)
        e = cudaMemcpy(*device, host, bytes, cudaMemcpyHostToDevice);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(0);
    if (e == cudaSuccess)
        return CONVOLVE_OK;
    if (*device)
        (void)cudaFree(*device);
    *device = NULL;
    return cvcu_error(ctx, e, "uploading the filter weights");
}
