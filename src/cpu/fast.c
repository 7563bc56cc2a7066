/*
 * fast.c - the `fast` CPU strategy's choice among direct, separable and FFT
 * for a problem: the cheapest by a cost model of each, in nanoseconds per
 * output element, fitted to measurements on 4096 x 4096 float32 images
 * (2 threads, AVX-512): direct costs about 16 ps per tap plus the memory
 * traffic, a separable pass about 24 ps per tap, and the FFT about 0.5 ns per
 * unit of its own work model (cvf_fft_cost) plus its gathers and stores.
 * Only the ratios matter, and they hold for double and other instruction
 * sets within the accuracy of such a model.
 */
#include "fast.h"

int cvf_choose(const cvi_problem *p)
{
    const double taps = (double)p->kcount;
    const int axes = (p->ksize[0] > 1) + (p->ksize[1] > 1) + (p->ksize[2] > 1);
    double best = 0.6 + 0.016 * taps;
    int pick = CVF_DIRECT;
    /* with one axis of extent > 1, separable is the same work as direct */
    if (p->separable && axes >= 2) {
        double sep = 0.8 + 0.024 * (double)(p->ksize[0] + p->ksize[1] + p->ksize[2]);
        if (sep < best) {
            best = sep;
            pick = CVF_SEPARABLE;
        }
    }
    if (taps >= 64) {
        double work = cvf_fft_cost(p);
        if (work > 0 && 1.0 + 0.52 * work < best)
            pick = CVF_FFT;
    }
    return pick;
}
