/*
 * wisdom.c - the autotune's memory: per context, the fastest strategy
 * measured for each problem class (tune.c makes the keys), and the public
 * calls that count, forget, save and load it.
 *
 * Wisdom file: a first line "convolve-wisdom 1", then one line per class:
 *   KEY <TAB> STRATEGY <TAB> MEDIAN_MS
 * KEY is printable text without tabs.
 */
#include "wisdom.h"
#include "bytes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CVI_WISDOM_MAGIC "convolve-wisdom 1"
#define CVI_WISDOM_MAX_BYTES ((size_t)1 << 24)

typedef struct cvi_wisdom_entry {
    char key[CVI_WISDOM_KEY_SIZE];
    char strategy[CVI_WISDOM_NAME_SIZE];
    double ms;
} cvi_wisdom_entry;

struct cvi_wisdom {
    cvi_wisdom_entry *e;
    size_t n, cap;
};

void cvi_wisdom_free(struct cvi_wisdom *w)
{
    if (w) {
        free(w->e);
        free(w);
    }
}

static cvi_wisdom_entry *find(struct cvi_wisdom *w, const char *key)
{
    for (size_t i = 0; w && i < w->n; i++)
        if (!strcmp(w->e[i].key, key))
            return &w->e[i];
    return NULL;
}

/* A new entry at the end of w (growing it), or NULL when out of memory. */
static cvi_wisdom_entry *append(struct cvi_wisdom *w)
{
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 16;
        cvi_wisdom_entry *ne = realloc(w->e, cap * sizeof *ne);
        if (!ne)
            return NULL;
        w->e = ne;
        w->cap = cap;
    }
    return &w->e[w->n++];
}

static void set_entry(cvi_wisdom_entry *e, const char *key, const char *strategy, double ms)
{
    snprintf(e->key, sizeof e->key, "%s", key);
    snprintf(e->strategy, sizeof e->strategy, "%s", strategy);
    e->ms = ms;
}

int cvi_wisdom_remember(convolve_context *ctx, const char *key, const char *strategy, double ms)
{
    if (!ctx->wisdom && !(ctx->wisdom = calloc(1, sizeof *ctx->wisdom)))
        return 0;
    cvi_wisdom_entry *e = find(ctx->wisdom, key);
    if (!e && !(e = append(ctx->wisdom)))
        return 0;
    set_entry(e, key, strategy, ms);
    return 1;
}

const char *cvi_wisdom_lookup(const convolve_context *ctx, const char *key)
{
    const cvi_wisdom_entry *e = find(ctx->wisdom, key);
    return e ? e->strategy : NULL;
}

size_t convolve_wisdom_count(const convolve_context *ctx)
{
    return ctx && ctx->wisdom ? ctx->wisdom->n : 0;
}

void convolve_wisdom_forget(convolve_context *ctx)
{
    if (ctx) {
        cvi_wisdom_free(ctx->wisdom);
        ctx->wisdom = NULL;
    }
}

convolve_status convolve_wisdom_save(convolve_context *ctx, const char *path)
{
    if (!ctx || !path)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "convolve_wisdom_save: %s is NULL",
                         ctx ? "path" : "context");
    cvi_buf b = {0};
    int ok = cvi_buf_printf(&b, "%s\n", CVI_WISDOM_MAGIC);
    for (size_t i = 0; ok && ctx->wisdom && i < ctx->wisdom->n; i++) {
        const cvi_wisdom_entry *e = &ctx->wisdom->e[i];
        ok = cvi_buf_printf(&b, "%s\t%s\t%.6g\n", e->key, e->strategy, e->ms);
    }
    convolve_status st = ok ? cvi_write_file_atomic(ctx, path, b.data, b.size)
                            : cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory");
    cvi_buf_free(&b);
    return st == CONVOLVE_OK ? cvi_ok(ctx) : st;
}

