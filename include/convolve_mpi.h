/*
 * convolve_mpi.h - the public API of libconvolve_mpi: convolution of an array
 * distributed over the ranks of an MPI communicator, with the results one
 * process would compute.
 *
 * The global array (1-D to 3-D, C order, any channels) is cut into boxes, one
 * per rank, that form a Cartesian grid: along each axis the extent is split
 * into consecutive parts, and each rank holds one part per axis (slabs along
 * axis 0 are the grid {ranks, 1, 1}). Each rank passes its own box of the
 * input and receives its box of the output. A distributed plan exchanges
 * halos with the ranks that own them (non-blocking, while each rank computes
 * the part of its box that needs no halo), applies the boundary mode at the
 * global array's edges (wrap takes its halo from the opposite end; reflect,
 * mirror and nearest take it from the array's own elements, however far a
 * long filter reaches), and runs each rank's local convolution through an
 * ordinary libconvolve plan on the CPU or on the rank's GPU.
 *
 * Exactness: on the CPU, every output element is computed from the same
 * input values by the same strategy, in the same order, as one process would
 * (convolve_run with the same options and the strategy
 * convolve_mpi_plan_strategy reports), so results are identical bit for bit,
 * for any number of ranks and any grid. The exception is the `fft` strategy
 * (named explicitly): its tiles start where each local array starts, so its
 * rounding differs from one process's (differences of the FFT's accuracy).
 *
 * Collective calls (every rank of the communicator calls them, in the same
 * order): convolve_mpi_plan_create, convolve_mpi_execute,
 * convolve_mpi_execute_device, convolve_mpi_plan_free.
 * They return the same status on every rank: when one rank fails, all do,
 * and every rank's message names the failing rank and why.
 *
 * Built only when an MPI library is found; libconvolve itself has no MPI
 * dependency. Link with -lconvolve_mpi -lconvolve and MPI.
 */
#ifndef CONVOLVE_MPI_H
#define CONVOLVE_MPI_H

#include <mpi.h>

#include "convolve.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CONVOLVE_MPI_API __attribute__((visibility("default")))

typedef struct convolve_mpi_plan convolve_mpi_plan;

/*
 * The message of the last failed convolve_mpi_ call made with this context
 * ("" if that call succeeded or none was made). For failures inside
 * libconvolve it carries convolve_last_error's text; after a collective
 * failure on another rank it says which rank failed and why.
 */
CONVOLVE_MPI_API const char *convolve_mpi_last_error(const convolve_context *ctx);

/*
 * This rank's box of a global array of `ndim` dimensions (1..3) and extents
 * global_shape[0..ndim-1] split over the communicator's ranks on a grid:
 * grid[a] ranks along axis a (their product must be the communicator's
 * size; entries 0 are chosen by MPI_Dims_create, as balanced as it can: all
 * zeros give a 3-D grid of near-cubes, what docs/scale.md recommends on many
 * nodes), or grid NULL for slabs along axis 0 ({size, 1, 1}). Along each axis
 * the extent is split as evenly as possible (the first parts one element
 * longer); rank r has grid coordinates in C order (r = (c0 * g1 + c1) * g2 + c2).
 * Writes block_start[0..ndim-1] and block_shape[0..ndim-1]. Not collective.
 * Errors: INVALID_ARGUMENT (NULL, ndim, a grid that does not multiply to the
 * size), BAD_LAYOUT (a zero extent, more ranks along an axis than elements).
 */
CONVOLVE_MPI_API convolve_status convolve_mpi_decompose(convolve_context *ctx, MPI_Comm comm,
                                                        int ndim, const size_t *global_shape,
                                                        const int *grid, size_t *block_start,
                                                        size_t *block_shape);

