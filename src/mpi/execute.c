/*
 * execute.c - one distributed execution: post the halo receives, pack and
 * send what the other ranks need, copy this rank's own halo elements,
 * compute the box's interior while the messages travel, wait for them,
 * compute the edge pieces from the halos, and agree on the status.
 *
 * Messages move during the interior's computation only if something drives
 * MPI meanwhile: a transport with its own progress, or, when MPI was
 * initialised with MPI_THREAD_SERIALIZED or more, this file's progress
 * thread, which tests the requests (backing off from 10 us to 1 ms) until
 * they complete or the interior is done. The main thread makes no MPI call
 * while it runs, as SERIALIZED demands.
 */
#include "mpi_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

int cvmpi_post(int send, cvmpi_link *l, MPI_Comm comm, MPI_Request *req)
{
    for (int i = 0; i < l->nreq; i++) {
        size_t off = (size_t)i * CVMPI_CHUNK_BYTES, len = l->bytes - off;
        if (len > CVMPI_CHUNK_BYTES)
            len = CVMPI_CHUNK_BYTES;
        int err = send ? MPI_Isend(l->buf + off, (int)len, MPI_BYTE, l->rank, 0, comm, &req[i])
                       : MPI_Irecv(l->buf + off, (int)len, MPI_BYTE, l->rank, 0, comm, &req[i]);
        if (err != MPI_SUCCESS)
            return err;
    }
    return MPI_SUCCESS;
}

typedef struct {
    MPI_Request *req;
    int n;
    atomic_int stop;
} progress;

static void *progress_main(void *arg)
{
    progress *pg = arg;
    long ns = 10000;
    while (!atomic_load(&pg->stop)) {
        int done = 0;
        if (MPI_Testall(pg->n, pg->req, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS || done)
            break;
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
        if (ns < 1000000)
            ns *= 2;
    }
    return NULL;
}

int cvmpi_boxes_overlap(const convolve_mpi_plan *p, const void *in, const void *out)
{
    const cvmpi_view *v[2] = {&p->user_in, &p->user_out};
    const unsigned char *base[2] = {in, out};
    uintptr_t lo[2], hi[2];
    for (int k = 0; k < 2; k++) {
        ptrdiff_t a = 0, b = 0;
        for (int x = 0; x < 3; x++) {
            ptrdiff_t span = v[k]->stride[x] * (p->work.box[x].hi - p->work.box[x].lo - 1);
            if (span < 0)
                a += span;
            else
                b += span;
        }
        ptrdiff_t cs = v[k]->cstride * (ptrdiff_t)(v[k]->channels - 1);
        if (cs < 0)
            a += cs;
        else
            b += cs;
        lo[k] = (uintptr_t)(base[k] + a);
        hi[k] = (uintptr_t)(base[k] + b) + v[k]->esize;
    }
    return lo[0] < hi[1] && lo[1] < hi[0];
}

convolve_status convolve_mpi_execute(convolve_mpi_plan *p, const void *in, void *out)
{
    if (!p)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    convolve_context *ctx = p->ctx;
    convolve_status st = CONVOLVE_OK;
    const double t0 = MPI_Wtime();
    memset(&p->stats, 0, sizeof p->stats);
    /* a bad pointer still sends (stale buffers) so that no rank waits forever */
    int usable = in && out;
    if (!usable)
        st = cvmpi_fail(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "convolve_mpi_execute: %s is NULL",
                        in ? "out" : "in");
    else if (cvmpi_boxes_overlap(p, in, out)) {
        usable = 0;
        st = cvmpi_fail(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                        "convolve_mpi_execute: the output box overlaps the input box");
    } else if ((st = cvmpi_check_host_pointers(p, in, out)) != CONVOLVE_OK) {
        usable = 0;
    }

    int nreq = 0, err = MPI_SUCCESS;
    for (int i = 0; i < p->nreq; i++)
        p->req[i] = MPI_REQUEST_NULL;
    for (int i = 0; i < p->nrecvs && err == MPI_SUCCESS; i++) {
        err = cvmpi_post(0, &p->recvs[i], p->comm, &p->req[nreq]);
        nreq += p->recvs[i].nreq;
        p->stats.bytes_received += p->recvs[i].bytes;
    }
    for (int i = 0; i < p->nsends && err == MPI_SUCCESS; i++) {
        if (usable)
            cvmpi_pack(&p->sends[i], in, &p->user_in, p->sends[i].buf, p->threads);
        err = cvmpi_post(1, &p->sends[i], p->comm, &p->req[nreq]);
        nreq += p->sends[i].nreq;
        p->stats.bytes_sent += p->sends[i].bytes;
    }
    p->stats.peers_received = p->nrecvs;
    p->stats.peers_sent = p->nsends;
    if (err != MPI_SUCCESS) {
        /* the requests already posted must still complete */
        st = cvmpi_fail_mpi(ctx, err, "posting the halo messages");
        usable = 0;
    }
    if (usable)
        cvmpi_copy_self(&p->self, in, &p->user_in, p->pr, &p->work, p->threads);
    const double t1 = MPI_Wtime();

    if (usable && p->run_interior) {
        progress pg = {p->req, p->nreq, 0};
        pthread_t thread;
        int threaded = p->progress_thread && p->nreq > 0 &&
                       pthread_create(&thread, NULL, progress_main, &pg) == 0;
        convolve_status s = convolve_execute(p->interior, in, out);
        if (threaded) {
            atomic_store(&pg.stop, 1);
            pthread_join(thread, NULL);
        }
        if (s != CONVOLVE_OK) {
            st = cvmpi_fail_core(ctx, s, "computing this rank's box");
            usable = 0;
        }
    }
    const double t2 = MPI_Wtime();

    if (p->nreq && (err = MPI_Waitall(p->nreq, p->req, MPI_STATUSES_IGNORE)) != MPI_SUCCESS &&
        st == CONVOLVE_OK) {
        st = cvmpi_fail_mpi(ctx, err, "MPI_Waitall (the halo messages)");
        usable = 0;
    }
    const double t3 = MPI_Wtime();

    if (usable) {
        for (int i = 0; i < p->nrecvs; i++)
            cvmpi_unpack(&p->recvs[i], p->recvs[i].buf, p->pr, &p->work, p->threads);
        for (int k = 0; k < p->work.npieces && st == CONVOLVE_OK; k++) {
            convolve_status s = convolve_execute(p->pr[k].plan, p->pr[k].in, p->pr[k].out);
            if (s != CONVOLVE_OK)
                st = cvmpi_fail_core(ctx, s, "computing an edge piece");
            else
                cvmpi_store_piece(&p->work.piece[k], &p->pr[k], out, &p->user_out, &p->work,
                                  p->threads);
        }
        p->stats.pieces = p->work.npieces;
    }
    const double t4 = MPI_Wtime();

    st = cvmpi_agree(ctx, p->comm, st);
    p->stats.post_ms = (t1 - t0) * 1e3;
    p->stats.interior_ms = (t2 - t1) * 1e3;
    p->stats.wait_ms = (t3 - t2) * 1e3;
    p->stats.edges_ms = (t4 - t3) * 1e3;
    p->stats.total_ms = (MPI_Wtime() - t0) * 1e3;
    return st;
}
