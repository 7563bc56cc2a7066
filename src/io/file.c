/*
 * file.c - files: convolve_array_load / _load_memory (read the whole file or pipe within a
 * size limit, then parse it in memory; directories and devices are refused)
 * and convolve_array_save (encode into memory, then write it with
 * cvi_write_file_atomic, so that a failure leaves any old file untouched;
 * symbolic links are followed, dangling ones and targets that are not
 * regular files refused).
 */
#define _XOPEN_SOURCE 700 /* realpath */

#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static convolve_status parse(convolve_context *ctx, const unsigned char *d, size_t n,
                             convolve_format f, convolve_array **array)
{
    const cvio_format *row = cvio_format_of(f);
    if (!row)
        return cvi_error(ctx, CONVOLVE_ERROR_INTERNAL, "parse: format %d", (int)f);
    return row->read(ctx, d, n, array);
}

convolve_status convolve_array_load_memory(convolve_context *ctx, convolve_array **array,
                                           const void *data, size_t size, convolve_format format)
{
    if (!array || (!data && size))
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_array_load_memory: %s is NULL", array ? "data" : "array");
    *array = NULL;
    if (!convolve_format_name(format))
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_array_load_memory: unknown format %d", (int)format);
    static const unsigned char empty[1] = {0};
    const unsigned char *d = size ? data : empty;
    if (format == CONVOLVE_FORMAT_AUTO) {
        format = convolve_format_detect(d, size);
        char known[128];
        if (format == CONVOLVE_FORMAT_AUTO)
            return cvi_error(
                ctx, CONVOLVE_ERROR_FORMAT, "%s: no known magic number (%s); name the format",
                size ? "unknown data" : "empty data", cvio_format_list(known, sizeof known, 1));
    }
    convolve_status st = parse(ctx, d, size, format, array);
    return st == CONVOLVE_OK ? cvi_ok(ctx) : st;
}

/* Puts "'path': " in front of the context's message. */
static convolve_status prefix_path(convolve_context *ctx, convolve_status st, const char *path)
{
    return cvi_error_prefix(ctx, st, "'%s': ", path);
}

/* Reads a whole file (at most CVIO_MAX_FILE_BYTES) into *data (malloc'd). */
static convolve_status read_file(convolve_context *ctx, const char *path, unsigned char **data,
                                 size_t *size)
{
    *data = NULL;
    *size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return cvi_error(ctx, CONVOLVE_ERROR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return cvi_error(ctx, CONVOLVE_ERROR_IO, "cannot read '%s': %s", path, strerror(e));
    }
    if (S_ISDIR(sb.st_mode)) {
        close(fd);
        return cvi_error(ctx, CONVOLVE_ERROR_IO, "cannot read '%s': it is a directory", path);
    }
    if (S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode)) { /* /dev/zero would never end */
        close(fd);
        return cvi_error(ctx, CONVOLVE_ERROR_IO, "cannot read '%s': it is a device, not a file",
                         path);
    }
    if (S_ISREG(sb.st_mode) && (uintmax_t)sb.st_size > CVIO_MAX_FILE_BYTES) {
        close(fd);
        return cvi_error(ctx, CONVOLVE_ERROR_IO, "'%s' is %jd bytes; the limit is %zu", path,
                         (intmax_t)sb.st_size, CVIO_MAX_FILE_BYTES);
    }
    size_t cap = S_ISREG(sb.st_mode) ? (size_t)sb.st_size + 1 : 65536, n = 0;
    unsigned char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory reading '%s'", path);
    }
    for (;;) {
        if (n == cap) { /* the file grew, or is not a regular file */
            size_t ncap = cap * 2;
            unsigned char *p = ncap > cap && cap <= CVIO_MAX_FILE_BYTES ? realloc(buf, ncap) : NULL;
            if (!p) {
                free(buf);
                close(fd);
                if (cap > CVIO_MAX_FILE_BYTES)
                    return cvi_error(ctx, CONVOLVE_ERROR_IO,
                                     "'%s' is larger than the limit of "
                                     "%zu bytes",
                                     path, CVIO_MAX_FILE_BYTES);
                return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory reading '%s'",
                                 path);
            }
            buf = p;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            free(buf);
            close(fd);
            return cvi_error(ctx, CONVOLVE_ERROR_IO, "error reading '%s': %s", path, strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n > CVIO_MAX_FILE_BYTES) {
        free(buf);
        return cvi_error(ctx, CONVOLVE_ERROR_IO, "'%s' is larger than the limit of %zu bytes", path,
                         CVIO_MAX_FILE_BYTES);
    }
    *data = buf;
    *size = n;
    return CONVOLVE_OK;
}

