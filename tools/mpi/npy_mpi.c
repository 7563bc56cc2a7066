/*
 * npy_mpi.c - .npy files for convolve-mpi: the header read and written by
 * the library (convolve_npy_inspect, convolve_npy_header), and boxes of the
 * array read or written in place with MPI-IO (a subarray file view: each
 * rank touches only its box).
 */
#include "npy_mpi.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the header: the library's --------------------------------------------------- */

int cli_npy_read_header(convolve_context *ctx, const char *path, cli_npy *h, char *why,
                        size_t why_size)
{
    memset(h, 0, sizeof *h);
    convolve_npy_info info;
    if (convolve_npy_inspect(ctx, path, &info) != CONVOLVE_OK) {
        snprintf(why, why_size, "%s", convolve_last_error(ctx));
        return -1;
    }
    if (info.fortran_order) {
        snprintf(why, why_size, "'%s': .npy array in Fortran order; save a C-order array", path);
        return -1;
    }
    h->dtype = info.layout.dtype;
    h->swap = info.byte_swapped;
    h->ndim = info.layout.ndim;
    for (int a = 0; a < h->ndim; a++)
        h->shape[a] = info.layout.shape[a];
    h->offset = info.data_offset;
    return 0;
}

size_t cli_npy_format_header(convolve_dtype dtype, int ndim, const size_t *shape, char *buf)
{
    convolve_layout l;
    size_t size = 0;
    if (convolve_layout_init(&l, dtype, ndim, shape, 1) != CONVOLVE_OK ||
        convolve_npy_header(NULL, &l, buf, CONVOLVE_NPY_HEADER_MAX, &size) != CONVOLVE_OK)
        return 0;
    return size;
}

/* ---- boxes through MPI-IO ------------------------------------------------------ */

int cli_npy_box_io(MPI_File fh, int write, unsigned long long offset, convolve_dtype dtype,
                   int ndim, const size_t *shape, const size_t *start, const size_t *box, void *buf)
{
    int sizes[CONVOLVE_MAX_DIMS], subs[CONVOLVE_MAX_DIMS], starts[CONVOLVE_MAX_DIMS];
    size_t rows = 1;
    for (int a = 0; a < ndim; a++) {
        if (shape[a] > INT_MAX)
            return MPI_ERR_COUNT;
        sizes[a] = (int)shape[a];
        subs[a] = (int)box[a];
        starts[a] = (int)start[a];
        if (a < ndim - 1)
            rows *= box[a];
    }
    if (rows > INT_MAX)
        return MPI_ERR_COUNT;
    MPI_Datatype elem = MPI_DATATYPE_NULL, filetype = MPI_DATATYPE_NULL, row = MPI_DATATYPE_NULL,
                 memtype = MPI_DATATYPE_NULL;
    int err = MPI_Type_contiguous((int)convolve_dtype_size(dtype), MPI_BYTE, &elem);
    if (!err)
        err = MPI_Type_commit(&elem);
    if (!err)
        err = MPI_Type_create_subarray(ndim, sizes, subs, starts, MPI_ORDER_C, elem, &filetype);
    if (!err)
        err = MPI_Type_commit(&filetype);
    /* the box in memory: rows of its last extent (counts stay ints) */
    if (!err)
        err = MPI_Type_contiguous(subs[ndim - 1], elem, &row);
    if (!err)
        err = MPI_Type_contiguous((int)rows, row, &memtype);
    if (!err)
        err = MPI_Type_commit(&memtype);
    if (!err)
        err = MPI_File_set_view(fh, (MPI_Offset)offset, elem, filetype, "native", MPI_INFO_NULL);
    if (!err)
        err = write ? MPI_File_write_all(fh, buf, 1, memtype, MPI_STATUS_IGNORE)
                    : MPI_File_read_all(fh, buf, 1, memtype, MPI_STATUS_IGNORE);
    MPI_Datatype *types[] = {&elem, &filetype, &row, &memtype};
    for (int k = 0; k < 4; k++)
        if (*types[k] != MPI_DATATYPE_NULL)
            MPI_Type_free(types[k]);
    return err;
}
