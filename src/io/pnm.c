/*
 * pnm.c - PGM and PPM (netpbm): P2 and P3 (ASCII), P5 and P6 (binary).
 *
 * Read: maxval 1..65535; up to 255 loads as uint8, above as uint16 (binary
 * samples are then big-endian). Samples load as stored, not rescaled to the
 * full range. '#' comments may appear wherever whitespace may. Checked
 * strictly: the raster must hold exactly width * height * channels samples,
 * none above maxval (only whitespace may follow it).
 * Write: P5 (1 channel) or P6 (3 channels), uint8 with maxval 255 or uint16
 * with maxval 65535.
 */
#include "io.h"

#include <string.h>

typedef struct {
    const unsigned char *d;
    size_t n, i;
} pnm_in;

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Skips whitespace and comments. */
static void skip(pnm_in *p)
{
    while (p->i < p->n) {
        if (is_space(p->d[p->i])) {
            p->i++;
        } else if (p->d[p->i] == '#') {
            while (p->i < p->n && p->d[p->i] != '\n' && p->d[p->i] != '\r')
                p->i++;
        } else {
            break;
        }
    }
}

/* Reads an unsigned decimal after whitespace: 1 ok, 0 no number there,
 * -1 too large (above limit), -2 end of data. */
static int read_uint(pnm_in *p, size_t limit, size_t *v)
{
    skip(p);
    if (p->i >= p->n)
        return -2;
    if (p->d[p->i] < '0' || p->d[p->i] > '9')
        return 0;
    size_t x = 0;
    while (p->i < p->n && p->d[p->i] >= '0' && p->d[p->i] <= '9') {
        x = x * 10 + (size_t)(p->d[p->i++] - '0');
        if (x > limit)
            return -1;
    }
    if (p->i < p->n && !is_space(p->d[p->i]) && p->d[p->i] != '#')
        return 0;
    *v = x;
    return 1;
}

/* A PNM header: the kind, then width, height and maxval. */
typedef struct {
    int binary;      /* P5, P6 */
    size_t channels; /* 1 (PGM) or 3 (PPM) */
    size_t width, height, maxval;
} pnm_header;

/* Reads the magic number and the three header fields; p is left after
 * maxval. */
static convolve_status read_header(convolve_context *ctx, pnm_in *p, pnm_header *h)
{
    const unsigned char *data = p->d;
    if (p->n < 2 || data[0] != 'P' || data[1] < '1' || data[1] > '7')
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "not a PNM file (bad magic number)");
    char kind = (char)data[1];
    if (kind == '1' || kind == '4')
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                         "PBM bitmaps (P%c) are not supported; PGM and PPM (P2 P3 P5 P6) are",
                         kind);
    if (kind == '7')
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                         "PAM (P7) is not supported; PGM and PPM (P2 P3 P5 P6) are");
    h->binary = kind == '5' || kind == '6';
    h->channels = kind == '3' || kind == '6' ? 3 : 1;
    p->i = 2;
    if (p->i < p->n && !is_space(data[p->i]) && data[p->i] != '#')
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "not a PNM file (bad magic number)");
    static const char *const k_field[3] = {"width", "height", "maxval"};
    size_t v[3];
    for (int f = 0; f < 3; f++) {
        int r = read_uint(p, f < 2 ? (size_t)1 << 40 : 65535, &v[f]);
        if (r == -2)
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "PNM header truncated before its %s",
                             k_field[f]);
        if (r == -1)
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "PNM %s is too large%s", k_field[f],
                             f == 2 ? " (the maximum maxval is 65535)" : "");
        if (r == 0 || v[f] == 0)
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "PNM %s is not a positive integer",
                             k_field[f]);
    }
    h->width = v[0], h->height = v[1], h->maxval = v[2];
    return CONVOLVE_OK;
}

/* Refuses a raster the file cannot hold before anything is allocated (and,
 * for binary files, bytes after it); p is left at the binary raster. */
static convolve_status check_raster(convolve_context *ctx, pnm_in *p, const pnm_header *h,
                                    size_t count, size_t esize)
{
    if (h->binary) {
        /* exactly one whitespace character ends the header */
        if (p->i >= p->n)
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "PNM data truncated: no raster");
        if (!is_space(p->d[p->i]))
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                             "PNM header must end with one whitespace character after maxval");
        p->i++;
        size_t need = count * esize;
        if (p->n - p->i < need)
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                             "PNM data truncated: %zu raster bytes where %zux%zu needs %zu",
                             p->n - p->i, h->width, h->height, need);
        for (size_t k = p->i + need; k < p->n; k++)
            if (!is_space(p->d[k]))
                return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                                 "PNM file has %zu bytes after its raster (only one image per "
                                 "file is supported)",
                                 p->n - p->i - need);
    } else if ((p->n - p->i) / 2 < count) {
        /* each sample takes a digit and the whitespace before it: refuse a
         * header that claims more than the file holds before allocating */
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                         "PNM data truncated: %zu bytes cannot hold the %zu samples of %zux%zu",
                         p->n - p->i, count, h->width, h->height);
    }
    return CONVOLVE_OK;
}

