/*
 * stream_workers.c - the process's parked worker threads (stream_workers.h).
 *
 * One mutex guards the list of parked threads and every thread's state; each
 * thread has its own condition variable, on which it parks and on which the
 * caller that started it waits. A thread's life: RUN (a task given) -> DONE
 * (its task returned) -> PARKED (in the list, by cvcu_worker_wait) -> RUN
 * ... or, from DONE, END (cvcu_worker_wait found the list full), when the
 * thread frees itself and exits (detached then: nobody joins it).
 *
 * When the library is unloaded or the process exits (a destructor), the
 * parked threads end and are joined: their OpenMP teams are freed as a
 * thread's exit frees them (LeakSanitizer saw a parked thread's team as
 * leaked at exit), and no thread stays parked in code being unmapped
 * (dlclose). A thread running a task then is left alone; its caller's
 * cvcu_worker_wait ends it instead of parking it.
 *
 * Why the hand-off is race-free (what ThreadSanitizer would check): the
 * task's fn and arg are written, and the state set to RUN, with the mutex
 * held; the thread reads them with the mutex held, so what the caller wrote
 * before the start happens before the task. The thread sets DONE with the
 * mutex held after fn returned, and the caller reads DONE with the mutex
 * held, so everything the task wrote (the worker's resources, its part of
 * the job) happens before the caller goes on. A thread's struct is touched
 * only with the mutex held, but by the thread itself once it saw END (no
 * one else holds it then: it is in no list and its caller has returned),
 * so it frees it with no one looking.
 *
 * fork(): only the forking thread lives on in the child, so the parked
 * threads are gone there: a pthread_atfork child handler empties the list
 * (freeing the structs, whose condition variables are not destroyed: their
 * waiters were the parent's threads) and counts creations from zero; the
 * prepare and parent handlers hold the mutex across the fork, so that the
 * child's copy of the list is not half-changed. Threads running a task at
 * the fork belong to executions of the parent; the child knows nothing of
 * them.
 */
#include "stream_workers.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

enum { W_RUN, W_DONE, W_PARKED, W_END };

struct cvcu_worker {
    pthread_cond_t cond; /* the thread parks on it, its caller waits on it */
    int state;           /* W_*, the mutex held */
    void (*fn)(void *);
    void *arg;
    cvcu_worker *next; /* in the parked list */
    pthread_t id;      /* set by its creator before the first wait */
};

static pthread_mutex_t set_mutex = PTHREAD_MUTEX_INITIALIZER;
static cvcu_worker *parked;
static int parked_count;
static unsigned long created_count;
static int closing; /* the destructor ran: no more parking */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void)
{
    pthread_mutex_lock(&set_mutex);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&set_mutex);
}

static void fork_child(void)
{
    while (parked) {
        cvcu_worker *w = parked;
        parked = w->next;
        free(w);
    }
    parked_count = 0;
    created_count = 0;
    pthread_mutex_unlock(&set_mutex);
}

static void register_fork(void)
{
    (void)pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static void *thread_main(void *p)
{
    cvcu_worker *w = p;
    pthread_mutex_lock(&set_mutex);
    for (;;) {
        while (w->state == W_DONE || w->state == W_PARKED)
            pthread_cond_wait(&w->cond, &set_mutex);
        if (w->state == W_END)
            break;
        void (*fn)(void *) = w->fn;
        void *arg = w->arg;
        pthread_mutex_unlock(&set_mutex);
        fn(arg);
        pthread_mutex_lock(&set_mutex);
        w->state = W_DONE;
        pthread_cond_signal(&w->cond); /* its caller, in cvcu_worker_wait */
    }
    pthread_mutex_unlock(&set_mutex);
    pthread_cond_destroy(&w->cond);
    free(w);
    return NULL;
}

int cvcu_worker_start(void (*fn)(void *), void *arg, cvcu_worker **out)
{
    *out = NULL;
    (void)pthread_once(&fork_once, register_fork);
    pthread_mutex_lock(&set_mutex);
    cvcu_worker *w = parked;
    if (w) {
        parked = w->next;
        parked_count--;
        w->next = NULL;
        w->fn = fn, w->arg = arg;
        w->state = W_RUN;
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&set_mutex);
        *out = w;
        return 0;
    }
    pthread_mutex_unlock(&set_mutex);
    if (!(w = calloc(1, sizeof *w)))
        return ENOMEM;
    int rc = pthread_cond_init(&w->cond, NULL);
    if (rc != 0) {
        free(w);
        return rc;
    }
    w->fn = fn, w->arg = arg;
    w->state = W_RUN; /* read by the thread under the mutex */
    pthread_t id;
    if ((rc = pthread_create(&id, NULL, thread_main, w)) != 0) {
        pthread_cond_destroy(&w->cond);
        free(w);
        return rc;
    }
    pthread_mutex_lock(&set_mutex);
    w->id = id;
    created_count++;
    pthread_mutex_unlock(&set_mutex);
    *out = w;
    return 0;
}

void cvcu_worker_wait(cvcu_worker *w)
{
    pthread_mutex_lock(&set_mutex);
    while (w->state != W_DONE)
        pthread_cond_wait(&w->cond, &set_mutex);
    if (parked_count < CVCU_WORKERS_IDLE_MAX && !closing) {
        w->state = W_PARKED; /* the thread goes on waiting: no signal needed */
        w->next = parked;
        parked = w;
        parked_count++;
    } else {
        (void)pthread_detach(w->id);
        w->state = W_END;
        pthread_cond_signal(&w->cond);
    }
    pthread_mutex_unlock(&set_mutex);
}

/* At unload or exit: ends the parked threads and joins them. */
__attribute__((destructor)) static void end_parked(void)
{
    pthread_t ids[CVCU_WORKERS_IDLE_MAX];
    int n = 0;
    pthread_mutex_lock(&set_mutex);
    closing = 1;
    while (parked && n < CVCU_WORKERS_IDLE_MAX) {
        cvcu_worker *w = parked;
        parked = w->next;
        parked_count--;
        ids[n++] = w->id;
        w->state = W_END;
        pthread_cond_signal(&w->cond);
    }
    pthread_mutex_unlock(&set_mutex);
    for (int i = 0; i < n; i++)
        (void)pthread_join(ids[i], NULL);
}

void cvcu_workers_stats(int *idle, unsigned long *created)
{
    pthread_mutex_lock(&set_mutex);
    *idle = parked_count;
    *created = created_count;
    pthread_mutex_unlock(&set_mutex);
}
