/*
 * cli_common.c - the tools library's small helpers: the error printer, the
 * exit code of a library status, strict number parsing, the clock, and the
 * word lists (modes, backends, types, strategies, named filters) that
 * options complete from, taken from the library so that they are never
 * typed twice.
 */
#include "cli.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double cli_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int vfail(const char *program, int code, const char *fmt, va_list ap)
{
    fprintf(stderr, "%s: ", program);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    return code;
}

int cli_error(const char *program, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(program, code, fmt, ap);
    va_end(ap);
    return code;
}

int cli_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail("convolve", code, fmt, ap);
    va_end(ap);
    return code;
}

int cli_exit_code(convolve_status st)
{
    switch (st) {
    case CONVOLVE_OK: return CLI_OK;
    case CONVOLVE_ERROR_OUT_OF_MEMORY:
    case CONVOLVE_ERROR_DEVICE:
    case CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY:
    case CONVOLVE_ERROR_INTERNAL: return CLI_RESOURCE;
    case CONVOLVE_ERROR_BACKEND_UNAVAILABLE:
        /* asking a CPU-only build for CUDA is a usage error; a GPU that
         * cannot be used is a device failure */
        return convolve_backend_built(CONVOLVE_BACKEND_CUDA) ? CLI_RESOURCE : CLI_BAD_INPUT;
    default: return CLI_BAD_INPUT;
    }
}

int cli_parse_long(const char *s, long lo, long hi, long *v)
{
    if (!*s)
        return 0;
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (*end || errno == ERANGE || x < lo || x > hi)
        return 0;
    *v = x;
    return 1;
}

int cli_parse_finite(const char *s, double *v)
{
    if (!*s)
        return 0;
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    /* overflow fails; underflow gives the nearest double (subnormal or 0) */
    if (*end || !isfinite(x) || (errno == ERANGE && fabs(x) > DBL_MIN))
        return 0;
    *v = x;
    return 1;
}

/* ---- word lists ---------------------------------------------------------------- */

const char *cli_words_mode(size_t i)
{
    return i < 16 ? convolve_mode_name((convolve_mode)i) : NULL;
}

const char *cli_words_backend(size_t i)
{
    return i < 16 ? convolve_backend_name((convolve_backend)i) : NULL;
}

const char *cli_words_dtype(size_t i)
{
    return i < 16 ? convolve_dtype_name((convolve_dtype)i) : NULL;
}

/* "auto", then the names of the strategies in the order the library lists
 * them, each once (a name may serve on both backends). */
const char *cli_words_strategy(size_t i)
{
    if (i == 0)
        return "auto";
    size_t n = convolve_strategy_count(), seen = 0;
    for (size_t k = 0; k < n; k++) {
        convolve_strategy_info s, t;
        if (convolve_strategy_get(k, &s) != CONVOLVE_OK)
            continue;
        int repeat = 0;
        for (size_t j = 0; j < k && !repeat; j++)
            repeat = convolve_strategy_get(j, &t) == CONVOLVE_OK && !strcmp(t.name, s.name);
        if (!repeat && ++seen == i)
            return s.name;
    }
    return NULL;
}

/* "box:R", "gaussian:SIGMA", "identity", ...: the spec each takes. */
const char *cli_words_named_filter(size_t i)
{
    static char word[64];
    convolve_named_filter_info f;
    if (convolve_named_filter_get(i, &f) != CONVOLVE_OK)
        return NULL;
    snprintf(word, sizeof word, "%s%s%s", f.name, f.argument ? ":" : "",
             f.argument ? f.argument : "");
    return word;
}

/* The file extensions the library reads and writes. */
const char *cli_words_extension(size_t i)
{
    return convolve_format_extension(CONVOLVE_FORMAT_AUTO, i);
}
