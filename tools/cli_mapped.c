/*
 * cli_mapped.c - .npy files larger than memory for `convolve INPUT OUTPUT`:
 * the input mapped read-only, the output written through a mapped temporary
 * file beside OUTPUT (sized and given its .npy header up front, renamed over
 * OUTPUT when complete, removed on failure), and the pages of both released
 * as the library reports rows done, so that resident memory stays bounded
 * whatever the file size (docs/cli.md, "Files larger than memory").
 */
#define _GNU_SOURCE /* sync_file_range, madvise */

#include "convolve_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The temporary file a signal handler must remove (NULL when none). */
static const char *volatile g_temp_path;

const char *cli_mapped_temp_path(void)
{
    return g_temp_path;
}

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

void cli_mapped_in_init(cli_mapped_in *m)
{
    memset(m, 0, sizeof *m);
    m->fd = -1;
}

void cli_mapped_out_init(cli_mapped_out *m)
{
    memset(m, 0, sizeof *m);
    m->fd = -1;
}

int cli_map_input(convolve_context *ctx, const char *path, cli_mapped_in *m, char *why,
                  char *msg)
{
    cli_mapped_in_init(m);
    why[0] = '\0';
    convolve_npy_info info;
    convolve_status st = convolve_npy_inspect(ctx, path, &info);
    if (st != CONVOLVE_OK)
        return cli_msg(msg, cli_exit_code(st), "%s", convolve_last_error(ctx));
    const size_t esize = convolve_dtype_size(info.layout.dtype);
    if (info.byte_swapped || info.fortran_order || info.data_offset % esize) {
        snprintf(why, CLI_MSG_SIZE, "'%s' is stored %s: it must be converted, so it cannot "
                 "be mapped", path, info.byte_swapped ? "in the other byte order"
                 : info.fortran_order ? "in Fortran order" : "with its data misaligned");
        return CLI_OK;
    }
    m->layout = info.layout;
    m->data_offset = info.data_offset;
    m->data_bytes = convolve_layout_count(&info.layout) * esize;
    m->map_bytes = m->data_offset + m->data_bytes;
    if ((m->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return cli_msg(msg, CLI_BAD_INPUT, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(m->fd, &sb) != 0 || !S_ISREG(sb.st_mode) || (uintmax_t)sb.st_size != m->map_bytes) {
        cli_unmap_input(m);
        return cli_msg(msg, CLI_BAD_INPUT, "'%s' changed while it was being opened", path);
    }
    void *p = mmap(NULL, m->map_bytes, PROT_READ, MAP_SHARED, m->fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        cli_unmap_input(m);
        return cli_msg(msg, e == ENOMEM ? CLI_RESOURCE : CLI_BAD_INPUT,
                       "cannot map '%s' into memory: %s", path, strerror(e));
    }
    m->map = p;
    m->data = (const unsigned char *)p + m->data_offset;
    (void)madvise(p, m->map_bytes, MADV_SEQUENTIAL);
    return CLI_OK;
}

void cli_unmap_input(cli_mapped_in *m)
{
    if (m->map)
        munmap(m->map, m->map_bytes);
    if (m->fd >= 0)
        close(m->fd);
    cli_mapped_in_init(m);
}

/* A name ".BASE.XXXXXX" beside target that no file has; opens it (0644 less
 * the umask). Returns the descriptor, or -1 with errno set. */
static int create_temp(const char *target, char **tmp_out)
{
    static const char k_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const char *slash = strrchr(target, '/');
    size_t dirlen = slash ? (size_t)(slash - target) + 1 : 0;
    size_t len = strlen(target) + 9;
    char *tmp = malloc(len);
    if (!tmp) {
        errno = ENOMEM;
        return -1;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t r0 = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 32 ^
                  (uint64_t)ts.tv_sec;
    for (int attempt = 0; attempt < 100; attempt++) {
        uint64_t r = r0 + (uint64_t)attempt * 0xBF58476D1CE4E5B9ull;
        r ^= r >> 31;
        snprintf(tmp, len, "%.*s.%s.", (int)dirlen, target, target + dirlen);
        char *p = tmp + strlen(tmp);
        for (int i = 0; i < 6; i++, r /= 62)
            *p++ = k_chars[r % 62];
        *p = '\0';
        int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0) {
            *tmp_out = tmp;
            return fd;
        }
        if (errno != EEXIST)
            break;
    }
    int e = errno;
    free(tmp);
    errno = e;
    return -1;
}

int cli_map_output(convolve_context *ctx, const char *path, const convolve_layout *layout,
                   cli_mapped_out *m, char *msg)
{
    cli_mapped_out_init(m);
    unsigned char header[CONVOLVE_NPY_HEADER_MAX];
    size_t hlen = 0;
    convolve_status st = convolve_npy_header(ctx, layout, header, sizeof header, &hlen);
    if (st != CONVOLVE_OK)
        return cli_msg(msg, cli_exit_code(st), "%s", convolve_last_error(ctx));
    m->data_offset = hlen;
    m->data_bytes = convolve_layout_count(layout) * convolve_dtype_size(layout->dtype);
    m->map_bytes = hlen + m->data_bytes;
    /* as convolve_array_save: a symbolic link's file is replaced, not the
     * link; an existing target that is not a regular file is refused */
    struct stat sb;
    if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode))
        m->target = realpath(path, NULL);
    if (!m->target && !(m->target = strdup(path)))
        return cli_msg(msg, CLI_RESOURCE, "out of memory");
    if (stat(m->target, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        cli_map_output_discard(m);
        return cli_msg(msg, CLI_RESOURCE, "cannot save '%s': it exists and is not a regular "
                       "file", path);
    }
    if ((m->fd = create_temp(m->target, &m->tmp)) < 0) {
        int e = errno;
        cli_map_output_discard(m);
        return cli_msg(msg, CLI_RESOURCE, "cannot save '%s': cannot create a file in its "
                       "directory: %s", path, strerror(e));
    }
    g_temp_path = m->tmp;
    /* reserve the blocks now: a full disk is an error here, not a SIGBUS
     * while writing through the mapping */
    int e = posix_fallocate(m->fd, 0, (off_t)m->map_bytes);
    if (e == EOPNOTSUPP || e == EINVAL) /* a file system without it */
        e = ftruncate(m->fd, (off_t)m->map_bytes) == 0 ? 0 : errno;
    if (e == 0 && pwrite(m->fd, header, hlen, 0) != (ssize_t)hlen)
        e = errno ? errno : EIO;
    if (e != 0) {
        cli_map_output_discard(m);
        return cli_msg(msg, CLI_RESOURCE, "cannot save '%s': %s", path, strerror(e));
    }
    void *p = mmap(NULL, m->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
    if (p == MAP_FAILED) {
        e = errno;
        cli_map_output_discard(m);
        return cli_msg(msg, CLI_RESOURCE, "cannot save '%s': cannot map it into memory: %s",
                       path, strerror(e));
    }
    m->map = p;
    m->data = (unsigned char *)p + hlen;
    m->path = path;
    return CLI_OK;
}

/* Drops the mapping's pages of file bytes [*done, upto) (whole pages only):
 * the output's are first handed to writeback. */
static void release(void *map, int fd, int writable, size_t *done, size_t upto)
{
    const size_t ps = page_size();
    upto -= upto % ps;
    if (!map || upto <= *done)
        return;
    unsigned char *p = (unsigned char *)map + *done;
    size_t n = upto - *done;
#ifdef SYNC_FILE_RANGE_WRITE
    if (writable) /* start writing the finished rows back; does not wait */
        (void)sync_file_range(fd, (off_t)*done, (off_t)n, SYNC_FILE_RANGE_WRITE);
#endif
    (void)madvise(p, n, MADV_DONTNEED);
    if (!writable) /* and the page cache's copy of input read for good */
        (void)posix_fadvise(fd, (off_t)*done, (off_t)n, POSIX_FADV_DONTNEED);
    *done = upto;
}

void cli_mapped_release(cli_mapped_in *in, cli_mapped_out *out, size_t rows_done,
                        size_t rows_total)
{
    if (!rows_total || rows_done > rows_total)
        return;
    /* the arrays are C order and cut along their slowest axis: rows done are
     * a fraction of each array's bytes. Dropping pages a slab still needs
     * costs a page fault, never data: the output is a shared file mapping,
     * whose written pages stay in the page cache */
    if (in && in->map) {
        size_t upto = in->data_offset +
                      (size_t)((double)in->data_bytes * ((double)rows_done / (double)rows_total));
        release(in->map, in->fd, 0, &in->released, upto);
    }
    if (out && out->map) {
        size_t upto = out->data_offset +
                      (size_t)((double)out->data_bytes * ((double)rows_done / (double)rows_total));
        release(out->map, out->fd, 1, &out->released, upto);
    }
}

int cli_map_output_commit(cli_mapped_out *m, char *msg)
{
    const char *step = "writing";
    int ok = msync(m->map, m->map_bytes, MS_SYNC) == 0;
    int e = errno;
    munmap(m->map, m->map_bytes);
    m->map = NULL;
    if (ok) {
        step = "syncing";
        ok = fsync(m->fd) == 0;
        e = errno;
    }
    if (close(m->fd) != 0 && ok) {
        step = "closing";
        ok = 0;
        e = errno;
    }
    m->fd = -1;
    if (ok && cli_interrupted()) { /* Ctrl-C while syncing: write nothing */
        cli_map_output_discard(m);
        return CLI_INTERRUPTED;
    }
    if (ok) {
        step = "renaming the temporary file over";
        ok = rename(m->tmp, m->target) == 0;
        e = errno;
    }
    if (!ok) {
        const char *path = m->path;
        cli_map_output_discard(m);
        return cli_msg(msg, CLI_RESOURCE, "cannot save '%s': error %s it: %s", path, step,
                       strerror(e));
    }
    g_temp_path = NULL;
    /* make the rename durable; a failure here loses nothing already written */
    char *slash = strrchr(m->target, '/');
    if (slash)
        *slash = '\0';
    int dfd = open(slash ? (slash == m->target ? "/" : m->target) : ".", O_RDONLY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    free(m->tmp);
    free(m->target);
    cli_mapped_out_init(m);
    return CLI_OK;
}

void cli_map_output_discard(cli_mapped_out *m)
{
    if (m->map)
        munmap(m->map, m->map_bytes);
    if (m->fd >= 0)
        close(m->fd);
    if (m->tmp) {
        g_temp_path = NULL;
        unlink(m->tmp);
    }
    free(m->tmp);
    free(m->target);
    cli_mapped_out_init(m);
}
