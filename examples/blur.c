/*
 * blur.c - a short program using libconvolve: blurs an image with a Gaussian.
 *   blur INPUT OUTPUT [SIGMA]
 * Build: see examples/CMakeLists.txt, or
 *   cc blur.c $(pkg-config --cflags --libs convolve) -o blur
 */
#include <convolve.h>

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: blur INPUT OUTPUT [SIGMA]\n");
        return 1;
    }
    char spec[64];
    snprintf(spec, sizeof spec, "gaussian:%s", argc > 3 ? argv[3] : "2");

    convolve_context *ctx = NULL;
    convolve_array *in = NULL, *out = NULL;
    convolve_filter *filter = NULL;
    convolve_status st = convolve_context_create(&ctx);
    if (st == CONVOLVE_OK)
        st = convolve_array_load(ctx, &in, argv[1], CONVOLVE_FORMAT_AUTO);
    const convolve_layout *lay = in ? convolve_array_layout(in) : NULL;
    if (st == CONVOLVE_OK)
        st = convolve_array_create(ctx, &out, lay->dtype, lay->ndim, lay->shape, lay->channels);
    if (st == CONVOLVE_OK)
        st = convolve_filter_create_named(ctx, &filter, spec, lay->ndim);
    if (st == CONVOLVE_OK) {
        convolve_options opt;
        convolve_options_init(&opt); /* convolve, mode reflect, backend auto */
        st = convolve_run(ctx, lay, convolve_array_data(in), convolve_array_layout(out),
                          convolve_array_data(out), filter, &opt);
    }
    if (st == CONVOLVE_OK)
        st = convolve_array_save(ctx, out, argv[2], CONVOLVE_FORMAT_AUTO, 0);
    if (st != CONVOLVE_OK)
        fprintf(stderr, "blur: %s: %s\n", convolve_status_name(st), convolve_last_error(ctx));
    convolve_filter_free(filter);
    convolve_array_free(out);
    convolve_array_free(in);
    convolve_context_free(ctx);
    return st == CONVOLVE_OK ? 0 : 1;
}
