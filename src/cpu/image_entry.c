/*
 * image_entry.c - the `image` CPU strategy's entry: the image's geometry,
 * its threads, and the choice among the box, separable and dense drivers.
 * Above image_box.c and image_taps.c, which use image.c's shared pieces.
 */
#include "image.h"

#include <string.h>

convolve_status cvcpu_image(const cvi_problem *p, int threads, const void *in, void *out,
                            cvcpu_img_scratch *scratch)
{
    cvcpu_img g;
    memset(&g, 0, sizeof g);
    g.p = p;
    g.in = (const char *)in;
    g.out = (char *)out;
    g.H = p->shape[1];
    g.W = p->shape[2];
    g.C = p->channels;
    g.n = g.W * g.C;
    cvi_window_range(p, 1, &g.y0, &g.y1);
    cvi_window_range(p, 2, &g.x0, &g.x1);
    g.in16 = p->in_type == CONVOLVE_UINT16;
    g.out_type = p->out_type;
    g.irs = p->in_strides[1];
    g.ors = p->out_strides[1];
    g.K1 = p->ksize[1];
    g.K2 = p->ksize[2];
    g.lo1 = (size_t)p->koff[1];
    g.lo2 = (size_t)p->koff[2];
    g.threads = threads;
    g.scratch = scratch;
    g.avx512 = cvcpu_isa() >= CVCPU_ISA_AVX512;
    /* outputs well past the caches are stored around them */
    g.nt = (double)g.n * (double)g.H * (double)convolve_dtype_size(p->out_type) >= 16e6;

    int box = cvcpu_image_is_box(p);
    double per = box ? 8.0 : p->separable ? (double)(g.K1 + g.K2) : (double)p->kcount;
    double most = (double)g.n * (double)g.H * per / CVCPU_WORK_PER_THREAD;
    if (most < 1.0)
        g.threads = 1;
    else if (most < (double)g.threads)
        g.threads = (int)most;

    if (box)
        return cvcpu_img_box(&g);
    if (p->separable)
        return cvcpu_img_separable(&g);
    return cvcpu_img_dense(&g);
}
