/*
 * io.h - inside the file readers and writers (src/io/): the host array
 * struct and the per-format parsers and encoders (the byte buffer they
 * write into is the core's, src/bytes.h).
 * Readers parse bytes in memory (so a fuzz harness can call them directly);
 * writers encode into a buffer that file.c writes out atomically.
 */
#ifndef CONVOLVE_IO_H
#define CONVOLVE_IO_H

#include "../bytes.h"
#include "../problem.h"

#include <stddef.h>
#include <stdint.h>

struct convolve_array {
    convolve_layout layout; /* contiguous, C order, interleaved channels */
    void *data;             /* bytes bytes, owned */
    size_t bytes;
};

/* Largest file convolve_array_load reads (bytes). */
#define CVIO_MAX_FILE_BYTES ((size_t)1 << 36)
/* Largest image (width * height) the image readers accept. */
#define CVIO_MAX_PIXELS ((size_t)1 << 31)

/* convolve_layout_init with a message naming `what` on failure. */
convolve_status cvio_layout_init(convolve_context *ctx, convolve_layout *layout,
                                 convolve_dtype dtype, int ndim, const size_t *shape,
                                 size_t channels, const char *what);

/* Makes a zero-filled array. Messages name `what` (e.g. "PNG image"). */
convolve_status cvio_array_new(convolve_context *ctx, convolve_array **array, convolve_dtype dtype,
                               int ndim, const size_t *shape, size_t channels, const char *what);

/* Checks width * height * pages against the context's pixel limit
 * (convolve_context_set_max_pixels); LIMIT naming `what`. */
convolve_status cvio_check_pixel_limit(convolve_context *ctx, const char *what, size_t width,
                                       size_t height, size_t pages);

/* Checks width * height against CVIO_MAX_PIXELS and that the byte count
 * width * height * channels * esize fits; FORMAT/SIZE_OVERFLOW naming
 * `what`. Each reader checks the context's limit (cvio_check_pixel_limit)
 * once it knows the file holds enough data for its pixels, so that a
 * truncated file is called that. */
convolve_status cvio_check_image_size(convolve_context *ctx, const char *what, size_t width,
                                      size_t height, size_t channels, size_t esize);

/* ---- what each format holds (format.c) ----------------------------------- */

/* libpng's default limit on width and height (png.c checks it is within). */
#define CVIO_PNG_MAX_SIDE 1000000
/* libjpeg's JPEG_MAX_DIMENSION (jpeg.c checks that they agree). */
#define CVIO_JPEG_MAX_SIDE 65500
/* TIFF: ImageWidth and ImageLength are 32-bit. */
#define CVIO_TIFF_MAX_SIDE ((size_t)UINT32_MAX)

/* A reader: bytes in memory to a new array; a writer: an array to bytes
 * appended to *out (quality: JPEG's, 0 to 100; the others ignore it). */
typedef convolve_status (*cvio_reader)(convolve_context *ctx, const unsigned char *data,
                                       size_t size, convolve_array **array);
typedef convolve_status (*cvio_writer)(convolve_context *ctx, const convolve_array *array,
                                       int quality, cvi_buf *out);

#define CVIO_MAX_EXTENSIONS 3

/* A file format: everything the library knows of it (format.c's table). */
typedef struct cvio_format {
    convolve_format format;
    const char *name;                            /* convolve_format_name */
    const char *title;                           /* in messages: ".npy", "PNG" */
    const char *extensions[CVIO_MAX_EXTENSIONS]; /* lower case, no dot; NULL after the last */
    int (*sniff)(const unsigned char *data, size_t size); /* its magic number; NULL: none */
    cvio_reader read;
    cvio_writer write;
    int image;         /* 2-D integer images with channels */
    unsigned dtypes;   /* bit t: holds convolve_dtype t */
    unsigned dims;     /* bit d-1: holds d-dimensional arrays */
    unsigned channels; /* bit c: holds c channels; 0: any count */
    size_t max_side;   /* largest extent along any axis; 0: no limit */
    const char *holds_dtype, *holds_dims, *holds_channels, *holds_side; /* what it holds */
} cvio_format;

/* The row of a concrete format (NPY to TIFF); NULL for AUTO and unknown. */
const cvio_format *cvio_format_of(convolve_format format);

