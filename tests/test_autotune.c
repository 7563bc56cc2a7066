/*
 * test_autotune.c - the measured autotune and its wisdom, on the CPU backend
 * (and on the GPU too when one is usable): a tuned plan picks a strategy that
 * serves and computes the reference's result; the choice is remembered per
 * problem class (same class: no new entry; another class: a new one); wisdom
 * saved and loaded into a fresh context is used as written (an entry edited
 * to name another strategy is obeyed, proving it is read, not re-measured);
 * an entry naming a strategy that cannot serve is measured again; malformed
 * wisdom files are refused and change nothing.
 */
#include "harness.h"

#include <unistd.h>

static convolve_context *ctx;

/* Runs a tuned plan on a fresh random h x w float32 image with a K x K
 * filter; checks the result; returns the strategy name (static storage). */
static const char *tuned(convolve_context *c, convolve_backend backend, size_t h, size_t w,
                         size_t K, int separable, const char *tag)
{
    const size_t shape[2] = {h, w}, ks[2] = {K, K}, n = h * w;
    convolve_filter *f = NULL;
    if (separable) {
        double t[2][64];
        for (size_t i = 0; i < K; i++)
            t[0][i] = h_uniform(0.1, 1.0), t[1][i] = h_uniform(0.1, 1.0);
        const double *taps[2] = {t[0], t[1]};
        CHECK_OK(c, convolve_filter_create_separable(c, &f, 2, ks, taps));
    } else {
        double wt[64 * 64];
        for (size_t i = 0; i < K * K; i++)
            wt[i] = h_uniform(-1.0, 1.0);
        CHECK_OK(c, convolve_filter_create(c, &f, 2, ks, wt));
    }
    convolve_layout l, lr;
    convolve_layout_init(&l, CONVOLVE_FLOAT32, 2, shape, 1);
    convolve_layout_init(&lr, CONVOLVE_FLOAT64, 2, shape, 1);
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    double *ref = malloc(n * sizeof *ref);
    h_fill_typed(CONVOLVE_FLOAT32, x, n, 1.0);
    h_poison(CONVOLVE_FLOAT32, y, n);
    convolve_options o;
    convolve_options_init(&o);
    o.mode = CONVOLVE_MODE_MIRROR;
    o.backend = CONVOLVE_BACKEND_CPU;
    o.strategy = "reference";
    CHECK_OK(c, convolve_run(c, &l, x, &lr, ref, f, &o));
    o.backend = backend;
    o.strategy = NULL;
    o.autotune = 1;
    convolve_plan *plan = NULL;
    static char name[64];
    name[0] = '\0';
    CHECK_OK(c, convolve_plan_create(c, &plan, &l, &l, f, &o));
    if (plan) {
        snprintf(name, sizeof name, "%s", convolve_plan_strategy(plan));
        CHECK(strcmp(name, "reference") != 0, "%s: the autotune kept the reference", tag);
        CHECK_OK(c, convolve_execute(plan, x, y));
        h_diff d = h_compare(CONVOLVE_FLOAT32, y, CONVOLVE_FLOAT64, ref, n, 1e-5 * K * K, 1e-5);
        CHECK(d.bad == 0 && d.rel_l2 <= 1e-5, "%s: '%s' gives %zu wrong (relL2 %g)", tag, name,
              d.bad, d.rel_l2);
        printf("test_autotune: %s: '%s' on the %s, wisdom %zu\n", tag, name,
               convolve_backend_name(convolve_plan_backend(plan)), convolve_wisdom_count(c));
    }
    convolve_plan_free(plan);
    convolve_filter_free(f);
    free(x), free(y), free(ref);
    return name;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "cannot write %s", path);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *t = calloc(1, 1 << 16);
    size_t n = fread(t, 1, (1 << 16) - 1, f);
    t[n] = '\0';
    fclose(f);
    return t;
}

