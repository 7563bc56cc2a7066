/*
 * npy.c - numpy .npy files, versions 1.0, 2.0 and 3.0.
 *
 * Read: the header dict is parsed strictly (exactly the keys 'descr',
 * 'fortran_order' and 'shape'); dtypes float32, float64, uint8 and uint16 in
 * either byte order (data in the other byte order is byte-swapped on load);
 * C or Fortran order (a Fortran-order array is transposed into C order on
 * load, so it holds the same values at the same indices); 1 to 3
 * dimensions, none of them zero; the data must be exactly shape * itemsize
 * bytes. Arrays load with 1 channel.
 * Write: version 1.0 (2.0 if the header needed it), little-endian; channels
 * > 1 become a last axis, so a 2-D RGB image saves as (H, W, 3).
 */
#include "io.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define NPY_MAX_PARSED_DIMS 32

typedef struct {
    const char *s; /* the header text */
    size_t n, i;   /* its length, the read position */
} hdr;

static void skip_ws(hdr *h)
{
    while (h->i < h->n &&
           (h->s[h->i] == ' ' || h->s[h->i] == '\t' || h->s[h->i] == '\n' || h->s[h->i] == '\r'))
        h->i++;
}

static int accept(hdr *h, char c)
{
    skip_ws(h);
    if (h->i < h->n && h->s[h->i] == c) {
        h->i++;
        return 1;
    }
    return 0;
}

/* A quoted string without escapes; copies it into out. */
static int parse_string(hdr *h, char *out, size_t cap)
{
    skip_ws(h);
    if (h->i >= h->n || (h->s[h->i] != '\'' && h->s[h->i] != '"'))
        return 0;
    char q = h->s[h->i++];
    size_t k = 0;
    while (h->i < h->n && h->s[h->i] != q) {
        char c = h->s[h->i++];
        if (c == '\\' || c == '\n' || k + 1 >= cap)
            return 0;
        out[k++] = c;
    }
    if (h->i >= h->n)
        return 0;
    h->i++;
    out[k] = '\0';
    return 1;
}

static int parse_word(hdr *h, const char *w)
{
    skip_ws(h);
    size_t len = strlen(w);
    if (h->n - h->i >= len && memcmp(h->s + h->i, w, len) == 0) {
        char next = h->i + len < h->n ? h->s[h->i + len] : ' ';
        if ((next >= 'a' && next <= 'z') || (next >= 'A' && next <= 'Z') ||
            (next >= '0' && next <= '9') || next == '_')
            return 0;
        h->i += len;
        return 1;
    }
    return 0;
}

/* (d0, d1, ...): returns the count, or -1 if malformed, -2 on overflow. */
static int parse_shape(hdr *h, size_t *dims)
{
    if (!accept(h, '('))
        return -1;
    int nd = 0;
    if (accept(h, ')'))
        return 0;
    for (;;) {
        skip_ws(h);
        if (h->i >= h->n || h->s[h->i] < '0' || h->s[h->i] > '9')
            return -1;
        size_t v = 0;
        while (h->i < h->n && h->s[h->i] >= '0' && h->s[h->i] <= '9') {
            if (!cvi_mul_size(v, 10, &v) || !cvi_add_size(v, (size_t)(h->s[h->i] - '0'), &v))
                return -2;
            h->i++;
        }
        if (h->i < h->n && h->s[h->i] == 'L') /* Python 2 long */
            h->i++;
        if (nd >= NPY_MAX_PARSED_DIMS)
            return -1;
        dims[nd++] = v;
        if (accept(h, ')'))
            return nd == 1 ? -1 : nd; /* "(3)" is not a tuple */
        if (!accept(h, ','))
            return -1;
        if (accept(h, ')'))
            return nd;
    }
}

typedef struct {
    convolve_dtype dtype;
    int swap; /* data is in the other byte order */
} npy_type;

static convolve_status parse_descr(convolve_context *ctx, const char *d, npy_type *t)
{
    const int le = cvio_little_endian();
    char order = d[0];
    const char *code = d + 1;
    if (order != '<' && order != '>' && order != '=' && order != '|')
        order = '?';
    int big = order == '>' || (order == '=' && !le);
    struct {
        const char *code;
        convolve_dtype dtype;
    } known[] = {{"f4", CONVOLVE_FLOAT32},
                 {"f8", CONVOLVE_FLOAT64},
                 {"u1", CONVOLVE_UINT8},
                 {"u2", CONVOLVE_UINT16}};
    for (size_t k = 0; order != '?' && k < 4; k++) {
        if (strcmp(code, known[k].code) != 0)
            continue;
        size_t size = convolve_dtype_size(known[k].dtype);
        if (order == '|' && size != 1)
            break;
        t->dtype = known[k].dtype;
        t->swap = size > 1 && big == le;
        return CONVOLVE_OK;
    }
    return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                     ".npy dtype '%s' is not supported; use float32 '<f4', float64 '<f8', uint8 "
                     "'|u1' or uint16 '<u2' (numpy: a.astype(...))",
                     d);
}

