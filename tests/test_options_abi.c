/*
 * test_options_abi.c - convolve_options across versions of convolve.h: a
 * program built against an older header (a smaller struct: here its fields
 * up to `threads`, what follows in memory poisoned) has its options filled
 * by convolve_options_init_size without a byte written past them, and read
 * by the library without a byte read past them (the later fields take
 * their defaults); the result equals the current layout's and the
 * double-precision correlation computed here. A newer program's larger
 * struct is accepted while its extra fields are 0 and refused once one is
 * set; an options struct that convolve_options_init never filled (size 0)
 * is refused.
 */
#include "harness.h"

#include <stddef.h>
#include <string.h>

/* An older convolve_options: the current one's fields up to `threads`. */
typedef struct old_options {
    size_t size;
    convolve_operation operation;
    convolve_mode mode;
    double cval;
    ptrdiff_t origin[CONVOLVE_MAX_DIMS];
    convolve_backend backend;
    const char *strategy;
    int threads;
} old_options;

_Static_assert(offsetof(old_options, threads) == offsetof(convolve_options, threads),
               "old_options is a prefix of convolve_options");
_Static_assert(sizeof(old_options) < sizeof(convolve_options), "old_options is smaller");

enum { H = 29, W = 37, KH = 3, KW = 5 };
#define CVAL 1.5

/* out = correlate(in, w), CONSTANT mode with CVAL, origin 0, in double. */
static void correlate_ref(const float *in, const double *w, double *out)
{
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            double s = 0;
            for (int i = 0; i < KH; i++)
                for (int j = 0; j < KW; j++) {
                    int yy = y + i - KH / 2, xx = x + j - KW / 2;
                    double v = yy < 0 || yy >= H || xx < 0 || xx >= W ? CVAL : in[yy * W + xx];
                    s += w[i * KW + j] * v;
                }
            out[y * W + x] = s;
        }
}

static void run_with(convolve_context *ctx, const convolve_layout *l, const float *in,
                     const convolve_filter *f, const convolve_options *o, float *out,
                     convolve_status want, const char *what)
{
    h_poison(CONVOLVE_FLOAT32, out, (size_t)H * W);
    convolve_status st = convolve_run(ctx, l, in, l, out, f, o);
    CHECK(st == want, "%s: status %s, expected %s (%s)", what, convolve_status_name(st),
          convolve_status_name(want), convolve_last_error(ctx));
}

int main(void)
{
    h_seed("test_options_abi");
    convolve_context *ctx = NULL;
    CHECK_OK(NULL, convolve_context_create(&ctx));

    /* the older struct, followed by poison: init writes only its bytes */
    unsigned char buf[sizeof(convolve_options) + 64];
    memset(buf, 0xA5, sizeof buf);
    old_options *old = (old_options *)(void *)buf;
    convolve_options_init_size((convolve_options *)(void *)buf, sizeof *old);
    CHECK(old->size == sizeof *old, "size %zu, expected %zu", old->size, sizeof *old);
    CHECK(old->operation == CONVOLVE_OP_CONVOLVE && old->mode == CONVOLVE_MODE_REFLECT &&
              old->backend == CONVOLVE_BACKEND_AUTO && old->strategy == NULL && old->threads == 0 &&
              old->cval == 0,
          "the older struct's fields are not the defaults");
    for (size_t i = sizeof *old; i < sizeof buf; i++)
        if (buf[i] != 0xA5) {
            CHECK(0, "convolve_options_init_size wrote byte %zu past the %zu given", i,
                  sizeof *old);
            break;
        }

    float in[H * W], out_old[H * W], out_new[H * W];
    double w[KH * KW], ref[H * W];
    for (size_t i = 0; i < (size_t)H * W; i++)
        in[i] = (float)h_uniform(-2.0, 2.0);
    for (size_t i = 0; i < (size_t)KH * KW; i++)
        w[i] = h_uniform(-1.0, 1.0);
    correlate_ref(in, w, ref);
    convolve_layout l;
    const size_t shape[2] = {H, W}, ks[2] = {KH, KW};
    CHECK_OK(ctx, convolve_layout_init(&l, CONVOLVE_FLOAT32, 2, shape, 1));
    convolve_filter *f = NULL;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, ks, w));

    /* the older struct's fields set, the poison after it: read as defaults
     * (read, the poison would be autotune, devices and a negative
     * device_count, a progress callback) */
    old->operation = CONVOLVE_OP_CORRELATE;
    old->mode = CONVOLVE_MODE_CONSTANT;
    old->cval = CVAL;
    old->backend = CONVOLVE_BACKEND_CPU;
    old->threads = 2;
    run_with(ctx, &l, in, f, (const convolve_options *)(void *)buf, out_old, CONVOLVE_OK,
             "older struct");

    convolve_options o;
    convolve_options_init(&o);
    CHECK(o.size == sizeof o, "convolve_options_init: size %zu, expected %zu", o.size, sizeof o);
    o.operation = CONVOLVE_OP_CORRELATE;
    o.mode = CONVOLVE_MODE_CONSTANT;
    o.cval = CVAL;
    o.backend = CONVOLVE_BACKEND_CPU;
    o.threads = 2;
    run_with(ctx, &l, in, f, &o, out_new, CONVOLVE_OK, "current struct");
    CHECK(memcmp(out_old, out_new, sizeof out_old) == 0,
          "the older struct's result differs from the current one's");
    size_t bad = 0;
    for (size_t i = 0; i < (size_t)H * W; i++)
        bad += !(fabs(out_old[i] - ref[i]) <= 1e-5 + 1e-5 * fabs(ref[i]));
    CHECK(bad == 0, "%zu of %d outputs differ from the double-precision correlation", bad, H * W);

    /* a newer program's larger struct: its extra fields 0, then one set */
    unsigned char big[sizeof(convolve_options) + 16];
    memset(big, 0xA5, sizeof big);
    convolve_options_init_size((convolve_options *)(void *)big, sizeof big);
    size_t nonzero = 0;
    for (size_t i = sizeof(convolve_options); i < sizeof big; i++)
        nonzero += big[i] != 0;
    CHECK(nonzero == 0, "convolve_options_init_size left %zu of a newer struct's bytes set",
          nonzero);
    convolve_options *nb = (convolve_options *)(void *)big;
    nb->operation = CONVOLVE_OP_CORRELATE;
    nb->mode = CONVOLVE_MODE_CONSTANT;
    nb->cval = CVAL;
    nb->backend = CONVOLVE_BACKEND_CPU;
    float out_big[H * W];
    run_with(ctx, &l, in, f, nb, out_big, CONVOLVE_OK, "newer struct, extra fields 0");
    CHECK(memcmp(out_big, out_new, sizeof out_big) == 0,
          "the newer struct's result differs from the current one's");
    big[sizeof big - 3] = 1;
    run_with(ctx, &l, in, f, nb, out_big, CONVOLVE_ERROR_INVALID_ARGUMENT,
             "newer struct, an extra field set");

    /* never filled by convolve_options_init */
    convolve_options z;
    memset(&z, 0, sizeof z);
    z.backend = CONVOLVE_BACKEND_CPU;
    run_with(ctx, &l, in, f, &z, out_new, CONVOLVE_ERROR_INVALID_ARGUMENT, "size 0");

    convolve_filter_free(f);
    convolve_context_free(ctx);
    return h_finish("test_options_abi");
}
