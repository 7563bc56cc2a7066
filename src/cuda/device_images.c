/*
 * device_images.c - the process's idle device buffers for one-shot
 * executions on host arrays (device_images.h). A plan allocated its two
 * device images at its first execution and kept them: two cudaMallocPitch
 * calls, 0.11-0.18 ms of a 512^2 float32 call's first execution of 0.5 ms
 * (an H200 host), which every new shape paid. Idle buffers are listed in
 * the order they were given back; a fork's child forgets them (its parent's
 * CUDA handles serve no child).
 */
#include "device_images.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    int device;
    void *ptr;
    size_t cap;
} idle_image;

static pthread_mutex_t images_mutex = PTHREAD_MUTEX_INITIALIZER;
static idle_image idle[CVCU_IMAGES_KEPT]; /* the oldest first */
static int idle_count;
static unsigned long made;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void)
{
    pthread_mutex_lock(&images_mutex);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&images_mutex);
}

static void fork_child(void)
{
    idle_count = 0;
    pthread_mutex_unlock(&images_mutex);
}

static void register_fork(void)
{
    (void)pthread_atfork(fork_prepare, fork_parent, fork_child);
}

size_t cvcu_image_pitch(int ndim, size_t width, size_t rows)
{
    if (ndim < 2 || rows < 2)
        return width;
    const size_t a = width < 128 ? 16 : 128;
    return (width + a - 1) / a * a;
}

/* The size allocated for `bytes`: 1 MiB at least, then whole eighths of
 * the power of two at or above bytes (at most 1/8 more than asked), so that
 * nearby shapes share buffers. Sizes past half of SIZE_MAX are kept. */
static size_t rounded(size_t bytes)
{
    const size_t mib = (size_t)1 << 20;
    if (bytes <= mib)
        return mib;
    size_t p = mib;
    while (p < bytes && p <= SIZE_MAX / 2)
        p *= 2;
    const size_t step = p / 8;
    return bytes > SIZE_MAX - step ? bytes : (bytes + step - 1) / step * step;
}

/* Removes idle entry i (mutex held). */
static idle_image remove_locked(int i)
{
    idle_image e = idle[i];
    memmove(&idle[i], &idle[i + 1], (size_t)(idle_count - i - 1) * sizeof idle[0]);
    idle_count--;
    return e;
}

/* Frees e's buffer with its device current, then makes `current` current. */
static void free_on(const idle_image *e, int current)
{
    if (e->device != current && cudaSetDevice(e->device) != cudaSuccess) {
        (void)cudaGetLastError();
        return; /* its device is gone: nothing to free it with */
    }
    (void)cudaFree(e->ptr);
    if (e->device != current)
        (void)cudaSetDevice(current);
    (void)cudaGetLastError();
}

cudaError_t cvcu_image_take(int device, size_t bytes, void **ptr, size_t *cap)
{
    pthread_mutex_lock(&images_mutex);
    int best = -1;
    for (int i = 0; i < idle_count; i++)
        if (idle[i].device == device && idle[i].cap >= bytes &&
            (best < 0 || idle[i].cap < idle[best].cap))
            best = i;
    if (best >= 0) {
        const idle_image e = remove_locked(best);
        pthread_mutex_unlock(&images_mutex);
        *ptr = e.ptr, *cap = e.cap;
        return cudaSuccess;
    }
    pthread_mutex_unlock(&images_mutex);
    const size_t size = rounded(bytes);
    cudaError_t e = cudaMalloc(ptr, size);
    if (e == cudaErrorMemoryAllocation && cvcu_image_release_idle(device) > 0) {
        (void)cudaGetLastError(); /* room made: once more */
        e = cudaMalloc(ptr, size);
    }
    if (e != cudaSuccess) {
        *ptr = NULL, *cap = 0;
        return e;
    }
    *cap = size;
    pthread_mutex_lock(&images_mutex);
    made++;
    pthread_mutex_unlock(&images_mutex);
    return cudaSuccess;
}

void cvcu_image_give(int device, void *ptr, size_t cap)
{
    if (!ptr)
        return;
    if (cap > CVCU_IMAGES_KEPT_BYTES) {
        (void)cudaFree(ptr);
        (void)cudaGetLastError();
        return;
    }
    (void)pthread_once(&fork_once, register_fork);
    idle_image gone[CVCU_IMAGES_KEPT];
    int ngone = 0;
    pthread_mutex_lock(&images_mutex);
    size_t held = cap;
    for (int i = 0; i < idle_count; i++)
        held += idle[i].cap;
    while (idle_count > 0 && (idle_count == CVCU_IMAGES_KEPT || held > CVCU_IMAGES_KEPT_BYTES)) {
        gone[ngone] = remove_locked(0);
        held -= gone[ngone++].cap;
    }
    idle[idle_count++] = (idle_image){device, ptr, cap};
    pthread_mutex_unlock(&images_mutex);
    for (int i = 0; i < ngone; i++)
        free_on(&gone[i], device);
}

int cvcu_image_release_idle(int device)
{
    idle_image gone[CVCU_IMAGES_KEPT];
    int ngone = 0;
    pthread_mutex_lock(&images_mutex);
    for (int i = 0; i < idle_count;)
        if (idle[i].device == device)
            gone[ngone++] = remove_locked(i);
        else
            i++;
    pthread_mutex_unlock(&images_mutex);
    for (int i = 0; i < ngone; i++)
        free_on(&gone[i], device);
    return ngone;
}

void cvcu_image_stats(int *idle_now, unsigned long *made_so_far)
{
    pthread_mutex_lock(&images_mutex);
    *idle_now = idle_count;
    *made_so_far = made;
    pthread_mutex_unlock(&images_mutex);
}
