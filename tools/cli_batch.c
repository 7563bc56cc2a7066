/*
 * cli_batch.c - `convolve INPUT... --output-dir DIR`: many files with one
 * command. Names each output (DIR/ + the input's name, --suffix, --format),
 * refuses a command whose outputs collide (by name, or one file through a
 * symbolic link) or would replace an input, checks the output folder, the
 * filter and the wisdom file once, then lets a pool of worker threads
 * (--jobs) take the files in order. Each worker has its own
 * library context (a context serves one thread at a time), its own filters
 * and one plan per distinct pair of layouts, reused for every file of that
 * layout. GPU work goes through one shared context under a lock (the GPU
 * lane): with --backend cuda every convolution, with --backend auto (in a
 * build with CUDA) the layouts the planner gives the GPU; the workers load
 * and save in parallel. A file that fails prints one line naming it, writes
 * nothing, and does not stop the others; a summary line ends the run.
 */
#define _GNU_SOURCE /* sched_getaffinity */

#include "convolve_cli.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One file to convolve. */
typedef struct member {
    const char *input;
    char *output;           /* DIR/NAME, malloc'd */
    convolve_format format; /* the output's */
} member;

/* A plan for one pair of layouts (element type, dimensions, extents, channels). */
typedef struct plan_entry {
    convolve_layout in, out;
    convolve_plan *plan; /* NULL in the GPU lane: the planner left these layouts to the CPU */
    struct plan_entry *next;
} plan_entry;

/* A context and what was made from it: a worker's, or the GPU lane's. */
typedef struct engine {
    struct batch *b;
    convolve_context *ctx;
    convolve_filter *filter[CONVOLVE_MAX_DIMS]; /* by ndim - 1, made on first use */
    convolve_options opt[CONVOLVE_MAX_DIMS];    /* with that ndim's origins */
    plan_entry *plans;
    size_t wisdom_start; /* wisdom entries after loading --wisdom */
    pthread_t thread;
} engine;

enum {
    LANE_NONE, /* every convolution on the workers (CPU backend, or no CUDA built) */
    LANE_ALL,  /* every convolution in the GPU lane (--backend cuda) */
    LANE_AUTO  /* the lane's planner decides per layout (--backend auto, CUDA built) */
};

typedef struct batch {
    const cli_run_args *a;
    const cli_weights *w; /* NULL for --filter */
    member *m;
    size_t n;
    int threads; /* CPU threads of each plan */
    int lane_mode;
    engine lane;
    pthread_mutex_t lane_lock; /* held while the lane's context is in use */
    pthread_mutex_t lock;      /* guards the counters below */
    size_t next, done, failed, plans;
    int worst;
} batch;

/* The CPUs this process may run on. */
static int cpu_count(void)
{
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 4096 ? 4096 : (int)n;
}

/* "npy, png, jpg, ...": the extensions --format takes. */
static const char *extension_list(void)
{
    static char list[256];
    list[0] = '\0';
    for (size_t i = 0; cli_words_extension(i); i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                 cli_words_extension(i));
    return list;
}

/* ---- the list of inputs ------------------------------------------------------ */

/* Reads all of --inputs-from (a file, or standard input for "-") into *buf,
 * NUL-terminated; *len excludes the terminator. */
static int read_list(const char *path, char **buf, size_t *len)
{
    int is_stdin = !strcmp(path, "-");
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f)
        return cli_fail(CLI_BAD_INPUT, "--inputs-from '%s': %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *p = malloc(cap);
    int rc = p ? CLI_OK : cli_fail(CLI_RESOURCE, "out of memory");
    while (rc == CLI_OK) {
        if (n + 1 == cap) {
            char *q = cap > SIZE_MAX / 2 ? NULL : realloc(p, cap * 2);
            if (!q) {
                rc = cli_fail(CLI_RESOURCE, "out of memory");
                break;
            }
            p = q;
            cap *= 2;
        }
        size_t got = fread(p + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f))
                rc = cli_fail(CLI_BAD_INPUT, "--inputs-from '%s': %s", path,
                              errno ? strerror(errno) : "read error");
            break;
        }
    }
    if (!is_stdin)
        fclose(f);
    if (rc != CLI_OK) {
        free(p);
        return rc;
    }
    p[n] = '\0';
    *buf = p;
    *len = n;
    return CLI_OK;
}

