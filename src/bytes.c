/*
 * bytes.c - a growable byte buffer; the temporary file that replaces a
 * file when complete (convolve_temp_file_open, _name: in the target's
 * folder, unnamed where the file system allows, named at the end; also the
 * CLI's mapped outputs and convolve-mpi's); and writing bytes to a file
 * atomically through one (the wisdom file, the writers of src/io/).
 */
#define _GNU_SOURCE /* O_TMPFILE */

#include "bytes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- byte buffer ------------------------------------------------------- */

static int buf_reserve(cvi_buf *b, size_t n)
{
    size_t need;
    if (!cvi_add_size(b->size, n, &need))
        return 0;
    if (need <= b->cap)
        return 1;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    unsigned char *p = realloc(b->data, cap);
    if (!p)
        return 0;
    b->data = p;
    b->cap = cap;
    return 1;
}

int cvi_buf_append(cvi_buf *b, const void *p, size_t n)
{
    if (n == 0)
        return 1;
    if (!buf_reserve(b, n))
        return 0;
    memcpy(b->data + b->size, p, n);
    b->size += n;
    return 1;
}

int cvi_buf_printf(cvi_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !buf_reserve(b, (size_t)n + 1))
        return 0;
    va_start(ap, fmt);
    vsnprintf((char *)b->data + b->size, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->size += (size_t)n;
    return 1;
}

void cvi_buf_free(cvi_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->size = b->cap = 0;
}

/* ---- atomic file writes ------------------------------------------------- */

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

/* Sets tmp (room for strlen(path) + 9) to a fresh name ".BASE.XXXXXX" beside path. */
static void temp_name(const char *path, size_t dirlen, char *tmp)
{
    static atomic_uint_fast64_t counter;
    static const char k_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t r = mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)getpid() ^
                       (uint64_t)(uintptr_t)&ts ^ mix64(atomic_fetch_add(&counter, 1)));
    const char *base = path + dirlen;
    memcpy(tmp, path, dirlen);
    char *p = tmp + dirlen;
    *p++ = '.';
    memcpy(p, base, strlen(base));
    p += strlen(base);
    *p++ = '.';
    for (int i = 0; i < 6; i++, r /= 62)
        *p++ = k_chars[r % 62];
    *p = '\0';
}

/* A file without a name in the folder of path (O_TMPFILE), which a process
 * killed before it is linked leaves nowhere; -1 where the file system or
 * the kernel has none, or /proc/self/fd cannot link it later. */
static int open_unnamed(const char *path, size_t dirlen)
{
#ifdef O_TMPFILE
    char dir[4096], proc[64];
    if (dirlen >= sizeof dir)
        return -1;
    memcpy(dir, dirlen ? path : ".", dirlen ? dirlen : 1);
    dir[dirlen ? dirlen : 1] = '\0';
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    if (access(proc, F_OK) != 0) {
        close(fd);
        return -1;
    }
    return fd;
#else
    (void)path;
    (void)dirlen;
    return -1;
#endif
}

/* Gives fd the owner, group (where permitted) and mode of the file old. */
static int copy_owner_mode(int fd, const struct stat *old)
{
    if (fchown(fd, old->st_uid, old->st_gid) != 0 &&
        (errno != EPERM || (fchown(fd, (uid_t)-1, old->st_gid) != 0 && errno != EPERM)))
        return 0;
    return fchmod(fd, old->st_mode & 07777) == 0;
}

/* The length of path's folder part (up to its last '/'); -1 with errno
 * EISDIR when path names no file (ends with '/', ".", ".."), ENAMETOOLONG
 * when name_size cannot hold a temporary name beside it. */
static ptrdiff_t check_temp_path(const char *path, size_t name_size)
{
    if (!path) {
        errno = EINVAL;
        return -1;
    }
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = path + dirlen;
    if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
        errno = EISDIR;
        return -1;
    }
    if (name_size < strlen(path) + 9) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return (ptrdiff_t)dirlen;
}

int convolve_temp_file_open(const char *path, int need_name, char *name, size_t name_size)
{
    const ptrdiff_t dirlen = check_temp_path(path, name ? name_size : 0);
    if (dirlen < 0)
        return -1;
    name[0] = '\0';
    int fd = need_name ? -1 : open_unnamed(path, (size_t)dirlen);
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        temp_name(path, (size_t)dirlen, name);
        fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    struct stat old;
    if (fd >= 0 && stat(path, &old) == 0 && S_ISREG(old.st_mode) && !copy_owner_mode(fd, &old)) {
        int e = errno;
        close(fd);
        if (name[0])
            unlink(name);
        errno = e;
        fd = -1;
    }
    if (fd < 0)
        name[0] = '\0';
    return fd;
}

int convolve_temp_file_name(int fd, const char *path, char *name, size_t name_size)
{
    const ptrdiff_t dirlen = check_temp_path(path, name ? name_size : 0);
    if (dirlen < 0)
        return -1;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    for (int attempt = 0; attempt < 100; attempt++) {
        temp_name(path, (size_t)dirlen, name);
        if (linkat(AT_FDCWD, proc, AT_FDCWD, name, AT_SYMLINK_FOLLOW) == 0)
            return 0;
        if (errno != EEXIST)
            break;
    }
    name[0] = '\0';
    return -1;
}

/*
 * Writes the bytes to a temporary file beside path (convolve_temp_file_open:
 * unnamed where the file system allows, else ".NAME.XXXXXX"; mode 0644 less
 * the umask, or the owner, group where permitted, and mode of the file it
 * replaces), fsyncs it, names it (the unnamed one) and renames it over
 * path. On failure the temporary file is removed.
 */
convolve_status cvi_write_file_atomic(convolve_context *ctx, const char *path,
                                      const unsigned char *data, size_t size)
{
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
    int fd = convolve_temp_file_open(path, 0, tmp, len), named = tmp[0] != '\0';
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return cvi_error(ctx, CONVOLVE_ERROR_IO,
                         "cannot save '%s': cannot create a file in its directory: %s", path,
                         strerror(e));
    }
    const char *step = "writing";
    int ok = write_all(fd, data, size);
    if (ok) {
        step = "syncing";
        ok = fsync(fd) == 0;
    }
    if (ok && !named) {
        step = "naming the temporary file for";
        named = ok = convolve_temp_file_name(fd, path, tmp, len) == 0;
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
        if (named)
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
