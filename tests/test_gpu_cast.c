/*
 * test_gpu_cast.c - scipy's integer cast (CONVOLVE_CAST_TRUNCATE) on the
 * GPU: random cases (cast_cases.h) on basic and constant, which sum in
 * double and must serve it, on auto, which must pick one that serves, and
 * on the fast strategies, which must refuse it; each result equal to the
 * model of the cast on the CPU reference's float64 sums. --small: fewer
 * and smaller cases (the CPU emulation of CUDA, label emu).
 */
#include "cast_cases.h"

int main(int argc, char **argv)
{
    const int small = argc > 1 && strcmp(argv[1], "--small") == 0;
    convolve_context *ctx = NULL;
    if (convolve_context_create(&ctx) != CONVOLVE_OK)
        return 1;
    convolve_device_info dev;
    convolve_device_query(ctx, &dev);
    if (!convolve_backend_built(CONVOLVE_BACKEND_CUDA) || !dev.available) {
        printf("test_gpu_cast: SKIPPED: no usable CUDA device (%s)\n",
               convolve_backend_built(CONVOLVE_BACKEND_CUDA) ? dev.reason
                                                             : "libconvolve was built without "
                                                               "CUDA");
        convolve_context_free(ctx);
        return 77;
    }
    h_seed("test_gpu_cast");
    static const char *const strategies[] = {"basic", "constant", NULL, "direct", "separable",
                                             "fft", "tiled-out"};
    int served[7] = {0};
    const int cases = small ? 12 : 200;
    for (int i = 0; i < cases; i++)
        cc_case(ctx, CONVOLVE_BACKEND_CUDA, strategies, 7, "basic", small ? 12 : 64, served);
    CHECK(served[0] == cases && served[1] == cases && served[2] == cases,
          "basic %d, constant %d, auto %d of %d", served[0], served[1], served[2], cases);
    CHECK(served[3] + served[4] + served[5] + served[6] == 0, "a float strategy served");
    convolve_context_free(ctx);
    return h_finish("test_gpu_cast");
}
