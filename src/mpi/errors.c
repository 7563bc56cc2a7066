/*
 * errors.c - the MPI layer's error messages, kept per context (libconvolve's
 * public API has no way to set a context's message), and the collective
 * agreement on a status that makes every rank return the same one.
 */
#include "mpi_internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A small table: contexts are few. Each context is used by one thread at a
 * time, but different contexts may be used at once, hence the lock. */
typedef struct {
    const convolve_context *ctx;
    char msg[CVMPI_MSG_SIZE];
} entry;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static entry **g_entries; /* entries never move once made */
static size_t g_count, g_cap;

/* The entry of ctx, created if need be; NULL when out of memory. Call locked. */
static entry *find(const convolve_context *ctx, int create)
{
    for (size_t i = 0; i < g_count; i++)
        if (g_entries[i]->ctx == ctx)
            return g_entries[i];
    if (!create)
        return NULL;
    if (g_count == g_cap) {
        size_t cap = g_cap ? 2 * g_cap : 8;
        entry **t = realloc(g_entries, cap * sizeof *t);
        if (!t)
            return NULL;
        g_entries = t;
        g_cap = cap;
    }
    entry *e = malloc(sizeof *e);
    if (!e)
        return NULL;
    g_entries[g_count++] = e;
    e->ctx = ctx;
    e->msg[0] = '\0';
    return e;
}

static void record(const convolve_context *ctx, const char *msg)
{
    if (!ctx)
        return;
    pthread_mutex_lock(&g_lock);
    entry *e = find(ctx, *msg != '\0');
    if (e)
        snprintf(e->msg, sizeof e->msg, "%s", msg);
    pthread_mutex_unlock(&g_lock);
}

convolve_status cvmpi_fail(const convolve_context *ctx, convolve_status st, const char *fmt, ...)
{
    char msg[CVMPI_MSG_SIZE] = "";
    if (st != CONVOLVE_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
    }
    record(ctx, msg);
    return st;
}

convolve_status cvmpi_ok(const convolve_context *ctx)
{
    record(ctx, "");
    return CONVOLVE_OK;
}

convolve_status cvmpi_fail_core(convolve_context *ctx, convolve_status st, const char *what)
{
    return cvmpi_fail(ctx, st, "%s: %s", what, convolve_last_error(ctx));
}

convolve_status cvmpi_fail_mpi(const convolve_context *ctx, int err, const char *what)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(err, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", err);
    return cvmpi_fail(ctx, CONVOLVE_ERROR_IO, "MPI: %s failed: %s", what, text);
}

const char *cvmpi_message(const convolve_context *ctx)
{
    /* entries never move; the text changes only in calls with this context */
    pthread_mutex_lock(&g_lock);
    entry *e = find(ctx, 0);
    const char *m = e ? e->msg : "";
    pthread_mutex_unlock(&g_lock);
    return m;
}

const char *convolve_mpi_last_error(const convolve_context *ctx)
{
    return ctx ? cvmpi_message(ctx) : "";
}

convolve_status cvmpi_agree(const convolve_context *ctx, MPI_Comm comm, convolve_status local)
{
    int rank = 0;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
        return cvmpi_fail(ctx, CONVOLVE_ERROR_IO, "MPI: MPI_Comm_rank failed");
    /* the lowest failing rank: minimise (failed ? rank : size) */
    int size = 0;
    MPI_Comm_size(comm, &size);
    int mine = local != CONVOLVE_OK ? rank : size, first = size;
    int err = MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (err != MPI_SUCCESS)
        return cvmpi_fail_mpi(ctx, err, "MPI_Allreduce (agreeing on a status)");
    if (first == size)
        return cvmpi_ok(ctx);
    struct {
        int status;
        char msg[CVMPI_MSG_SIZE];
    } m;
    memset(&m, 0, sizeof m);
    if (rank == first) {
        m.status = (int)local;
        snprintf(m.msg, sizeof m.msg, "%s", cvmpi_message(ctx));
    }
    err = MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, first, comm);
    if (err != MPI_SUCCESS)
        return cvmpi_fail_mpi(ctx, err, "MPI_Bcast (sharing an error)");
    if (rank != first) {
        m.msg[sizeof m.msg - 1] = '\0';
        cvmpi_fail(ctx, (convolve_status)m.status, "rank %d: %s", first, m.msg);
    }
    return (convolve_status)m.status;
}
