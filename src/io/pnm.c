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

convolve_status cvi_read_pnm(convolve_context *ctx, const unsigned char *data, size_t size,
                             convolve_array **array)
{
    *array = NULL;
    if (size < 2 || data[0] != 'P' || data[1] < '1' || data[1] > '7')
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "not a PNM file (bad magic number)");
    char kind = (char)data[1];
    if (kind == '1' || kind == '4')
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                         "PBM bitmaps (P%c) are not supported; PGM and PPM (P2 P3 P5 P6) are",
                         kind);
    if (kind == '7')
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                         "PAM (P7) is not supported; PGM and PPM (P2 P3 P5 P6) are");
    int binary = kind == '5' || kind == '6';
    size_t channels = kind == '3' || kind == '6' ? 3 : 1;
    pnm_in p = {data, size, 2};
    if (p.i < p.n && !is_space(data[p.i]) && data[p.i] != '#')
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "not a PNM file (bad magic number)");
    static const char *const k_field[3] = {"width", "height", "maxval"};
    size_t v[3];
    for (int f = 0; f < 3; f++) {
        int r = read_uint(&p, f < 2 ? (size_t)1 << 40 : 65535, &v[f]);
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
    size_t width = v[0], height = v[1], maxval = v[2];
    size_t esize = maxval > 255 ? 2 : 1;
    convolve_status st = cvi_check_image_size(ctx, "PNM image", width, height, channels, esize);
    if (st != CONVOLVE_OK)
        return st;
    size_t count = width * height * channels; /* checked above */
    if (binary) {
        /* exactly one whitespace character ends the header */
        if (p.i >= p.n)
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "PNM data truncated: no raster");
        if (!is_space(data[p.i]))
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                             "PNM header must end with one whitespace character after maxval");
        p.i++;
        size_t need = count * esize;
        if (p.n - p.i < need)
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                             "PNM data truncated: %zu raster bytes where %zux%zu needs %zu",
                             p.n - p.i, width, height, need);
        for (size_t k = p.i + need; k < p.n; k++)
            if (!is_space(data[k]))
                return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                                 "PNM file has %zu bytes after its raster (only one image per "
                                 "file is supported)", p.n - p.i - need);
    } else if ((p.n - p.i) / 2 < count) {
        /* each sample takes a digit and the whitespace before it: refuse a
         * header that claims more than the file holds before allocating */
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                         "PNM data truncated: %zu bytes cannot hold the %zu samples of %zux%zu",
                         p.n - p.i, count, width, height);
    }
    size_t shape[2] = {height, width};
    convolve_array *a;
    st = cvi_array_new(ctx, &a, esize == 2 ? CONVOLVE_UINT16 : CONVOLVE_UINT8, 2, shape, channels,
                       "PNM image");
    if (st != CONVOLVE_OK)
        return st;
    unsigned char *o8 = a->data;
    unsigned short *o16 = a->data;
    for (size_t k = 0; k < count; k++) {
        size_t s;
        if (binary) {
            const unsigned char *q = data + p.i + k * esize;
            s = esize == 2 ? (size_t)q[0] << 8 | q[1] : q[0];
        } else {
            int r = read_uint(&p, 65535, &s);
            if (r != 1) {
                convolve_array_free(a);
                if (r == -2)
                    return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                                     "PNM data truncated: %zu of %zu samples", k, count);
                return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                                 "PNM sample %zu is %s (byte offset %zu)", k,
                                 r == -1 ? "above maxval" : "not a decimal number", p.i);
            }
        }
        if (s > maxval) {
            convolve_array_free(a);
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "PNM sample %zu is %zu, above maxval %zu",
                             k, s, maxval);
        }
        if (esize == 2)
            o16[k] = (unsigned short)s;
        else
            o8[k] = (unsigned char)s;
    }
    if (!binary) {
        skip(&p);
        if (p.i != p.n) {
            convolve_array_free(a);
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                             "PNM file has data after its %zu samples (byte offset %zu)", count,
                             p.i);
        }
    }
    *array = a;
    return CONVOLVE_OK;
}

convolve_status cvi_write_pnm(convolve_context *ctx, const convolve_array *array, cvi_buf *out)
{
    const convolve_layout *L = &array->layout;
    int wide = L->dtype == CONVOLVE_UINT16;
    if (!cvi_buf_printf(out, "P%c\n%zu %zu\n%d\n", L->channels == 1 ? '5' : '6', L->shape[1],
                        L->shape[0], wide ? 65535 : 255))
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "PNM: out of memory");
    if (!wide || !cvi_little_endian()) {
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
