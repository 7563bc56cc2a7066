/*
 * cli_mapped.c - .npy files larger than memory for `convolve INPUT OUTPUT`:
 * the input mapped read-only, the output written through a mapped temporary
 * file in OUTPUT's folder (unnamed until complete where the file system
 * allows, sized and given its .npy header up front, then named and renamed
 * over OUTPUT, removed on failure), and the pages of both released as the
 * library reports rows done, so that resident memory stays bounded whatever
 * the file size (docs/cli.md, "Files larger than memory"). A SIGBUS from a
 * page of either file (the input truncated by another program, the output's
 * blocks lost) is caught: zero pages replace the rest of that mapping, the
 * run ends, and cli_mapped_check reports it; nothing is written.
 */
#define _GNU_SOURCE /* sync_file_range, madvise */

#include "convolve_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

/* ---- SIGBUS from the mapped files ---------------------------------------------- */

enum { MAP_IN, MAP_OUT };

/* The mapped files' address ranges [lo, hi), whole pages (0, 0 when not
 * mapped); whether a page of each failed; the handler replaced. */
static atomic_uintptr_t g_lo[2], g_hi[2];
static volatile sig_atomic_t g_failed[2];
static uintptr_t g_page;
static struct sigaction g_prev_bus;
static int g_bus_installed;

/* A SIGBUS on any thread. Inside a mapped file: zero pages replace the
 * mapping from the failed page to its end (mmap is a plain system call,
 * safe here), so that the run ends normally, and the failure is noted.
 * Elsewhere: what the handler before this one would do; by default, the
 * temporary file removed and the process ended by the signal. */
static void on_sigbus(int sig, siginfo_t *si, void *context)
{
    const uintptr_t a = (uintptr_t)si->si_addr;
    for (int k = 0; si->si_code > 0 && k < 2; k++) {
        const uintptr_t lo = atomic_load(&g_lo[k]), hi = atomic_load(&g_hi[k]);
        if (a < lo || a >= hi)
            continue;
        const uintptr_t page = a - a % g_page;
        const int prot = k == MAP_OUT ? PROT_READ | PROT_WRITE : PROT_READ;
        if (mmap((void *)page, hi - page, prot, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) !=
            MAP_FAILED) {
            g_failed[k] = 1;
            return;
        }
    }
    if (g_prev_bus.sa_flags & SA_SIGINFO) {
        if (g_prev_bus.sa_sigaction) {
            g_prev_bus.sa_sigaction(sig, si, context);
            return;
        }
    } else if (g_prev_bus.sa_handler != SIG_DFL && g_prev_bus.sa_handler != SIG_IGN) {
        g_prev_bus.sa_handler(sig);
        return;
    }
    const char *tmp = cli_signals_get_temp_path();
    if (tmp)
        unlink(tmp);
    signal(sig, SIG_DFL);
    if (si->si_code <= 0) /* sent by a process: again, delivered on return */
        raise(sig);
    /* a fault: the instruction faults again on return, now fatal */
}

/* Notes [map, map + bytes) as a mapped file's range, catching SIGBUS. */
static void watch_range(int k, void *map, size_t bytes)
{
    if (!g_bus_installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        g_page = page_size();
        g_bus_installed = sigaction(SIGBUS, &sa, &g_prev_bus) == 0;
    }
    const size_t ps = page_size();
    g_failed[k] = 0;
    atomic_store(&g_lo[k], (uintptr_t)map);
    atomic_store(&g_hi[k], (uintptr_t)map + (bytes + ps - 1) / ps * ps);
}

static void unwatch_range(int k)
{
    atomic_store(&g_hi[k], 0);
    atomic_store(&g_lo[k], 0);
}

int cli_mapped_failed(void)
{
    return g_failed[MAP_IN] || g_failed[MAP_OUT];
}

