/*
 * problem.h - what every module of libconvolve shares, and all a backend
 * (src/cpu/, src/cuda/) sees of the core: the canonical problem every
 * backend receives, the strategy record, the probed device, the error
 * helpers and checked size arithmetic (element conversion and the boundary
 * rule: kernel_math.h). The object
 * structs behind the public handles are the core's alone (internal.h).
 * Nothing here is public.
 */
#ifndef CONVOLVE_PROBLEM_H
#define CONVOLVE_PROBLEM_H

#include "convolve.h"
#include "kernel_math.h"

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Room for a reason a strategy cannot serve a problem. */
#define CVI_REASON_SIZE 256

/* ---- errors ------------------------------------------------------------- */

/* Records a formatted message on ctx (which may be NULL) and returns status. */
convolve_status cvi_error(convolve_context *ctx, convolve_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Puts formatted text in front of ctx's message (ctx may be NULL); returns
 * status. */
convolve_status cvi_error_prefix(convolve_context *ctx, convolve_status status, const char *fmt,
                                 ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Clears the message; returns CONVOLVE_OK. */
convolve_status cvi_ok(convolve_context *ctx);

/* ---- the device ----------------------------------------------------------- */

/* What a context knows of the CUDA device (probed once, when first needed). */
typedef struct cvi_device {
    convolve_device_info info;      /* info.available = 0: none usable (info.reason) */
    size_t shared_memory_per_block; /* opt-in maximum, bytes */
} cvi_device;

/* ---- checked size arithmetic ------------------------------------------ */

/* *r = a * b; returns 0 on overflow. */
static inline int cvi_mul_size(size_t a, size_t b, size_t *r)
{
    return !__builtin_mul_overflow(a, b, r);
}
static inline int cvi_add_size(size_t a, size_t b, size_t *r)
{
    return !__builtin_add_overflow(a, b, r);
}

/* ---- the canonical problem ---------------------------------------------- */

/*
 * Every backend computes, for each output index i (3 axes, leading axes of
 * size 1 added for 1-D and 2-D) and channel c,
 *
 *     out[i][c] = sum_k w[k] * ext[i + k - koff][c]
 *
 * where k runs over the ksize box, w is in correlation form (already flipped
 * for a convolution), and ext is the input extended past its edges by `mode`
 * (cvi_boundary_index; CONSTANT: cval wherever any axis is outside).
 * For scipy's origin o and an extent K: koff = K/2 + o (correlate), after the
 * convolution's flip o -> -o - (K even).
 */
typedef struct cvi_problem {
    int ndim;        /* the user's 1..3 */
    size_t shape[3]; /* padded to 3 axes: {1,1,n}, {1,h,w}, {d,h,w} */
    size_t channels;
    convolve_dtype in_type, out_type;
    ptrdiff_t in_strides[3], in_cstride; /* bytes, padded axes get 0 */
    ptrdiff_t out_strides[3], out_cstride;
    size_t ksize[3];       /* filter extents, padded with 1 */
    ptrdiff_t koff[3];     /* 0 <= koff < ksize */
    size_t kcount;         /* product of ksize */
    const double *weights; /* kcount weights, correlation form, C order */
    int separable;         /* taps valid */
    int folded;            /* taps longer than the array were folded onto it
                                       (plan.c): each tap sums many */
    const double *taps[3]; /* per padded axis, correlation form; {1.0} on padded axes */
    int mode;              /* CVI_MODE_* */
    double cval;
    int threads; /* CPU threads, 0 = all */
    /* CVI_CAST_*: TRUNCATE only with an integer output (the core sets
     * ROUND_SATURATE for float outputs); then the sums are computed in
     * double and divided by `divisor` (1 for none) before the cast. */
    int cast;
    double divisor;
    /* under TRUNCATE: a value within snap * max(|n|, 1) of an integer n is
     * n: (taps + 1) * 2^-52, the order of summation's rounding */
    double snap;
    /* The CPU backend's output-row window: only the outputs whose index
     * along the slowest axis (3 - ndim) lies in [win_lo, win_hi) are
     * computed and written; the input, its edges and every choice the
     * strategy makes are still the whole array's, so each written output
     * has the bytes of the whole run's. win_hi = 0: every output. */
    size_t win_lo, win_hi;
    /* A streamed slab's sub-problem (src/stream.c): the whole array's extent
     * along the slowest axis, so that strategies whose rounding depends on
     * how the array is cut (the CUDA FFT's tiles) cut it as the whole run
     * does. 0: not a slab. */
    size_t whole_rows;
    /* A slab's sub-problem: 1 when the whole array's input and output rows
     * are of interleaved channels, contiguous along x (cvi_rows_interleaved),
     * so that a kernel choice that depends on it (the CUDA fused integer
     * kernels) makes the one-shot run's on the packed slabs. */
    int whole_interleaved;
} cvi_problem;

/* 1 when p's input and output rows are of interleaved channels, contiguous
 * along x; for a slab's sub-problem, the whole array's. */
static inline int cvi_rows_interleaved(const cvi_problem *p)
{
    if (p->whole_rows)
        return p->whole_interleaved;
    const ptrdiff_t ie = (ptrdiff_t)convolve_dtype_size(p->in_type);
    const ptrdiff_t oe = (ptrdiff_t)convolve_dtype_size(p->out_type);
    const ptrdiff_t C = (ptrdiff_t)p->channels;
    return p->in_strides[2] == C * ie && p->out_strides[2] == C * oe &&
           (C == 1 || (p->in_cstride == ie && p->out_cstride == oe));
}

/* The slowest axis of p (the window's and the slabs'). */
static inline int cvi_slow_axis(const cvi_problem *p)
{
    return 3 - p->ndim;
}

/* The outputs p computes along axis a: [*lo, *hi) (the window on the
 * slowest axis, else the whole extent). */
static inline void cvi_window_range(const cvi_problem *p, int a, size_t *lo, size_t *hi)
{
    if (a == cvi_slow_axis(p) && p->win_hi) {
        *lo = p->win_lo;
        *hi = p->win_hi;
    } else {
        *lo = 0;
        *hi = p->shape[a];
    }
}

/* 1 when p's integer outputs take scipy's cast (CVI_CAST_TRUNCATE). */
static inline int cvi_truncates(const cvi_problem *p)
{
    return p->cast == CVI_CAST_TRUNCATE;
}

/* 1 when a strategy that computes in float or double must use double for
 * p: float64 data, or scipy's cast (its sums are double). */
static inline int cvi_needs_double(const cvi_problem *p)
{
    return p->in_type == CONVOLVE_FLOAT64 || p->out_type == CONVOLVE_FLOAT64 || cvi_truncates(p);
}

/* Byte offsets, relative to element 0, of the lowest byte (lo <= 0) and one
 * past the highest byte the input (output = 0) or output (1) of p touches
 * (layout.c). */
void cvi_problem_span(const cvi_problem *p, int output, ptrdiff_t *lo, ptrdiff_t *hi);

/* ---- strategies --------------------------------------------------------- */

typedef struct cvi_strategy cvi_strategy;

/* Can strategy s serve problem p on device dev (NULL: not probed)?
 * CONVOLVE_OK, or UNSUPPORTED with a reason written to why (for the user:
 * says what limit is exceeded). */
typedef convolve_status (*cvi_check_fn)(const cvi_strategy *s, const cvi_problem *p,
                                        const cvi_device *dev, char *why, size_t why_size);

/* cvi_strategy.dims: bit d-1 set when it serves d dimensions. */
#define CVI_DIMS_1D 1u
#define CVI_DIMS_2D 2u
#define CVI_DIMS_3D 4u
#define CVI_DIMS_ALL (CVI_DIMS_1D | CVI_DIMS_2D | CVI_DIMS_3D)

struct cvi_strategy {
    const char *name;
    convolve_backend backend;
    unsigned dims; /* CVI_DIMS_* */
    int id;        /* the backend's own number for it */
    const char *summary;
    cvi_check_fn check; /* NULL: serves every problem of its dims */
    unsigned tile[3];   /* tile extents (x, y, z) of its thread block, 0 if none */
};

/* 1 if s serves ndim-dimensional problems. */
static inline int cvi_strategy_serves_ndim(const cvi_strategy *s, int ndim)
{
    return ndim >= 1 && ndim <= 3 && (s->dims >> (ndim - 1) & 1u);
}

/* Whether strategy s serves p on device dev (NULL: not probed): its
 * dimensions, then its check. The one place a strategy's check runs before
 * a plan is prepared (named, timed by the autotune, or run on the devices
 * of a streamed plan); the backends' prepare assumes it passed. Errors:
 * UNSUPPORTED, the message on ctx saying why. */
convolve_status cvi_strategy_check(convolve_context *ctx, const cvi_strategy *s,
                                   const cvi_problem *p, const cvi_device *dev);

/* Whether an FFT of p, computing in double (dbl) or float with transforms
 * of at most `points` points, stays within its type's range for inputs up
 * to magnitude xmax (and a finite cval where CONSTANT mode reads it). Its
 * values reach up to points x sum|w| x |input| (the forward transform grows
 * a tile by up to `points`, the product with the filter's spectrum, scaled
 * by 1 / points, brings it to sum|w| x |input|, the inverse grows it
 * again); twice that must fit. xmax < 0: the input type's largest value,
 * at most the square root of the FFT type's (half its exponent range for
 * the input, half for the filter: float inputs are not bounded otherwise).
 * CONVOLVE_OK, or UNSUPPORTED with why (problem.c). */
convolve_status cvi_fft_range(const cvi_problem *p, int dbl, double points, double xmax, char *why,
                              size_t why_size);

/* Seconds on the monotonic clock, for intervals (problem.c). */
double cvi_now_s(void);

#ifdef __cplusplus
}
#endif

#endif /* CONVOLVE_PROBLEM_H */