/* Reads the raster's samples into a (binary or decimal, each at most
 * maxval); a decimal raster must end with the file. */
static convolve_status read_samples(convolve_context *ctx, pnm_in *p, const pnm_header *h,
                                    convolve_array *a, size_t count, size_t esize)
{
    unsigned char *o8 = a->data;
    unsigned short *o16 = a->data;
    for (size_t k = 0; k < count; k++) {
        size_t s;
        if (h->binary) {
            const unsigned char *q = p->d + p->i + k * esize;
            s = esize == 2 ? (size_t)q[0] << 8 | q[1] : q[0];
        } else {
            int r = read_uint(p, 65535, &s);
            if (r == -2)
                return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                                 "PNM data truncated: %zu of %zu samples", k, count);
            if (r != 1)
                return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                                 "PNM sample %zu is %s (byte offset %zu)", k,
                                 r == -1 ? "above maxval" : "not a decimal number", p->i);
        }
        if (s > h->maxval)
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "PNM sample %zu is %zu, above maxval %zu",
                             k, s, h->maxval);
        if (esize == 2)
            o16[k] = (unsigned short)s;
        else
            o8[k] = (unsigned char)s;
    }
    if (!h->binary) {
        skip(p);
        if (p->i != p->n)
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                             "PNM file has data after its %zu samples (byte offset %zu)", count,
                             p->i);
    }
    return CONVOLVE_OK;
}

convolve_status cvio_read_pnm(convolve_context *ctx, const unsigned char *data, size_t size,
                              convolve_array **array)
{
    *array = NULL;
    pnm_in p = {data, size, 0};
    pnm_header h = {0, 0, 0, 0, 0};
    convolve_status st = read_header(ctx, &p, &h);
    if (st != CONVOLVE_OK)
        return st;
    size_t esize = h.maxval > 255 ? 2 : 1;
    st = cvio_check_image_size(ctx, "PNM image", h.width, h.height, h.channels, esize);
    if (st != CONVOLVE_OK)
        return st;
    size_t count = h.width * h.height * h.channels; /* checked above */
    if ((st = check_raster(ctx, &p, &h, count, esize)) != CONVOLVE_OK ||
        (st = cvio_check_pixel_limit(ctx, "PNM image", h.width, h.height, 1)) != CONVOLVE_OK)
        return st;
    size_t shape[2] = {h.height, h.width};
    convolve_array *a;
    st = cvio_array_new(ctx, &a, esize == 2 ? CONVOLVE_UINT16 : CONVOLVE_UINT8, 2, shape,
                        h.channels, "PNM image");
    if (st != CONVOLVE_OK)
        return st;
    if ((st = read_samples(ctx, &p, &h, a, count, esize)) != CONVOLVE_OK) {
        convolve_array_free(a);
        return st;
    }
    *array = a;
    return CONVOLVE_OK;
}

convolve_status cvio_write_pnm(convolve_context *ctx, const convolve_array *array, cvi_buf *out)
{
    const convolve_layout *L = &array->layout;
    int wide = L->dtype == CONVOLVE_UINT16;
    if (!cvi_buf_printf(out, "P%c\n%zu %zu\n%d\n", L->channels == 1 ? '5' : '6', L->shape[1],
                        L->shape[0], wide ? 65535 : 255))
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "PNM: out of memory");
    if (!wide || !cvio_little_endian()) {
        if (!cvi_buf_append(out, array->data, array->bytes))
            return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "PNM: out of memory");
        return CONVOLVE_OK;
    }
    size_t n = array->bytes / 2;
    const unsigned short *s = array->data;
    unsigned char tmp[4096];
    for (size_t k = 0; k < n;) {
        size_t m = 0;
        for (; k < n && m < sizeof tmp; k++, m += 2) {
            tmp[m] = (unsigned char)(s[k] >> 8);
            tmp[m + 1] = (unsigned char)(s[k] & 0xFF);
        }
        if (!cvi_buf_append(out, tmp, m))
            return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "PNM: out of memory");
    }
    return CONVOLVE_OK;
}
