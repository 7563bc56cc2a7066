/*
 * grid.c - the grid of boxes: checking that the ranks' boxes cut the array
 * into a Cartesian grid that covers it once, finding the part that holds an
 * index, and convolve_mpi_decompose's even split.
 */
#include "mpi_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

void cvmpi_grid_free(cvmpi_grid *g)
{
    if (!g)
        return;
    for (int a = 0; a < 3; a++)
        free(g->cuts[a]);
    free(g->coord);
    free(g->rank_at);
    memset(g, 0, sizeof *g);
}

convolve_status cvmpi_grid_build(cvmpi_grid *g, const size_t *n, int nranks,
                                 const unsigned long long *boxes, char *why, size_t why_size)
{
    memset(g, 0, sizeof *g);
    g->nranks = nranks;
    size_t *starts = malloc((size_t)nranks * sizeof *starts);
    g->coord = malloc((size_t)nranks * 3 * sizeof *g->coord);
    if (!starts || !g->coord)
        goto oom;
    for (int r = 0; r < nranks; r++)
        for (int a = 0; a < 3; a++) {
            unsigned long long s = boxes[6 * r + a], c = boxes[6 * r + 3 + a];
            if (c == 0 || s >= n[a] || c > n[a] - s) {
                snprintf(why, why_size,
                         "rank %d's box [%llu, %llu) along axis %d leaves the "
                         "array's [0, %zu)",
                         r, s, s + c, a, n[a]);
                goto bad;
            }
        }
    /* along each axis the distinct starts are the parts; each must end
     * where the next begins */
    for (int a = 0; a < 3; a++) {
        for (int r = 0; r < nranks; r++)
            starts[r] = (size_t)boxes[6 * r + a];
        qsort(starts, (size_t)nranks, sizeof *starts, cmp_size);
        int parts = 0;
        for (int r = 0; r < nranks; r++)
            if (r == 0 || starts[r] != starts[r - 1])
                starts[parts++] = starts[r];
        g->parts[a] = parts;
        g->cuts[a] = malloc(((size_t)parts + 1) * sizeof(size_t));
        if (!g->cuts[a])
            goto oom;
        memcpy(g->cuts[a], starts, (size_t)parts * sizeof(size_t));
        g->cuts[a][parts] = n[a];
        if (g->cuts[a][0] != 0) {
            snprintf(why, why_size, "no rank's box starts at index 0 along axis %d", a);
            goto bad;
        }
        for (int r = 0; r < nranks; r++) {
            size_t s = (size_t)boxes[6 * r + a], c = (size_t)boxes[6 * r + 3 + a];
            size_t *at = bsearch(&s, g->cuts[a], (size_t)parts, sizeof(size_t), cmp_size);
            int p = (int)(at - g->cuts[a]);
            if (s + c != g->cuts[a][p + 1]) {
                snprintf(why, why_size,
                         "rank %d's box [%zu, %zu) along axis %d does not end "
                         "where the next part begins (%zu): the boxes do not form a grid",
                         r, s, s + c, a, g->cuts[a][p + 1]);
                goto bad;
            }
            g->coord[3 * r + a] = p;
        }
    }
    size_t cells = (size_t)g->parts[0] * (size_t)g->parts[1] * (size_t)g->parts[2];
    if (cells != (size_t)nranks) {
        snprintf(why, why_size,
                 "the boxes cut the axes into %d x %d x %d parts, a grid of "
                 "%zu boxes, but there are %d ranks",
                 g->parts[0], g->parts[1], g->parts[2], cells, nranks);
        goto bad;
    }
    g->rank_at = malloc(cells * sizeof *g->rank_at);
    if (!g->rank_at)
        goto oom;
    for (size_t i = 0; i < cells; i++)
        g->rank_at[i] = -1;
    for (int r = 0; r < nranks; r++) {
        const int *c = &g->coord[3 * r];
        size_t cell = ((size_t)c[0] * (size_t)g->parts[1] + (size_t)c[1]) * (size_t)g->parts[2] +
                      (size_t)c[2];
        if (g->rank_at[cell] >= 0) {
            snprintf(why, why_size, "ranks %d and %d hold the same box", g->rank_at[cell], r);
            goto bad;
        }
        g->rank_at[cell] = r;
    }
    free(starts);
    return CONVOLVE_OK;
oom:
    free(starts);
    cvmpi_grid_free(g);
    snprintf(why, why_size, "out of memory for the grid of %d ranks", nranks);
    return CONVOLVE_ERROR_OUT_OF_MEMORY;
bad:
    free(starts);
    cvmpi_grid_free(g);
    return CONVOLVE_ERROR_BAD_LAYOUT;
}

