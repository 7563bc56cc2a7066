/*
 * format.c - what the library knows about each file format, in one place:
 * the extensions that name it, the magic number that announces it, and what
 * it can hold (element types, dimensions, channels, extents).
 * convolve_format_from_path, convolve_format_detect, convolve_format_is_image
 * and convolve_format_can_hold answer from here; convolve_array_load and
 * convolve_array_save (file.c) go by the same answers.
 */
#include "io.h"

#include <string.h>
#include <strings.h>

#define DTYPE_BIT(t) (1u << (t))
#define DIMS_BIT(d) (1u << ((d) - 1))

/* What one format holds, and the phrases that say so. */
typedef struct {
    convolve_format format;
    int image;                /* 2-D integer images with channels */
    unsigned dtypes;          /* bit t: holds convolve_dtype t */
    unsigned dims;            /* bit d-1: holds d-dimensional arrays */
    unsigned channels;        /* bit c: holds c channels; 0: any count */
    size_t max_side;          /* largest extent along any axis; 0: no limit */
    const char *holds_dtype, *holds_dims, *holds_channels, *holds_side;
} format_capacity;

static const format_capacity k_capacity[] = {
    {CONVOLVE_FORMAT_NPY, 0,
     DTYPE_BIT(CONVOLVE_FLOAT32) | DTYPE_BIT(CONVOLVE_FLOAT64) | DTYPE_BIT(CONVOLVE_UINT8) |
         DTYPE_BIT(CONVOLVE_UINT16),
     DIMS_BIT(1) | DIMS_BIT(2) | DIMS_BIT(3), 0, 0, NULL, NULL, NULL, NULL},
    {CONVOLVE_FORMAT_PNG, 1, DTYPE_BIT(CONVOLVE_UINT8) | DTYPE_BIT(CONVOLVE_UINT16), DIMS_BIT(2),
     (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4), CVIO_PNG_MAX_SIDE,
     "PNG holds uint8 or uint16 data", "image files hold 2-D images", "PNG holds 1 to 4 channels",
     "PNG holds at most 1000000 pixels per side"},
    {CONVOLVE_FORMAT_JPEG, 1, DTYPE_BIT(CONVOLVE_UINT8), DIMS_BIT(2), (1u << 1) | (1u << 3),
     CVIO_JPEG_MAX_SIDE, "JPEG holds uint8 data", "image files hold 2-D images",
     "JPEG holds 1 (gray) or 3 (RGB) channels", "JPEG holds at most 65500 pixels per side"},
    {CONVOLVE_FORMAT_PNM, 1, DTYPE_BIT(CONVOLVE_UINT8) | DTYPE_BIT(CONVOLVE_UINT16), DIMS_BIT(2),
     (1u << 1) | (1u << 3), 0, "PGM/PPM hold uint8 or uint16 data", "image files hold 2-D images",
     "PGM/PPM hold 1 (gray) or 3 (RGB) channels", NULL},
#ifdef CONVOLVE_HAVE_TIFF
    {CONVOLVE_FORMAT_TIFF, 0,
     DTYPE_BIT(CONVOLVE_FLOAT32) | DTYPE_BIT(CONVOLVE_FLOAT64) | DTYPE_BIT(CONVOLVE_UINT8) |
         DTYPE_BIT(CONVOLVE_UINT16),
     DIMS_BIT(2) | DIMS_BIT(3), (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4), CVIO_TIFF_MAX_SIDE,
     "TIFF holds uint8, uint16, float32 or float64 data",
     "TIFF holds 2-D images and 3-D stacks (a page per plane)",
     "TIFF holds 1 to 4 channels (gray, gray+alpha, RGB, RGBA)",
     "TIFF holds at most 4294967295 pixels per side"},
#else
    {CONVOLVE_FORMAT_TIFF, 0, 0, 0, 0, 0, "this libconvolve was built without TIFF", NULL, NULL,
     NULL},
#endif
    {CONVOLVE_FORMAT_TEXT, 0, DTYPE_BIT(CONVOLVE_FLOAT32) | DTYPE_BIT(CONVOLVE_FLOAT64),
     DIMS_BIT(1) | DIMS_BIT(2), 1u << 1, 0, "text holds float data",
     "text holds 1-D or 2-D single-channel arrays", "text holds 1-D or 2-D single-channel arrays",
     NULL},
};

static const format_capacity *capacity(convolve_format format)
{
    for (size_t i = 0; i < sizeof k_capacity / sizeof k_capacity[0]; i++)
        if (k_capacity[i].format == format)
            return &k_capacity[i];
    return NULL;
}

convolve_format convolve_format_from_path(const char *path)
{
    static const struct {
        const char *ext;
        convolve_format format;
    } k_ext[] = {
        {"npy", CONVOLVE_FORMAT_NPY},  {"png", CONVOLVE_FORMAT_PNG},  {"jpg", CONVOLVE_FORMAT_JPEG},
        {"jpeg", CONVOLVE_FORMAT_JPEG}, {"pgm", CONVOLVE_FORMAT_PNM}, {"ppm", CONVOLVE_FORMAT_PNM},
        {"pnm", CONVOLVE_FORMAT_PNM},  {"txt", CONVOLVE_FORMAT_TEXT}, {"tif", CONVOLVE_FORMAT_TIFF},
        {"tiff", CONVOLVE_FORMAT_TIFF},
    };
    if (!path)
        return CONVOLVE_FORMAT_AUTO;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base)
        return CONVOLVE_FORMAT_AUTO;
    for (size_t i = 0; i < sizeof k_ext / sizeof k_ext[0]; i++)
        if (strcasecmp(dot + 1, k_ext[i].ext) == 0)
            return k_ext[i].format;
    return CONVOLVE_FORMAT_AUTO;
}

convolve_format convolve_format_detect(const void *data, size_t size)
{
    const unsigned char *d = data;
    if (!d)
        return CONVOLVE_FORMAT_AUTO;
    if (size >= 6 && memcmp(d, "\x93NUMPY", 6) == 0)
        return CONVOLVE_FORMAT_NPY;
    if (size >= 4 && memcmp(d, "\x89PNG", 4) == 0)
        return CONVOLVE_FORMAT_PNG;
    if (size >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF)
        return CONVOLVE_FORMAT_JPEG;
    if (size >= 3 && d[0] == 'P' && d[1] >= '1' && d[1] <= '7' &&
        (d[2] == ' ' || d[2] == '\t' || d[2] == '\n' || d[2] == '\r' || d[2] == '#'))
        return CONVOLVE_FORMAT_PNM;
    if (size >= 4 && ((d[0] == 'I' && d[1] == 'I' && (d[2] == 42 || d[2] == 43) && d[3] == 0) ||
                      (d[0] == 'M' && d[1] == 'M' && d[2] == 0 && (d[3] == 42 || d[3] == 43))))
        return CONVOLVE_FORMAT_TIFF; /* classic TIFF or BigTIFF, either byte order */
    return CONVOLVE_FORMAT_AUTO;
}

int convolve_format_is_image(convolve_format format)
{
    const format_capacity *c = capacity(format);
    return c && c->image;
}

cvio_fit cvio_format_fit(convolve_format format, const convolve_layout *layout, const char **holds)
{
    const format_capacity *c = capacity(format);
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
    if (!capacity(format))
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