/* Appends the names in list[0..len-1] (NUL-separated if it holds a NUL, else
 * one a line; empty ones skipped) to *names; the names point into list. */
static int split_list(char *list, size_t len, const char ***names, size_t *n, size_t *cap)
{
    char sep = memchr(list, '\0', len) ? '\0' : '\n';
    for (size_t i = 0; i < len;) {
        char *start = list + i, *end = memchr(start, sep, len - i);
        size_t k = end ? (size_t)(end - start) : len - i;
        start[k] = '\0';
        i += k + 1;
        if (!k)
            continue;
        if (*n == *cap) {
            size_t c = *cap ? 2 * *cap : 64;
            const char **p = realloc(*names, c * sizeof *p);
            if (!p)
                return cli_fail(CLI_RESOURCE, "out of memory");
            *names = p;
            *cap = c;
        }
        (*names)[(*n)++] = start;
    }
    return CLI_OK;
}

/* ---- naming and the checks before any work -------------------------------------- */

/* DIR/NAME for input: NAME is the input's file name with --suffix before its
 * extension and the extension replaced by --format's. */
static int name_output(const cli_run_args *a, member *m)
{
    const char *input = m->input;
    if (!*input)
        return cli_fail(CLI_BAD_INPUT, "empty file name among the INPUTs");
    if (!strcmp(input, "-"))
        return cli_fail(CLI_BAD_INPUT,
                        "'-' cannot be one of many INPUTs (standard input has no "
                        "name to give its output); name the files, or list their names on "
                        "standard input with --inputs-from -");
    const char *slash = strrchr(input, '/');
    const char *base = slash ? slash + 1 : input;
    if (!*base)
        return cli_fail(CLI_BAD_INPUT, "INPUT '%s' ends with '/': give files, not folders", input);
    const char *dot = strrchr(base, '.');
    int has_ext = dot && dot != base; /* ".name" has none */
    size_t stem = has_ext ? (size_t)(dot - base) : strlen(base);
    const char *ext = a->format ? a->format : has_ext ? dot + 1 : "";
    const char *suffix = a->suffix ? a->suffix : "";
    const char *dir = a->output_dir;
    size_t dl = strlen(dir);
    const char *sep = dir[dl - 1] == '/' ? "" : "/";
    size_t len = dl + 1 + stem + strlen(suffix) + 1 + strlen(ext) + 1;
    if (!(m->output = malloc(len)))
        return cli_fail(CLI_RESOURCE, "out of memory");
    snprintf(m->output, len, "%s%s%.*s%s%s%s", dir, sep, (int)stem, base, suffix, *ext ? "." : "",
             ext);
    m->format = convolve_format_from_path(m->output);
    if (m->format == CONVOLVE_FORMAT_AUTO)
        return cli_fail(CLI_BAD_INPUT,
                        "cannot tell the output format for INPUT '%s': %s; give "
                        "--format EXT (%s)",
                        input,
                        *ext ? "its extension is not one convolve "
                               "writes"
                             : "its name has no extension",
                        extension_list());
    return CLI_OK;
}

/* A file the outputs must not replace: an input, or the weights; by device
 * and inode when it exists, and by its folder's real path and its name (a
 * missing input must not read another file's result). */
typedef struct file_id {
    dev_t dev;
    ino_t ino;
    char *name;   /* realpath(folder) + "/" + base name, malloc'd */
    size_t index; /* the member; SIZE_MAX for the weights file */
} file_id;

static int by_inode(const void *x, const void *y)
{
    const file_id *a = x, *b = y;
    if (a->dev != b->dev)
        return a->dev < b->dev ? -1 : 1;
    return a->ino != b->ino ? (a->ino < b->ino ? -1 : 1) : 0;
}

static int by_name(const void *x, const void *y)
{
    return strcmp(((const file_id *)x)->name, ((const file_id *)y)->name);
}

/* path with its folder resolved: "dir/../x.png" and "./x.png" name the same
 * file whether or not it exists. NULL when out of memory. */
