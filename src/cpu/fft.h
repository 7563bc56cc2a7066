/*
 * fft.h - the small FFT of the CPU `fft` strategy (src/cpu/fft.c): complex
 * transforms of power-of-two length on split real/imaginary arrays, along
 * one axis of a block and vectorised across the contiguous elements that
 * follow that axis. The forward transform (decimation in frequency) leaves
 * its spectrum in bit-reversed order and the inverse (decimation in time)
 * takes it so, so convolution never permutes; the inverse is not scaled.
 */
#ifndef CONVOLVE_CPU_FFT_H
#define CONVOLVE_CPU_FFT_H

#include <stddef.h>

/* Twiddles for length T: tw[h + j] = exp(-2 pi i j / (2h)), h = 1, 2, 4, ..
 * T/2, j < h (T entries each, re and im, in the compute type). */
typedef struct cvcpu_twiddles {
    size_t T;
    void *re, *im;
} cvcpu_twiddles;

/* Fills tw (its arrays hold T elements of `es` bytes: 4 float, 8 double). */
void cvcpu_twiddles_fill(cvcpu_twiddles *tw, size_t es);

typedef struct cvcpu_fft_ops {
    /* Transforms `outer` consecutive sub-blocks of T x S elements along their
     * axis of length T (stride S elements): forward or inverse. */
    void (*forward)(void *re, void *im, size_t outer, size_t T, size_t S, const cvcpu_twiddles *tw);
    void (*inverse)(void *re, void *im, size_t outer, size_t T, size_t S, const cvcpu_twiddles *tw);
    /* dst[c][r] = src[r][c] for an R x C matrix (re and im alike). */
    void (*transpose)(void *dre, void *dim, const void *sre, const void *sim, size_t R, size_t C);
    /* x[i] *= g[i] (complex), n elements. */
    void (*multiply)(void *xre, void *xim, const void *gre, const void *gim, size_t n);
} cvcpu_fft_ops;

/* The operations for a compute type (dbl: double) and instruction set. */
const cvcpu_fft_ops *cvcpu_fft_get(int dbl, int isa);

#endif
