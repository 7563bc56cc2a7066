/*
 * npy_mpi.h - .npy files for convolve-mpi: the header read on one rank and
 * written by libconvolve (so that outputs match `convolve`'s byte for
 * byte), and each rank's box read and written in place with MPI-IO.
 */
#ifndef CONVOLVE_TOOLS_NPY_MPI_H
#define CONVOLVE_TOOLS_NPY_MPI_H

#include "convolve.h"

#include <mpi.h>
#include <stddef.h>

typedef struct cli_npy {
    convolve_dtype dtype;
    int swap; /* data in the other byte order */
    int ndim; /* 1 to 3 */
    size_t shape[CONVOLVE_MAX_DIMS];
    unsigned long long offset; /* where the data begins */
} cli_npy;

/* Reads and checks the header of the .npy file at path as convolve_npy_inspect
 * does (its rules and messages), C order only. Returns 0, or -1 with a
 * message in why. */
int cli_npy_read_header(convolve_context *ctx, const char *path, cli_npy *h, char *why,
                        size_t why_size);

/* The header libconvolve writes for an array of that dtype and shape (one
 * channel), into buf (at least CONVOLVE_NPY_HEADER_MAX bytes); returns its
 * length, a multiple of 64, or 0 for a shape the library refuses. */
size_t cli_npy_format_header(convolve_dtype dtype, int ndim, const size_t *shape, char *buf);

/*
 * Collective over comm: reads (write = 0) or writes (write = 1) the box
 * starting at start, of extents box, of the array of extents shape stored
 * at byte `offset` of the open file fh, to or from buf (the box contiguous,
 * C order). Returns an MPI error code.
 */
int cli_npy_box_io(MPI_File fh, int write, unsigned long long offset, convolve_dtype dtype,
                   int ndim, const size_t *shape, const size_t *start, const size_t *box,
                   void *buf);

#endif
