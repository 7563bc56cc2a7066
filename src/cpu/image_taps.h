/*
 * image_taps.h - the kernels of the image strategy's float paths: one set
 * per instruction set (image_taps_avx2.c, image_taps_avx512.c), reached
 * through a table that image_taps.c (the drivers) fills once per process
 * and picks from by cvcpu_isa() on every execution.
 *
 * A set has what its instruction set does better and NULL for the rest:
 * the table of an instruction set is the one below it with the non-NULL
 * kernels replaced and its own row counts (AVX-512 keeps AVX2's dense pass
 * and, unused with short_rows 0, its short path).
 */
#ifndef CONVOLVE_CPU_IMAGE_TAPS_H
#define CONVOLVE_CPU_IMAGE_TAPS_H

#include "image.h"

/* Row element types of the short vertical pass: the input's, or float. */
enum { CVCPU_ROW_U8, CVCPU_ROW_U16, CVCPU_ROW_F32 };

/* Output rows of the short vertical pass; the most a ring path's vertical
 * pass computes at once. */
#define CVCPU_VROWS 4
#define CVCPU_RING_ROWS_MAX 8

/* M(kind) with kind the output kind of type t (CVCPU_OUT_*) as a constant:
 * the kernels' code for each output type. */
#define CVCPU_BY_OUT_KIND(t, M)                        \
    do {                                               \
        switch (t) {                                   \
        case CONVOLVE_UINT8: M(CVCPU_OUT_U8); break;   \
        case CONVOLVE_UINT16: M(CVCPU_OUT_U16); break; \
        default: M(CVCPU_OUT_F32); break;              \
        }                                              \
    } while (0)

typedef struct cvcpu_img_kernels {
    /* Separable filters of up to this many rows take the short path
     * (vrange, then hpass); taller ones, and all when 0, the ring path
     * (hrow, then vring). */
    size_t short_rows;
    /* Output rows vring computes at once (<= CVCPU_RING_ROWS_MAX). */
    size_t ring_rows;

    /* The short vertical pass over the elements [e0, e1) of CVCPU_VROWS
     * output rows: o[j][e - e0] = c[j] + sum_{i<K} w[i] * r[j + i][e] for
     * j < CVCPU_VROWS, from the K + CVCPU_VROWS - 1 input rows r of row
     * type ty (K <= 9), the sum in the same order (i ascending) for every
     * row. Up to 7 values more are written past e1 - e0; the last piece is
     * read through copies in `tail` ((K + CVCPU_VROWS) * 32 bytes), never
     * past the row's end. */
    void (*vrange)(const char *const *r, size_t e0, size_t e1, const float *w, size_t K, int ty,
                   const float *c, float *const *o, char *tail);
    /* The horizontal pass of one row into the output: out[j] = sum_k w[k]
     * * src[j + k*C] for j < m (folded when sym), stored as g's output type
     * at d. */
    void (*hpass)(const cvcpu_img *g, char *d, const float *src, size_t m, const float *w, size_t K,
                  int sym);
    /* The horizontal pass into a float row: n (a multiple of 32) values;
     * src 64-byte aligned. */
    void (*hrow)(const cvcpu_img *g, float *dst, const float *src, size_t n, const float *w,
                 size_t K, int sym);
    /* The vertical pass of the ring path over m columns of float rows
     * r[0 .. K + ring_rows - 1) (padded to a multiple of 32): output row j
     * (d[j], NULL: not stored) is sum_k w[k] * r[j + k], folded when sym. */
    void (*vring)(const cvcpu_img *g, char *const *d, const float *const *r, size_t m,
                  const float *w, size_t K, int sym);
    /* The dense pass: output rows d0 and d1 (NULL: only d0) over m columns,
     * d0's row the sum over k1 < K1, k2 < K2 of w[k1*K2 + k2] *
     * r[k1][c + k2*C], d1's the same on r[k1 + 1]. */
    void (*dpass)(const cvcpu_img *g, char *d0, char *d1, const float *const *r, size_t m,
                  const float *w);
} cvcpu_img_kernels;

#ifdef CVCPU_IMAGE_X86
/* Each instruction set's own kernels (NULL entries: the set below's). */
extern const cvcpu_img_kernels cvcpu_img_kernels_avx2;
extern const cvcpu_img_kernels cvcpu_img_kernels_avx512;
#endif

#endif