static void swap_bytes(unsigned char *p, size_t count, size_t size)
{
    for (size_t i = 0; i < count; i++, p += size)
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char c = p[a];
            p[a] = p[b];
            p[b] = c;
        }
}

/* Copies a Fortran-order array (axis 0 fastest) of nd (2 or 3) dimensions
 * into dst in C order (the last axis fastest): dst[i][j][k] = the element at
 * i + d0 * (j + d1 * k) of src. */
static void fortran_to_c(unsigned char *dst, const unsigned char *src, int nd, const size_t *dims,
                         size_t esize)
{
    const size_t d0 = dims[0], d1 = dims[1], d2 = nd == 3 ? dims[2] : 1;
    for (size_t i = 0; i < d0; i++)
        for (size_t j = 0; j < d1; j++)
            for (size_t k = 0; k < d2; k++, dst += esize)
                memcpy(dst, src + (i + d0 * (j + d1 * k)) * esize, esize);
}

/* The values of the header dict's three keys. */
typedef struct {
    int seen_descr;
    char descr[64];
    int fortran; /* -1 until seen */
    int nd;      /* -1 until seen */
    size_t dims[NPY_MAX_PARSED_DIMS];
} npy_header;

/* The magic, the version and the header's length of a file of `size` bytes
 * whose first `avail` bytes are at data (avail >= min(size, 12)): *pre
 * receives the preamble's size, *hlen the header's. When the header is within
 * the bytes given, it must be printable. */
static convolve_status read_preamble(convolve_context *ctx, const unsigned char *data, size_t avail,
                                     size_t size, size_t *pre, size_t *hlen)
{
    if (size < 10 || memcmp(data, "\x93NUMPY", 6) != 0)
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                         size < 10 ? "not a .npy file: %zu bytes is too short for its header"
                                   : "not a .npy file: bad magic (%zu bytes)",
                         size);
    unsigned major = data[6], minor = data[7];
    if (major < 1 || major > 3 || minor != 0)
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                         ".npy version %u.%u is not supported (1.0, 2.0 and 3.0 are)", major,
                         minor);
    *pre = major == 1 ? 10 : 12;
    if (size < *pre)
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, ".npy file truncated in its preamble");
    if (major == 1)
        *hlen = (size_t)data[8] | (size_t)data[9] << 8;
    else
        *hlen = (size_t)data[8] | (size_t)data[9] << 8 | (size_t)data[10] << 16 |
                (size_t)data[11] << 24;
    if (*hlen > size - *pre)
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                         ".npy header length %zu runs past the end of the file (%zu bytes)", *hlen,
                         size);
    if (avail < *pre + *hlen)
        return CONVOLVE_OK;
    const unsigned char *s = data + *pre;
    for (size_t i = 0; i < *hlen; i++)
        if (s[i] < 0x20 && s[i] != '\n' && s[i] != '\t' && s[i] != '\r')
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                             ".npy header has a control character at offset %zu", *pre + i);
    return CONVOLVE_OK;
}

/* One "key: value" of the header dict into d (pre: the header's offset in
 * the file, for messages). */
static convolve_status parse_entry(convolve_context *ctx, hdr *h, size_t pre, npy_header *d)
{
    char key[32];
    if (!parse_string(h, key, sizeof key) || !accept(h, ':'))
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                         ".npy header is malformed near offset %zu (a quoted key and ':' "
                         "expected)",
                         pre + h->i);
    if (!strcmp(key, "descr")) {
        skip_ws(h);
        if (h->i < h->n && h->s[h->i] == '[')
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                             ".npy structured dtypes are not supported");
        if (d->seen_descr || !parse_string(h, d->descr, sizeof d->descr))
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, ".npy header: %s 'descr'",
                             d->seen_descr ? "duplicate key" : "malformed value of");
        d->seen_descr = 1;
    } else if (!strcmp(key, "fortran_order")) {
        if (d->fortran >= 0)
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                             ".npy header: duplicate key 'fortran_order'");
        if (parse_word(h, "True"))
            d->fortran = 1;
        else if (parse_word(h, "False"))
            d->fortran = 0;
        else
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                             ".npy header: 'fortran_order' must be True or False");
    } else if (!strcmp(key, "shape")) {
        if (d->nd >= 0)
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, ".npy header: duplicate key 'shape'");
        d->nd = parse_shape(h, d->dims);
        if (d->nd == -2)
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                             ".npy header: a shape extent "
                             "overflows");
        if (d->nd < 0)
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                             ".npy header: 'shape' must be a tuple of non-negative "
                             "integers");
    } else {
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, ".npy header: unexpected key '%s'", key);
    }
    return CONVOLVE_OK;
}

