/*
 * bytes.h - a growable byte buffer and atomic file writes (src/bytes.c),
 * for the core's wisdom file and the writers of src/io/.
 */
#ifndef CONVOLVE_BYTES_H
#define CONVOLVE_BYTES_H

#include "problem.h"

#include <stddef.h>

typedef struct cvi_buf {
    unsigned char *data;
    size_t size, cap;
} cvi_buf;

/* Appends n bytes; returns 0 when out of memory (the buffer stays valid). */
int cvi_buf_append(cvi_buf *b, const void *p, size_t n);
/* Appends formatted text; returns 0 when out of memory. */
int cvi_buf_printf(cvi_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void cvi_buf_free(cvi_buf *b);

/* Writes size bytes to path through a temporary file in its folder (unnamed
 * until complete where the file system allows), fsynced and renamed over
 * path, with the owner (where permitted) and mode of the file it replaces:
 * the old file stays whole on any failure (IO). */
convolve_status cvi_write_file_atomic(convolve_context *ctx, const char *path,
                                      const unsigned char *data, size_t size);

#endif
