/*
 * cli_steps.c - the steps of `convolve INPUT OUTPUT` that the single-file
 * form (cli_run.c) and the batch form (cli_batch.c) share, each writing its
 * message into a buffer: the output type and the format's check, reading
 * the weights, the filter and its origins.
 */
#include "convolve_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cli_msg(char *msg, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, CLI_MSG_SIZE, fmt, ap);
    va_end(ap);
    return code;
}

static int is_float(convolve_dtype t)
{
    return t == CONVOLVE_FLOAT32 || t == CONVOLVE_FLOAT64;
}

convolve_dtype cli_output_dtype(const cli_run_args *a, convolve_format f, convolve_dtype t)
{
    if (a->have_dtype)
        return a->out_dtype;
    return convolve_format_is_image(f) && is_float(t) ? CONVOLVE_UINT8 : t;
}

/* (The library says what the format holds; the CLI adds what it was asked.) */
int cli_check_output(convolve_context *ctx, const char *path, convolve_format f,
                     const convolve_layout *in, convolve_dtype t, char *msg)
{
    convolve_layout L = *in;
    L.dtype = CONVOLVE_FLOAT64;
    int holds_float64 = convolve_format_can_hold(ctx, f, &L) == CONVOLVE_OK;
    L.dtype = t;
    convolve_status st = convolve_format_can_hold(ctx, f, &L);
    if (st == CONVOLVE_OK)
        return CLI_OK;
    if (st != CONVOLVE_ERROR_UNSUPPORTED)
        return cli_msg(msg, cli_exit_code(st), "%s", convolve_last_error(ctx));
    return cli_msg(msg, CLI_BAD_INPUT,
                   "cannot write the result (%d-D, %zu channel%s, %s) to %s "
                   "file '%s': %s%s; use .npy for other arrays",
                   L.ndim, L.channels, L.channels == 1 ? "" : "s", convolve_dtype_name(t),
                   convolve_format_name(f), path, convolve_last_error(ctx),
                   holds_float64 ? " (add --output-dtype float64)" : "");
}

int cli_read_all(const char *path, const char *what, size_t limit, unsigned char **data,
                 size_t *size, char *msg)
{
    *data = NULL;
    *size = 0;
    int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
    if (fd < 0)
        return cli_msg(msg, CLI_BAD_INPUT, "cannot open %s '%s': %s", what, path, strerror(errno));
    struct stat sb;
    const char *refuse = NULL;
    if (fstat(fd, &sb) != 0)
        refuse = strerror(errno);
    else if (S_ISDIR(sb.st_mode))
        refuse = "it is a directory";
    else if (S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode))
        refuse = "it is a device, not a file"; /* a terminal or /dev/zero would never end */
    else if (S_ISREG(sb.st_mode) && (uintmax_t)sb.st_size > limit)
        refuse = "it is larger than the limit";
    if (refuse) {
        if (fd != STDIN_FILENO)
            close(fd);
        return cli_msg(msg, CLI_BAD_INPUT, "cannot read %s '%s': %s", what, path, refuse);
    }
    /* a regular file's size, or a pipe's first block; grown by doubling */
    size_t cap = S_ISREG(sb.st_mode) ? (size_t)sb.st_size + 1 : 65536, n = 0;
    unsigned char *buf = malloc(cap);
    int rc = buf ? CLI_OK : cli_msg(msg, CLI_RESOURCE, "out of memory reading %s '%s'", what, path);
    while (rc == CLI_OK) {
        if (n == cap) {
            unsigned char *q = cap <= limit ? realloc(buf, cap * 2) : NULL;
            if (!q) {
                rc = cap > limit
                         ? cli_msg(msg, CLI_BAD_INPUT,
                                   "cannot read %s '%s': it is "
                                   "larger than the limit",
                                   what, path)
                         : cli_msg(msg, CLI_RESOURCE, "out of memory reading %s '%s'", what, path);
                break;
            }
            buf = q;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            rc = cli_msg(msg, CLI_BAD_INPUT, "error reading %s '%s': %s", what, path,
                         strerror(errno));
        else if (r == 0)
            break;
        else
            n += (size_t)r;
    }
    if (fd != STDIN_FILENO)
        close(fd);
    if (rc == CLI_OK && n > limit)
        rc = cli_msg(msg, CLI_BAD_INPUT, "cannot read %s '%s': it is larger than the limit", what,
                     path);
    if (rc != CLI_OK) {
        free(buf);
        return rc;
    }
    *data = buf;
    *size = n;
    return CLI_OK;
}

void cli_weights_free(cli_weights *w)
{
    if (w) {
        free(w->data);
        w->data = NULL;
    }
}

/* Weights files hold at most this many bytes (2^26 doubles as .npy). */
#define CLI_WEIGHTS_MAX_BYTES ((size_t)512 << 20)