/* Writes into buf (size > 0 bytes, truncated to fit) the formats with a
 * magic number (".npy, PNG, ...", magic 1) or every extension (".npy .png
 * .jpg ...", magic 0), for messages; returns buf. */
const char *cvio_format_list(char *buf, size_t size, int magic);

/* The first rule of a format that an array breaks, in the order checked. */
typedef enum cvio_fit {
    CVIO_HOLDS = 0,
    CVIO_NOT_DTYPE,
    CVIO_NOT_DIMS,
    CVIO_NOT_CHANNELS,
    CVIO_NOT_EXTENT
} cvio_fit;

/* Which rule of `format` (NPY to TIFF, not AUTO) an array of the valid
 * `layout` breaks; *holds gets the phrase saying what the format holds
 * (NULL with CVIO_HOLDS). The writers may assume CVIO_HOLDS. */
cvio_fit cvio_format_fit(convolve_format format, const convolve_layout *layout, const char **holds);

/* 1 on a little-endian host. */
static inline int cvio_little_endian(void)
{
    const unsigned one = 1;
    return *(const unsigned char *)&one == 1;
}

/* ---- readers: bytes in memory to a new array ----------------------------- */
/* Each returns OK and sets *array, or FORMAT (malformed, truncated or an
 * unsupported variant; the message says which), SIZE_OVERFLOW or OUT_OF_MEMORY. */

convolve_status cvio_read_npy(convolve_context *ctx, const unsigned char *data, size_t size,
                              convolve_array **array);
convolve_status cvio_read_png(convolve_context *ctx, const unsigned char *data, size_t size,
                              convolve_array **array);
convolve_status cvio_read_jpeg(convolve_context *ctx, const unsigned char *data, size_t size,
                               convolve_array **array);
convolve_status cvio_read_pnm(convolve_context *ctx, const unsigned char *data, size_t size,
                              convolve_array **array);
convolve_status cvio_read_text(convolve_context *ctx, const unsigned char *data, size_t size,
                               convolve_array **array);
/* TIFF (tiff.c): one page loads 2-D, several pages a 3-D stack. */
convolve_status cvio_read_tiff(convolve_context *ctx, const unsigned char *data, size_t size,
                               convolve_array **array);

/* A .npy file as its header describes it (cvio_npy_describe). */
typedef struct cvio_npy_desc {
    convolve_dtype dtype;
    int swap;    /* data in the other byte order */
    int fortran; /* Fortran order, 2 or 3 dimensions */
    int ndim;
    size_t shape[CONVOLVE_MAX_DIMS];
    size_t data_offset, data_bytes; /* where the data starts; its size */
} cvio_npy_desc;

/* The preamble and header's length (where the header dict ends) of a .npy
 * file of `size` bytes whose first avail >= min(size, 12) bytes are at data;
 * FORMAT as cvio_read_npy. */
convolve_status cvio_npy_header_length(convolve_context *ctx, const unsigned char *data,
                                       size_t avail, size_t size, size_t *length);
/* Parses the header of a .npy file of `size` bytes whose first avail bytes
 * (at least the header's length) are at data, and checks it as
 * cvio_read_npy does (the same messages), the data's size included. */
convolve_status cvio_npy_describe(convolve_context *ctx, const unsigned char *data, size_t avail,
                                  size_t size, cvio_npy_desc *desc);

/* ---- writers: an array to bytes appended to *out -------------------------- */
/* The array must be one the format holds (cvio_format_fit says CVIO_HOLDS;
 * convolve_array_save checks). Each returns OK, INVALID_ARGUMENT, INTERNAL
 * (the encoder failed) or OUT_OF_MEMORY. */

convolve_status cvio_write_npy(convolve_context *ctx, const convolve_array *array, cvi_buf *out);
convolve_status cvio_write_png(convolve_context *ctx, const convolve_array *array, cvi_buf *out);
convolve_status cvio_write_jpeg(convolve_context *ctx, const convolve_array *array, int quality,
                                cvi_buf *out);
convolve_status cvio_write_pnm(convolve_context *ctx, const convolve_array *array, cvi_buf *out);
convolve_status cvio_write_text(convolve_context *ctx, const convolve_array *array, cvi_buf *out);
/* TIFF: a 2-D array as one page, a 3-D array as a page per plane. */
convolve_status cvio_write_tiff(convolve_context *ctx, const convolve_array *array, cvi_buf *out);

#endif