int cli_mapped_check(const cli_mapped_in *in, const cli_mapped_out *out, char *msg)
{
    if (in && in->map && g_failed[MAP_IN]) {
        struct stat sb;
        const char *not_written = out && out->path ? out->path : "the output";
        if (fstat(in->fd, &sb) == 0 && (uintmax_t)sb.st_size < in->map_bytes)
            return cli_msg(msg, CLI_BAD_INPUT,
                           "'%s' shrank while it was being read (%jd bytes "
                           "now, %zu expected): '%s' not written",
                           in->path, (intmax_t)sb.st_size, in->map_bytes, not_written);
        return cli_msg(msg, CLI_BAD_INPUT,
                       "'%s' could not be read through its mapping (an I/O "
                       "error): '%s' not written",
                       in->path, not_written);
    }
    if (out && out->map && g_failed[MAP_OUT])
        return cli_msg(msg, CLI_RESOURCE,
                       "cannot save '%s': a page of its temporary file could "
                       "not be written through the mapping (a full disk, or the file was "
                       "truncated); nothing written",
                       out->path);
    return CLI_OK;
}

/* Whether bytes exceed 1/parts of the machine's physical memory (unknown:
 * yes). */
static int over_memory_share(size_t bytes, size_t parts)
{
    long pages = sysconf(_SC_PHYS_PAGES);
    return pages <= 0 || bytes / page_size() > (size_t)pages / parts;
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

int cli_map_input(convolve_context *ctx, const char *path, cli_mapped_in *m, char *why, char *msg)
{
    cli_mapped_in_init(m);
    why[0] = '\0';
    convolve_npy_info info;
    convolve_status st = convolve_npy_inspect(ctx, path, &info);
    if (st != CONVOLVE_OK)
        return cli_msg(msg, cli_exit_code(st), "%s", convolve_last_error(ctx));
    const size_t esize = convolve_dtype_size(info.layout.dtype);
    if (info.byte_swapped || info.fortran_order || info.data_offset % esize) {
        snprintf(why, CLI_MSG_SIZE,
                 "'%s' is stored %s: it must be converted, so it cannot "
                 "be mapped",
                 path,
                 info.byte_swapped    ? "in the other byte order"
                 : info.fortran_order ? "in Fortran order"
                                      : "with its data misaligned");
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
    m->path = path;
    m->drop_cache = over_memory_share(m->map_bytes, 2);
    watch_range(MAP_IN, p, m->map_bytes);
    (void)madvise(p, m->map_bytes, MADV_SEQUENTIAL);
    return CLI_OK;
}

void cli_unmap_input(cli_mapped_in *m)
{
    if (m->map) {
        unwatch_range(MAP_IN);
        munmap(m->map, m->map_bytes);
    }
    if (m->fd >= 0)
        close(m->fd);
    cli_mapped_in_init(m);
}

/* ---- the output's writeback, off the run's path ------------------------------ */

/* A thread that starts writing back the output's bytes [0, upto) as the
 * progress callback releases them: sync_file_range blocks while the disk's
 * queue is full, and the callback holds up the run, so it is called here.
 * The final msync and fsync write whatever it has not. */
struct cli_writeback {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int fd, stop;
    size_t upto; /* file bytes released (whole pages) */
};

static void *writeback_main(void *arg)
{
    struct cli_writeback *w = arg;
    size_t done = 0;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->stop && w->upto == done)
            pthread_cond_wait(&w->wake, &w->lock);
        if (w->stop)
            break;
        const size_t upto = w->upto;
        pthread_mutex_unlock(&w->lock);
#ifdef SYNC_FILE_RANGE_WRITE
        (void)sync_file_range(w->fd, (off_t)done, (off_t)(upto - done), SYNC_FILE_RANGE_WRITE);
#endif
        done = upto;
        pthread_mutex_lock(&w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* Starts m's writeback thread; without one (no memory, no thread) the
 * final sync writes everything. */
static void writeback_start(cli_mapped_out *m)
{
    struct cli_writeback *w = calloc(1, sizeof *w);
    if (!w)
        return;
    w->fd = m->fd;
    if (pthread_mutex_init(&w->lock, NULL) != 0) {
        free(w);
        return;
    }
    if (pthread_cond_init(&w->wake, NULL) != 0) {
        pthread_mutex_destroy(&w->lock);
        free(w);
        return;
    }
    if (cli_thread_start(&w->thread, writeback_main, w) != 0) {
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return;
    }
    m->wb = w;
}

/* Asks m's writeback thread to start writing file bytes [0, upto). */
static void writeback_ask(cli_mapped_out *m, size_t upto)
{
    struct cli_writeback *w = m->wb;
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    if (upto > w->upto) {
        w->upto = upto;
        pthread_cond_signal(&w->wake);
    }
    pthread_mutex_unlock(&w->lock);
}

/* Ends m's writeback thread (after the call it is in, if any). */
static void writeback_stop(cli_mapped_out *m)
{
    struct cli_writeback *w = m->wb;
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w);
    m->wb = NULL;
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
     * link; a dangling link, and an existing target that is not a regular
     * file, are refused */
    struct stat sb;
    if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode) && !(m->target = realpath(path, NULL))) {
        int e = errno;
        if (e == ENOMEM)
            return cli_msg(msg, CLI_RESOURCE, "out of memory");
        return cli_msg(msg, CLI_RESOURCE, "cannot save '%s': it is a symbolic link %s", path,
                       e == ENOENT
                           ? "to a file that does not exist; a dangling link is not "
                             "written through (create the file it names, or remove the link)"
                           : "that cannot be followed");
    }
    if (!m->target && !(m->target = strdup(path)))
        return cli_msg(msg, CLI_RESOURCE, "out of memory");
    struct stat old;
    const int replaces = stat(m->target, &old) == 0;
    if (replaces && !S_ISREG(old.st_mode)) {
        cli_map_output_discard(m);
        return cli_msg(msg, CLI_RESOURCE,
                       "cannot save '%s': it exists and is not a regular "
                       "file",
                       path);
    }
    const size_t tmp_size = strlen(m->target) + 9;
    if (!(m->tmp = malloc(tmp_size))) {
        cli_map_output_discard(m);
        return cli_msg(msg, CLI_RESOURCE, "out of memory");
    }
    /* unnamed where possible; with the owner and mode of the file replaced */
    if ((m->fd = convolve_temp_file_open(m->target, 0, m->tmp, tmp_size)) < 0) {
        int e = errno;
        cli_map_output_discard(m);
        return cli_msg(msg, CLI_RESOURCE,
                       "cannot save '%s': cannot create a file in its "
                       "directory: %s",
                       path, strerror(e));
    }
    if ((m->named = m->tmp[0] != '\0'))
        cli_signals_temp_path(m->tmp);
    int e = 0;
    /* reserve the blocks now: a full disk is an error here, not a SIGBUS
     * while writing through the mapping */
    if (e == 0 && (e = posix_fallocate(m->fd, 0, (off_t)m->map_bytes)) != 0 &&
        (e == EOPNOTSUPP || e == EINVAL)) /* a file system without it */
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
        return cli_msg(msg, CLI_RESOURCE, "cannot save '%s': cannot map it into memory: %s", path,
                       strerror(e));
    }
    m->map = p;
    m->data = (unsigned char *)p + hlen;
    m->path = path;
    writeback_start(m);
    watch_range(MAP_OUT, p, m->map_bytes);
    return CLI_OK;
}

