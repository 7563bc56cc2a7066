/*
 * pinned_pool.c - the process's pool of pinned host buffers (pinned_pool.h):
 * a list of free buffers under one mutex, best fit on take, the oldest
 * given freed first when an execution ends with the free bytes past the
 * limit (cvcu_pinned_trim). A buffer the pool keeps stays pinned until
 * the process ends.
 *
 * New buffers are anonymous mappings asking for transparent huge pages,
 * starting on a huge page (2 MiB), of a size class (cvcu_pinned_class),
 * faulted in by several threads at once and then registered
 * (cudaHostRegister): the page faults and their zeroing, not the pinning,
 * are most of cudaMallocHost's cost, and one thread does them there
 * (docs/architecture.md, "Measured choices"). Where registering fails the
 * first time (no such support), the pool uses cudaMallocHost for good.
 *
 * New buffers are at least the streamed executor's staging size
 * (cvi_stream_staging_bytes), so that one serves a slot of any shape.
 * cvcu_pinned_prime queues such buffers, once a process, for a background
 * thread, which pins them one after the other into the pool and ends when
 * the queue is empty; a take that finds no free buffer claims a queued one
 * that will hold its request and waits for it, rather than pinning the
 * same memory twice. A destructor (library unloaded, process exiting)
 * stops the queue and waits for the buffer being pinned; pthread_atfork
 * handlers hold the mutex across fork() and empty the queue in the child
 * (the thread is not there).
 *
 * convolve_host_alloc hands pool buffers to callers (cvcu_pinned_alloc),
 * listed until they come back (cvcu_pinned_free) and counted against the
 * limit when cvcu_pinned_reserve queues another for them.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, madvise */
#include "pinned_pool.h"

#include "../stream.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define POOL_SLOTS 64
#define POOL_ROUND ((size_t)2 << 20)     /* a huge page: buffers start on one */
#define POOL_TAIL_MIN ((size_t)64 << 10) /* the smallest tail step (cvcu_pinned_class) */
#define TOUCH_CHUNK ((size_t)2 << 20)    /* bytes a faulting thread takes at least */
#define TOUCH_THREADS 8
#define QUEUE_MAX 8 /* sizes queued for the background thread at most */

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
static int pool_register = -1;         /* new buffers: 1 mapped and registered,
                                          0 cudaMallocHost, -1 not tried yet */
/* the background thread's queue (the mutex held) */
typedef struct {
    size_t size;
    int claimed;      /* a take waits for it */
    unsigned long id; /* which one */
} queued_buf;
static queued_buf queue[QUEUE_MAX]; /* buffers to pin, the first being pinned */
static int queue_count;
static unsigned long queue_ids;
static int primed;  /* cvcu_pinned_prime queued its buffers (once a process) */
static int pinning; /* the background thread runs */
static int closing; /* the destructor ran: nothing more is pinned in the background */
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER; /* a queued buffer pinned, or
                                                                 the thread ended */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

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

size_t cvcu_pinned_class(size_t bytes)
{
    const size_t whole = bytes / POOL_ROUND * POOL_ROUND, tail = bytes - whole;
    if (tail == 0)
        return bytes;
    size_t step = POOL_TAIL_MIN;
    while (step < tail)
        step *= 2;
    return whole <= SIZE_MAX - step ? whole + step : bytes;
}

/* Removes pool[i] (the mutex held). */
static void remove_locked(int i)
{
    pool_bytes -= pool[i].size;
    pool[i] = pool[--pool_count];
}

typedef struct {
    char *p;
    size_t n;
} touch_job;

/* Faults in one byte a page of [p, p + n). */
static void *touch_pages(void *arg)
{
    const touch_job *j = arg;
    const size_t page = 4096;
    for (size_t i = 0; i < j->n; i += page)
        ((volatile char *)j->p)[i] = 0;
    return NULL;
}

/* Faults in [p, p + n) with up to TOUCH_THREADS threads (this one too). */
static void touch_parallel(char *p, size_t n)
{
    size_t parts = n / TOUCH_CHUNK;
    parts = parts < 1 ? 1 : parts > TOUCH_THREADS ? TOUCH_THREADS : parts;
    const size_t share = (n / parts + 4095) / 4096 * 4096;
    pthread_t th[TOUCH_THREADS];
    touch_job jobs[TOUCH_THREADS];
    int started[TOUCH_THREADS] = {0};
    for (size_t k = 0; k < parts; k++) {
        const size_t off = k * share < n ? k * share : n;
        jobs[k].p = p + off;
        jobs[k].n = k + 1 == parts ? n - off : (share < n - off ? share : n - off);
        if (k > 0)
            started[k] = pthread_create(&th[k], NULL, touch_pages, &jobs[k]) == 0;
    }
    touch_pages(&jobs[0]);
    for (size_t k = 1; k < parts; k++) {
        if (started[k])
            pthread_join(th[k], NULL);
        else
            touch_pages(&jobs[k]); /* no thread: this one does it */
    }
}

