/*
 * npy_mpi.c - .npy headers (read on rank 0, written as libconvolve writes
 * them) and boxes of the array read or written in place with MPI-IO
 * (a subarray file view: each rank touches only its box).
 */
#include "npy_mpi.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- reading the header ------------------------------------------------------ */

typedef struct {
    const char *s;
    size_t n, i;
} text;

static void skip(text *t)
{
    while (t->i < t->n && strchr(" \t\r\n", t->s[t->i]))
        t->i++;
}

static int take(text *t, char c)
{
    skip(t);
    if (t->i < t->n && t->s[t->i] == c) {
        t->i++;
        return 1;
    }
    return 0;
}

/* A quoted string without escapes. */
static int string(text *t, char *out, size_t cap)
{
    skip(t);
    if (t->i >= t->n || (t->s[t->i] != '\'' && t->s[t->i] != '"'))
        return 0;
    char q = t->s[t->i++];
    size_t k = 0;
    while (t->i < t->n && t->s[t->i] != q) {
        if (t->s[t->i] == '\\' || k + 1 >= cap)
            return 0;
        out[k++] = t->s[t->i++];
    }
    if (t->i >= t->n)
        return 0;
    t->i++;
    out[k] = '\0';
    return 1;
}

static int word(text *t, const char *w)
{
    skip(t);
    size_t len = strlen(w);
    if (t->n - t->i < len || memcmp(t->s + t->i, w, len))
        return 0;
    t->i += len;
    return 1;
}

/* (d0, d1, ...): the count, or -1. */
static int tuple(text *t, size_t *dims, int cap)
{
    if (!take(t, '('))
        return -1;
    int nd = 0;
    if (take(t, ')'))
        return 0;
    for (;;) {
        skip(t);
        if (t->i >= t->n || t->s[t->i] < '0' || t->s[t->i] > '9' || nd == cap)
            return -1;
        unsigned long long v = 0;
        while (t->i < t->n && t->s[t->i] >= '0' && t->s[t->i] <= '9') {
            if (v > (ULLONG_MAX - 9) / 10)
                return -1;
            v = v * 10 + (unsigned long long)(t->s[t->i++] - '0');
        }
        if (t->i < t->n && t->s[t->i] == 'L')
            t->i++;
        dims[nd++] = (size_t)v;
        if (take(t, ')'))
            return nd == 1 ? -1 : nd; /* "(3)" is not a tuple */
        if (!take(t, ','))
            return -1;
        if (take(t, ')'))
            return nd;
    }
}

static int fail(char *why, size_t cap, const char *msg, const char *path)
{
    snprintf(why, cap, "'%s': %s", path, msg);
    return -1;
}

int cli_npy_read_header(const char *path, cli_npy *h, char *why, size_t why_size)
{
    memset(h, 0, sizeof *h);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_size, "cannot open '%s': %s", path, strerror(errno));
        return -1;
    }
    unsigned char pre[12];
    size_t got = fread(pre, 1, sizeof pre, f);
    if (got < 10 || memcmp(pre, "\x93NUMPY", 6)) {
        fclose(f);
        return fail(why, why_size, "not a .npy file (convolve-mpi reads .npy only)", path);
    }
    unsigned major = pre[6];
    if (major < 1 || major > 3 || pre[7] != 0 || (major > 1 && got < 12)) {
        fclose(f);
        return fail(why, why_size, ".npy version not supported (1.0, 2.0 and 3.0 are)", path);
    }
    size_t lead = major == 1 ? 10 : 12;
    size_t hlen = major == 1 ? (size_t)pre[8] | (size_t)pre[9] << 8
                             : (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 |
                                   (size_t)pre[11] << 24;
    char *buf = malloc(hlen + 1);
    if (!buf || fseek(f, (long)lead, SEEK_SET) || fread(buf, 1, hlen, f) != hlen) {
        free(buf);
        fclose(f);
        return fail(why, why_size, ".npy header truncated", path);
    }
    fclose(f);
    text t = {buf, hlen, 0};
    char descr[32] = "";
    int fortran = -1, nd = -1, ok = take(&t, '{');
    size_t dims[8];
    while (ok && !take(&t, '}')) {
        char key[32];
        ok = string(&t, key, sizeof key) && take(&t, ':');
        if (ok && !strcmp(key, "descr"))
            ok = !descr[0] && string(&t, descr, sizeof descr);
        else if (ok && !strcmp(key, "fortran_order"))
            ok = fortran < 0 && ((word(&t, "True") && (fortran = 1)) ||
                                 (word(&t, "False") && !(fortran = 0)));
        else if (ok && !strcmp(key, "shape"))
            ok = nd < 0 && (nd = tuple(&t, dims, 8)) >= 0;
        else
            ok = 0;
        if (ok && !take(&t, ','))
            ok = take(&t, '}') ? (t.i--, 1) : 0;
    }
    free(buf);
    if (!ok || !descr[0] || fortran < 0 || nd < 0)
        return fail(why, why_size, ".npy header malformed (a dict of 'descr', 'fortran_order' "
                    "and 'shape' expected)", path);
    if (fortran)
        return fail(why, why_size, ".npy array in Fortran order; save a C-order array", path);
    if (nd < 1 || nd > CONVOLVE_MAX_DIMS)
        return fail(why, why_size, ".npy array must have 1 to 3 dimensions", path);
    static const struct {
        const char *code;
        convolve_dtype dtype;
    } known[] = {{"f4", CONVOLVE_FLOAT32}, {"f8", CONVOLVE_FLOAT64}, {"u1", CONVOLVE_UINT8},
                 {"u2", CONVOLVE_UINT16}};
    int found = 0;
    for (size_t k = 0; k < 4 && !found; k++) {
        char order = descr[0];
        if (strcmp(descr + 1, known[k].code) || !strchr("<>=|", order))
            continue;
        size_t size = convolve_dtype_size(known[k].dtype);
        if (order == '|' && size != 1)
            break;
        h->dtype = known[k].dtype;
        h->swap = size > 1 && order == '>'; /* this program runs on little-endian hosts */
        found = 1;
    }
    if (!found)
        return fail(why, why_size, ".npy dtype not supported; use float32, float64, uint8 or "
                    "uint16", path);
    unsigned long long bytes = convolve_dtype_size(h->dtype);
    for (int a = 0; a < nd; a++) {
        if (dims[a] == 0)
            return fail(why, why_size, ".npy array is empty", path);
        if (bytes > ULLONG_MAX / dims[a])
            return fail(why, why_size, ".npy array too large", path);
        bytes *= dims[a];
        h->shape[a] = dims[a];
    }
    h->ndim = nd;
    h->offset = lead + hlen;
    struct stat sb;
    if (stat(path, &sb) != 0 || (unsigned long long)sb.st_size != h->offset + bytes) {
        snprintf(why, why_size, "'%s': the file holds %lld bytes where its header and data "
                 "need %llu", path, (long long)sb.st_size, h->offset + bytes);
        return -1;
    }
    return 0;
}