/* Drops the mapping's pages of file bytes [*done, upto) (whole pages
 * only), and again those of the range before, [*last, *done): a slab that
 * reads rows of the one before (the filter's halo) maps them again, and
 * where the page cache holds the file in large folios, a whole folio of
 * up to 2 MiB at a time. Returns the bytes newly given back, from the old
 * *done on (0: none). */
static size_t give_back(void *map, size_t *last, size_t *done, size_t upto)
{
    upto -= upto % page_size();
    if (!map || upto <= *done)
        return 0;
    (void)madvise((unsigned char *)map + *last, upto - *last, MADV_DONTNEED);
    const size_t n = upto - *done;
    *last = *done;
    *done = upto;
    return n;
}

void cli_mapped_release(cli_mapped_in *in, cli_mapped_out *out, size_t rows_done, size_t rows_total)
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
        size_t n = give_back(in->map, &in->last, &in->released, upto);
        /* the page cache's copy too, of an input larger than half the
         * memory; one that fits stays cached for the next program to read
         * it (or the next run) */
        if (n && in->drop_cache)
            (void)posix_fadvise(in->fd, (off_t)(in->released - n), (off_t)n, POSIX_FADV_DONTNEED);
    }
    if (out && out->map) {
        size_t upto = out->data_offset +
                      (size_t)((double)out->data_bytes * ((double)rows_done / (double)rows_total));
        /* written pages stay dirty in the page cache; the writeback thread
         * starts writing them */
        if (give_back(out->map, &out->last, &out->released, upto))
            writeback_ask(out, out->released);
    }
}

