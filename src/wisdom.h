/*
 * wisdom.h - the autotune's memory (src/wisdom.c): per context, the fastest
 * strategy measured for each problem class, by key; saved to and loaded
 * from a text file like FFTW's wisdom.
 */
#ifndef CONVOLVE_WISDOM_H
#define CONVOLVE_WISDOM_H

#include "internal.h"

/* Longer than any key tune.c writes; strategy names are shorter than
 * CVI_WISDOM_NAME_SIZE. */
#define CVI_WISDOM_KEY_SIZE 640
#define CVI_WISDOM_NAME_SIZE 32

/* Frees a context's wisdom; NULL is accepted. */
void cvi_wisdom_free(struct cvi_wisdom *w);

/* The strategy name ctx remembers for key, or NULL. */
const char *cvi_wisdom_lookup(const convolve_context *ctx, const char *key);

/* Remembers `strategy` (median `ms`) for key, replacing what was there;
 * 0 when out of memory. */
int cvi_wisdom_remember(convolve_context *ctx, const char *key, const char *strategy, double ms);

#endif