/* The header dict: exactly the keys 'descr', 'fortran_order' and 'shape'. */
static convolve_status parse_header(convolve_context *ctx, hdr *h, size_t pre, npy_header *d)
{
    d->seen_descr = 0;
    d->descr[0] = '\0';
    d->fortran = d->nd = -1;
    if (!accept(h, '{'))
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                         ".npy header is not a dict: it must start "
                         "with '{'");
    while (!accept(h, '}')) {
        convolve_status st = parse_entry(ctx, h, pre, d);
        if (st != CONVOLVE_OK)
            return st;
        if (!accept(h, ',')) {
            if (!accept(h, '}'))
                return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                                 ".npy header is malformed near offset %zu (',' or '}' expected)",
                                 pre + h->i);
            break;
        }
    }
    skip_ws(h);
    if (h->i != h->n)
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                         ".npy header has text after its closing '}' (offset %zu)", pre + h->i);
    if (!d->seen_descr || d->fortran < 0 || d->nd < 0)
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, ".npy header lacks the key '%s'",
                         !d->seen_descr   ? "descr"
                         : d->fortran < 0 ? "fortran_order"
                                          : "shape");
    return CONVOLVE_OK;
}

/* What the header describes must be an array convolve handles (C or Fortran
 * order): 1 to 3 non-empty dimensions; *count receives its element count. */
static convolve_status check_array(convolve_context *ctx, const npy_header *d, size_t *count)
{
    if (d->nd == 0)
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                         ".npy array is 0-dimensional (a scalar); 1 to 3 dimensions are supported");
    if (d->nd > CONVOLVE_MAX_DIMS)
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                         ".npy array has %d dimensions; 1 to 3 are supported", d->nd);
    *count = 1;
    for (int a = 0; a < d->nd; a++) {
        if (d->dims[a] == 0)
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                             ".npy array is empty (extent 0 on axis %d)", a);
        if (!cvi_mul_size(*count, d->dims[a], count))
            return cvi_error(ctx, CONVOLVE_ERROR_SIZE_OVERFLOW, ".npy array shape overflows");
    }
    return CONVOLVE_OK;
}

convolve_status cvio_npy_header_length(convolve_context *ctx, const unsigned char *data,
                                       size_t avail, size_t size, size_t *length)
{
    size_t pre = 0, hlen = 0;
    convolve_status st = read_preamble(ctx, data, avail, size, &pre, &hlen);
    *length = pre + hlen;
    return st;
}

convolve_status cvio_npy_describe(convolve_context *ctx, const unsigned char *data, size_t avail,
                                  size_t size, cvio_npy_desc *desc)
{
    size_t pre = 0, hlen = 0, count = 0, bytes;
    npy_header d;
    npy_type t = {CONVOLVE_FLOAT64, 0};
    convolve_status st = read_preamble(ctx, data, avail, size, &pre, &hlen);
    if (st != CONVOLVE_OK)
        return st;
    if (avail < pre + hlen)
        return cvi_error(ctx, CONVOLVE_ERROR_INTERNAL, ".npy: header not read whole");
    hdr h = {(const char *)data + pre, hlen, 0};
    if ((st = parse_header(ctx, &h, pre, &d)) != CONVOLVE_OK ||
        (st = parse_descr(ctx, d.descr, &t)) != CONVOLVE_OK ||
        (st = check_array(ctx, &d, &count)) != CONVOLVE_OK)
        return st;
    size_t esize = convolve_dtype_size(t.dtype);
    if (!cvi_mul_size(count, esize, &bytes))
        return cvi_error(ctx, CONVOLVE_ERROR_SIZE_OVERFLOW, ".npy array byte count overflows");
    size_t have = size - pre - hlen;
    if (have < bytes)
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                         ".npy data truncated: %zu bytes where its shape and dtype need %zu", have,
                         bytes);
    if (have > bytes)
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                         ".npy file has %zu bytes after the array's %zu bytes of data",
                         have - bytes, bytes);
    desc->dtype = t.dtype;
    desc->swap = t.swap;
    desc->fortran = d.fortran && d.nd > 1;
    desc->ndim = d.nd;
    memset(desc->shape, 0, sizeof desc->shape);
    memcpy(desc->shape, d.dims, (size_t)d.nd * sizeof d.dims[0]);
    desc->data_offset = pre + hlen;
    desc->data_bytes = bytes;
    return CONVOLVE_OK;
}