int main(void)
{
    h_seed("test_autotune");
    CHECK_OK(NULL, convolve_context_create(&ctx));
    char dir[] = "/tmp/convolve-tune-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[256], path2[256];
    snprintf(path, sizeof path, "%s/wisdom", dir);
    snprintf(path2, sizeof path2, "%s/edited", dir);

    /* tuning, and remembering per class */
    CHECK(convolve_wisdom_count(ctx) == 0, "a new context has wisdom");
    char first[64];
    snprintf(first, sizeof first, "%s",
             tuned(ctx, CONVOLVE_BACKEND_CPU, 301, 257, 5, 0, "5x5 dense"));
    CHECK(convolve_wisdom_count(ctx) == 1, "one class tuned, %zu entries",
          convolve_wisdom_count(ctx));
    const char *again = tuned(ctx, CONVOLVE_BACKEND_CPU, 300, 260, 5, 0, "5x5 dense, same class");
    CHECK(!strcmp(again, first), "same class: '%s' then '%s'", first, again);
    CHECK(convolve_wisdom_count(ctx) == 1, "same class added an entry");
    tuned(ctx, CONVOLVE_BACKEND_CPU, 301, 257, 9, 1, "9x9 separable");
    CHECK(convolve_wisdom_count(ctx) == 2, "a second class: %zu entries",
          convolve_wisdom_count(ctx));

    /* save, edit the dense entry to another strategy that serves, load */
    CHECK_OK(ctx, convolve_wisdom_save(ctx, path));
    char *text = read_text(path);
    CHECK(text && !strncmp(text, "convolve-wisdom 1\n", 18), "saved wisdom: %s",
          text ? text : "(none)");
    const char *other = strcmp(first, "fft") ? "fft" : "direct";
    if (text) {
        char edited[1 << 16] = "", *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            char buf[1024];
            char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
            if (t1 && t2 && strstr(line, ";k5x5;dense;")) {
                *t1 = '\0';
                snprintf(buf, sizeof buf, "%s\t%s%s\n", line, other, t2);
            } else {
                snprintf(buf, sizeof buf, "%s\n", line);
            }
            strncat(edited, buf, sizeof edited - strlen(edited) - 1);
        }
        write_text(path2, edited);
        free(text);
    }
    convolve_context *fresh;
    CHECK_OK(NULL, convolve_context_create(&fresh));
    CHECK_OK(fresh, convolve_wisdom_load(fresh, path2));
    CHECK(convolve_wisdom_count(fresh) == 2, "loaded %zu entries", convolve_wisdom_count(fresh));
    const char *got = tuned(fresh, CONVOLVE_BACKEND_CPU, 301, 257, 5, 0, "5x5 dense from wisdom");
    CHECK(!strcmp(got, other), "wisdom said '%s', the plan runs '%s'", other, got);
    CHECK(convolve_wisdom_count(fresh) == 2, "a wisdom hit added an entry");

    /* an entry naming a strategy that cannot serve: measured again */
    snprintf(path2, sizeof path2, "%s/unserving", dir);
    char line[1024];
    /* the separable strategy cannot serve a dense filter */
    text = read_text(path);
    if (text) {
        char *t1 = strchr(text + 18, '\t');
        char *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        char *eol = t2 ? strchr(t2, '\n') : NULL;
        if (t1 && t2 && eol && strstr(text + 18, ";k5x5;dense;") < t1) {
            *t1 = '\0';
            *eol = '\0';
            snprintf(line, sizeof line, "convolve-wisdom 1\n%s\tseparable%s\n", text + 18, t2);
            write_text(path2, line);
            convolve_wisdom_forget(fresh);
            CHECK(convolve_wisdom_count(fresh) == 0, "forget left entries");
            CHECK_OK(fresh, convolve_wisdom_load(fresh, path2));
            got = tuned(fresh, CONVOLVE_BACKEND_CPU, 301, 257, 5, 0, "5x5 dense, stale wisdom");
            CHECK(strcmp(got, "separable") != 0, "a strategy that cannot serve was used");
        }
        free(text);
    }
    convolve_context_free(fresh);

    /* malformed wisdom: refused, nothing changed */
    static const char *bad[] = {
        "",                                       /* empty */
        "convolve-wisdom 2\n",                    /* other version */
        "hello\n",                                /* not wisdom */
        "convolve-wisdom 1\nkey only\n",          /* no tabs */
        "convolve-wisdom 1\nk\tfast\n",           /* two fields */
        "convolve-wisdom 1\nk\tfast\tabc\n",      /* not a number */
        "convolve-wisdom 1\nk\tfa st\t1\n",       /* bad name */
        "convolve-wisdom 1\nk\tfast\t-1\n",       /* negative time */
        "convolve-wisdom 1\nk\tfast\t1\textra\n", /* four fields */
    };
    size_t before = convolve_wisdom_count(ctx);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_text(path2, bad[i]);
        CHECK_STATUS(ctx, convolve_wisdom_load(ctx, path2), CONVOLVE_ERROR_FORMAT);
        CHECK(convolve_wisdom_count(ctx) == before, "bad wisdom %zu changed the count", i);
    }
    snprintf(path2, sizeof path2, "%s/missing", dir);
    CHECK_STATUS(ctx, convolve_wisdom_load(ctx, path2), CONVOLVE_ERROR_IO);
    CHECK_STATUS(ctx, convolve_wisdom_load(ctx, NULL), CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_wisdom_save(ctx, dir), CONVOLVE_ERROR_IO);
    CHECK(convolve_wisdom_count(NULL) == 0, "count of NULL");
    convolve_wisdom_forget(NULL);

    /* the option's value is checked */
    {
        const size_t shape[1] = {16}, ks[1] = {3};
        double w[3] = {1, 2, 1};
        convolve_filter *f;
        CHECK_OK(ctx, convolve_filter_create(ctx, &f, 1, ks, w));
        convolve_layout l;
        convolve_layout_init(&l, CONVOLVE_FLOAT32, 1, shape, 1);
        convolve_options o;
        convolve_options_init(&o);
        o.autotune = 2;
        convolve_plan *plan;
        CHECK_STATUS(ctx, convolve_plan_create(ctx, &plan, &l, &l, f, &o),
                     CONVOLVE_ERROR_INVALID_ARGUMENT);
        convolve_filter_free(f);
    }

    /* the GPU, where there is one: the fast strategies are timed there */
    convolve_device_info dev;
    convolve_device_query(ctx, &dev);
    if (dev.available) {
        const char *g = tuned(ctx, CONVOLVE_BACKEND_CUDA, 1024, 1024, 5, 0, "GPU 5x5 dense");
        CHECK(g[0] != '\0', "no GPU strategy tuned");
    } else {
        printf("test_autotune: no usable GPU (%s): CPU only\n", dev.reason);
    }

    unlink(path);
    snprintf(path2, sizeof path2, "%s/edited", dir);
    unlink(path2);
    snprintf(path2, sizeof path2, "%s/unserving", dir);
    unlink(path2);
    rmdir(dir);
    convolve_context_free(ctx);
    return h_finish("test_autotune");
}
