/*
 * format.c - what the library knows about each file format, in one table:
 * its name, the extensions that name it, the magic number that announces
 * it, its reader and writer, and what it can hold (element types,
 * dimensions, channels, extents). convolve_format_name, _extension,
 * _from_path, _detect, _is_image and _can_hold answer from here;
 * convolve_array_load and convolve_array_save (file.c) read and write
 * through it.
 */
#include "io.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define DTYPE_BIT(t) (1u << (t))
#define DIMS_BIT(d) (1u << ((d)-1))

/* Magic numbers (convolve_format_detect): 1 if data[0..size-1] opens so. */
static int sniff_npy(const unsigned char *d, size_t size)
{
    return size >= 6 && memcmp(d, "\x93NUMPY", 6) == 0;
}

static int sniff_png(const unsigned char *d, size_t size)
{
    return size >= 4 && memcmp(d, "\x89PNG", 4) == 0;
}

static int sniff_jpeg(const unsigned char *d, size_t size)
{
    return size >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF;
}

static int sniff_pnm(const unsigned char *d, size_t size)
{
    return size >= 3 && d[0] == 'P' && d[1] >= '1' && d[1] <= '7' &&
           (d[2] == ' ' || d[2] == '\t' || d[2] == '\n' || d[2] == '\r' || d[2] == '#');
}

/* classic TIFF or BigTIFF, either byte order */
static int sniff_tiff(const unsigned char *d, size_t size)
{
    return size >= 4 && ((d[0] == 'I' && d[1] == 'I' && (d[2] == 42 || d[2] == 43) && d[3] == 0) ||
                         (d[0] == 'M' && d[1] == 'M' && d[2] == 0 && (d[3] == 42 || d[3] == 43)));
}

/* The one writer that takes a parameter. */
static convolve_status write_jpeg(convolve_context *ctx, const convolve_array *array, int quality,
                                  cvi_buf *out)
{
    return cvio_write_jpeg(ctx, array, quality, out);
}

#define WRITER(fn)                                                                           \
    static convolve_status fn##_q(convolve_context *ctx, const convolve_array *array, int q, \
                                  cvi_buf *out)                                              \
    {                                                                                        \
        (void)q;                                                                             \
        return fn(ctx, array, out);                                                          \
    }
WRITER(cvio_write_npy)
WRITER(cvio_write_png)
WRITER(cvio_write_pnm)
WRITER(cvio_write_tiff)
WRITER(cvio_write_text)
#undef WRITER

/*
 * The formats, one row each: all the library knows of a format. A format is
 * added here (and its reader and writer in a file of its own, io.h).
 * Extensions are listed, and magic numbers tried, in the table's order.
 */