/* ---- the output faulted in ahead of a GPU run ------------------------------ */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older headers lack it */
#endif

/* A populating thread: 2 MiB chunks taken in turn. */
static void *populate_chunks(void *arg)
{
    cli_populate *p = arg;
    const size_t chunk = (size_t)2 << 20;
    for (;;) {
        size_t off = atomic_fetch_add(&p->next, chunk);
        if (off >= p->bytes)
            return NULL;
        size_t n = p->bytes - off < chunk ? p->bytes - off : chunk;
        unsigned char *lo = p->begin + off;
        /* a kernel without MADV_POPULATE_WRITE refuses it (EINVAL): the
         * run's own faults then take the pages, as they would have */
        if (madvise(lo, n, MADV_POPULATE_WRITE) != 0 && errno == EINVAL)
            return NULL;
    }
}

void cli_populate_start(cli_populate *p, cli_mapped_out *m)
{
    p->threads = 0;
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (!m->map || m->map_bytes > CLI_MAPPED_DEVICE_BUDGET || over_memory_share(m->map_bytes, 16))
        return;
    p->begin = m->map; /* page-aligned: the header's page too, written already */
    p->bytes = m->map_bytes;
    atomic_init(&p->next, 0);
    /* one core left to the caller, which starts CUDA meanwhile */
    int want = cpus > 1 ? (int)cpus - 1 : 1;
    want = want < CLI_POPULATE_THREADS ? want : CLI_POPULATE_THREADS;
    for (int i = 0; i < want; i++) {
        if (cli_thread_start(&p->thread[p->threads], populate_chunks, p) != 0)
            break;
        p->threads++;
    }
}

void cli_populate_end(cli_populate *p, int finish)
{
    if (!finish && p->threads)
        atomic_store(&p->next, p->bytes);
    for (int i = 0; i < p->threads; i++)
        pthread_join(p->thread[i], NULL);
    p->threads = 0;
}

/* Unmaps m's output, no longer watched. */
static void unmap_output(cli_mapped_out *m)
{
    if (m->map) {
        unwatch_range(MAP_OUT);
        munmap(m->map, m->map_bytes);
        m->map = NULL;
    }
}

int cli_map_output_commit(cli_mapped_out *m, char *msg)
{
    writeback_stop(m);
    const char *step = "writing";
    int ok = msync(m->map, m->map_bytes, MS_SYNC) == 0;
    int e = errno;
    unmap_output(m);
    if (ok) {
        step = "syncing";
        ok = fsync(m->fd) == 0;
        e = errno;
    }
    if (ok && !m->named) {
        step = "naming the temporary file for";
        ok = convolve_temp_file_name(m->fd, m->target, m->tmp, strlen(m->target) + 9) == 0;
        if (ok) {
            m->named = 1;
            cli_signals_temp_path(m->tmp);
        }
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
    cli_signals_temp_path(NULL);
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
    writeback_stop(m);
    unmap_output(m);
    if (m->fd >= 0)
        close(m->fd);
    if (m->named) {
        cli_signals_temp_path(NULL);
        unlink(m->tmp);
    }
    free(m->tmp);
    free(m->target);
    cli_mapped_out_init(m);
}
