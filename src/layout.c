/*
 * layout.c - array layouts: the contiguous initialiser, and the validation
 * every layout passes at the API boundary (extents, strides, alignment,
 * overflow of byte counts, overlap of output elements).
 */
#include "layout.h"

#include <stdlib.h>
#include <string.h>

convolve_status convolve_layout_init(convolve_layout *layout, convolve_dtype dtype, int ndim,
                                     const size_t *shape, size_t channels)
{
    if (!layout || !shape)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    size_t esize = convolve_dtype_size(dtype);
    if (esize == 0)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    if (ndim < 1 || ndim > CONVOLVE_MAX_DIMS || channels == 0)
        return CONVOLVE_ERROR_BAD_LAYOUT;
    memset(layout, 0, sizeof *layout);
    layout->dtype = dtype;
    layout->ndim = ndim;
    layout->channels = channels;
    layout->channel_stride = (ptrdiff_t)esize;
    size_t step;
    if (!cvi_mul_size(esize, channels, &step) || step > (size_t)PTRDIFF_MAX)
        return CONVOLVE_ERROR_SIZE_OVERFLOW;
    for (int a = ndim - 1; a >= 0; a--) {
        if (shape[a] == 0)
            return CONVOLVE_ERROR_BAD_LAYOUT;
        layout->shape[a] = shape[a];
        layout->strides[a] = (ptrdiff_t)step;
        if (!cvi_mul_size(step, shape[a], &step) || step > (size_t)PTRDIFF_MAX)
            return CONVOLVE_ERROR_SIZE_OVERFLOW;
    }
    return CONVOLVE_OK;
}

size_t convolve_layout_count(const convolve_layout *layout)
{
    if (!layout || layout->ndim < 1 || layout->ndim > CONVOLVE_MAX_DIMS)
        return 0;
    size_t n = layout->channels;
    for (int a = 0; a < layout->ndim; a++)
        if (!cvi_mul_size(n, layout->shape[a], &n))
            return 0;
    return n;
}

/* The axes of a layout with the channel axis appended: extents and strides. */
static int axes_of(const convolve_layout *l, size_t ext[4], ptrdiff_t str[4])
{
    int n = 0;
    for (int a = 0; a < l->ndim; a++) {
        ext[n] = l->shape[a];
        str[n++] = l->strides[a];
    }
    ext[n] = l->channels;
    str[n++] = l->channel_stride;
    return n;
}

convolve_status cvi_layout_span(const convolve_layout *l, ptrdiff_t *lo, ptrdiff_t *hi)
{
    size_t ext[4];
    ptrdiff_t str[4];
    int n = axes_of(l, ext, str);
    ptrdiff_t low = 0, high = 0;
    for (int a = 0; a < n; a++) {
        ptrdiff_t reach;
        if (ext[a] - 1 > (size_t)PTRDIFF_MAX ||
            __builtin_mul_overflow((ptrdiff_t)(ext[a] - 1), str[a], &reach))
            return CONVOLVE_ERROR_SIZE_OVERFLOW;
        if (reach < 0) {
            if (__builtin_add_overflow(low, reach, &low))
                return CONVOLVE_ERROR_SIZE_OVERFLOW;
        } else if (__builtin_add_overflow(high, reach, &high)) {
            return CONVOLVE_ERROR_SIZE_OVERFLOW;
        }
    }
    if (__builtin_add_overflow(high, (ptrdiff_t)convolve_dtype_size(l->dtype), &high) ||
        __builtin_sub_overflow(high, low, &(ptrdiff_t){0}))
        return CONVOLVE_ERROR_SIZE_OVERFLOW;
    *lo = low;
    *hi = high;
    return CONVOLVE_OK;
}