static char *canonical_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t dl = slash ? (size_t)(slash - path) : 0;
    char *dir = malloc(dl + 2);
    if (!dir)
        return NULL;
    if (slash)
        snprintf(dir, dl + 2, "%.*s", (int)(dl ? dl : 1), dl ? path : "/");
    else
        strcpy(dir, ".");
    char *real = realpath(dir, NULL);
    const char *head = real ? real : dir;
    size_t len = strlen(head) + 1 + strlen(base) + 1;
    char *name = malloc(len);
    if (name)
        snprintf(name, len, "%s/%s", head, base);
    free(real);
    free(dir);
    return name;
}

/* The file that writing path replaces: path with its symbolic links
 * followed, a dangling one's too (as far as 40 links), then its folder
 * resolved (canonical_name). malloc'd; NULL when out of memory. */
static char *written_file(const char *path)
{
    char *cur = strdup(path);
    for (int hops = 0; cur && hops < 40; hops++) {
        struct stat st;
        char to[4096];
        ssize_t n;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode) ||
            (n = readlink(cur, to, sizeof to - 1)) <= 0)
            break;
        to[n] = '\0';
        const char *slash = strrchr(cur, '/');
        size_t dl = to[0] == '/' || !slash ? 0 : (size_t)(slash - cur) + 1;
        char *next = malloc(dl + (size_t)n + 1);
        if (next)
            snprintf(next, dl + (size_t)n + 1, "%.*s%s", (int)dl, cur, to);
        free(cur);
        cur = next;
    }
    char *name = cur ? canonical_name(cur) : NULL;
    free(cur);
    return name;
}

/* A member and the file its output replaces. */
typedef struct written {
    const member *m;
    char *file;
} written;

static int by_file(const void *x, const void *y)
{
    const written *a = x, *b = y;
    int c = strcmp(a->file, b->file);
    return c ? c : (a->m > b->m) - (a->m < b->m);
}

/* Refuses two inputs with one output: the same name, or names that are one
 * file (a symbolic link among the outputs). */
static int check_collisions(member *m, size_t n)
{
    if (n < 2)
        return CLI_OK;
    written *w = calloc(n, sizeof *w);
    int rc = w ? CLI_OK : cli_fail(CLI_RESOURCE, "out of memory");
    for (size_t i = 0; i < n && rc == CLI_OK; i++) {
        w[i].m = &m[i];
        if (!(w[i].file = written_file(m[i].output)))
            rc = cli_fail(CLI_RESOURCE, "out of memory");
    }
    if (rc == CLI_OK)
        qsort(w, n, sizeof *w, by_file);
    for (size_t i = 1; i < n && rc == CLI_OK; i++) {
        const member *x = w[i - 1].m, *y = w[i].m; /* x given first */
        if (strcmp(w[i - 1].file, w[i].file))
            continue;
        if (!strcmp(x->output, y->output) && !strcmp(x->input, y->input))
            rc = cli_fail(CLI_BAD_INPUT, "INPUT '%s' is given twice", y->input);
        else if (!strcmp(x->output, y->output))
            rc = cli_fail(CLI_BAD_INPUT,
                          "INPUTs '%s' and '%s' would both be written to '%s': "
                          "rename one, or convolve them in separate runs",
                          x->input, y->input, y->output);
        else
            rc = cli_fail(CLI_BAD_INPUT,
                          "INPUTs '%s' and '%s' would both be written to '%s' "
                          "('%s' and '%s' are one file, through a symbolic link): rename one, "
                          "or convolve them in separate runs",
                          x->input, y->input, w[i].file, x->output, y->output);
    }
    for (size_t i = 0; w && i < n; i++)
        free(w[i].file);
    free(w);
    return rc;
}

/* The first entry of list[0..k-1] equal to key under cmp that member
 * self's output may not replace, or NULL. */
static const file_id *find_blocking(const file_id *list, size_t k, const file_id *key,
                                    int (*cmp)(const void *, const void *), size_t self, int force)
{
    const file_id *hit = k ? bsearch(key, list, k, sizeof *hit, cmp) : NULL;
    if (!hit)
        return NULL;
    while (hit > list && cmp(hit - 1, key) == 0)
        hit--;
    for (; hit < list + k && cmp(hit, key) == 0; hit++)
        if (!(force && (hit->index == self || hit->index == SIZE_MAX)))
            return hit;
    return NULL;
}

