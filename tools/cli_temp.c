/*
 * cli_temp.c - the temporary files of the command-line tools' outputs,
 * which replace OUTPUT only when complete: created in OUTPUT's folder (so
 * that a rename replaces it), unnamed (O_TMPFILE) where the file system
 * allows, so that a process killed before the end leaves nothing, else
 * under a fresh name ".BASE.XXXXXX"; named at the end; given the owner and
 * mode of the file they replace. `convolve` (cli_mapped.c) and convolve-mpi
 * (which needs a name from the start: MPI-IO opens by name) share them.
 * The library keeps its own for convolve_array_save (src/bytes.c): the
 * tools see only its public API, which offers arrays, not files.
 */
#define _GNU_SOURCE /* O_TMPFILE, linkat */

#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Sets tmp (strlen(target) + 9 bytes) to a name ".BASE.XXXXXX" beside
 * target, the attempt-th of a sequence that differs between processes. */
static void temp_name(const char *target, uint64_t seed, int attempt, char *tmp)
{
    static const char k_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const char *slash = strrchr(target, '/');
    size_t dirlen = slash ? (size_t)(slash - target) + 1 : 0;
    uint64_t r = seed + (uint64_t)attempt * 0xBF58476D1CE4E5B9ull;
    r ^= r >> 31;
    snprintf(tmp, strlen(target) + 9, "%.*s.%s.", (int)dirlen, target, target + dirlen);
    char *p = tmp + strlen(tmp);
    for (int i = 0; i < 6; i++, r /= 62)
        *p++ = k_chars[r % 62];
    *p = '\0';
}

static uint64_t temp_seed(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 32 ^
           (uint64_t)ts.tv_sec;
}

/* A file without a name in target's folder (O_TMPFILE), which a process
 * killed before it is named leaves nowhere; -1 where the file system or the
 * kernel has none, or /proc/self/fd cannot name it later. */
static int open_unnamed(const char *target)
{
#ifdef O_TMPFILE
    const char *slash = strrchr(target, '/');
    size_t dirlen = slash ? (size_t)(slash - target) + 1 : 0;
    char *dir = malloc(dirlen + 2), proc[64];
    if (!dir)
        return -1;
    snprintf(dir, dirlen + 2, "%.*s", (int)(dirlen ? dirlen : 1), dirlen ? target : ".");
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
    free(dir);
    if (fd < 0)
        return -1;
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    if (access(proc, F_OK) != 0) {
        close(fd);
        return -1;
    }
    return fd;
#else
    (void)target;
    return -1;
#endif
}

int cli_temp_create(const char *target, int need_name, char **tmp_out, int *named)
{
    char *tmp = malloc(strlen(target) + 9);
    if (!tmp) {
        errno = ENOMEM;
        return -1;
    }
    int fd = need_name ? -1 : open_unnamed(target);
    if (fd >= 0) {
        *tmp_out = tmp;
        *named = 0;
        return fd;
    }
    const uint64_t seed = temp_seed();
    for (int attempt = 0; attempt < 100; attempt++) {
        temp_name(target, seed, attempt, tmp);
        fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0) {
            *tmp_out = tmp;
            *named = 1;
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

int cli_temp_name(int fd, const char *target, char *tmp)
{
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    const uint64_t seed = temp_seed();
    for (int attempt = 0; attempt < 100; attempt++) {
        temp_name(target, seed, attempt, tmp);
        if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0)
            return 0;
        if (errno != EEXIST)
            return -1;
    }
    return -1;
}

int cli_temp_copy_owner(int fd, const struct stat *old)
{
    if (fchown(fd, old->st_uid, old->st_gid) != 0 &&
        (errno != EPERM || (fchown(fd, (uid_t)-1, old->st_gid) != 0 && errno != EPERM)))
        return -1;
    return fchmod(fd, old->st_mode & 07777) == 0 ? 0 : -1;
}