convolve_status cvio_read_npy(convolve_context *ctx, const unsigned char *data, size_t size,
                              convolve_array **array)
{
    *array = NULL;
    cvio_npy_desc d;
    convolve_status st = cvio_npy_describe(ctx, data, size, size, &d);
    if (st != CONVOLVE_OK)
        return st;
    convolve_array *a;
    st = cvio_array_new(ctx, &a, d.dtype, d.ndim, d.shape, 1, ".npy array");
    if (st != CONVOLVE_OK)
        return st;
    const size_t esize = convolve_dtype_size(d.dtype);
    const unsigned char *src = data + d.data_offset;
    if (d.fortran)
        fortran_to_c(a->data, src, d.ndim, d.shape, esize);
    else
        memcpy(a->data, src, d.data_bytes);
    if (d.swap)
        swap_bytes(a->data, d.data_bytes / esize, esize);
    *array = a;
    return CONVOLVE_OK;
}

/* Appends the header (preamble and padded dict) of a .npy file holding an
 * array of layout L to out: data then starts on a 64-byte boundary. */
static convolve_status encode_header(convolve_context *ctx, const convolve_layout *L, cvi_buf *out)
{
    const char *code;
    switch (L->dtype) {
    case CONVOLVE_FLOAT32: code = "f4"; break;
    case CONVOLVE_FLOAT64: code = "f8"; break;
    case CONVOLVE_UINT8: code = "u1"; break;
    case CONVOLVE_UINT16: code = "u2"; break;
    default:
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, ".npy: unknown element type %d",
                         (int)L->dtype);
    }
    char order = L->dtype == CONVOLVE_UINT8 ? '|' : cvio_little_endian() ? '<' : '>';
    cvi_buf h = {NULL, 0, 0};
    int ok = cvi_buf_printf(&h, "{'descr': '%c%s', 'fortran_order': False, 'shape': (", order,
                            code);
    for (int a = 0; a < L->ndim; a++)
        ok = ok && cvi_buf_printf(&h, a ? ", %zu" : "%zu", L->shape[a]);
    if (L->channels > 1)
        ok = ok && cvi_buf_printf(&h, ", %zu", L->channels);
    ok = ok && cvi_buf_printf(&h, "%s), }", L->ndim == 1 && L->channels == 1 ? "," : "");
    /* pad with spaces and end with '\n' so the data starts on a 64-byte boundary */
    size_t pre = 10;
    if (ok && h.size + 1 + pre > 65535 + pre)
        pre = 12;
    while (ok && (pre + h.size + 1) % 64 != 0)
        ok = cvi_buf_append(&h, " ", 1);
    ok = ok && cvi_buf_append(&h, "\n", 1);
    unsigned char preamble[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', pre == 10 ? 1 : 2, 0};
    for (size_t k = 0; k < pre - 8; k++)
        preamble[8 + k] = (unsigned char)(h.size >> (8 * k));
    ok = ok && cvi_buf_append(out, preamble, pre) && cvi_buf_append(out, h.data, h.size);
    cvi_buf_free(&h);
    if (!ok)
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, ".npy: out of memory encoding");
    return CONVOLVE_OK;
}

convolve_status cvio_write_npy(convolve_context *ctx, const convolve_array *array, cvi_buf *out)
{
    convolve_status st = encode_header(ctx, &array->layout, out);
    if (st == CONVOLVE_OK && !cvi_buf_append(out, array->data, array->bytes))
        st = cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, ".npy: out of memory encoding");
    return st;
}

convolve_status convolve_npy_header(convolve_context *ctx, const convolve_layout *layout, void *buf,
                                    size_t capacity, size_t *size)
{
    if (!layout || !size || (!buf && capacity))
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "convolve_npy_header: %s is NULL",
                         !layout ? "layout"
                         : !size ? "size"
                                 : "buf");
    *size = 0;
    convolve_layout L;
    convolve_status st = cvio_layout_init(ctx, &L, layout->dtype, layout->ndim, layout->shape,
                                          layout->channels, ".npy array");
    if (st != CONVOLVE_OK)
        return st;
    cvi_buf h = {NULL, 0, 0};
    if ((st = encode_header(ctx, &L, &h)) != CONVOLVE_OK)
        return st;
    if (h.size > capacity) {
        size_t need = h.size;
        cvi_buf_free(&h);
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_npy_header: the header "
                         "takes %zu bytes and the buffer holds %zu",
                         need, capacity);
    }
    memcpy(buf, h.data, h.size);
    *size = h.size;
    cvi_buf_free(&h);
    return cvi_ok(ctx);
}
