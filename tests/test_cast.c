/*
 * test_cast.c - scipy's integer cast (CONVOLVE_CAST_TRUNCATE, with its
 * divisor) on the CPU: the options' validation, and random cases on every
 * CPU strategy against a scalar model of the cast on the reference's
 * float64 sums (cast_cases.h): the reference, fast, direct and separable
 * serve it; image and fft refuse.
 */
#include "cast_cases.h"

static void validation(convolve_context *ctx)
{
    const size_t shape[2] = {5, 6}, K[2] = {3, 3};
    double w[9];
    for (int i = 0; i < 9; i++)
        w[i] = 1.0;
    convolve_filter *f = NULL;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, K, w));
    convolve_layout l8, lf;
    CHECK_OK(ctx, convolve_layout_init(&l8, CONVOLVE_UINT8, 2, shape, 1));
    CHECK_OK(ctx, convolve_layout_init(&lf, CONVOLVE_FLOAT32, 2, shape, 1));
    convolve_plan *plan = NULL;
    convolve_options o;
    convolve_options_init(&o);
    CHECK(o.integer_cast == CONVOLVE_CAST_ROUND_SATURATE && o.divisor == 0.0, "defaults");
    o.integer_cast = (convolve_integer_cast)2;
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &plan, &l8, &l8, f, &o),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    o.integer_cast = CONVOLVE_CAST_TRUNCATE;
    const double bad[3] = {-1.0, NAN, INFINITY};
    for (int i = 0; i < 3; i++) {
        o.divisor = bad[i];
        CHECK_STATUS(ctx, convolve_plan_create(ctx, &plan, &l8, &l8, f, &o),
                     CONVOLVE_ERROR_INVALID_ARGUMENT);
    }
    o.divisor = 9.0; /* a float output takes no divisor */
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &plan, &l8, &lf, f, &o),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    o.integer_cast = CONVOLVE_CAST_ROUND_SATURATE; /* nor does rounding */
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &plan, &l8, &l8, f, &o),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    o.integer_cast = CONVOLVE_CAST_TRUNCATE;
    o.backend = CONVOLVE_BACKEND_CPU;
    o.strategy = "image";
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &plan, &l8, &l8, f, &o),
                 CONVOLVE_ERROR_UNSUPPORTED);
    /* a float output under TRUNCATE: the cast does not apply, any strategy serves */
    o.divisor = 0.0;
    o.strategy = NULL;
    CHECK_OK(ctx, convolve_plan_create(ctx, &plan, &l8, &lf, f, &o));
    convolve_plan_free(plan);
    plan = NULL;
    /* the known values: a 3x3 box of 255s is 2295 (low byte 247), over 9 is 255;
     * weights -1 give -2295 (low byte 9) */
    uint8_t in[30], out[30];
    memset(in, 255, sizeof in);
    CHECK_OK(ctx, convolve_run(ctx, &l8, in, &l8, out, f, &o));
    CHECK(out[7] == 247, "3x3 sum of 255: %d, want 247", out[7]);
    o.divisor = 9.0;
    CHECK_OK(ctx, convolve_run(ctx, &l8, in, &l8, out, f, &o));
    CHECK(out[7] == 255, "3x3 mean of 255: %d", out[7]);
    o.divisor = 0.0;
    for (int i = 0; i < 9; i++)
        w[i] = -1.0;
    convolve_filter_free(f);
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, K, w));
    CHECK_OK(ctx, convolve_run(ctx, &l8, in, &l8, out, f, &o));
    CHECK(out[7] == 9, "3x3 sum of -255: %d, want 9", out[7]);
    convolve_filter_free(f);
    /* a sum 1e-12 (relative) below an integer is not rounding of the order of
     * summation: it truncates, as scipy's (5 * (1 - 1e-12) -> 4); one of an
     * exact integer does not (5 * 0.5 * 2 -> 5) */
    const size_t one = 1, two = 2, n8 = 8;
    const double wn = 1.0 - 1e-12, wh[2] = {0.5, 0.5};
    convolve_layout l1;
    CHECK_OK(ctx, convolve_layout_init(&l1, CONVOLVE_UINT8, 1, &n8, 1));
    memset(in, 5, 8);
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 1, &one, &wn));
    CHECK_OK(ctx, convolve_run(ctx, &l1, in, &l1, out, f, &o));
    CHECK(out[3] == 4, "5 * (1 - 1e-12): %d, want 4", out[3]);
    convolve_filter_free(f);
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 1, &two, wh));
    CHECK_OK(ctx, convolve_run(ctx, &l1, in, &l1, out, f, &o));
    CHECK(out[3] == 5, "5 * 0.5 + 5 * 0.5: %d, want 5", out[3]);
    convolve_filter_free(f);
}

int main(void)
{
    h_seed("test_cast");
    convolve_context *ctx = NULL;
    if (convolve_context_create(&ctx) != CONVOLVE_OK)
        return 1;
    validation(ctx);
    static const char *const strategies[] = {"reference", "fast",  "direct", "separable",
                                             "fft",       "image", NULL};
    int served[6] = {0};
    for (int i = 0; i < 150; i++)
        cc_case(ctx, CONVOLVE_BACKEND_CPU, strategies, 6, "fast", 40, served);
    /* the strategies that sum in double served */
    CHECK(served[0] == 150 && served[1] == 150 && served[2] == 150 && served[3] > 0,
          "served %d %d %d %d", served[0], served[1], served[2], served[3]);
    CHECK(served[4] == 0 && served[5] == 0, "fft %d, image %d served", served[4], served[5]);
    convolve_context_free(ctx);
    return h_finish("test_cast");
}