static const cvio_format k_formats[] = {
    {CONVOLVE_FORMAT_NPY,
     "npy",
     ".npy",
     {"npy"},
     sniff_npy,
     cvio_read_npy,
     cvio_write_npy_q,
     0,
     DTYPE_BIT(CONVOLVE_FLOAT32) | DTYPE_BIT(CONVOLVE_FLOAT64) | DTYPE_BIT(CONVOLVE_UINT8) |
         DTYPE_BIT(CONVOLVE_UINT16),
     DIMS_BIT(1) | DIMS_BIT(2) | DIMS_BIT(3),
     0,
     0,
     NULL,
     NULL,
     NULL,
     NULL},
    {CONVOLVE_FORMAT_PNG,
     "png",
     "PNG",
     {"png"},
     sniff_png,
     cvio_read_png,
     cvio_write_png_q,
     1,
     DTYPE_BIT(CONVOLVE_UINT8) | DTYPE_BIT(CONVOLVE_UINT16),
     DIMS_BIT(2),
     (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4),
     CVIO_PNG_MAX_SIDE,
     "PNG holds uint8 or uint16 data",
     "image files hold 2-D images",
     "PNG holds 1 to 4 channels",
     "PNG holds at most 1000000 pixels per side"},
    {CONVOLVE_FORMAT_JPEG,
     "jpeg",
     "JPEG",
     {"jpg", "jpeg"},
     sniff_jpeg,
     cvio_read_jpeg,
     write_jpeg,
     1,
     DTYPE_BIT(CONVOLVE_UINT8),
     DIMS_BIT(2),
     (1u << 1) | (1u << 3),
     CVIO_JPEG_MAX_SIDE,
     "JPEG holds uint8 data",
     "image files hold 2-D images",
     "JPEG holds 1 (gray) or 3 (RGB) channels",
     "JPEG holds at most 65500 pixels per side"},
    {CONVOLVE_FORMAT_PNM,
     "pnm",
     "PNM",
     {"pgm", "ppm", "pnm"},
     sniff_pnm,
     cvio_read_pnm,
     cvio_write_pnm_q,
     1,
     DTYPE_BIT(CONVOLVE_UINT8) | DTYPE_BIT(CONVOLVE_UINT16),
     DIMS_BIT(2),
     (1u << 1) | (1u << 3),
     0,
     "PGM/PPM hold uint8 or uint16 data",
     "image files hold 2-D images",
     "PGM/PPM hold 1 (gray) or 3 (RGB) channels",
     NULL},
#ifdef CONVOLVE_HAVE_TIFF
    {CONVOLVE_FORMAT_TIFF,
     "tiff",
     "TIFF",
     {"tif", "tiff"},
     sniff_tiff,
     cvio_read_tiff,
     cvio_write_tiff_q,
     0,
     DTYPE_BIT(CONVOLVE_FLOAT32) | DTYPE_BIT(CONVOLVE_FLOAT64) | DTYPE_BIT(CONVOLVE_UINT8) |
         DTYPE_BIT(CONVOLVE_UINT16),
     DIMS_BIT(2) | DIMS_BIT(3),
     (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4),
     CVIO_TIFF_MAX_SIDE,
     "TIFF holds uint8, uint16, float32 or float64 data",
     "TIFF holds 2-D images and 3-D stacks (a page per plane)",
     "TIFF holds 1 to 4 channels (gray, gray+alpha, RGB, RGBA)",
     "TIFF holds at most 4294967295 pixels per side"},
#else
    {CONVOLVE_FORMAT_TIFF,
     "tiff",
     "TIFF",
     {"tif", "tiff"},
     sniff_tiff,
     cvio_read_tiff,
     cvio_write_tiff_q,
     0,
     0,
     0,
     0,
     0,
     "this libconvolve was built without TIFF",
     NULL,
     NULL,
     NULL},
#endif
    {CONVOLVE_FORMAT_TEXT,
     "text",
     "text",
     {"txt"},
     NULL,
     cvio_read_text,
     cvio_write_text_q,
     0,
     DTYPE_BIT(CONVOLVE_FLOAT32) | DTYPE_BIT(CONVOLVE_FLOAT64),
     DIMS_BIT(1) | DIMS_BIT(2),
     1u << 1,
     0,
     "text holds float data",
     "text holds 1-D or 2-D single-channel arrays",
     "text holds 1-D or 2-D single-channel arrays",
     NULL},
};

#define FORMAT_COUNT (sizeof k_formats / sizeof k_formats[0])
_Static_assert(FORMAT_COUNT == CONVOLVE_FORMAT_TIFF, "a format without its row");

const cvio_format *cvio_format_of(convolve_format format)
{
    for (size_t i = 0; i < FORMAT_COUNT; i++)
        if (k_formats[i].format == format)
            return &k_formats[i];
    return NULL;
}

const char *convolve_format_name(convolve_format format)
{
    const cvio_format *f = cvio_format_of(format);
    return format == CONVOLVE_FORMAT_AUTO ? "auto" : f ? f->name : NULL;
}