convolve_status convolve_array_load(convolve_context *ctx, convolve_array **array, const char *path,
                                    convolve_format format)
{
    if (!array || !path)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "convolve_array_load: %s is NULL",
                         array ? "path" : "array");
    *array = NULL;
    if (!convolve_format_name(format))
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_array_load: unknown format %d", (int)format);
    unsigned char *data;
    size_t size;
    convolve_status st = read_file(ctx, path, &data, &size);
    if (st != CONVOLVE_OK)
        return st;
    if (size == 0) {
        free(data);
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "'%s' is empty", path);
    }
    if (format == CONVOLVE_FORMAT_AUTO) {
        /* the content's magic number first, then the name's extension */
        format = convolve_format_detect(data, size);
        if (format == CONVOLVE_FORMAT_AUTO)
            format = convolve_format_from_path(path);
        if (format == CONVOLVE_FORMAT_AUTO) {
            free(data);
            return cvi_error(
                ctx, CONVOLVE_ERROR_FORMAT,
                "cannot tell the format of '%s': no known magic number and no "
                "known extension (.npy .png .jpg .jpeg .pgm .ppm .pnm .tif .tiff .txt)",
                path);
        }
    }
    st = parse(ctx, data, size, format, array);
    free(data);
    return st == CONVOLVE_OK ? cvi_ok(ctx) : prefix_path(ctx, st, path);
}

convolve_status convolve_npy_inspect(convolve_context *ctx, const char *path,
                                     convolve_npy_info *info)
{
    if (!path || !info)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "convolve_npy_inspect: %s is NULL",
                         path ? "info" : "path");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return cvi_error(ctx, CONVOLVE_ERROR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    convolve_status st = CONVOLVE_OK;
    unsigned char *head = NULL;
    if (fstat(fd, &sb) != 0)
        st = cvi_error(ctx, CONVOLVE_ERROR_IO, "cannot read '%s': %s", path, strerror(errno));
    else if (S_ISDIR(sb.st_mode))
        st = cvi_error(ctx, CONVOLVE_ERROR_IO, "cannot read '%s': it is a directory", path);
    else if (S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode))
        st = cvi_error(ctx, CONVOLVE_ERROR_IO, "cannot read '%s': it is a device, not a file",
                       path);
    else if (!S_ISREG(sb.st_mode))
        st = cvi_error(ctx, CONVOLVE_ERROR_IO, "cannot inspect '%s': it is not a regular file",
                       path);
    else if ((uintmax_t)sb.st_size > SIZE_MAX)
        st = cvi_error(ctx, CONVOLVE_ERROR_SIZE_OVERFLOW, "'%s' is too large for this host", path);
    else if (sb.st_size == 0)
        st = cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "'%s' is empty", path);
    const size_t size = st == CONVOLVE_OK ? (size_t)sb.st_size : 0;
    size_t avail = size < 12 ? size : 12, length = 0;
    if (st == CONVOLVE_OK && !(head = malloc(avail)))
        st = cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory reading '%s'", path);
    if (st == CONVOLVE_OK && pread(fd, head, avail, 0) != (ssize_t)avail)
        st = cvi_error(ctx, CONVOLVE_ERROR_IO, "error reading '%s'", path);
    if (st == CONVOLVE_OK &&
        (st = cvio_npy_header_length(ctx, head, avail, size, &length)) != CONVOLVE_OK)
        st = prefix_path(ctx, st, path);
    else if (st == CONVOLVE_OK && length > avail) {
        unsigned char *p = realloc(head, length);
        if (!p)
            st = cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory reading '%s'", path);
        else if (head = p, pread(fd, head, length, 0) != (ssize_t)length)
            st = cvi_error(ctx, CONVOLVE_ERROR_IO, "error reading '%s'", path);
        else
            avail = length;
    }
    cvio_npy_desc d;
    if (st == CONVOLVE_OK && (st = cvio_npy_describe(ctx, head, avail, size, &d)) != CONVOLVE_OK)
        st = prefix_path(ctx, st, path);
    if (st == CONVOLVE_OK && (st = cvio_layout_init(ctx, &info->layout, d.dtype, d.ndim, d.shape, 1,
                                                    ".npy array")) == CONVOLVE_OK) {
        info->data_offset = d.data_offset;
        info->byte_swapped = d.swap;
        info->fortran_order = d.fortran;
    }
    free(head);
    close(fd);
    return st == CONVOLVE_OK ? cvi_ok(ctx) : st;
}