/* ---- writing the header -------------------------------------------------------- */

size_t cli_npy_format_header(convolve_dtype dtype, int ndim, const size_t *shape, char *buf)
{
    static const char *codes[] = {"<f4", "<f8", "|u1", "<u2"};
    char dict[256];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     codes[dtype]);
    for (int a = 0; a < ndim; a++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, a ? ", %zu" : "%zu", shape[a]);
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", ndim == 1 ? "," : "");
    /* as libconvolve: spaces, then '\n', so that the data starts at a multiple of 64 */
    size_t len = (size_t)n, total = 10 + len + 1;
    total = (total + 63) / 64 * 64;
    size_t hlen = total - 10;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)(hlen & 0xff);
    buf[9] = (char)(hlen >> 8);
    memcpy(buf + 10, dict, len);
    memset(buf + 10 + len, ' ', hlen - len - 1);
    buf[total - 1] = '\n';
    return total;
}

/* ---- boxes through MPI-IO ------------------------------------------------------ */

int cli_npy_box_io(MPI_File fh, int write, unsigned long long offset, convolve_dtype dtype,
                   int ndim, const size_t *shape, const size_t *start, const size_t *box,
                   void *buf)
{
    int sizes[CONVOLVE_MAX_DIMS], subs[CONVOLVE_MAX_DIMS], starts[CONVOLVE_MAX_DIMS];
    size_t rows = 1;
    for (int a = 0; a < ndim; a++) {
        if (shape[a] > INT_MAX)
            return MPI_ERR_COUNT;
        sizes[a] = (int)shape[a];
        subs[a] = (int)box[a];
        starts[a] = (int)start[a];
        if (a < ndim - 1)
            rows *= box[a];
    }
    if (rows > INT_MAX)
        return MPI_ERR_COUNT;
    MPI_Datatype elem = MPI_DATATYPE_NULL, filetype = MPI_DATATYPE_NULL,
                 row = MPI_DATATYPE_NULL, memtype = MPI_DATATYPE_NULL;
    int err = MPI_Type_contiguous((int)convolve_dtype_size(dtype), MPI_BYTE, &elem);
    if (!err)
        err = MPI_Type_commit(&elem);
    if (!err)
        err = MPI_Type_create_subarray(ndim, sizes, subs, starts, MPI_ORDER_C, elem, &filetype);
    if (!err)
        err = MPI_Type_commit(&filetype);
    /* the box in memory: rows of its last extent (counts stay ints) */
    if (!err)
        err = MPI_Type_contiguous(subs[ndim - 1], elem, &row);
    if (!err)
        err = MPI_Type_contiguous((int)rows, row, &memtype);
    if (!err)
        err = MPI_Type_commit(&memtype);
    if (!err)
        err = MPI_File_set_view(fh, (MPI_Offset)offset, elem, filetype, "native", MPI_INFO_NULL);
    if (!err)
        err = write ? MPI_File_write_all(fh, buf, 1, memtype, MPI_STATUS_IGNORE)
                    : MPI_File_read_all(fh, buf, 1, memtype, MPI_STATUS_IGNORE);
    MPI_Datatype *types[] = {&elem, &filetype, &row, &memtype};
    for (int k = 0; k < 4; k++)
        if (*types[k] != MPI_DATATYPE_NULL)
            MPI_Type_free(types[k]);
    return err;
}
