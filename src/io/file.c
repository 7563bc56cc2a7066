/*
 * file.c - files: convolve_array_load / _load_memory (read the whole file or pipe within a
 * size limit, then parse it in memory; directories and devices are refused)
 * and convolve_array_save (encode into memory, then write a temporary file
 * beside the target, fsync it and rename it over the target, so that a
 * failure leaves any old file untouched; symbolic links are followed,
 * targets that are not regular files refused).
 */
#define _XOPEN_SOURCE 700 /* realpath */

#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
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
    switch (f) {
    case CONVOLVE_FORMAT_NPY: return cvi_read_npy(ctx, d, n, array);
    case CONVOLVE_FORMAT_PNG: return cvi_read_png(ctx, d, n, array);
    case CONVOLVE_FORMAT_JPEG: return cvi_read_jpeg(ctx, d, n, array);
    case CONVOLVE_FORMAT_PNM: return cvi_read_pnm(ctx, d, n, array);
    case CONVOLVE_FORMAT_TEXT: return cvi_read_text(ctx, d, n, array);
    default: return cvi_error(ctx, CONVOLVE_ERROR_INTERNAL, "parse: format %d", (int)f);
    }
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
        if (format == CONVOLVE_FORMAT_AUTO)
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                             "%s: no known magic number (.npy, PNG, JPEG, PNM); name the format",
                             size ? "unknown data" : "empty data");
    }
    convolve_status st = parse(ctx, d, size, format, array);
    return st == CONVOLVE_OK ? cvi_ok(ctx) : st;
}

/* Puts "'path': " in front of the context's message. */
static convolve_status prefix_path(convolve_context *ctx, convolve_status st, const char *path)
{
    if (ctx) {
        char msg[CVI_MESSAGE_SIZE];
        memcpy(msg, ctx->message, sizeof msg);
        msg[sizeof msg - 1] = '\0';
        cvi_error(ctx, st, "'%s': %s", path, msg);
    }
    return st;
}

/* Reads a whole file (at most CVI_IO_MAX_FILE_BYTES) into *data (malloc'd). */
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
    if (S_ISREG(sb.st_mode) && (uintmax_t)sb.st_size > CVI_IO_MAX_FILE_BYTES) {
        close(fd);
        return cvi_error(ctx, CONVOLVE_ERROR_IO, "'%s' is %jd bytes; the limit is %zu", path,
                         (intmax_t)sb.st_size, CVI_IO_MAX_FILE_BYTES);
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
            unsigned char *p = ncap > cap && cap <= CVI_IO_MAX_FILE_BYTES ? realloc(buf, ncap)
                                                                          : NULL;
            if (!p) {
                free(buf);
                close(fd);
                if (cap > CVI_IO_MAX_FILE_BYTES)
                    return cvi_error(ctx, CONVOLVE_ERROR_IO, "'%s' is larger than the limit of "
                                     "%zu bytes", path, CVI_IO_MAX_FILE_BYTES);
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
    if (n > CVI_IO_MAX_FILE_BYTES) {
        free(buf);
        return cvi_error(ctx, CONVOLVE_ERROR_IO, "'%s' is larger than the limit of %zu bytes",
                         path, CVI_IO_MAX_FILE_BYTES);
    }
    *data = buf;
    *size = n;
    return CONVOLVE_OK;
}

convolve_status convolve_array_load(convolve_context *ctx, convolve_array **array,
                                    const char *path, convolve_format format)
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
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                             "cannot tell the format of '%s': no known magic number and no "
                             "known extension (.npy .png .jpg .jpeg .pgm .ppm .pnm .txt)", path);
        }
    }
    st = parse(ctx, data, size, format, array);
    free(data);
    return st == CONVOLVE_OK ? cvi_ok(ctx) : prefix_path(ctx, st, path);
}

/* ---- atomic save ------------------------------------------------------------ */

static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Writes size bytes to fd; returns 0 and sets errno on failure. */
static int write_all(int fd, const unsigned char *p, size_t size)
{
    while (size) {
        size_t chunk = size > ((size_t)1 << 30) ? ((size_t)1 << 30) : size;
        ssize_t w = write(fd, p, chunk);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return 0;
        }
        p += w;
        size -= (size_t)w;
    }
    return 1;
}

/*
 * Writes the bytes to a new file ".NAME.XXXXXX" beside path (created with
 * O_EXCL and mode 0644, so the umask applies), fsyncs and closes it, then
 * renames it over path. On failure the temporary file is removed.
 */