/*
 * Plans out = filter (*) in for an array of extents global_shape[0..ndim-1]
 * whose box starting at block_start[0..ndim-1] this rank holds: `in_block`
 * and `out_block` describe that box in this rank's memory (ndim, shape =
 * the box's extents, channels, dtypes and strides, as convolve_plan_create
 * takes them). Every rank passes the same global shape, channels, dtypes,
 * filter and options; the boxes must form a Cartesian grid that covers the
 * array once. Collective over comm (the plan works on a duplicate of it).
 *
 * Backend and strategy: AUTO takes the backend one process would take for
 * the whole array (the GPU when one is usable and the work pays). On the
 * CPU, with strategy NULL/"auto"/"fast", the plan picks what the CPU's
 * `fast` strategy would, `separable` for a separable filter with taps along
 * 2+ axes, else `direct` (never `fft`, which would not be exact; name it to
 * have it). On the GPU (device (rank within its node) % (devices); boxes in
 * host memory (convolve_mpi_execute) copied to it and back at each call,
 * boxes in its memory (convolve_mpi_execute_device) left there, halos
 * staged through host memory either way) the local plans prefer the
 * strategy one process would run on the whole array, and take their own
 * choice where that one cannot serve them. Wanting a GPU (CUDA, or AUTO in
 * a build with CUDA) makes the rank's device current for the calling thread.
 * With options->autotune and no strategy named, rank 0 times the
 * strategies on its box and every rank uses its choice.
 *
 * Errors: INVALID_ARGUMENT (NULL, MPI_COMM_NULL, a rank whose global shape,
 * dtypes, channels, filter or options differ from rank 0's), BAD_LAYOUT
 * (a box outside the array, boxes that do not form a grid covering it), and
 * every error of convolve_plan_create; IO when an MPI call fails.
 */
CONVOLVE_MPI_API convolve_status convolve_mpi_plan_create(
    convolve_context *ctx, convolve_mpi_plan **plan, MPI_Comm comm, const size_t *global_shape,
    const size_t *block_start, const convolve_layout *in_block, const convolve_layout *out_block,
    const convolve_filter *filter, const convolve_options *options);

/* Frees a plan; NULL is accepted. Collective (it frees the plan's
 * communicator) unless plan is NULL on every rank. */
CONVOLVE_MPI_API void convolve_mpi_plan_free(convolve_mpi_plan *plan);

/*
 * Runs the plan: `in` and `out` point at element 0 of this rank's boxes,
 * laid out as planned; returns when this rank's `out` is written.
 * The halo messages are posted first and travel while the box's interior is
 * computed; when MPI was initialised with MPI_THREAD_SERIALIZED or more
 * (MPI_Init_thread), a helper thread drives them meanwhile (the environment
 * variable CONVOLVE_MPI_PROGRESS=0, read when plans are made, turns it off).
 * On a GPU the boxes are copied to the device and back at each call: boxes
 * allocated with convolve_host_alloc (pinned) are copied straight (2.5-2.9x
 * faster than malloc'd ones on a 2 x H200 host: docs/scale.md, "Pinned
 * boxes").
 * Collective. Errors: INVALID_ARGUMENT (NULL or overlapping pointers, on
 * any rank; device memory given to a plan on a GPU: see
 * convolve_mpi_execute_device), the errors of convolve_execute, IO when an
 * MPI call fails.
 */
CONVOLVE_MPI_API convolve_status convolve_mpi_execute(convolve_mpi_plan *plan, const void *in,
                                                      void *out);

