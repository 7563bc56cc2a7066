/*
 * fast.c - the `fast` CPU strategy's choice among direct, separable and FFT
 * for a problem, by a cost model of each.
 */
#include "fast.h"

int cvf_choose(const cvi_problem *p)
{
    int axes = (p->ksize[0] > 1) + (p->ksize[1] > 1) + (p->ksize[2] > 1);
    /* with one axis of extent > 1, separable is the same work as direct */
    if (p->separable && axes >= 2)
        return CVF_SEPARABLE;
    return CVF_DIRECT;
}