convolve_status cvi_write_file_atomic(convolve_context *ctx, const char *path,
                                      const unsigned char *data, size_t size)
{
    static atomic_uint_fast64_t counter;
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = path + dirlen;
    if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "cannot save to '%s': it names a directory", path);
    size_t len = strlen(path) + 9;
    char *tmp = malloc(len);
    if (!tmp)
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory saving '%s'", path);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t seed = mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^
                          (uint64_t)getpid() ^ (uint64_t)(uintptr_t)&ts);
    static const char k_chars[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        uint64_t r = mix64(seed ^ atomic_fetch_add(&counter, 1));
        memcpy(tmp, path, dirlen);
        char *p = tmp + dirlen;
        *p++ = '.';
        memcpy(p, base, strlen(base));
        p += strlen(base);
        *p++ = '.';
        for (int i = 0; i < 6; i++, r /= 62)
            *p++ = k_chars[r % 62];
        *p = '\0';
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) {
            int e = errno;
            free(tmp);
            return cvi_error(ctx, CONVOLVE_ERROR_IO,
                             "cannot save '%s': cannot create a file in its directory: %s", path,
                             strerror(e));
        }
    }
    if (fd < 0) {
        free(tmp);
        return cvi_error(ctx, CONVOLVE_ERROR_IO,
                         "cannot save '%s': no free temporary file name beside it", path);
    }
    const char *step = "writing";
    int ok = write_all(fd, data, size);
    if (ok) {
        step = "syncing";
        ok = fsync(fd) == 0;
    }
    int e = errno;
    if (close(fd) != 0 && ok) {
        e = errno;
        step = "closing";
        ok = 0;
    }
    if (ok) {
        step = "renaming the temporary file over";
        ok = rename(tmp, path) == 0;
        e = errno;
    }
    if (!ok) {
        unlink(tmp);
        free(tmp);
        return cvi_error(ctx, CONVOLVE_ERROR_IO, "cannot save '%s': error %s it: %s", path, step,
                         strerror(e));
    }
    free(tmp);
    /* make the rename durable; a failure here loses nothing already written */
    char dir[4096];
    if (dirlen < sizeof dir) {
        if (dirlen) {
            memcpy(dir, path, dirlen);
            dir[dirlen] = '\0';
        } else {
            strcpy(dir, ".");
        }
        int dfd = open(dir, O_RDONLY | O_CLOEXEC);
        if (dfd >= 0) {
            (void)fsync(dfd);
            close(dfd);
        }
    }
    return CONVOLVE_OK;
}

/* Writes the bytes to path atomically. A symbolic link is followed, so the
 * file it names is replaced, not the link; an existing target that is not a
 * regular file (a directory, device, FIFO) is refused. */
static convolve_status save_bytes(convolve_context *ctx, const char *path,
                                  const unsigned char *data, size_t size)
{
    struct stat sb;
    char *real = NULL;
    if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode))
        real = realpath(path, NULL); /* NULL when dangling: the link itself is replaced */
    const char *target = real ? real : path;
    convolve_status st;
    if (stat(target, &sb) == 0 && !S_ISREG(sb.st_mode))
        st = cvi_error(ctx, CONVOLVE_ERROR_IO, "cannot save '%s': it exists and is not a regular "
                       "file", path);
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
    case CVIO_HOLDS:
        return CONVOLVE_OK;
    case CVIO_NOT_DTYPE:
        return cvi_error(ctx, CONVOLVE_ERROR_UNSUPPORTED, "'%s': %s, not %s (convert the array "
                         "first)", path, holds, convolve_dtype_name(L->dtype));
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
        if (format == CONVOLVE_FORMAT_AUTO)
            return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                             "cannot tell the format to save '%s' in from its extension "
                             "(.npy .png .jpg .jpeg .pgm .ppm .pnm .txt)", path);
    }
    if (format == CONVOLVE_FORMAT_JPEG && (jpeg_quality < 0 || jpeg_quality > 100))
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "JPEG quality %d: use 1 to 100, or 0 for the default (95)", jpeg_quality);
    convolve_status st = check_holds(ctx, format, &array->layout, path);
    if (st != CONVOLVE_OK)
        return st;
    cvi_buf buf = {NULL, 0, 0};
    switch (format) {
    case CONVOLVE_FORMAT_NPY: st = cvi_write_npy(ctx, array, &buf); break;
    case CONVOLVE_FORMAT_PNG: st = cvi_write_png(ctx, array, &buf); break;
    case CONVOLVE_FORMAT_JPEG: st = cvi_write_jpeg(ctx, array, jpeg_quality, &buf); break;
    case CONVOLVE_FORMAT_PNM: st = cvi_write_pnm(ctx, array, &buf); break;
    default: st = cvi_write_text(ctx, array, &buf); break;
    }
    if (st == CONVOLVE_OK)
        st = save_bytes(ctx, path, buf.data, buf.size);
    else
        st = prefix_path(ctx, st, path);
    cvi_buf_free(&buf);
    return st == CONVOLVE_OK ? cvi_ok(ctx) : st;
}
