/*
 * test_gpu_cast.c - scipy's integer cast (CONVOLVE_CAST_TRUNCATE) on the
 * GPU, each result equal to the model of the cast on the CPU reference's
 * float64 sums (cast_cases.h):
 * - random cases of every kind (cc_case) on basic and constant, which sum
 *   in double and must serve them, on auto, which must pick one that
 *   serves, and on the others, which refuse them or (direct, separable:
 *   the integer-image kernel, src/cuda/fast_cast.cu) compute them exactly;
 *   fft and tiled-out, which compute in float, must refuse every one;
 * - random integer images (cc_image_case) that kernel serves: direct must
 *   serve each (separable those of separable filters in 2-D and 3-D), and
 *   auto must pick direct or separable;
 * - the y pass of positive taps (cc_ypass_case: Gaussian and box filters,
 *   K = 3..19) on images tall enough for many strips.
 * --small: fewer and smaller cases (the CPU emulation of CUDA, label emu).
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
    static const char *const strategies[] = {"basic",     "constant", NULL,       "direct",
                                             "separable", "fft",      "tiled-out"};
    int served[7] = {0};
    const int cases = small ? 12 : 200;
    for (int i = 0; i < cases; i++)
        cc_case(ctx, CONVOLVE_BACKEND_CUDA, strategies, 7, "basic", small ? 12 : 64, served);
    CHECK(served[0] == cases && served[1] == cases && served[2] == cases,
          "basic %d, constant %d, auto %d of %d", served[0], served[1], served[2], cases);
    CHECK(served[5] + served[6] == 0, "a float strategy served");

    static const char *const kernel[] = {"direct", "separable", NULL, "fft"};
    int kserved[4] = {0}, expected = 0, picked_kernel = 0;
    const int images = small ? 24 : 400;
    for (int i = 0; i < images; i++) {
        const char *picked = NULL;
        const int expect = cc_image_case(ctx, CONVOLVE_BACKEND_CUDA, kernel, 4, "direct",
                                         small ? 20 : 80, kserved, &picked);
        expected += expect;
        if (expect && picked && (strcmp(picked, "direct") == 0 || strcmp(picked, "separable") == 0))
            picked_kernel++;
        else
            CHECK(!expect, "auto picked '%s' for an integer image the kernel serves",
                  picked ? picked : "(none)");
    }
    CHECK(kserved[0] == expected && kserved[2] == images && kserved[3] == 0 && expected > 0,
          "direct served %d of %d, auto %d of %d, fft %d", kserved[0], expected, kserved[2], images,
          kserved[3]);

    /* the y pass of positive taps, tall enough for many strips */
    int yserved[4] = {0}, ycases = 0;
    for (size_t K = 3; K <= 19; K += 2) {
        if (small && K != 3 && K != 9 && K != 17)
            continue;
        for (int u16 = 0; u16 <= 1; u16++, ycases++)
            cc_ypass_case(ctx, CONVOLVE_BACKEND_CUDA, kernel, 4, "direct", K,
                          (size_t)h_randint(small ? 40 : 300, small ? 90 : 900),
                          u16 ? CONVOLVE_UINT16 : CONVOLVE_UINT8, yserved);
    }
    CHECK(yserved[0] == ycases && yserved[3] == 0, "y pass: direct served %d of %d, fft %d",
          yserved[0], ycases, yserved[3]);
    printf("test_gpu_cast: %d integer images, %d on the kernel (separable served %d), auto "
           "chose it %d times\n",
           images, expected, kserved[1], picked_kernel);
    convolve_context_free(ctx);
    return h_finish("test_gpu_cast");
}