const char *convolve_format_extension(convolve_format format, size_t index)
{
    for (size_t i = 0; i < FORMAT_COUNT; i++) {
        if (format != CONVOLVE_FORMAT_AUTO && k_formats[i].format != format)
            continue;
        for (size_t k = 0; k < CVIO_MAX_EXTENSIONS && k_formats[i].extensions[k]; k++)
            if (index-- == 0)
                return k_formats[i].extensions[k];
    }
    return NULL;
}

const char *cvio_format_list(char *buf, size_t size, int magic)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < FORMAT_COUNT; i++) {
        const cvio_format *f = &k_formats[i];
        if (magic && f->sniff && n < size)
            n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? ", " : "", f->title);
        for (size_t k = 0; !magic && k < CVIO_MAX_EXTENSIONS && f->extensions[k] && n < size; k++)
            n += (size_t)snprintf(buf + n, size - n, "%s.%s", n ? " " : "", f->extensions[k]);
    }
    return buf;
}

convolve_format convolve_format_from_path(const char *path)
{
    if (!path)
        return CONVOLVE_FORMAT_AUTO;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base)
        return CONVOLVE_FORMAT_AUTO;
    for (size_t i = 0; i < FORMAT_COUNT; i++)
        for (size_t k = 0; k < CVIO_MAX_EXTENSIONS && k_formats[i].extensions[k]; k++)
            if (strcasecmp(dot + 1, k_formats[i].extensions[k]) == 0)
                return k_formats[i].format;
    return CONVOLVE_FORMAT_AUTO;
}

convolve_format convolve_format_detect(const void *data, size_t size)
{
    if (!data)
        return CONVOLVE_FORMAT_AUTO;
    for (size_t i = 0; i < FORMAT_COUNT; i++)
        if (k_formats[i].sniff && k_formats[i].sniff(data, size))
            return k_formats[i].format;
    return CONVOLVE_FORMAT_AUTO;
}

int convolve_format_is_image(convolve_format format)
{
    const cvio_format *c = cvio_format_of(format);
    return c && c->image;
}

cvio_fit cvio_format_fit(convolve_format format, const convolve_layout *layout, const char **holds)
{
    const cvio_format *c = cvio_format_of(format);
    *holds = NULL;
    if (!(c->dtypes & DTYPE_BIT(layout->dtype))) {
        *holds = c->holds_dtype;
        return CVIO_NOT_DTYPE;
    }
    if (!(c->dims & DIMS_BIT(layout->ndim))) {
        *holds = c->holds_dims;
        return CVIO_NOT_DIMS;
    }
    if (c->channels && (layout->channels >= 32 || !(c->channels & (1u << layout->channels)))) {
        *holds = c->holds_channels;
        return CVIO_NOT_CHANNELS;
    }
    for (int a = 0; a < layout->ndim && c->max_side; a++)
        if (layout->shape[a] > c->max_side) {
            *holds = c->holds_side;
            return CVIO_NOT_EXTENT;
        }
    return CVIO_HOLDS;
}

convolve_status convolve_format_can_hold(convolve_context *ctx, convolve_format format,
                                         const convolve_layout *layout)
{
    if (!layout)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_format_can_hold: layout is NULL");
    if (!cvio_format_of(format))
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_format_can_hold: %s format %d; name a concrete format",
                         format == CONVOLVE_FORMAT_AUTO ? "the AUTO" : "unknown", (int)format);
    convolve_layout contiguous;
    convolve_status st = cvio_layout_init(ctx, &contiguous, layout->dtype, layout->ndim,
                                          layout->shape, layout->channels, "layout");
    if (st != CONVOLVE_OK)
        return st;
    const char *holds;
    if (cvio_format_fit(format, &contiguous, &holds) != CVIO_HOLDS)
        return cvi_error(ctx, CONVOLVE_ERROR_UNSUPPORTED, "%s", holds);
    return cvi_ok(ctx);
}