/*
 * Runs the plan on device memory: `in` and `out` point at element 0 of this
 * rank's boxes in the memory of the plan's GPU (convolve_mpi_plan_device),
 * laid out as planned, with elements one after another along the last axis
 * (channels interleaved) and no negative stride. The work is enqueued on
 * `stream` (a cudaStream_t of that device; NULL for the default stream):
 * the box's interior is launched on it while, on a stream of the plan's
 * that starts where `stream` is, the faces the other ranks need travel and
 * the edge pieces are computed; `stream` then waits for those and copies
 * the pieces' outputs into `out` (docs/scale.md, "Boxes on the device").
 * The faces go GPU to GPU (CUDA IPC: each rank copies them into its
 * neighbours' device buffers, the ranks trading only small MPI messages)
 * when every rank of the plan is on one node with a GPU of its own and
 * every face is a sub-box of both boxes; otherwise (several nodes, ranks
 * sharing a GPU, faces reversed or wrapped by the boundary mode across boxes
 * thinner than the filter, the environment variable
 * CONVOLVE_MPI_DEVICE_EXCHANGE=host; =gpu lets ranks share a GPU, slower)
 * they are copied to pinned host
 * memory, exchanged with MPI and uploaded (convolve_mpi_stats.device_exchange
 * says which). Returns when all of it is enqueued: `out` is written when the
 * stream reaches this point (as with convolve_execute_device); `in` must not
 * change until then. The buffers are the plan's, made at the first call
 * (with host staging, each call first waits for the previous call's work on
 * its stream). The results are those of convolve_mpi_execute bit for bit.
 * Collective.
 * Errors: INVALID_ARGUMENT (NULL or overlapping pointers; memory that is not
 * the plan's device's, as cudaPointerGetAttributes tells, on any rank),
 * BAD_LAYOUT (boxes whose layout the copies cannot take: see above),
 * UNSUPPORTED (a plan on the CPU, or a build without CUDA), DEVICE,
 * DEVICE_OUT_OF_MEMORY, the errors of convolve_execute_device, IO when an
 * MPI call fails. convolve_mpi_execute refuses device memory
 * (INVALID_ARGUMENT) rather than read it from the host.
 */
CONVOLVE_MPI_API convolve_status convolve_mpi_execute_device(convolve_mpi_plan *plan,
                                                             const void *in, void *out,
                                                             void *stream);

/* The backend and strategy this rank's local plans run ("auto" strategy
 * resolved where the plan resolves it; NULL for a NULL plan). */
CONVOLVE_MPI_API convolve_backend convolve_mpi_plan_backend(const convolve_mpi_plan *plan);
CONVOLVE_MPI_API const char *convolve_mpi_plan_strategy(const convolve_mpi_plan *plan);
/* The CUDA device this rank uses, or -1 on the CPU. */
CONVOLVE_MPI_API int convolve_mpi_plan_device(const convolve_mpi_plan *plan);

/* What this rank did in the plan's last execution (times in milliseconds).
 * After convolve_mpi_execute_device, which returns before the GPU is done:
 * post_ms is the faces' copy to the host, packing and sending; interior_ms
 * launching the interior; wait_ms waiting for the halos; edges_ms unpacking
 * them and launching the pieces; post_ms + wait_ms is the exchange. With the
 * faces GPU to GPU (device_exchange 1) the host only queues the copies and
 * waits for the peers' messages saying theirs are queued: post_ms +
 * wait_ms is then that, and the copies themselves run on the GPUs beside
 * the interior. */
typedef struct convolve_mpi_stats {
    double post_ms;     /* receives posted, halos packed and sent, own halo rows copied */
    double interior_ms; /* the box's interior, computed while halos travel */
    double wait_ms;     /* waiting for the halos still in flight after that */
    double edges_ms;    /* the edges: unpacking halos, computing, storing */
    double total_ms;    /* the whole call, including the final agreement on status */
    size_t bytes_sent, bytes_received; /* halo bytes, this rank */
    int peers_sent, peers_received;    /* ranks sent to, received from */
    int pieces;                        /* edge pieces computed after the halos */
    int device_exchange; /* convolve_mpi_execute_device: 1 when the halos went GPU to GPU
                            (CUDA IPC: every rank on one node), 0 staged through host memory */
} convolve_mpi_stats;

/* Fills *stats for the last execution (zeros before the first).
 * Errors: INVALID_ARGUMENT (NULL). */
CONVOLVE_MPI_API convolve_status convolve_mpi_plan_stats(const convolve_mpi_plan *plan,
                                                         convolve_mpi_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* CONVOLVE_MPI_H */
