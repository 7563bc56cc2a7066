/*
 * stream_workers.h - the process's parked host threads that run the streamed
 * executor's per-device workers (src/cuda/stream.c). A thread that ran a
 * worker parks (a condition variable) instead of exiting, so that the next
 * streamed execution reuses it, and with it the OpenMP team its gather and
 * scatter regions made (libgomp keeps a team per master thread: a new
 * thread's first region of 16 threads cost 0.39-0.88 ms on the H100 host,
 * a later one 0.004-0.16 ms). Plain pthreads: nothing CUDA here.
 */
#ifndef CONVOLVE_CUDA_STREAM_WORKERS_H
#define CONVOLVE_CUDA_STREAM_WORKERS_H

#ifdef __cplusplus
extern "C" {
#endif

/* At most this many parked threads are kept; a thread that finishes a task
 * while as many are parked exits. */
#define CVCU_WORKERS_IDLE_MAX 8

typedef struct cvcu_worker cvcu_worker;

/* Runs fn(arg) on a parked thread of the process's set (a new one, with
 * the caller's signal mask, where none is parked) and sets *w to it for
 * cvcu_worker_wait. Thread-safe: each caller takes threads of its own.
 * Returns 0, or pthread_create's error or ENOMEM (fn does not run, *w is
 * NULL). */
int cvcu_worker_start(void (*fn)(void *), void *arg, cvcu_worker **w);

/* Waits until the task started on w has returned (everything it wrote is
 * then visible to the caller), then parks w for the next start, or ends it
 * where CVCU_WORKERS_IDLE_MAX threads are parked already (or the library is
 * being unloaded: its destructor ends and joins the parked threads). w is
 * not used after; each start is waited for exactly once. */
void cvcu_worker_wait(cvcu_worker *w);

/* *idle = the threads parked now, *created = the threads created since the
 * process (or the fork() child) began (a testing aid). */
void cvcu_workers_stats(int *idle, unsigned long *created);

#ifdef __cplusplus
}
#endif

#endif
