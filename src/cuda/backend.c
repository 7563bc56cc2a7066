/*
 * backend.c - the CUDA backend's table (cvcu_backend, src/backend.h): the
 * strategies of strategies.c and the calls of strategies.c, plan.c and
 * runtime.c.
 */
#include "backend.h"
#include "kernels.h"
#include "pinned_pool.h"

const cvi_backend cvcu_backend = {
    .id = CONVOLVE_BACKEND_CUDA,
    .strategies = cvcu_strategies,
    .strategy_count = CVK_STRATEGY_COUNT,
    .probe = cvcu_probe,
    .pick = cvcu_pick,
    .prepare = cvcu_prepare,
    .execute_host = cvcu_execute_host,
    .execute_device = cvcu_execute_device,
    .benchmark = cvcu_benchmark,
    .release = cvcu_release,
    .device_key = cvcu_device_key,
    .copy_bandwidth = cvcu_copy_bandwidth,
    .estimate_ms = cvcu_estimate_ms,
    .device_count = cvcu_device_count,
    .probe_index = cvcu_probe_index,
    .memory_info = cvcu_memory_info,
    .host_register = cvcu_host_register,
    .host_unregister = cvcu_host_unregister,
    .host_alloc = cvcu_host_alloc,
    .host_free = cvcu_pinned_free,
    .host_reserve = cvcu_pinned_reserve,
    .execute_host_streamed = cvcu_execute_host_streamed,
    .window_cost = cvcu_window_cost,
};
