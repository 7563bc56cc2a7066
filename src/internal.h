/*
 * internal.h - what the core, the backends and the readers share inside
 * libconvolve: object structs, the canonical problem every backend receives,
 * the strategy registry and the error helpers. Nothing here is public.
 */
#ifndef CONVOLVE_INTERNAL_H
#define CONVOLVE_INTERNAL_H

#include "convolve.h"
#include "kernel_math.h"

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CVI_MESSAGE_SIZE 1024
#define CVI_REASON_SIZE 256

/* ---- context ---------------------------------------------------------- */

/* What a context knows of the CUDA device (probed once, when first needed). */
typedef struct cvi_device {
    convolve_device_info info;          /* info.available = 0: none usable (info.reason) */
    size_t shared_memory_per_block;     /* opt-in maximum, bytes */
} cvi_device;

struct convolve_context {
    char message[CVI_MESSAGE_SIZE];     /* last error; "" after a success */
    int cuda_probed;                    /* 1 once the device was looked at */
    cvi_device cuda;                    /* what the probe found */
    struct cvi_wisdom *wisdom;          /* autotune results (wisdom.c), or NULL */
};

/* Records a formatted message on ctx (which may be NULL) and returns status. */
convolve_status cvi_error(convolve_context *ctx, convolve_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Clears the message; returns CONVOLVE_OK. */
convolve_status cvi_ok(convolve_context *ctx);
/* Probes the CUDA device once; returns ctx->cuda.info.available. */
int cvi_cuda_usable(convolve_context *ctx);

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

/* ---- filters ------------------------------------------------------------ */

struct convolve_filter {
    int ndim;
    size_t shape[CONVOLVE_MAX_DIMS];
    size_t count;                       /* product of shape */
    double *dense;                      /* count weights, C order (always present) */
    int separable;                      /* taps[] valid: given separable, or rank one found */
    double *taps[CONVOLVE_MAX_DIMS];    /* shape[a] weights each, when separable */
};

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
    int ndim;                       /* the user's 1..3 */
    size_t shape[3];                /* padded to 3 axes: {1,1,n}, {1,h,w}, {d,h,w} */
    size_t channels;
    convolve_dtype in_type, out_type;
    ptrdiff_t in_strides[3], in_cstride;    /* bytes, padded axes get 0 */
    ptrdiff_t out_strides[3], out_cstride;
    size_t ksize[3];                /* filter extents, padded with 1 */
    ptrdiff_t koff[3];              /* 0 <= koff < ksize */
    size_t kcount;                  /* product of ksize */
    const double *weights;          /* kcount weights, correlation form, C order */
    int separable;                  /* taps valid */
    const double *taps[3];          /* per padded axis, correlation form; {1.0} on padded axes */
    int mode;                       /* CVI_MODE_* */
    double cval;
    int threads;                    /* CPU threads, 0 = all */
} cvi_problem;

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
    unsigned dims;              /* CVI_DIMS_* */
    int id;                     /* the backend's own number for it */
    const char *summary;
    cvi_check_fn check;         /* NULL: serves every problem of its dims */
    unsigned tile[3];           /* tile extents (x, y, z) of its thread block, 0 if none */
};

/* 1 if s serves ndim-dimensional problems. */
static inline int cvi_strategy_serves_ndim(const cvi_strategy *s, int ndim)
{
    return ndim >= 1 && ndim <= 3 && (s->dims >> (ndim - 1) & 1u);
}

/* The registry of every backend's strategies (src/strategy.c). */
size_t cvi_strategy_total(void);
const cvi_strategy *cvi_strategy_at(size_t i);
const cvi_strategy *cvi_strategy_find(convolve_backend backend, const char *name);

/* ---- plans -------------------------------------------------------------- */

struct convolve_plan {
    convolve_context *ctx;
    convolve_layout in, out;
    cvi_problem problem;
    double *weights;            /* owned storage behind problem.weights */
    double *taps[3];            /* owned storage behind problem.taps */
    const cvi_strategy *strategy;
    const struct cvi_backend *backend;  /* strategy's backend (src/backend.h) */
    void *state;                /* what its prepare made */
    int cpu_fallback;           /* AUTO, no strategy named: on device out of
                                   memory, move to the CPU (convolve_execute) */
};

/* Sorts times[0..runs-1] and summarises them (min, median, max) in *t
 * (measure.c). */
void cvi_summarise_times(double *times, int runs, convolve_timing *t);

/* ---- element conversion ------------------------------------------------- */

/* Reads element of type t at p as double. */
static inline double cvi_load_double(convolve_dtype t, const void *p)
{
    switch (t) {
    case CONVOLVE_FLOAT32: return (double)*(const float *)p;
    case CONVOLVE_FLOAT64: return *(const double *)p;
    case CONVOLVE_UINT8: return (double)*(const unsigned char *)p;
    default: return (double)*(const unsigned short *)p;
    }
}

/* Writes v to the element of type t at p: float types are cast, integer
 * types rounded to nearest (ties to even) and saturated, NaN to 0. */
static inline void cvi_store_double(convolve_dtype t, void *p, double v)
{
    switch (t) {
    case CONVOLVE_FLOAT32: *(float *)p = (float)v; break;
    case CONVOLVE_FLOAT64: *(double *)p = v; break;
    case CONVOLVE_UINT8: *(unsigned char *)p = cvi_saturate_u8(v); break;
    default: *(unsigned short *)p = cvi_saturate_u16(v); break;
    }
}

#ifdef __cplusplus
}
#endif

#endif /* CONVOLVE_INTERNAL_H */
