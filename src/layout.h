/*
 * layout.h - internal checks on array layouts (src/layout.c).
 */
#ifndef CONVOLVE_LAYOUT_H
#define CONVOLVE_LAYOUT_H

#include "internal.h"

/* Validates a layout; `what` names it in messages ("input", "output").
 * Outputs must also not overlap themselves. */
convolve_status cvi_check_layout(convolve_context *ctx, const convolve_layout *l, const char *what,
                                 int is_output);

/* Byte offsets, relative to element 0, of the lowest byte (lo <= 0) and one
 * past the highest byte the layout touches. SIZE_OVERFLOW if they overflow. */
convolve_status cvi_layout_span(const convolve_layout *l, ptrdiff_t *lo, ptrdiff_t *hi);

#endif