/* A new pinned buffer of `bytes` (a size class: whole pages): mapped,
 * faulted in in parallel and registered; cudaMallocHost where registering
 * is not supported. */
static cudaError_t pin_new(size_t bytes, void **ptr)
{
    pthread_mutex_lock(&pool_mutex);
    int reg = pool_register;
    pthread_mutex_unlock(&pool_mutex);
    if (reg == 0)
        return cudaMallocHost(ptr, bytes);
    /* mapped POOL_ROUND-aligned (huge pages need it), the excess unmapped */
    if (bytes > SIZE_MAX - POOL_ROUND)
        return cudaErrorMemoryAllocation;
    char *m = mmap(NULL, bytes + POOL_ROUND, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (m == MAP_FAILED)
        return cudaErrorMemoryAllocation;
    const size_t head = (POOL_ROUND - (uintptr_t)m % POOL_ROUND) % POOL_ROUND;
    char *p = m + head;
    if (head)
        munmap(m, head);
    if (POOL_ROUND - head)
        munmap(p + bytes, POOL_ROUND - head);
#ifdef MADV_HUGEPAGE
    (void)madvise(p, bytes, MADV_HUGEPAGE); /* a hint: fewer faults and pages to pin */
#endif
    touch_parallel(p, bytes);
    cudaError_t e = cudaHostRegister(p, bytes, cudaHostRegisterPortable);
    if (e != cudaSuccess)
        (void)cudaGetLastError();
    pthread_mutex_lock(&pool_mutex);
    if (pool_register < 0) /* the first answer decides for the process */
        pool_register = e == cudaSuccess;
    reg = pool_register;
    pthread_mutex_unlock(&pool_mutex);
    if (e == cudaSuccess && reg == 1) {
        *ptr = p;
        return cudaSuccess;
    }
    if (e == cudaSuccess && cudaHostUnregister(p) != cudaSuccess)
        (void)cudaGetLastError();
    munmap(p, bytes);
    return reg == 1 ? e : cudaMallocHost(ptr, bytes);
}

/* Frees a buffer of pin_new. */
static void unpin(void *ptr, size_t size)
{
    pthread_mutex_lock(&pool_mutex);
    int reg = pool_register;
    pthread_mutex_unlock(&pool_mutex);
    if (reg == 1) {
        if (cudaHostUnregister(ptr) != cudaSuccess)
            (void)cudaGetLastError();
        munmap(ptr, size);
    } else if (cudaFreeHost(ptr) != cudaSuccess) {
        (void)cudaGetLastError();
    }
}

/* Twice n, saturating: the largest buffer a request of size class n takes
 * (a larger one stays for a request of its size). */
static size_t twice(size_t n)
{
    return n <= SIZE_MAX / 2 ? 2 * n : SIZE_MAX;
}

/* The index of the smallest free buffer of at least `bytes` and at most
 * `most` (the mutex held), or -1. */
static int find_free_locked(size_t bytes, size_t most)
{
    int best = -1;
    for (int i = 0; i < pool_count; i++)
        if (pool[i].size >= bytes && pool[i].size <= most &&
            (best < 0 || pool[i].size < pool[best].size))
            best = i;
    return best;
}

/* Takes the smallest free buffer of at least `bytes` and at most `most`
 * into *ptr and *size (the mutex held); 0 if none. */
static int take_free_locked(size_t bytes, size_t most, void **ptr, size_t *size)
{
    const int best = find_free_locked(bytes, most);
    if (best < 0)
        return 0;
    *ptr = pool[best].ptr;
    *size = pool[best].size;
    remove_locked(best);
    return 1;
}

static void fork_prepare(void)
{
    pthread_mutex_lock(&pool_mutex);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&pool_mutex);
}

static void fork_child(void)
{
    queue_count = 0; /* the thread is not in the child */
    pinning = 0;
    pthread_mutex_unlock(&pool_mutex);
}

