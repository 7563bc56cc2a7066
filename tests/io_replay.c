/*
 * io_replay.c - loads every file named on the command line (or found in
 * the folders named) with each reader, and writes each loaded array's bytes
 * to /dev/null, so that valgrind (tests/valgrind_io.sh) reports any byte of
 * a result that no reader wrote ("write(buf) points to uninitialised
 * byte(s)"): what AddressSanitizer cannot see. Run on the fuzzers' corpora.
 * Prints the number of files and of loads that succeeded; exit 0 unless a
 * file cannot be read or a reader breaks its contract (a failure without a
 * message, an array set on failure).
 */
#include "convolve.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static size_t files, loads, faults;
static int devnull = -1;

static unsigned char *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        unsigned char *q = realloc(buf, cap * 2);
        if (!q) {
            free(buf);
            buf = NULL;
        }
        buf = q;
        cap *= 2;
    }
    fclose(f);
    *size = n;
    return buf;
}

static void replay_file(convolve_context *ctx, const char *path)
{
    size_t size = 0;
    unsigned char *data = read_all(path, &size);
    if (!data) {
        fprintf(stderr, "io_replay: cannot read '%s'\n", path);
        faults++;
        return;
    }
    files++;
    static const convolve_format formats[] = {
        CONVOLVE_FORMAT_AUTO, CONVOLVE_FORMAT_NPY,  CONVOLVE_FORMAT_PNG, CONVOLVE_FORMAT_JPEG,
        CONVOLVE_FORMAT_PNM,  CONVOLVE_FORMAT_TEXT, CONVOLVE_FORMAT_TIFF};
    for (size_t k = 0; k < sizeof formats / sizeof *formats; k++) {
        convolve_array *a = NULL;
        convolve_status st = convolve_array_load_memory(ctx, &a, data, size, formats[k]);
        if (st == CONVOLVE_OK && a) {
            loads++;
            /* valgrind checks every byte handed to write(2) */
            if (write(devnull, convolve_array_const_data(a), convolve_array_bytes(a)) < 0)
                perror("io_replay: write");
        } else if (st == CONVOLVE_OK || a || !*convolve_last_error(ctx)) {
            fprintf(stderr, "io_replay: '%s' as format %d: status %s, array %p, message '%s'\n",
                    path, (int)formats[k], convolve_status_name(st), (void *)a,
                    convolve_last_error(ctx));
            faults++;
        }
        convolve_array_free(a);
    }
    free(data);
}

static void replay(convolve_context *ctx, const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        fprintf(stderr, "io_replay: no such file or folder '%s'\n", path);
        faults++;
        return;
    }
    if (!S_ISDIR(sb.st_mode)) {
        replay_file(ctx, path);
        return;
    }
    DIR *d = opendir(path);
    if (!d) {
        faults++;
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        size_t n = strlen(path) + strlen(e->d_name) + 2;
        char *sub = malloc(n);
        if (!sub)
            break;
        snprintf(sub, n, "%s/%s", path, e->d_name);
        replay(ctx, sub);
        free(sub);
    }
    closedir(d);
}

int main(int argc, char **argv)
{
    convolve_context *ctx = NULL;
    devnull = open("/dev/null", O_WRONLY);
    if (argc < 2 || devnull < 0 || convolve_context_create(&ctx) != CONVOLVE_OK) {
        fprintf(stderr, "usage: io_replay FILE|FOLDER...\n");
        return 2;
    }
    for (int i = 1; i < argc; i++)
        replay(ctx, argv[i]);
    convolve_context_free(ctx);
    close(devnull);
    printf("io_replay: %zu files, %zu loads, %zu faults\n", files, loads, faults);
    return faults ? 1 : 0;
}
