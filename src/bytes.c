/*
 * bytes.c - a growable byte buffer, and writing bytes to a file atomically
 * (a temporary file in the target's folder, unnamed where the file system
 * allows, fsynced, then named and renamed over the target). Used
 * by the wisdom file (wisdom.c) and by the writers of src/io/.
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
    static const char k_chars[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
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
    int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
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

/* Gives the unnamed file fd the name tmp (a fresh name beside path). */
static int link_unnamed(int fd, const char *path, size_t dirlen, char *tmp)
{
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    for (int attempt = 0; attempt < 100; attempt++) {
        temp_name(path, dirlen, tmp);
        if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0)
            return 1;
        if (errno != EEXIST)
            return 0;
    }
    return 0;
}

/* Gives fd the owner, group (where permitted) and mode of the file old. */
static int copy_owner_mode(int fd, const struct stat *old)
{
    if (fchown(fd, old->st_uid, old->st_gid) != 0 &&
        (errno != EPERM || (fchown(fd, (uid_t)-1, old->st_gid) != 0 && errno != EPERM)))
        return 0;
    return fchmod(fd, old->st_mode & 07777) == 0;
}

/*
 * Writes the bytes to a file without a name in path's folder (O_TMPFILE),
 * or where the file system has none to a new file ".NAME.XXXXXX" beside
 * path (created with O_EXCL); either is created with mode 0644 (the umask
 * applies), or given the owner, group (where permitted) and mode of the
 * file it replaces. It is fsynced, named ".NAME.XXXXXX" (the unnamed one,
 * with linkat through /proc/self/fd) and renamed over path. On failure the
 * temporary file is removed.
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
    int fd = open_unnamed(path, dirlen), named = fd < 0;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        temp_name(path, dirlen, tmp);
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
    struct stat old;
    const char *step = "giving the temporary file the owner and mode of";
    int ok = stat(path, &old) != 0 || !S_ISREG(old.st_mode) || copy_owner_mode(fd, &old);
    if (ok) {
        step = "writing";
        ok = write_all(fd, data, size);
    }
    if (ok) {
        step = "syncing";
        ok = fsync(fd) == 0;
    }
    if (ok && !named) {
        step = "naming the temporary file for";
        named = ok = link_unnamed(fd, path, dirlen, tmp);
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