int cvmpi_grid_part(const cvmpi_grid *g, int a, size_t i)
{
    int lo = 0, hi = g->parts[a]; /* cuts[lo] <= i < cuts[hi] */
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (g->cuts[a][mid] <= i)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

convolve_status convolve_mpi_decompose(convolve_context *ctx, MPI_Comm comm, int ndim,
                                       const size_t *global_shape, const int *grid,
                                       size_t *block_start, size_t *block_shape)
{
    if (!global_shape || !block_start || !block_shape || comm == MPI_COMM_NULL)
        return cvmpi_fail(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                          "convolve_mpi_decompose: NULL argument or MPI_COMM_NULL");
    if (ndim < 1 || ndim > CONVOLVE_MAX_DIMS)
        return cvmpi_fail(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                          "convolve_mpi_decompose: ndim is %d; use 1 to 3", ndim);
    int size = 0, rank = 0, err;
    if ((err = MPI_Comm_size(comm, &size)) != MPI_SUCCESS ||
        (err = MPI_Comm_rank(comm, &rank)) != MPI_SUCCESS)
        return cvmpi_fail_mpi(ctx, err, "MPI_Comm_size/rank");
    int g[CONVOLVE_MAX_DIMS] = {1, 1, 1};
    long long product = 1;
    int free_axes = 0;
    for (int a = 0; a < ndim; a++) {
        g[a] = grid ? grid[a] : (a == 0 ? size : 1);
        if (g[a] < 0)
            return cvmpi_fail(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                              "convolve_mpi_decompose: grid[%d] is %d; give 0 (free) or more", a,
                              g[a]);
        free_axes += g[a] == 0;
        product *= g[a] ? g[a] : 1;
        if (product > size)
            break;
    }
    if (free_axes && product <= size && size % product == 0) {
        /* MPI's balanced choice for the free axes */
        if ((err = MPI_Dims_create(size, ndim, g)) != MPI_SUCCESS)
            return cvmpi_fail_mpi(ctx, err, "MPI_Dims_create");
        product = size;
    }
    if (product != size)
        return cvmpi_fail(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                          "convolve_mpi_decompose: the grid's ranks (%lld%s) are not the "
                          "communicator's %d",
                          product, product > size ? " or more" : "", size);
    int rest = rank;
    for (int a = ndim - 1; a >= 0; a--) {
        int c = rest % g[a];
        rest /= g[a];
        size_t n = global_shape[a], parts = (size_t)g[a];
        if (n == 0)
            return cvmpi_fail(ctx, CONVOLVE_ERROR_BAD_LAYOUT,
                              "convolve_mpi_decompose: extent 0 along axis %d", a);
        if (parts > n)
            return cvmpi_fail(ctx, CONVOLVE_ERROR_BAD_LAYOUT,
                              "convolve_mpi_decompose: %zu ranks along axis %d, which has only "
                              "%zu elements",
                              parts, a, n);
        size_t q = n / parts, rem = n % parts, i = (size_t)c;
        block_start[a] = q * i + (i < rem ? i : rem);
        block_shape[a] = q + (i < rem);
    }
    return cvmpi_ok(ctx);
}