static void register_fork(void)
{
    (void)pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* The background thread: pins the queued buffers one by one into the pool
 * (each stays queued, and may be claimed, until it is there). */
static void *pin_queued(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&pool_mutex);
    while (queue_count > 0 && !closing) {
        const size_t size = queue[0].size;
        pthread_mutex_unlock(&pool_mutex);
        void *p = NULL;
        if (pin_new(size, &p) == cudaSuccess)
            cvcu_pinned_give(p, size);
        else
            (void)cudaGetLastError(); /* nothing pinned: its claimer pins its own */
        pthread_mutex_lock(&pool_mutex);
        if (queue_count > 0) /* (the destructor or a fork may have emptied it) */
            memmove(queue, queue + 1, (size_t)--queue_count * sizeof queue[0]);
        pthread_cond_broadcast(&queue_cond);
    }
    queue_count = 0;
    pinning = 0;
    pthread_cond_broadcast(&queue_cond);
    pthread_mutex_unlock(&pool_mutex);
    return NULL;
}

/* Queues `count` buffers of `size` and starts the background thread if it
 * is not running (the mutex held); 0 if no thread could be started (the
 * queue is then emptied: takes pin for themselves). */
static int enqueue_locked(size_t size, int count)
{
    for (int i = 0; i < count && queue_count < QUEUE_MAX; i++) {
        queue[queue_count].size = size;
        queue[queue_count].claimed = 0;
        queue[queue_count].id = ++queue_ids;
        queue_count++;
    }
    if (pinning)
        return 1;
    pthread_attr_t at;
    pthread_t id;
    int made = 0;
    if (pthread_attr_init(&at) == 0) {
        made = pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED) == 0 &&
               pthread_create(&id, &at, pin_queued, NULL) == 0;
        pthread_attr_destroy(&at);
    }
    if (made)
        pinning = 1;
    else
        queue_count = 0;
    return made;
}

void cvcu_pinned_prime(size_t bytes, int count)
{
    (void)pthread_once(&fork_once, register_fork);
    pthread_mutex_lock(&pool_mutex);
    const size_t size = cvcu_pinned_class(bytes);
    if (!primed && !closing && count > 0 && count <= QUEUE_MAX &&
        size <= limit_locked() / (size_t)count) {
        primed = 1;
        (void)enqueue_locked(size, count);
    }
    pthread_mutex_unlock(&pool_mutex);
}

void cvcu_pinned_settle(void)
{
    pthread_mutex_lock(&pool_mutex);
    while (pinning)
        pthread_cond_wait(&queue_cond, &pool_mutex);
    pthread_mutex_unlock(&pool_mutex);
}

/* At unload or exit: nothing more is pinned in the background; the buffer
 * being pinned is waited for (no thread stays in code being unmapped). */
__attribute__((destructor)) static void end_pinning(void)
{
    pthread_mutex_lock(&pool_mutex);
    closing = 1;
    pthread_mutex_unlock(&pool_mutex);
    cvcu_pinned_settle();
}

/* 1 if a queued buffer with this id is still to be pinned (the mutex held). */
static int queued_locked(unsigned long id)
{
    for (int i = 0; i < queue_count; i++)
        if (queue[i].id == id)
            return 1;
    return 0;
}

cudaError_t cvcu_pinned_take(size_t bytes, void **ptr, size_t *size)
{
    *ptr = NULL;
    const size_t least = cvi_stream_staging_bytes();
    const size_t want = cvcu_pinned_class(bytes > least ? bytes : least);
    const size_t most = twice(want);
    pthread_mutex_lock(&pool_mutex);
    int got;
    /* none free that holds it: a buffer being pinned in the background
     * that would, and is not more than twice what a new one would be (a
     * caller's reserved array), is claimed and waited for (not pinned twice) */
    while (!(got = take_free_locked(bytes, SIZE_MAX, ptr, size))) {
        int k = 0;
        while (k < queue_count &&
               (queue[k].claimed || queue[k].size < bytes || queue[k].size > most))
            k++;
        if (k == queue_count)
            break;
        queue[k].claimed = 1;
        const unsigned long id = queue[k].id;
        while (queued_locked(id))
            pthread_cond_wait(&queue_cond, &pool_mutex);
    }
    pthread_mutex_unlock(&pool_mutex);
    if (got)
        return cudaSuccess;
    cudaError_t e = pin_new(want, ptr);
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
    size_t drop_size = 0;
    pthread_mutex_lock(&pool_mutex);
    if (pool_count == POOL_SLOTS) { /* full: the oldest goes */
        int old = 0;
        for (int i = 1; i < pool_count; i++)
            if (pool[i].given < pool[old].given)
                old = i;
        drop = pool[old].ptr;
        drop_size = pool[old].size;
        remove_locked(old);
    }
    pool[pool_count].ptr = ptr;
    pool[pool_count].size = size;
    pool[pool_count].given = ++pool_clock;
    pool_count++;
    pool_bytes += size;
    pthread_mutex_unlock(&pool_mutex);
    if (drop)
        unpin(drop, drop_size);
}