/* Refuses an output that is an input or the weights file; with --force a
 * result may replace its own input, and the weights, as in the single-file
 * form. */
static int check_replacements(const cli_run_args *a, member *m, size_t n)
{
    size_t total = n + (a->weights != NULL), k = 0, named = 0;
    file_id *ids = calloc(total, sizeof *ids), *names = calloc(total, sizeof *names);
    char *canon = NULL;
    int rc = ids && names ? CLI_OK : cli_fail(CLI_RESOURCE, "out of memory");
    struct stat st;
    for (size_t i = 0; i < total && rc == CLI_OK; i++) {
        const char *path = i < n ? m[i].input : a->weights;
        file_id id = {0, 0, canonical_name(path), i < n ? i : SIZE_MAX};
        if (!id.name) {
            rc = cli_fail(CLI_RESOURCE, "out of memory");
            break;
        }
        names[named++] = id;
        if (stat(path, &st) == 0) {
            id.dev = st.st_dev;
            id.ino = st.st_ino;
            ids[k++] = id;
        }
    }
    if (rc == CLI_OK) {
        qsort(ids, k, sizeof *ids, by_inode);
        qsort(names, named, sizeof *names, by_name);
    }
    for (size_t i = 0; i < n && rc == CLI_OK; i++) {
        free(canon);
        if (!(canon = canonical_name(m[i].output))) {
            rc = cli_fail(CLI_RESOURCE, "out of memory");
            break;
        }
        /* by inode among the existing files, and by name among all */
        file_id key = {0, 0, canon, 0};
        const file_id *hit = NULL;
        if (stat(m[i].output, &st) == 0) {
            key.dev = st.st_dev;
            key.ino = st.st_ino;
            hit = find_blocking(ids, k, &key, by_inode, i, a->force);
        }
        if (!hit)
            hit = find_blocking(names, named, &key, by_name, i, a->force);
        if (!hit)
            continue;
        if (hit->index == SIZE_MAX)
            rc = cli_fail(CLI_BAD_INPUT,
                          "'%s', the result of '%s', would replace the "
                          "weights file; choose another --output-dir or --suffix, or pass "
                          "--force to replace it",
                          m[i].output, m[i].input);
        else if (hit->index == i)
            rc = cli_fail(CLI_BAD_INPUT,
                          "the result of '%s' would replace it (as '%s'); "
                          "give --suffix or another --output-dir, or pass --force to replace "
                          "each input by its own result",
                          m[i].input, m[i].output);
        else
            rc = cli_fail(CLI_BAD_INPUT,
                          "'%s', the result of '%s', would replace the INPUT "
                          "'%s'; give another --suffix or --output-dir",
                          m[i].output, m[i].input, m[hit->index].input);
    }
    free(canon);
    for (size_t i = 0; names && i < named; i++)
        free(names[i].name);
    free(names);
    free(ids);
    return rc;
}

/* The output folder exists, is a folder, and can take new files. Failing
 * here is what writing into it would be: exit 2. */
