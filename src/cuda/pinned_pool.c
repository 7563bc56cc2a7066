/*
 * pinned_pool.c - the process's pool of pinned host buffers (pinned_pool.h):
 * a list of free buffers under one mutex, best fit on take, the oldest
 * given freed first when an execution ends with the free bytes past the
 * limit (cvcu_pinned_trim). A buffer the pool keeps stays pinned until
 * the process ends.
 */
#include "pinned_pool.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define POOL_SLOTS 64
#define POOL_ROUND ((size_t)1 << 20) /* sizes are whole MiB: fewer near misses */

typedef struct {
    void *ptr;
    size_t size;
    unsigned long long given; /* when it was given back (a counter) */
} free_buf;

static pthread_mutex_t pool_mutex = PTHREAD_MUTEX_INITIALIZER;
static free_buf pool[POOL_SLOTS];
static int pool_count;
static size_t pool_bytes;
static unsigned long long pool_clock;
static size_t pool_limit = (size_t)-1; /* (size_t)-1: not read yet */

/* The limit on free bytes kept (the mutex held). */
static size_t limit_locked(void)
{
    if (pool_limit != (size_t)-1)
        return pool_limit;
    size_t limit = (size_t)1024 << 20;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
        limit = (size_t)pages / 8 * (size_t)page;
    const char *env = getenv("CONVOLVE_PINNED_POOL_MIB");
    if (env && *env) {
        char *end;
        unsigned long long mib = strtoull(env, &end, 10);
        if (*end == '\0' && mib <= ((size_t)-1 >> 21))
            limit = (size_t)mib << 20;
    }
    pool_limit = limit;
    return limit;
}

/* bytes rounded up to whole MiB (fewer near misses between sizes) */
static size_t round_mib(size_t bytes)
{
    return bytes <= SIZE_MAX - POOL_ROUND ? (bytes + POOL_ROUND - 1) / POOL_ROUND * POOL_ROUND
                                          : bytes;
}

/* Removes pool[i] (the mutex held). */
static void remove_locked(int i)
{
    pool_bytes -= pool[i].size;
    pool[i] = pool[--pool_count];
}

cudaError_t cvcu_pinned_take(size_t bytes, void **ptr, size_t *size)
{
    *ptr = NULL;
    pthread_mutex_lock(&pool_mutex);
    int best = -1;
    for (int i = 0; i < pool_count; i++)
        if (pool[i].size >= bytes && (best < 0 || pool[i].size < pool[best].size))
            best = i;
    if (best >= 0) {
        *ptr = pool[best].ptr;
        *size = pool[best].size;
        remove_locked(best);
    }
    pthread_mutex_unlock(&pool_mutex);
    if (*ptr)
        return cudaSuccess;
    size_t want = round_mib(bytes);
    cudaError_t e = cudaMallocHost(ptr, want);
    if (e != cudaSuccess) {
        *ptr = NULL;
        return e;
    }
    *size = want;
    return cudaSuccess;
}

void cvcu_pinned_give(void *ptr, size_t size)
{
    if (!ptr)
        return;
    void *drop = NULL;
    pthread_mutex_lock(&pool_mutex);
    if (pool_count == POOL_SLOTS) { /* full: the oldest goes */
        int old = 0;
        for (int i = 1; i < pool_count; i++)
            if (pool[i].given < pool[old].given)
                old = i;
        drop = pool[old].ptr;
        remove_locked(old);
    }
    pool[pool_count].ptr = ptr;
    pool[pool_count].size = size;
    pool[pool_count].given = ++pool_clock;
    pool_count++;
    pool_bytes += size;
    pthread_mutex_unlock(&pool_mutex);
    if (drop && cudaFreeHost(drop) != cudaSuccess)
        (void)cudaGetLastError();
}

void cvcu_pinned_trim(size_t keep)
{
    void *drop[POOL_SLOTS];
    int ndrop = 0;
    pthread_mutex_lock(&pool_mutex);
    size_t limit = limit_locked();
    limit = limit > keep ? limit : keep;
    while (pool_bytes > limit && pool_count > 0) { /* the oldest first */
        int old = 0;
        for (int i = 1; i < pool_count; i++)
            if (pool[i].given < pool[old].given)
                old = i;
        drop[ndrop++] = pool[old].ptr;
        remove_locked(old);
    }
    pthread_mutex_unlock(&pool_mutex);
    for (int i = 0; i < ndrop; i++)
        if (cudaFreeHost(drop[i]) != cudaSuccess)
            (void)cudaGetLastError();
}