int cli_weights_read(convolve_context *ctx, const char *path, cli_weights *w, char *msg)
{
    memset(w, 0, sizeof *w);
    w->path = path;
    /* read once: a pipe, FIFO or /dev/stdin cannot be opened a second time */
    unsigned char *data;
    size_t size;
    int rc = cli_read_all(path, "weights", CLI_WEIGHTS_MAX_BYTES, &data, &size, msg);
    if (rc != CLI_OK)
        return rc;
    if (size == 0) {
        free(data);
        return cli_msg(msg, CLI_BAD_INPUT, "weights: '%s' is empty", path);
    }
    /* .npy by content or name (the reader says what is wrong); else text */
    convolve_format by_content = convolve_format_detect(data, size);
    convolve_format by_name = convolve_format_from_path(path);
    convolve_format fmt = CONVOLVE_FORMAT_TEXT;
    if (by_content == CONVOLVE_FORMAT_NPY || by_name == CONVOLVE_FORMAT_NPY)
        fmt = CONVOLVE_FORMAT_NPY;
    else if (by_content == CONVOLVE_FORMAT_TIFF || by_name == CONVOLVE_FORMAT_TIFF)
        fmt = CONVOLVE_FORMAT_TIFF; /* a float PSF; a stack for 3-D weights */
    else if (convolve_format_is_image(by_name) || convolve_format_is_image(by_content)) {
        free(data);
        return cli_msg(msg, CLI_BAD_INPUT,
                       "weights '%s' look like an image; give a .npy file "
                       "or a text file of numbers",
                       path);
    }
    convolve_array *raw = NULL, *w64 = NULL;
    convolve_status st = convolve_array_load_memory(ctx, &raw, data, size, fmt);
    free(data);
    if (st == CONVOLVE_OK) {
        st = convolve_array_convert(ctx, raw, CONVOLVE_FLOAT64, &w64);
        convolve_array_free(raw);
    }
    if (st != CONVOLVE_OK)
        return cli_msg(msg, cli_exit_code(st), "weights: '%s': %s", path, convolve_last_error(ctx));
    const convolve_layout *L = convolve_array_layout(w64);
    if (L->channels != 1) {
        size_t channels = L->channels;
        convolve_array_free(w64);
        return cli_msg(msg, CLI_BAD_INPUT, "weights '%s' have %zu channels; give one (gray)", path,
                       channels);
    }
    w->text = fmt == CONVOLVE_FORMAT_TEXT;
    w->ndim = L->ndim;
    memcpy(w->shape, L->shape, sizeof w->shape);
    if (!(w->data = malloc(convolve_array_bytes(w64)))) {
        convolve_array_free(w64);
        return cli_msg(msg, CLI_RESOURCE, "out of memory");
    }
    memcpy(w->data, convolve_array_const_data(w64), convolve_array_bytes(w64));
    convolve_array_free(w64);
    return CLI_OK;
}

int cli_filter_for(convolve_context *ctx, const cli_run_args *a, const cli_weights *w, int ndim,
                   convolve_filter **f, convolve_options *o, char *msg)
{
    *f = NULL;
    convolve_status st;
    if (w) {
        if (w->ndim > ndim || (!w->text && w->ndim != ndim))
            return cli_msg(msg, CLI_BAD_INPUT,
                           "weights '%s' have %d dimension%s and the input "
                           "%d; they must match%s",
                           w->path, w->ndim, w->ndim == 1 ? "" : "s", ndim,
                           w->text ? " (text weights may have fewer)" : "");
        /* text weights with fewer dimensions get leading axes of 1 */
        size_t shape[CONVOLVE_MAX_DIMS];
        for (int k = 0; k < ndim; k++)
            shape[k] = k < ndim - w->ndim ? 1 : w->shape[k - (ndim - w->ndim)];
        if ((st = convolve_filter_create(ctx, f, ndim, shape, w->data)) != CONVOLVE_OK)
            return cli_msg(msg, cli_exit_code(st), "weights '%s': %s", w->path,
                           convolve_last_error(ctx));
    } else if ((st = convolve_filter_create_named(ctx, f, a->filter, ndim)) != CONVOLVE_OK) {
        return cli_msg(msg, cli_exit_code(st), "%s", convolve_last_error(ctx));
    }
    if (a->n_origin > 1 && a->n_origin != ndim) {
        convolve_filter_free(*f);
        *f = NULL;
        return cli_msg(msg, CLI_BAD_INPUT,
                       "--origin has %d values and the input %d dimension%s; "
                       "give one value, or one per axis",
                       a->n_origin, ndim, ndim == 1 ? "" : "s");
    }
    *o = a->opt;
    for (int k = 0; k < ndim; k++)
        o->origin[k] = a->n_origin == 0 ? 0 : a->origin[a->n_origin == 1 ? 0 : k];
    return CLI_OK;
}