void cvi_problem_span(const cvi_problem *p, int output, ptrdiff_t *lo, ptrdiff_t *hi)
{
    convolve_layout l;
    memset(&l, 0, sizeof l);
    l.dtype = output ? p->out_type : p->in_type;
    l.ndim = 3;
    l.channels = p->channels;
    l.channel_stride = output ? p->out_cstride : p->in_cstride;
    for (int a = 0; a < 3; a++) {
        l.shape[a] = p->shape[a];
        l.strides[a] = output ? p->out_strides[a] : p->in_strides[a];
    }
    (void)cvi_layout_span(&l, lo, hi); /* the layouts were checked: no overflow */
}

/* 1 if no two elements of the layout share a byte: with the axes sorted by
 * |stride|, each stride must step past everything the smaller ones reach. */
static int elements_disjoint(const convolve_layout *l)
{
    size_t ext[4];
    ptrdiff_t str[4];
    int n = axes_of(l, ext, str);
    size_t mag[4], e[4];
    int m = 0;
    for (int a = 0; a < n; a++) {
        if (ext[a] < 2)
            continue;
        size_t s = (size_t)(str[a] < 0 ? -str[a] : str[a]);
        int i = m++;
        while (i > 0 && mag[i - 1] > s) { /* insertion sort by magnitude */
            mag[i] = mag[i - 1];
            e[i] = e[i - 1];
            i--;
        }
        mag[i] = s;
        e[i] = ext[a];
    }
    size_t reach = convolve_dtype_size(l->dtype); /* bytes covered so far */
    for (int i = 0; i < m; i++) {
        if (mag[i] < reach)
            return 0;
        size_t r;
        if (!cvi_mul_size(mag[i], e[i] - 1, &r) || !cvi_add_size(reach, r, &reach))
            return 0;
    }
    return 1;
}

convolve_status cvi_check_layout(convolve_context *ctx, const convolve_layout *l, const char *what,
                                 int is_output)
{
    if (!l)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "%s layout is NULL", what);
    size_t esize = convolve_dtype_size(l->dtype);
    if (esize == 0)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "%s layout: unknown dtype %d", what,
                         (int)l->dtype);
    if (l->ndim < 1 || l->ndim > CONVOLVE_MAX_DIMS)
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_LAYOUT,
                         "%s layout: ndim is %d; convolve handles 1 to 3 dimensions", what,
                         l->ndim);
    if (l->channels == 0)
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_LAYOUT, "%s layout: channels is 0", what);
    for (int a = 0; a < l->ndim; a++) {
        if (l->shape[a] == 0)
            return cvi_error(ctx, CONVOLVE_ERROR_BAD_LAYOUT, "%s layout: axis %d has extent 0",
                             what, a);
        if (l->shape[a] > (size_t)PTRDIFF_MAX)
            return cvi_error(ctx, CONVOLVE_ERROR_SIZE_OVERFLOW,
                             "%s layout: axis %d extent %zu is too large", what, a, l->shape[a]);
        if (l->strides[a] % (ptrdiff_t)esize != 0)
            return cvi_error(ctx, CONVOLVE_ERROR_BAD_LAYOUT,
                             "%s layout: stride %td of axis %d is not a multiple of the %zu-byte "
                             "element",
                             what, l->strides[a], a, esize);
    }
    if (l->channel_stride % (ptrdiff_t)esize != 0)
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_LAYOUT,
                         "%s layout: channel stride %td is not a multiple of the %zu-byte element",
                         what, l->channel_stride, esize);
    size_t count = convolve_layout_count(l), bytes;
    if (count == 0 || !cvi_mul_size(count, esize, &bytes) || bytes > (size_t)PTRDIFF_MAX)
        return cvi_error(ctx, CONVOLVE_ERROR_SIZE_OVERFLOW,
                         "%s layout: the array's byte count overflows", what);
    ptrdiff_t lo, hi;
    if (cvi_layout_span(l, &lo, &hi) != CONVOLVE_OK)
        return cvi_error(ctx, CONVOLVE_ERROR_SIZE_OVERFLOW,
                         "%s layout: shape times strides overflows the address range", what);
    if (is_output && !elements_disjoint(l))
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_LAYOUT,
                         "%s layout: strides make elements overlap (an output element would be "
                         "written twice)",
                         what);
    return CONVOLVE_OK;
}