/* Parses one "KEY\tSTRATEGY\tMS" line (NUL-terminated, no newline). */
static int parse_line(char *line, char **key, char **strategy, double *ms)
{
    char *t1 = strchr(line, '\t');
    if (!t1)
        return 0;
    char *t2 = strchr(t1 + 1, '\t');
    if (!t2 || strchr(t2 + 1, '\t'))
        return 0;
    *t1 = *t2 = '\0';
    *key = line;
    *strategy = t1 + 1;
    if (!**key || strlen(*key) >= CVI_WISDOM_KEY_SIZE || !**strategy ||
        strlen(*strategy) >= CVI_WISDOM_NAME_SIZE)
        return 0;
    for (const char *c = line; *c; c++)
        if ((unsigned char)*c < 32)
            return 0;
    for (const char *c = *strategy; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-' || *c == '_'))
            return 0;
    char *end;
    *ms = strtod(t2 + 1, &end);
    return end != t2 + 1 && *end == '\0' && *ms >= 0 && *ms < 1e12;
}

convolve_status convolve_wisdom_load(convolve_context *ctx, const char *path)
{
    if (!ctx || !path)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "convolve_wisdom_load: %s is NULL",
                         ctx ? "path" : "context");
    FILE *f = fopen(path, "rb");
    if (!f)
        return cvi_error(ctx, CONVOLVE_ERROR_IO, "cannot open wisdom file '%s'", path);
    char *text = malloc(CVI_WISDOM_MAX_BYTES + 1);
    if (!text) {
        fclose(f);
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory reading '%s'", path);
    }
    size_t size = fread(text, 1, CVI_WISDOM_MAX_BYTES + 1, f);
    int err = ferror(f);
    fclose(f);
    convolve_status st = CONVOLVE_OK;
    if (err)
        st = cvi_error(ctx, CONVOLVE_ERROR_IO, "cannot read wisdom file '%s'", path);
    else if (size > CVI_WISDOM_MAX_BYTES)
        st = cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "wisdom file '%s' is larger than %zu bytes",
                       path, CVI_WISDOM_MAX_BYTES);
    else if (memchr(text, '\0', size))
        st = cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "wisdom file '%s' holds a NUL byte", path);
    if (st != CONVOLVE_OK) {
        free(text);
        return st;
    }
    text[size] = '\0';
    /* parse everything first: a bad file leaves the wisdom as it was */
    struct cvi_wisdom staged = {0};
    char *line = text, *next;
    size_t lineno = 0;
    for (; *line; line = next) {
        lineno++;
        char *nl = strchr(line, '\n');
        next = nl ? nl + 1 : line + strlen(line);
        if (nl)
            *nl = '\0';
        if (lineno == 1) {
            if (strcmp(line, CVI_WISDOM_MAGIC) != 0) {
                st = cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                               "'%s' is not a wisdom file: its first line is not \"%s\"", path,
                               CVI_WISDOM_MAGIC);
                break;
            }
            continue;
        }
        if (!*line)
            continue;
        char *key, *strategy;
        double ms;
        if (!parse_line(line, &key, &strategy, &ms)) {
            st = cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                           "wisdom file '%s', line %zu: want KEY<TAB>STRATEGY<TAB>MILLISECONDS",
                           path, lineno);
            break;
        }
        cvi_wisdom_entry *e = append(&staged);
        if (!e) {
            st = cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for wisdom");
            break;
        }
        set_entry(e, key, strategy, ms);
    }
    if (st == CONVOLVE_OK && lineno == 0)
        st = cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "wisdom file '%s' is empty", path);
    for (size_t i = 0; st == CONVOLVE_OK && i < staged.n; i++)
        if (!cvi_wisdom_remember(ctx, staged.e[i].key, staged.e[i].strategy, staged.e[i].ms))
            st = cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for wisdom");
    free(staged.e);
    free(text);
    return st == CONVOLVE_OK ? cvi_ok(ctx) : st;
}