/* Writes the bytes to path atomically. A symbolic link is followed, so the
 * file it names is replaced, not the link; as cp, a link to nothing (or a
 * loop) is not written through but refused, and so is an existing target
 * that is not a regular file (a directory, device, FIFO). */
static convolve_status save_bytes(convolve_context *ctx, const char *path,
                                  const unsigned char *data, size_t size)
{
    struct stat sb;
    char *real = NULL;
    if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode) && !(real = realpath(path, NULL))) {
        int e = errno;
        char to[1024];
        ssize_t n = readlink(path, to, sizeof to - 1);
        to[n > 0 ? n : 0] = '\0';
        if (e == ENOMEM)
            return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory saving '%s'", path);
        if (e == ENOENT)
            return cvi_error(ctx, CONVOLVE_ERROR_IO,
                             "cannot save '%s': it is a symbolic link to "
                             "'%s', which does not exist; a dangling link is not written "
                             "through (create the file it names, or remove the link)",
                             path, to);
        return cvi_error(ctx, CONVOLVE_ERROR_IO,
                         "cannot save '%s': it is a symbolic link to "
                         "'%s', which cannot be followed: %s",
                         path, to, strerror(e));
    }
    const char *target = real ? real : path;
    convolve_status st;
    if (stat(target, &sb) == 0 && !S_ISREG(sb.st_mode))
        st = cvi_error(ctx, CONVOLVE_ERROR_IO,
                       "cannot save '%s': it exists and is not a regular "
                       "file",
                       path);
    else
        st = cvi_write_file_atomic(ctx, target, data, size);
    free(real);
    return st;
}

/* UNSUPPORTED, naming path, what the format holds and what the array has,
 * when the format cannot hold the array. */
static convolve_status check_holds(convolve_context *ctx, convolve_format format,
                                   const convolve_layout *L, const char *path)
{
    const char *holds;
    switch (cvio_format_fit(format, L, &holds)) {
    case CVIO_HOLDS: return CONVOLVE_OK;
    case CVIO_NOT_DTYPE:
        return cvi_error(ctx, CONVOLVE_ERROR_UNSUPPORTED,
                         "'%s': %s, not %s (convert the array "
                         "first)",
                         path, holds, convolve_dtype_name(L->dtype));
    case CVIO_NOT_DIMS:
        return cvi_error(ctx, CONVOLVE_ERROR_UNSUPPORTED, "'%s': %s, not %d-D arrays", path, holds,
                         L->ndim);
    case CVIO_NOT_CHANNELS:
        return cvi_error(ctx, CONVOLVE_ERROR_UNSUPPORTED, "'%s': %s, not %zu", path, holds,
                         L->channels);
    default:
        return cvi_error(ctx, CONVOLVE_ERROR_UNSUPPORTED, "'%s': %s, not %zux%zu", path, holds,
                         L->shape[1], L->shape[0]);
    }
}

convolve_status convolve_array_save(convolve_context *ctx, const convolve_array *array,
                                    const char *path, convolve_format format, int jpeg_quality)
{
    if (!array || !path)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "convolve_array_save: %s is NULL",
                         array ? "path" : "array");
    if (!*path)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "convolve_array_save: empty path");
    if (!convolve_format_name(format))
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_array_save: unknown format %d", (int)format);
    if (format == CONVOLVE_FORMAT_AUTO) {
        format = convolve_format_from_path(path);
        char known[128];
        if (format == CONVOLVE_FORMAT_AUTO)
            return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                             "cannot tell the format to save '%s' in from its extension (%s)", path,
                             cvio_format_list(known, sizeof known, 0));
    }
    if (format == CONVOLVE_FORMAT_JPEG && (jpeg_quality < 0 || jpeg_quality > 100))
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "JPEG quality %d: use 1 to 100, or 0 for the default (95)", jpeg_quality);
#ifndef CONVOLVE_HAVE_TIFF
    if (format == CONVOLVE_FORMAT_TIFF) { /* says it was built without */
        cvi_buf none = {NULL, 0, 0};
        return prefix_path(ctx, cvio_write_tiff(ctx, array, &none), path);
    }
#endif
    convolve_status st = check_holds(ctx, format, &array->layout, path);
    if (st != CONVOLVE_OK)
        return st;
    cvi_buf buf = {NULL, 0, 0};
    st = cvio_format_of(format)->write(ctx, array, jpeg_quality, &buf);
    if (st == CONVOLVE_OK)
        st = save_bytes(ctx, path, buf.data, buf.size);
    else
        st = prefix_path(ctx, st, path);
    cvi_buf_free(&buf);
    return st == CONVOLVE_OK ? cvi_ok(ctx) : st;
}