void cvcu_pinned_trim(size_t keep)
{
    void *drop[POOL_SLOTS];
    size_t drop_size[POOL_SLOTS];
    int ndrop = 0;
    pthread_mutex_lock(&pool_mutex);
    size_t limit = limit_locked();
    limit = limit > keep ? limit : keep;
    while (pool_bytes > limit && pool_count > 0) { /* the oldest first */
        int old = 0;
        for (int i = 1; i < pool_count; i++)
            if (pool[i].given < pool[old].given)
                old = i;
        drop_size[ndrop] = pool[old].size;
        drop[ndrop++] = pool[old].ptr;
        remove_locked(old);
    }
    pthread_mutex_unlock(&pool_mutex);
    for (int i = 0; i < ndrop; i++)
        unpin(drop[i], drop_size[i]);
}

/* ---- buffers handed to callers (convolve_host_alloc) ---------------------- */

typedef struct {
    void *ptr;
    size_t size;
} user_buf;

static user_buf *users; /* handed out, not given back yet (the mutex held) */
static size_t user_count, user_cap, user_bytes;

/* Records a handed buffer (the mutex held); 0 if the list cannot grow. */
static int add_user_locked(void *ptr, size_t size)
{
    if (user_count == user_cap) {
        const size_t cap = user_cap ? 2 * user_cap : 16;
        user_buf *u = realloc(users, cap * sizeof *u);
        if (!u)
            return 0;
        users = u;
        user_cap = cap;
    }
    users[user_count].ptr = ptr;
    users[user_count].size = size;
    user_count++;
    user_bytes += size;
    return 1;
}

cudaError_t cvcu_pinned_alloc(size_t bytes, int pooled_only, void **ptr)
{
    *ptr = NULL;
    void *p = NULL;
    size_t size = 0;
    pthread_mutex_lock(&pool_mutex);
    int got = take_free_locked(bytes, twice(cvcu_pinned_class(bytes)), &p, &size);
    pthread_mutex_unlock(&pool_mutex);
    if (!got && pooled_only)
        return cudaSuccess;
    if (!got) {
        size = cvcu_pinned_class(bytes);
        cudaError_t e = pin_new(size, &p);
        if (e != cudaSuccess)
            return e;
    }
    pthread_mutex_lock(&pool_mutex);
    const int recorded = add_user_locked(p, size);
    pthread_mutex_unlock(&pool_mutex);
    if (!recorded) {
        cvcu_pinned_give(p, size);
        return cudaErrorMemoryAllocation;
    }
    *ptr = p;
    return cudaSuccess;
}

void cvcu_pinned_free(void *ptr)
{
    if (!ptr)
        return;
    size_t size = 0;
    int found = 0;
    pthread_mutex_lock(&pool_mutex);
    for (size_t i = 0; i < user_count; i++)
        if (users[i].ptr == ptr) {
            size = users[i].size;
            user_bytes -= size;
            users[i] = users[--user_count];
            found = 1;
            break;
        }
    pthread_mutex_unlock(&pool_mutex);
    if (!found)
        return;
    cvcu_pinned_give(ptr, size);
    cvcu_pinned_trim(0);
}

void cvcu_pinned_reserve(size_t bytes)
{
    (void)pthread_once(&fork_once, register_fork);
    const size_t size = cvcu_pinned_class(bytes);
    const size_t most = twice(size);
    pthread_mutex_lock(&pool_mutex);
    int served = closing || queue_count == QUEUE_MAX || find_free_locked(bytes, most) >= 0;
    size_t queued = 0;
    for (int i = 0; i < queue_count; i++) {
        queued += queue[i].size;
        served |= !queue[i].claimed && queue[i].size >= bytes && queue[i].size <= most;
    }
    const size_t limit = limit_locked();
    const size_t held = pool_bytes + queued + user_bytes;
    if (!served && held <= limit && size <= limit - held)
        (void)enqueue_locked(size, 1);
    pthread_mutex_unlock(&pool_mutex);
}