static int check_output_dir(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return cli_fail(CLI_RESOURCE, "--output-dir '%s': %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cli_fail(CLI_RESOURCE, "--output-dir '%s': Not a directory", dir);
    if (access(dir, W_OK | X_OK) != 0)
        return cli_fail(CLI_RESOURCE, "--output-dir '%s': %s", dir, strerror(errno));
    return CLI_OK;
}

/* A --filter that no dimensionality takes (an unknown name, a bad argument)
 * fails the command before any work; one that some inputs cannot take (a
 * 2-D filter, 3-D input) fails those inputs. */
static int check_named_filter(convolve_context *ctx, const char *spec)
{
    char msg[CLI_MSG_SIZE] = "";
    int code = CLI_OK;
    for (int ndim = CONVOLVE_MAX_DIMS; ndim >= 1; ndim--) {
        convolve_filter *f = NULL;
        convolve_status st = convolve_filter_create_named(ctx, &f, spec, ndim);
        convolve_filter_free(f);
        if (st == CONVOLVE_OK)
            return CLI_OK;
        if (ndim == 2 || !code) { /* the 2-D message: images are the common case */
            code = cli_exit_code(st);
            snprintf(msg, sizeof msg, "%s", convolve_last_error(ctx));
        }
    }
    return cli_fail(code, "%s", msg);
}

/* ---- the workers ---------------------------------------------------------------- */

static int same_layout(const convolve_layout *x, const convolve_layout *y)
{
    if (x->dtype != y->dtype || x->ndim != y->ndim || x->channels != y->channels)
        return 0;
    for (int k = 0; k < x->ndim; k++)
        if (x->shape[k] != y->shape[k])
            return 0;
    return 1;
}

static plan_entry *find_plan(engine *e, const convolve_layout *in, const convolve_layout *out)
{
    for (plan_entry *p = e->plans; p; p = p->next)
        if (same_layout(&p->in, in) && same_layout(&p->out, out))
            return p;
    return NULL;
}

/* Keeps plan (NULL: none, in the lane) for the layouts; frees it on failure. */
static int add_plan(engine *e, const convolve_layout *in, const convolve_layout *out,
                    convolve_plan *plan, plan_entry **entry, char *msg)
{
    plan_entry *p = malloc(sizeof *p);
    if (!p) {
        convolve_plan_free(plan);
        return cli_msg(msg, CLI_RESOURCE, "out of memory");
    }
    *p = (plan_entry){*in, *out, plan, e->plans};
    e->plans = p;
    *entry = p;
    if (plan) {
        pthread_mutex_lock(&e->b->lock);
        e->b->plans++;
        pthread_mutex_unlock(&e->b->lock);
    }
    return CLI_OK;
}

/* The engine's filter and options for ndim, made on first use. */
static int engine_filter(engine *e, int ndim, char *msg)
{
    int k = ndim - 1;
    if (e->filter[k])
        return CLI_OK;
    int rc = cli_filter_for(e->ctx, e->b->a, e->b->w, ndim, &e->filter[k], &e->opt[k], msg);
    if (rc == CLI_OK)
        e->opt[k].threads = e->b->threads;
    return rc;
}

static int plan_error(engine *e, convolve_status st, char *msg)
{
    return cli_msg(msg, cli_exit_code(st), "%s", convolve_last_error(e->ctx));
}

/* In the GPU lane, its lock held: the lane's entry for the layouts, whose
 * plan is NULL when the planner (backend auto) leaves them to the CPU. */
static int lane_plan(batch *b, const convolve_layout *in, const convolve_layout *out,
                     plan_entry **entry, char *msg)
{
    engine *e = &b->lane;
    if ((*entry = find_plan(e, in, out)))
        return CLI_OK;
    int rc = engine_filter(e, in->ndim, msg);
    if (rc != CLI_OK)
        return rc;
    const convolve_filter *f = e->filter[in->ndim - 1];
    convolve_options o = e->opt[in->ndim - 1];
    convolve_plan *plan = NULL;
    convolve_status st;
    if (b->lane_mode == LANE_AUTO && o.autotune) {
        /* which backend, without timing; then time that backend's strategies */
        convolve_options quick = o;
        quick.autotune = 0;
        if ((st = convolve_plan_create(e->ctx, &plan, in, out, f, &quick)) != CONVOLVE_OK)
            return plan_error(e, st, msg);
        if (convolve_plan_backend(plan) == CONVOLVE_BACKEND_CUDA) {
            convolve_plan_free(plan);
            plan = NULL;
            if ((st = convolve_plan_create(e->ctx, &plan, in, out, f, &o)) != CONVOLVE_OK)
                return plan_error(e, st, msg);
        }
    } else if ((st = convolve_plan_create(e->ctx, &plan, in, out, f, &o)) != CONVOLVE_OK) {
        return plan_error(e, st, msg);
    }
    if (b->lane_mode == LANE_AUTO && convolve_plan_backend(plan) != CONVOLVE_BACKEND_CUDA) {
        convolve_plan_free(plan);
        plan = NULL;
    }
    return add_plan(e, in, out, plan, entry, msg);
}

/* out = filter (*) in: in the GPU lane when it takes these layouts, else on
 * the worker's own plan. */
static int convolve_arrays(engine *e, const convolve_array *in, convolve_array *out, char *msg)
{
    batch *b = e->b;
    const convolve_layout *li = convolve_array_layout(in), *lo = convolve_array_layout(out);
    convolve_status st;
    if (b->lane_mode != LANE_NONE) {
        plan_entry *pe = NULL;
        pthread_mutex_lock(&b->lane_lock);
        int rc = lane_plan(b, li, lo, &pe, msg);
        if (rc == CLI_OK && pe->plan) {
            st = convolve_execute(pe->plan, convolve_array_const_data(in),
                                  convolve_array_data(out));
            if (st != CONVOLVE_OK)
                rc = plan_error(&b->lane, st, msg);
            pthread_mutex_unlock(&b->lane_lock);
            return rc;
        }
        pthread_mutex_unlock(&b->lane_lock);
        if (rc != CLI_OK)
            return rc;
    }
    plan_entry *pe = find_plan(e, li, lo);
    if (!pe) {
        convolve_options o = e->opt[li->ndim - 1];
        if (b->lane_mode == LANE_AUTO) /* the lane's planner gave these layouts to the CPU */
            o.backend = CONVOLVE_BACKEND_CPU;
        convolve_plan *plan = NULL;
        if ((st = convolve_plan_create(e->ctx, &plan, li, lo, e->filter[li->ndim - 1], &o)) !=
            CONVOLVE_OK)
            return plan_error(e, st, msg);
        int rc = add_plan(e, li, lo, plan, &pe, msg);
        if (rc != CLI_OK)
            return rc;
    }
    st = convolve_execute(pe->plan, convolve_array_const_data(in), convolve_array_data(out));
    return st == CONVOLVE_OK ? CLI_OK : plan_error(e, st, msg);
}

/* One file, in the single-file form's order of checks: input, filter, what
 * the output format holds, then plan, convolve and save (atomically). */
static int convolve_member(engine *e, const member *m, char *msg)
{
    const cli_run_args *a = e->b->a;
    convolve_array *in = NULL, *out = NULL;
    convolve_status st = convolve_array_load(e->ctx, &in, m->input, CONVOLVE_FORMAT_AUTO);
    if (st != CONVOLVE_OK)
        return cli_msg(msg, cli_exit_code(st), "%s", convolve_last_error(e->ctx));
    const convolve_layout *L = convolve_array_layout(in);
    convolve_dtype odt = cli_output_dtype(a, m->format, L->dtype);
    int rc = engine_filter(e, L->ndim, msg);
    if (rc == CLI_OK)
        rc = cli_check_output(e->ctx, m->output, m->format, L, odt, msg);
    if (rc == CLI_OK && (st = convolve_array_create(e->ctx, &out, odt, L->ndim, L->shape,
                                                    L->channels)) != CONVOLVE_OK)
        rc = cli_msg(msg, cli_exit_code(st), "%s", convolve_last_error(e->ctx));
    if (rc == CLI_OK)
        rc = convolve_arrays(e, in, out, msg);
    if (rc == CLI_OK &&
        (st = convolve_array_save(e->ctx, out, m->output, m->format, a->quality)) != CONVOLVE_OK)
        rc = cli_msg(msg, st == CONVOLVE_ERROR_IO ? CLI_RESOURCE : cli_exit_code(st), "%s",
                     convolve_last_error(e->ctx));
    convolve_array_free(out);
    convolve_array_free(in);
    return rc;
}

/* A worker: takes the next file until none is left. */
static void *work(void *arg)
{
    engine *e = arg;
    batch *b = e->b;
    char msg[CLI_MSG_SIZE];
    for (;;) {
        pthread_mutex_lock(&b->lock);
        size_t i = b->next < b->n ? b->next++ : b->n;
        pthread_mutex_unlock(&b->lock);
        if (i == b->n)
            return NULL;
        msg[0] = '\0';
        int rc = convolve_member(e, &b->m[i], msg);
        if (rc != CLI_OK) { /* one line, not interleaved with another worker's */
            flockfile(stderr);
            fprintf(stderr, "convolve: %s: %s\n", b->m[i].input, msg);
            funlockfile(stderr);
        }
        pthread_mutex_lock(&b->lock);
        if (rc == CLI_OK)
            b->done++;
        else {
            b->failed++;
            b->worst = rc > b->worst ? rc : b->worst;
        }
        pthread_mutex_unlock(&b->lock);
    }
}

static int engine_init(engine *e, batch *b)
{
    memset(e, 0, sizeof *e);
    e->b = b;
    if (convolve_context_create(&e->ctx) != CONVOLVE_OK)
        return cli_fail(CLI_RESOURCE, "out of memory");
    cli_context_settings(e->ctx, b->a);
    convolve_status st;
    if (b->a->wisdom && access(b->a->wisdom, F_OK) == 0 &&
        (st = convolve_wisdom_load(e->ctx, b->a->wisdom)) != CONVOLVE_OK)
        return cli_fail(cli_exit_code(st), "--wisdom: %s", convolve_last_error(e->ctx));
    e->wisdom_start = convolve_wisdom_count(e->ctx);
    return CLI_OK;
}

/* Adds what the engine measured to the --wisdom file (with what the file
 * holds now, which other engines may have added). */
static int engine_save_wisdom(engine *e)
{
    if (!e->ctx) /* never made (the lane when not used) */
        return CLI_OK;
    const char *path = e->b->a->wisdom;
    if (!path || convolve_wisdom_count(e->ctx) == e->wisdom_start)
        return CLI_OK;
    convolve_status st = CONVOLVE_OK;
    if (access(path, F_OK) == 0)
        st = convolve_wisdom_load(e->ctx, path);
    if (st == CONVOLVE_OK)
        st = convolve_wisdom_save(e->ctx, path);
    if (st != CONVOLVE_OK)
        return cli_fail(cli_exit_code(st), "--wisdom: %s", convolve_last_error(e->ctx));
    return CLI_OK;
}

static void engine_free(engine *e)
{
    for (plan_entry *p = e->plans, *next; p; p = next) {
        next = p->next;
        convolve_plan_free(p->plan);
        free(p);
    }
    for (int k = 0; k < CONVOLVE_MAX_DIMS; k++)
        convolve_filter_free(e->filter[k]);
    convolve_context_free(e->ctx);
    memset(e, 0, sizeof *e);
}

/* ---- the command -------------------------------------------------------------- */

/* Everything checked before any work: the filter, the backend, the wisdom
 * file. ctx is a scratch context. */
static int check_setup(batch *b, convolve_context *ctx, cli_weights *w)
{
    const cli_run_args *a = b->a;
    char msg[CLI_MSG_SIZE];
    int rc;
    if (a->weights) {
        if ((rc = cli_weights_read(ctx, a->weights, w, msg)) != CLI_OK)
            return cli_fail(rc, "%s", msg);
        b->w = w;
    } else if ((rc = check_named_filter(ctx, a->filter)) != CLI_OK) {
        return rc;
    }
    convolve_status st;
    if (a->wisdom && access(a->wisdom, F_OK) == 0 &&
        (st = convolve_wisdom_load(ctx, a->wisdom)) != CONVOLVE_OK)
        return cli_fail(cli_exit_code(st), "--wisdom: %s", convolve_last_error(ctx));
    b->lane_mode = LANE_NONE;
    if (a->opt.backend == CONVOLVE_BACKEND_CUDA) {
        if (!convolve_backend_built(CONVOLVE_BACKEND_CUDA))
            return cli_fail(CLI_BAD_INPUT, "the CUDA backend was asked for, but this libconvolve "
                                           "was built without CUDA");
        convolve_device_info dev;
        if ((st = convolve_device_query(ctx, &dev)) != CONVOLVE_OK)
            return cli_fail(cli_exit_code(st), "%s", convolve_last_error(ctx));
        if (!dev.available)
            return cli_fail(CLI_RESOURCE,
                            "the CUDA backend was asked for, but no GPU can be "
                            "used: %s",
                            dev.reason);
        b->lane_mode = LANE_ALL;
    } else if (a->opt.backend == CONVOLVE_BACKEND_AUTO &&
               convolve_backend_built(CONVOLVE_BACKEND_CUDA)) {
        b->lane_mode = LANE_AUTO;
    }
    return CLI_OK;
}

/* Runs the workers over the files; returns the worst exit code. */
static int run_workers(batch *b, size_t jobs)
{
    engine *workers = calloc(jobs, sizeof *workers);
    if (!workers)
        return cli_fail(CLI_RESOURCE, "out of memory");
    int rc = CLI_OK;
    size_t made = 0;
    for (; made < jobs && rc == CLI_OK; made++)
        rc = engine_init(&workers[made], b);
    if (rc == CLI_OK && b->lane_mode != LANE_NONE)
        rc = engine_init(&b->lane, b);
    if (rc == CLI_OK) {
        size_t started = 0;
        if (jobs > 1) /* a thread per worker; fewer if the system gives fewer */
            while (started < jobs &&
                   pthread_create(&workers[started].thread, NULL, work, &workers[started]) == 0)
                started++;
        if (started == 0)
            work(&workers[0]);
        for (size_t i = 0; i < started; i++)
            pthread_join(workers[i].thread, NULL);
        rc = b->worst;
        for (size_t i = 0; i < jobs; i++) {
            int wrc = engine_save_wisdom(&workers[i]);
            rc = wrc > rc ? wrc : rc;
        }
        int wrc = engine_save_wisdom(&b->lane);
        rc = wrc > rc ? wrc : rc;
    }
    for (size_t i = 0; i < made; i++)
        engine_free(&workers[i]);
    engine_free(&b->lane);
    free(workers);
    return rc;
}

int cli_batch(cli_run_args *a)
{
    const double t0 = cli_now_s();
    batch b;
    memset(&b, 0, sizeof b);
    b.a = a;
    cli_weights w = {0};
    char *list = NULL;
    const char **names = NULL;
    size_t n = 0, cap = 0;
    convolve_context *ctx = NULL;
    int rc = CLI_OK;

    /* the inputs: the positional arguments, then --inputs-from's names */
    if (a->npos && !(names = malloc(a->npos * sizeof *names)))
        rc = cli_fail(CLI_RESOURCE, "out of memory");
    else if (a->npos) {
        memcpy(names, a->pos, a->npos * sizeof *names);
        n = cap = a->npos;
    }
    if (rc == CLI_OK && a->inputs_from) {
        size_t len = 0;
        if ((rc = read_list(a->inputs_from, &list, &len)) == CLI_OK)
            rc = split_list(list, len, &names, &n, &cap);
    } else if (rc == CLI_OK && n == 0) {
        rc = cli_fail(CLI_BAD_INPUT, "no INPUT given: name the files to convolve, or list them "
                                     "with --inputs-from FILE");
    }
    if (rc == CLI_OK && n && !(b.m = calloc(n, sizeof *b.m)))
        rc = cli_fail(CLI_RESOURCE, "out of memory");
    for (size_t i = 0; i < n && rc == CLI_OK; i++) {
        b.m[b.n].input = names[i];
        rc = name_output(a, &b.m[b.n++]);
    }
    if (rc == CLI_OK)
        rc = check_output_dir(a->output_dir);
    if (rc == CLI_OK)
        rc = check_collisions(b.m, b.n);
    if (rc == CLI_OK)
        rc = check_replacements(a, b.m, b.n);
    if (rc == CLI_OK && convolve_context_create(&ctx) != CONVOLVE_OK)
        rc = cli_fail(CLI_RESOURCE, "out of memory");
    if (rc == CLI_OK) {
        cli_context_settings(ctx, a);
        rc = check_setup(&b, ctx, &w);
    }
    convolve_context_free(ctx);

    if (rc == CLI_OK && b.n) {
        const int cpus = cpu_count();
        size_t jobs = a->jobs ? (size_t)a->jobs : (size_t)cpus;
        if (jobs > b.n)
            jobs = b.n;
        b.threads = a->opt.threads ? a->opt.threads : cpus / (int)jobs > 1 ? cpus / (int)jobs : 1;
        pthread_mutex_init(&b.lock, NULL);
        pthread_mutex_init(&b.lane_lock, NULL);
        rc = run_workers(&b, jobs);
        pthread_mutex_destroy(&b.lane_lock);
        pthread_mutex_destroy(&b.lock);
    }
    if (rc == CLI_OK || b.done || b.failed)
        fprintf(stderr, "convolve: %zu file%s: %zu done, %zu failed; %zu plan%s; %.2f s\n", b.n,
                b.n == 1 ? "" : "s", b.done, b.failed, b.plans, b.plans == 1 ? "" : "s",
                cli_now_s() - t0);
    for (size_t i = 0; i < b.n; i++)
        free(b.m[i].output);
    free(b.m);
    free(names);
    free(list);
    cli_weights_free(&w);
    return rc;
}
