/*
 * text.c - weights as text: whitespace-separated numbers, a line a row, a
 * blank line ends a plane; '#' starts a comment to the end of the line (a
 * line holding only a comment is skipped, it does not end a plane).
 * Every row of a plane has the same length and every plane the same shape.
 * Read: float64, 3-D if there is more than one plane, else 2-D if more than
 * one row, else 1-D. Write: float arrays of 1 or 2 dimensions and 1 channel,
 * with enough digits to read back exactly.
 * Numbers are read and written in the "C" locale whatever the program's is;
 * a leading UTF-8 byte-order mark is skipped.
 */
#include "io.h"

#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Closes a plane of *plane_rows rows: the first sets *rows, later ones must
 * match it. Returns 0 on a mismatch (the counts are left as they were). */
static int end_plane(size_t *planes, size_t *rows, size_t *plane_rows)
{
    if (*planes == 0)
        *rows = *plane_rows;
    else if (*plane_rows != *rows)
        return 0;
    (*planes)++;
    *plane_rows = 0;
    return 1;
}

static convolve_status plane_error(convolve_context *ctx, size_t start_line, size_t plane_rows,
                                   size_t rows)
{
    return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                     "text plane at line %zu has %zu rows where the first has %zu", start_line,
                     plane_rows, rows);
}

/* Switches this thread to the "C" numeric locale; returns the old one
 * (or 0 when it could not switch, and nothing needs restoring). */
static locale_t c_locale_begin(locale_t *c)
{
    *c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    return *c ? uselocale(*c) : (locale_t)0;
}

static void c_locale_end(locale_t c, locale_t old)
{
    if (c) {
        uselocale(old);
        freelocale(c);
    }
}

static int is_blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f';
}

typedef struct {
    double *v;
    size_t n, cap;
} dvec;

static int dvec_push(dvec *d, double x)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 256;
        double *p = cap > SIZE_MAX / sizeof(double) ? NULL : realloc(d->v, cap * sizeof(double));
        if (!p)
            return 0;
        d->v = p;
        d->cap = cap;
    }
    d->v[d->n++] = x;
    return 1;
}

/* s with bytes outside printable ASCII written as \xNN, so that a message
 * shows what an invisible or non-ASCII character is. */
static const char *escaped(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    for (; *s && n + 5 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c < 0x7f)
            out[n++] = (char)c;
        else
            n += (size_t)snprintf(out + n, cap - n, "\\x%02x", c);
    }
    out[n] = '\0';
    return out;
}

static convolve_status parse_text(convolve_context *ctx, const char *s, size_t size, dvec *vals,
                                  size_t shape[3])
{
    size_t cols = 0, rows = 0, planes = 0, plane_rows = 0, line = 0;
    size_t plane_start_line = 1;
    size_t i = 0;
    while (i < size) {
        line++;
        size_t end = i;
        while (end < size && s[end] != '\n')
            end++;
        size_t stop = end; /* the comment, if any, starts here */
        for (size_t k = i; k < end; k++)
            if (s[k] == '#') {
                stop = k;
                break;
            }
        size_t before = vals->n;
        size_t k = i;
        for (;;) {
            while (k < stop && is_blank(s[k]))
                k++;
            if (k >= stop)
                break;
            size_t t = k;
            while (t < stop && !is_blank(s[t]))
                t++;
            char tok[128];
            if (t - k >= sizeof tok)
                return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                                 "text line %zu: '%.20s...' is too long to be a number", line,
                                 s + k);
            memcpy(tok, s + k, t - k);
            tok[t - k] = '\0';
            char *e;
            errno = 0;
            double x = strtod(tok, &e);
            if (e == tok || *e != '\0') {
                char shown[4 * sizeof tok];
                return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                                 "text line %zu: '%s' is not a number (numbers are separated by "
                                 "whitespace)",
                                 line, escaped(tok, shown, sizeof shown));
            }
            if (!dvec_push(vals, x))
                return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "text: out of memory");
            k = t;
        }
        size_t got = vals->n - before;
        if (got > 0) {
            if (cols == 0) {
                cols = got;
            } else if (got != cols) {
                return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                                 "text line %zu has %zu numbers where earlier rows have %zu", line,
                                 got, cols);
            }
            if (plane_rows == 0)
                plane_start_line = line;
            plane_rows++;
        } else if (stop == end && plane_rows > 0) { /* a blank line ends a plane */
            if (!end_plane(&planes, &rows, &plane_rows))
                return plane_error(ctx, plane_start_line, plane_rows, rows);
        }
        i = end + 1;
    }
    if (plane_rows > 0 && !end_plane(&planes, &rows, &plane_rows))
        return plane_error(ctx, plane_start_line, plane_rows, rows);
    if (vals->n == 0)
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "text holds no numbers");
    shape[0] = planes;
    shape[1] = rows;
    shape[2] = cols;
    return CONVOLVE_OK;
}

convolve_status cvio_read_text(convolve_context *ctx, const unsigned char *data, size_t size,
                               convolve_array **array)
{
    *array = NULL;
    for (size_t k = 0; k < size; k++)
        if (data[k] == '\0')
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                             "not a text file: it holds a NUL byte (offset %zu)", k);
    if (size >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF) {
        data += 3; /* a UTF-8 byte-order mark, as some editors write: not data */
        size -= 3;
    }
    dvec vals = {NULL, 0, 0};
    size_t shape[3];
    locale_t c, old = c_locale_begin(&c);
    convolve_status st = parse_text(ctx, (const char *)data, size, &vals, shape);
    c_locale_end(c, old);
    if (st == CONVOLVE_OK) {
        int nd = shape[0] > 1 ? 3 : shape[1] > 1 ? 2 : 1;
        convolve_array *a;
        st = cvio_array_new(ctx, &a, CONVOLVE_FLOAT64, nd, shape + (3 - nd), 1, "text array");
        if (st == CONVOLVE_OK) {
            memcpy(a->data, vals.v, vals.n * sizeof(double));
            *array = a;
        }
    }
    free(vals.v);
    return st;
}

convolve_status cvio_write_text(convolve_context *ctx, const convolve_array *array, cvi_buf *out)
{
    const convolve_layout *L = &array->layout;
    size_t rows = L->ndim == 2 ? L->shape[0] : 1, cols = L->shape[L->ndim - 1];
    int f32 = L->dtype == CONVOLVE_FLOAT32;
    int ok = 1; /* %.17g: the double (and so the float) reads back exactly */
    locale_t c, old = c_locale_begin(&c);
    for (size_t r = 0; r < rows && ok; r++) {
        for (size_t k = 0; k < cols && ok; k++) {
            size_t i = r * cols + k;
            double x = f32 ? (double)((const float *)array->data)[i]
                           : ((const double *)array->data)[i];
            ok = cvi_buf_printf(out, "%s%.17g", k ? " " : "", x);
        }
        ok = ok && cvi_buf_append(out, "\n", 1);
    }
    c_locale_end(c, old);
    if (!ok)
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "text: out of memory");
    return CONVOLVE_OK;
}
