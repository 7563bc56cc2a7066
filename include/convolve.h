/*
 * convolve.h - the whole public API of libconvolve.
 *
 * libconvolve convolves and correlates 1-D signals, 2-D images and 3-D volumes
 * on CPUs and NVIDIA GPUs with scipy.ndimage's semantics (boundary modes, cval,
 * origin, even filter sizes, convolve versus correlate).
 *
 * Objects:
 *   convolve_context  error messages and device state; create one per thread.
 *   convolve_filter   weights (dense, or one 1-D filter per axis).
 *   convolve_plan     a convolution bound to layouts, filter and options:
 *                     create once, execute many times.
 *   convolve_array    an owned host array, as loaded from or saved to a file.
 * Every create has a free; every free accepts NULL. Functions that can fail
 * return a convolve_status; on failure the context named in the call (or the
 * one the object was made from) holds a message, see convolve_last_error().
 * The library never prints and never exits.
 *
 * A context, and the objects made from it, must be used by one thread at a
 * time. Distinct contexts are independent.
 */
#ifndef CONVOLVE_H
#define CONVOLVE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(CONVOLVE_STATIC_DEFINE)
#define CONVOLVE_API
#elif defined(_WIN32)
#if defined(CONVOLVE_BUILDING)
#define CONVOLVE_API __declspec(dllexport)
#else
#define CONVOLVE_API __declspec(dllimport)
#endif
#else
#define CONVOLVE_API __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                  */
/* ------------------------------------------------------------------------ */

#define CONVOLVE_VERSION_MAJOR 0
#define CONVOLVE_VERSION_MINOR 2
#define CONVOLVE_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH */
#define CONVOLVE_VERSION_NUMBER \
    (CONVOLVE_VERSION_MAJOR * 10000 + CONVOLVE_VERSION_MINOR * 100 + CONVOLVE_VERSION_PATCH)
#define CONVOLVE_VERSION_STRING "0.2.0"

/* The version of the library actually linked (compare with the macros). */
CONVOLVE_API unsigned convolve_version_number(void);
CONVOLVE_API const char *convolve_version_string(void);

/* ------------------------------------------------------------------------ */
/* Status codes: the numbers never change; new codes are only appended.     */
/* ------------------------------------------------------------------------ */

typedef enum convolve_status {
    CONVOLVE_OK = 0,
    CONVOLVE_ERROR_INVALID_ARGUMENT = 1,    /* NULL pointer, unknown enum, bad option value */
    CONVOLVE_ERROR_BAD_LAYOUT = 2,          /* dimensions, shape, channels, strides, alignment */
    CONVOLVE_ERROR_BAD_FILTER = 3,          /* empty, non-finite, wrong dimensionality */
    CONVOLVE_ERROR_BAD_ORIGIN = 4,          /* origin outside the filter */
    CONVOLVE_ERROR_SIZE_OVERFLOW = 5,       /* a byte count does not fit in size_t */
    CONVOLVE_ERROR_OUT_OF_MEMORY = 6,       /* host allocation failed */
    CONVOLVE_ERROR_UNSUPPORTED = 7,         /* the chosen strategy cannot serve this case */
    CONVOLVE_ERROR_BACKEND_UNAVAILABLE = 8, /* backend not built in, or no usable device */
    CONVOLVE_ERROR_DEVICE = 9,              /* a CUDA call failed */
    CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY = 10,
    CONVOLVE_ERROR_IO = 11,        /* opening, reading or writing a file failed */
    CONVOLVE_ERROR_FORMAT = 12,    /* file content malformed or of an unsupported kind */
    CONVOLVE_ERROR_INTERNAL = 13,  /* a bug in libconvolve: please report it */
    CONVOLVE_ERROR_CANCELLED = 14, /* the progress callback asked to stop */
    CONVOLVE_ERROR_LIMIT = 15      /* an image declares more pixels than the limit */
} convolve_status;

/* The enumerator's name, e.g. "CONVOLVE_ERROR_BAD_LAYOUT";
 * "CONVOLVE_STATUS_UNKNOWN" for a number that is not a status. */
CONVOLVE_API const char *convolve_status_name(convolve_status status);
/* A short English description of the status. */
CONVOLVE_API const char *convolve_status_description(convolve_status status);

/* ------------------------------------------------------------------------ */
/* Element types and array layouts                                          */
/* ------------------------------------------------------------------------ */

typedef enum convolve_dtype {
    CONVOLVE_FLOAT32 = 0,
    CONVOLVE_FLOAT64 = 1,
    CONVOLVE_UINT8 = 2,
    CONVOLVE_UINT16 = 3
} convolve_dtype;

/* Bytes per element (0 for an unknown type). */
CONVOLVE_API size_t convolve_dtype_size(convolve_dtype dtype);
/* "float32", "float64", "uint8", "uint16"; NULL for an unknown type. */
CONVOLVE_API const char *convolve_dtype_name(convolve_dtype dtype);
/* Parses those names; CONVOLVE_ERROR_INVALID_ARGUMENT for any other. */
CONVOLVE_API convolve_status convolve_dtype_parse(const char *name, convolve_dtype *dtype);

#define CONVOLVE_MAX_DIMS 3

/*
 * Where the elements of an array lie in memory. Axes are listed slowest first
 * (C order, as numpy): a 2-D image has shape {height, width}. Each element holds
 * `channels` interleaved values (1 gray, 3 RGB, 4 RGBA, any count); the filter
 * applies to each channel alone. Strides are in bytes and may be padded
 * (pitched rows) or describe a sub-region of a larger array; they must be
 * multiples of the element size. Input strides may be zero or negative;
 * an output's elements must not overlap one another.
 */
typedef struct convolve_layout {
    convolve_dtype dtype;
    int ndim;                             /* 1 to 3 spatial dimensions */
    size_t shape[CONVOLVE_MAX_DIMS];      /* extents, slowest first; entries past ndim ignored */
    size_t channels;                      /* >= 1 */
    ptrdiff_t strides[CONVOLVE_MAX_DIMS]; /* bytes between neighbours along each axis */
    ptrdiff_t channel_stride;             /* bytes between the channels of one element */
} convolve_layout;

/*
 * Fills *layout for a contiguous C-order array with interleaved channels.
 * Errors: INVALID_ARGUMENT (NULL, unknown dtype), BAD_LAYOUT (ndim outside
 * 1..3, a zero extent, zero channels), SIZE_OVERFLOW (byte count too large).
 */
CONVOLVE_API convolve_status convolve_layout_init(convolve_layout *layout, convolve_dtype dtype,
                                                  int ndim, const size_t *shape, size_t channels);

/* Number of elements (product of the shape) times channels; 0 if it overflows. */
CONVOLVE_API size_t convolve_layout_count(const convolve_layout *layout);

/* ------------------------------------------------------------------------ */
/* Context                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct convolve_context convolve_context;

/* Creates a context. Errors: INVALID_ARGUMENT (NULL), OUT_OF_MEMORY. */
CONVOLVE_API convolve_status convolve_context_create(convolve_context **ctx);
/* Frees a context; NULL is accepted. Objects made from it must be freed first. */
CONVOLVE_API void convolve_context_free(convolve_context *ctx);
/* The message of the last failed call made with this context ("" if none).
 * The string lives until the next call that uses the context. */
CONVOLVE_API const char *convolve_last_error(const convolve_context *ctx);

/* The most pixels a new context lets an image file declare: 2^28
 * (268 million, e.g. 16384 x 16384). */
#define CONVOLVE_DEFAULT_MAX_PIXELS ((size_t)1 << 28)

/*
 * Sets the most pixels (width x height, times the pages of a TIFF stack) an
 * image file (PNG, JPEG, PNM, TIFF) read with this context may declare: a
 * larger one is refused from its header, before anything is decoded or
 * allocated, with CONVOLVE_ERROR_LIMIT, so that a small compressed file
 * cannot make the reader take gigabytes and minutes (a "decompression
 * bomb"). 0 lifts the limit up to the readers' own (2^31 pixels a page).
 * .npy and text files hold their data uncompressed and are not limited.
 * Errors: INVALID_ARGUMENT (NULL context).
 */
CONVOLVE_API convolve_status convolve_context_set_max_pixels(convolve_context *ctx,
                                                             size_t max_pixels);
/* The context's pixel limit (0: none); 0 for NULL. */
CONVOLVE_API size_t convolve_context_max_pixels(const convolve_context *ctx);

/* The zlib level of PNG files a new context writes: fast, as image tools
 * that write PNG for speed default to. */
#define CONVOLVE_DEFAULT_PNG_COMPRESSION 1

/*
 * Sets how hard PNG files written with this context are compressed: a zlib
 * level from 0 (stored, the fastest, the largest files) to 9 (the smallest,
 * many times slower). Levels 1 to 3 use one row filter (Average), which is
 * faster than trying each and about as small; 4 and above let libpng choose
 * a filter per row (docs/cli.md, --png-compression, gives times and sizes).
 * Errors: INVALID_ARGUMENT (NULL context, a level outside 0..9).
 */
CONVOLVE_API convolve_status convolve_context_set_png_compression(convolve_context *ctx, int level);
/* The context's PNG compression level; -1 for NULL. */
CONVOLVE_API int convolve_context_png_compression(const convolve_context *ctx);

/* ------------------------------------------------------------------------ */
/* Backends, strategies and the device                                      */
/* ------------------------------------------------------------------------ */

typedef enum convolve_backend {
    CONVOLVE_BACKEND_AUTO =
        0, /* CUDA when built in, a device is usable and the work pays; else CPU */
    CONVOLVE_BACKEND_CPU = 1,
    CONVOLVE_BACKEND_CUDA = 2
} convolve_backend;

/* "auto", "cpu", "cuda"; NULL for an unknown value. */
CONVOLVE_API const char *convolve_backend_name(convolve_backend backend);
CONVOLVE_API convolve_status convolve_backend_parse(const char *name, convolve_backend *backend);
/* 1 if the backend was compiled into this library, else 0 (AUTO: 1). */
CONVOLVE_API int convolve_backend_built(convolve_backend backend);

/* A named way of computing the convolution on one backend. */
typedef struct convolve_strategy_info {
    const char *name;         /* e.g. "tiled-in"; unique per backend */
    convolve_backend backend; /* CPU or CUDA */
    unsigned dims;            /* bit d-1 set when it serves d-dimensional arrays */
    const char *summary;      /* one line */
    unsigned tile[3];         /* the thread block's tile extents (x, y, z) it uses, 0 if none */
} convolve_strategy_info;

/* Number of strategies built into this library. */
CONVOLVE_API size_t convolve_strategy_count(void);
/* Describes strategy i (0 <= i < count). Errors: INVALID_ARGUMENT. */
CONVOLVE_API convolve_status convolve_strategy_get(size_t index, convolve_strategy_info *info);

typedef struct convolve_device_info {
    int available; /* 1 if a CUDA device can be used */
    int device_count;
    char name[256];      /* of the current device */
    size_t total_memory; /* bytes */
    int compute_major, compute_minor;
    int multiprocessors;
    char reason[256]; /* why not available, when available == 0 */
} convolve_device_info;

/* Describes the CUDA device the context uses. Succeeds with available = 0
 * (and a reason) when CUDA is not built in or no device is usable.
 * Errors: INVALID_ARGUMENT. */
CONVOLVE_API convolve_status convolve_device_query(convolve_context *ctx,
                                                   convolve_device_info *info);

/* Number of CUDA devices of the host (*count = 0, and CONVOLVE_OK, when CUDA
 * is not built in or no device can be found). Errors: INVALID_ARGUMENT. */
CONVOLVE_API convolve_status convolve_device_count(convolve_context *ctx, int *count);

/* Describes CUDA device `index` (0 <= index < convolve_device_count) as
 * convolve_device_query describes the current one (name, memory, compute
 * capability; available = 0 with a reason when it cannot be used).
 * Errors: INVALID_ARGUMENT (NULL, index outside the devices there are). */
CONVOLVE_API convolve_status convolve_device_query_index(convolve_context *ctx, int index,
                                                         convolve_device_info *info);

/*
 * Pins (page-locks) the host memory [ptr, ptr + bytes) for every CUDA device
 * (cudaHostRegister), so that streamed host-memory CUDA plans (see
 * convolve_options.device_memory_budget) copy an array that lies wholly in
 * it, with packed C-order rows, straight to and from the devices instead of
 * through their own pinned staging buffers (docs/scale.md). Register whole
 * arrays; pinned memory is a scarce resource of the host. Results are the
 * same either way. Errors: INVALID_ARGUMENT (NULL, 0 bytes, memory already
 * registered), BACKEND_UNAVAILABLE (CUDA not built in, or no device),
 * DEVICE.
 */
CONVOLVE_API convolve_status convolve_host_register(convolve_context *ctx, void *ptr, size_t bytes);
/* Unpins memory pinned by convolve_host_register at ptr (its start).
 * Errors: INVALID_ARGUMENT (NULL, not registered there), BACKEND_UNAVAILABLE,
 * DEVICE. */
CONVOLVE_API convolve_status convolve_host_unregister(convolve_context *ctx, void *ptr);

/* convolve_host_alloc flag: only memory the pool holds free now (see below). */
#define CONVOLVE_HOST_ALLOC_POOLED 1u

/*
 * Allocates at least `bytes` of pinned host memory (aligned to 256 bytes or
 * more: 2 MiB where the pool maps and registers its own memory) from
 * the process's pool of pinned buffers, the one the streamed plans stage
 * through: host arrays that lie in it are copied straight to and from the
 * devices, as with convolve_host_register, without its cost each time.
 * Pinning new memory takes about as long as faulting it in and registering
 * it (on the order of 10 ms for 256 MiB); memory given back with
 * convolve_host_free stays pinned in the pool for the next allocation
 * (CONVOLVE_PINNED_POOL_MIB bounds what it keeps free; by default an eighth
 * of the host's memory). A free buffer serves a request it holds that is
 * no less than about half its size. flags: 0, or CONVOLVE_HOST_ALLOC_POOLED:
 * only a free pooled buffer, never new memory: *ptr = NULL and CONVOLVE_OK
 * when there is none (always before CUDA has started in the process;
 * nothing is pinned then).
 * Errors: INVALID_ARGUMENT (NULL, 0 bytes, unknown flags),
 * BACKEND_UNAVAILABLE (CUDA not built in, or no device),
 * DEVICE_OUT_OF_MEMORY, DEVICE. *ptr is NULL on every error.
 */
CONVOLVE_API convolve_status convolve_host_alloc(convolve_context *ctx, size_t bytes,
                                                 unsigned flags, void **ptr);
/* Gives memory of convolve_host_alloc (ptr as returned) back to the pool;
 * NULL, and pointers convolve_host_alloc did not return, are ignored. */
CONVOLVE_API void convolve_host_free(void *ptr);
/* Pins a buffer of at least `bytes` into the pool in the background and
 * returns at once, so that a later convolve_host_alloc of that size (with
 * CONVOLVE_HOST_ALLOC_POOLED too) finds it. Does nothing when the pool holds
 * or is pinning one that would serve, or when the pool's free, pinning and
 * allocated buffers would pass its limit with it.
 * Errors: INVALID_ARGUMENT (NULL, 0 bytes), BACKEND_UNAVAILABLE. */
CONVOLVE_API convolve_status convolve_host_reserve(convolve_context *ctx, size_t bytes);

/* ------------------------------------------------------------------------ */
/* Filters                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct convolve_filter convolve_filter;

/*
 * A dense filter of ndim dimensions (1..3), extents shape[0..ndim-1] (any
 * size >= 1, odd or even, not necessarily square), weights in C order.
 * The weights are copied. Errors: INVALID_ARGUMENT (NULL), BAD_FILTER (ndim,
 * a zero extent, a NaN or infinite weight), SIZE_OVERFLOW, OUT_OF_MEMORY.
 */
CONVOLVE_API convolve_status convolve_filter_create(convolve_context *ctx, convolve_filter **filter,
                                                    int ndim, const size_t *shape,
                                                    const double *weights);

/*
 * A separable filter: one 1-D filter per axis (taps[a] has lengths[a] weights).
 * It means exactly the dense filter that is their outer product, for every
 * mode (see docs/semantics.md). Only the taps are stored (plans fold taps
 * longer than the array onto it), so the product may be of any size.
 * Errors as convolve_filter_create.
 */
CONVOLVE_API convolve_status convolve_filter_create_separable(convolve_context *ctx,
                                                              convolve_filter **filter, int ndim,
                                                              const size_t *lengths,
                                                              const double *const *taps);

/*
 * A named filter of ndim dimensions, from a spec "NAME" or "NAME:ARG". The
 * names, the argument each takes, the dimensions each serves and what each
 * computes are listed by convolve_named_filter_get (box:R, gaussian:SIGMA,
 * identity, laplacian, sobel-x, sobel-y, sharpen, emboss). Box and gaussian
 * are separable; gaussian:S is scipy's sampled Gaussian of radius
 * int(4*S + 0.5). Box and gaussian radii go up to 100000, and their weights
 * (taps per axis to the power ndim) up to 2^24. Asymmetric filters are stored
 * so that convolution (the default operation) gives the natural result.
 * Errors: INVALID_ARGUMENT (NULL), BAD_FILTER (unknown name, bad argument,
 * wrong ndim for that name, over those limits), OUT_OF_MEMORY.
 */
CONVOLVE_API convolve_status convolve_filter_create_named(convolve_context *ctx,
                                                          convolve_filter **filter,
                                                          const char *spec, int ndim);

/* A named filter, as convolve_filter_create_named knows it. */
typedef struct convolve_named_filter_info {
    const char *name;     /* e.g. "gaussian"; unique */
    const char *argument; /* what follows "NAME:" (e.g. "SIGMA"), or NULL when it takes none */
    unsigned dims;        /* bit d-1 set when it has a d-dimensional form */
    const char *summary;  /* one line: what it computes and what its argument means */
} convolve_named_filter_info;

/* Number of named filters. */
CONVOLVE_API size_t convolve_named_filter_count(void);
/* Describes named filter i (0 <= i < count), in a fixed order (the order the
 * messages list them in). Errors: INVALID_ARGUMENT (index out of range, NULL). */
CONVOLVE_API convolve_status convolve_named_filter_get(size_t index,
                                                       convolve_named_filter_info *info);

/* Frees a filter; NULL is accepted. */
CONVOLVE_API void convolve_filter_free(convolve_filter *filter);
/* Number of dimensions (0 for NULL). */
CONVOLVE_API int convolve_filter_ndim(const convolve_filter *filter);
/* Extent along axis (0 if axis is out of range or filter is NULL). */
CONVOLVE_API size_t convolve_filter_extent(const convolve_filter *filter, int axis);
/* 1 if made separable (or found to be rank one when the plan looks), else 0. */
CONVOLVE_API int convolve_filter_is_separable(const convolve_filter *filter);
/* Copies the dense weights (the outer product for a separable filter) into
 * out[0..count-1], C order. Errors: INVALID_ARGUMENT (NULL, count too small). */
CONVOLVE_API convolve_status convolve_filter_weights(const convolve_filter *filter, double *out,
                                                     size_t count);

/* ------------------------------------------------------------------------ */
/* Options and plans                                                        */
/* ------------------------------------------------------------------------ */

typedef enum convolve_operation {
    CONVOLVE_OP_CONVOLVE = 0, /* true convolution: weights flipped, scipy.ndimage.convolve */
    CONVOLVE_OP_CORRELATE = 1 /* scipy.ndimage.correlate */
} convolve_operation;

/* How the input is extended past its edges (the chapter's ghost cells).
 * For input a b c d:
 *   REFLECT   d c b a | a b c d | d c b a   (scipy's default)
 *   CONSTANT  k k k k | a b c d | k k k k   (k = cval)
 *   NEAREST   a a a a | a b c d | d d d d
 *   MIRROR      d c b | a b c d | c b a
 *   WRAP      a b c d | a b c d | a b c d
 * Filters longer than the input keep extending by the same rule. */
typedef enum convolve_mode {
    CONVOLVE_MODE_REFLECT = 0,
    CONVOLVE_MODE_CONSTANT = 1,
    CONVOLVE_MODE_NEAREST = 2,
    CONVOLVE_MODE_MIRROR = 3,
    CONVOLVE_MODE_WRAP = 4
} convolve_mode;

/* "reflect", "constant", "nearest", "mirror", "wrap"; NULL for unknown. */
CONVOLVE_API const char *convolve_mode_name(convolve_mode mode);
CONVOLVE_API convolve_status convolve_mode_parse(const char *name, convolve_mode *mode);

/*
 * Progress of one convolve_execute, as given to a convolve_progress_fn.
 * The work is cut into slabs along the slowest axis (the planes of a 3-D
 * array, the rows of a 2-D one, segments of a 1-D one); a run that is not
 * cut has one slab.
 */
typedef struct convolve_progress {
    size_t slabs_done, slabs_total;
    size_t rows_done, rows_total; /* along the slowest axis (outputs written) */
    size_t bytes_done;            /* input plus output bytes of the slabs done */
    double elapsed_s;             /* seconds since convolve_execute began */
} convolve_progress;

/*
 * Called by convolve_execute, from the calling thread, once at the start
 * (slabs_done = 0) and then after each slab's output is written (the last
 * call has slabs_done = slabs_total); on the GPU also about every 50 ms
 * while no slab completes, with the same counts, so that a cancel lands
 * while long slabs run. Return 0 to go on; any other value
 * cancels: no new slab starts, slabs already in flight finish, and
 * convolve_execute returns CONVOLVE_ERROR_CANCELLED with `out` partly
 * written (the slabs reported done are final; the rest are undefined). The
 * callback must not use the plan or its context. On the CPU and on one
 * device, slabs complete in order: output rows [0, rows_done) along the
 * slowest axis are final (input rows may still be read by later slabs:
 * modes reach back, wrap to the other end); with several devices they
 * complete in any order.
 */
typedef int (*convolve_progress_fn)(void *user, const convolve_progress *progress);

/*
 * How the sums become uint8 or uint16 output elements (float outputs are
 * unaffected):
 *   ROUND_SATURATE  rounded to nearest (ties to even) and clamped to the
 *                   type's range; NaN becomes 0 (the default).
 *   TRUNCATE        scipy.ndimage's cast: each sum is computed in double
 *                   (and divided by convolve_options.divisor); a value v
 *                   within (W + 1) * 2^-52 * max(|n|, 1) of an integer n,
 *                   W the filter's weights (the product of the extents),
 *                   is taken as n (rounding of the order of summation,
 *                   which differs from scipy's: an exact integer result
 *                   must not truncate to the one below);
 *                   then it is truncated toward zero to a 64-bit integer
 *                   (NaN, infinities and values out of its range give
 *                   INT64_MIN, as x86-64's conversion does) whose low 8 or
 *                   16 bits are kept (wrap-around: -1.5 -> 255 for uint8).
 * Under TRUNCATE a dense filter is summed as given, even when it is rank
 * one (its factors may be inexact quotients). Strategies that do not
 * accumulate in double refuse TRUNCATE
 * (UNSUPPORTED, saying so): on the CPU the image strategy; on the GPU all
 * but basic and constant, and direct and separable, which serve uint8 and
 * uint16 images of 1 to 4 channels filtered along y and x by separable or
 * one-axis filters of up to 64 taps an axis. `auto` picks one that serves.
 */
typedef enum convolve_integer_cast {
    CONVOLVE_CAST_ROUND_SATURATE = 0,
    CONVOLVE_CAST_TRUNCATE = 1
} convolve_integer_cast;

typedef struct convolve_options {
    /* sizeof(convolve_options) as the caller was compiled; set by
     * convolve_options_init, which must fill every options struct first.
     * Fields are only ever appended (each 0 or NULL by default), so the
     * library reads the fields within `size` and takes the defaults for
     * those past it: a program built against an older convolve.h runs with
     * a newer library of the same SONAME (docs/architecture.md, "ABI"). */
    size_t size;
    convolve_operation operation; /* default CONVOLVE_OP_CONVOLVE */
    convolve_mode mode;           /* default CONVOLVE_MODE_REFLECT */
    double cval;                  /* value past the edges in CONSTANT mode; default 0 */
    ptrdiff_t
        origin[CONVOLVE_MAX_DIMS]; /* per axis, as scipy: -(K/2) <= origin <= (K-1)/2; default 0 */
    convolve_backend backend;      /* default AUTO */
    const char *strategy;          /* NULL or "auto" (default), or a strategy name */
    int threads;                   /* CPU threads; 0 = all available */
    int autotune;                  /* 1: with no strategy named, time the
                                           strategies that serve and keep the
                                           fastest (see convolve_wisdom_save); default 0 */
    /* Bytes of device memory a CUDA plan executed on host memory may use on
     * each device; 0 (default) = automatic: about 80% of the device's free
     * memory when the plan is made, or the environment variable
     * CONVOLVE_DEVICE_BUDGET (bytes, with an optional K, M or G suffix, powers
     * of 1024) when set. A host-memory plan whose one-shot run would not fit
     * is streamed in slabs (docs/scale.md); results are the same. With the
     * automatic budget, arrays of less than 8 MiB in and out on the current
     * device run in one shot, and the free memory is read only if they are
     * filtered in place. Ignored by CPU plans and by convolve_execute_device. */
    size_t device_memory_budget;
    /* The CUDA devices a plan executed on host memory spreads over:
     * devices[0..device_count-1] (distinct device numbers); device_count 0
     * (default, devices NULL) = the current device only; device_count -1 =
     * every device of the host. With more than one device the work is
     * streamed in slabs shared among them. Ignored by CPU plans;
     * convolve_execute_device always runs on the current device. */
    const int *devices;
    int device_count;
    /* Optional progress callback for convolve_execute (see
     * convolve_progress_fn) and the pointer it is given; NULL (default) = none.
     * CPU plans with a callback run in slabs (of about 64 MiB of input, and
     * of about 25 ms by a rough estimate of the plan's strategy) when the
     * array is larger or the run longer than that, so that the callback is
     * called as the work advances (the Python package checks for Ctrl-C
     * there); out of place each slab computes its output rows of the
     * whole array where they lie (no copies), so the result is byte for
     * byte that of a run without a callback, at a cost of a few percent
     * (docs/cli.md, "What the progress callback costs"). */
    convolve_progress_fn progress;
    void *progress_user;
    /* How integer outputs are made from the sums (convolve_integer_cast);
     * default CONVOLVE_CAST_ROUND_SATURATE. Ignored for float outputs. */
    convolve_integer_cast integer_cast;
    /* With CONVOLVE_CAST_TRUNCATE and an integer output: each sum is divided
     * by this (in double) before the cast, as scipy's uniform filters divide
     * their sums of weights one by the size. 0 (default) or 1: none. Must be
     * finite and positive, and 0 or 1 otherwise. */
    double divisor;
} convolve_options;

/* Fills the first `size` bytes of *options with the defaults above and
 * sets options->size = size (every field added later is 0 or NULL by
 * default; bytes past the library's own struct are zeroed). Nothing is
 * written when options is NULL or size < sizeof(size_t). Call it through
 * convolve_options_init, which passes the caller's sizeof. */
CONVOLVE_API void convolve_options_init_size(convolve_options *options, size_t size);

/* Fills *options with the defaults above: convolve_options_init_size with
 * this header's sizeof(convolve_options). The macro is what C callers use;
 * the function of the same name (this library's size) serves bindings that
 * cannot expand macros. */
CONVOLVE_API void(convolve_options_init)(convolve_options *options);
#define convolve_options_init(options) \
    convolve_options_init_size((options), sizeof(convolve_options))

typedef struct convolve_plan convolve_plan;

/*
 * Plans out = filter (*) in. `in` and `out` must have the same ndim, shape
 * and channels; their dtypes may differ (integer outputs are rounded to
 * nearest, ties to even, and saturated, or cast as scipy does: see
 * convolve_integer_cast). The filter must have in->ndim
 * dimensions. Everything is validated here, once; the layouts, filter and
 * options are copied, so they may be freed after this call.
 * options->devices is copied too. Errors: INVALID_ARGUMENT (also an
 * options->size of 0 (options not filled by convolve_options_init), or
 * larger than this library's with a field past its own set (a program
 * built against a newer convolve.h); a device_count below -1, devices NULL
 * with device_count > 0, a device number repeated, negative, or, for a
 * CUDA plan, not a device of the host; an unknown integer_cast; a divisor
 * that is not finite and positive, or not 0 or 1 without TRUNCATE and an
 * integer output),
 * BAD_LAYOUT, BAD_FILTER, BAD_ORIGIN, SIZE_OVERFLOW,
 * OUT_OF_MEMORY, UNSUPPORTED (the named strategy cannot serve this case; the
 * message says why), BACKEND_UNAVAILABLE (CUDA asked for but not usable).
 */
CONVOLVE_API convolve_status convolve_plan_create(convolve_context *ctx, convolve_plan **plan,
                                                  const convolve_layout *in,
                                                  const convolve_layout *out,
                                                  const convolve_filter *filter,
                                                  const convolve_options *options);

/* Frees a plan and its device buffers; NULL is accepted. */
CONVOLVE_API void convolve_plan_free(convolve_plan *plan);

/* The backend and strategy the plan runs (after "auto" was resolved). */
CONVOLVE_API convolve_backend convolve_plan_backend(const convolve_plan *plan);
CONVOLVE_API const char *convolve_plan_strategy(const convolve_plan *plan);

/*
 * Runs the plan on host memory: `in` and `out` point at element 0 of arrays
 * laid out as planned. Returns when `out` is written. `out` must not overlap
 * `in`, except that `out == in` with input and output layouts of the same
 * element size and strides runs in place: always in slabs, each slab's
 * halo (the filter's extent along the slowest axis less one, in rows)
 * saved before any is written, so the result is that of the run into
 * another array in the same slabs (byte for byte that of one shot, except
 * the CPU's fft and auto strategies, which pick their tiles or method by
 * slab size: to rounding), and the memory beyond the array is the
 * slab buffers and the saved halos; a run that fails or is cancelled
 * midway leaves the array partly filtered.
 * A plan made with backend AUTO and no strategy named that runs out
 * of device memory here moves to the CPU for good and still writes `out`
 * (convolve_plan_backend then reports CPU; in place, only if no slab had
 * started); any other plan returns the error. Such a plan that AUTO gave
 * the CPU only because CUDA's start-up would not pay for one run moves to
 * the GPU for good at the first execution after the time a started GPU
 * would have saved (each run's time less the GPU's estimate), summed over
 * the process's executions, reaches the start-up, or at one after some
 * context of the process started CUDA
 * (docs/architecture.md, "AUTO's choice of backend").
 * A CUDA plan streams in slabs when the one-shot run would not fit its
 * device memory budget or when it has several devices (see
 * convolve_options); the options' progress callback, if any, is called as
 * described at convolve_progress_fn.
 * Errors: INVALID_ARGUMENT (NULL, misaligned, overlapping other than in
 * place), OUT_OF_MEMORY, DEVICE, DEVICE_OUT_OF_MEMORY (also: the budget is
 * too small for one slab), CANCELLED (the progress callback asked to stop;
 * `out` partly written).
 */
CONVOLVE_API convolve_status convolve_execute(convolve_plan *plan, const void *in, void *out);

/*
 * Runs a CUDA plan on device memory, asynchronously on `stream` (a
 * cudaStream_t; NULL for the default stream): no copies and no
 * synchronisation. Errors: as convolve_execute, and UNSUPPORTED for a CPU plan.
 */
CONVOLVE_API convolve_status convolve_execute_device(convolve_plan *plan, const void *in, void *out,
                                                     void *stream);

/* One call: plan, execute on host memory, free. Errors: as the three. */
CONVOLVE_API convolve_status convolve_run(convolve_context *ctx, const convolve_layout *in_layout,
                                          const void *in, const convolve_layout *out_layout,
                                          void *out, const convolve_filter *filter,
                                          const convolve_options *options);

/* ------------------------------------------------------------------------ */
/* Measurement                                                              */
/* ------------------------------------------------------------------------ */

typedef struct convolve_timing {
    double median_ms; /* median time of one execution */
    double min_ms;
    double max_ms;
    int runs; /* timed runs, after warm-up */
} convolve_timing;

/*
 * Times the plan on data resident where its backend computes (device memory
 * for CUDA, timed with CUDA events; host memory for CPU), filled with random
 * values, after `warmup` untimed runs. Errors: INVALID_ARGUMENT (runs < 1),
 * OUT_OF_MEMORY, DEVICE, DEVICE_OUT_OF_MEMORY.
 */
CONVOLVE_API convolve_status convolve_plan_benchmark(convolve_plan *plan, int warmup, int runs,
                                                     convolve_timing *timing);

/*
 * Wisdom: what options.autotune measured. A plan made with autotune = 1 and
 * no strategy named times each strategy of its backend that serves the case
 * (convolve_plan_benchmark: 1 warm-up, median of 5) and keeps the fastest;
 * the context remembers the choice for the problem's class (device, or CPU
 * threads; dimensionality; element types; channels; filter extents, dense or
 * separable; mode; each extent rounded up to a power of two), so later plans
 * of that class are made without timing. Save it to a file to keep it across
 * runs, like FFTW's wisdom; a remembered strategy that no longer serves (or
 * is unknown) is measured again.
 */
/* Writes the context's wisdom to path (text; replaced atomically).
 * Errors: INVALID_ARGUMENT, IO, OUT_OF_MEMORY. */
CONVOLVE_API convolve_status convolve_wisdom_save(convolve_context *ctx, const char *path);
/* Adds the wisdom in path to the context's (its entries win). A malformed
 * file changes nothing. Errors: INVALID_ARGUMENT, IO, FORMAT, OUT_OF_MEMORY. */
CONVOLVE_API convolve_status convolve_wisdom_load(convolve_context *ctx, const char *path);
/* Problem classes the context has wisdom for; 0 for NULL. */
CONVOLVE_API size_t convolve_wisdom_count(const convolve_context *ctx);
/* Drops the context's wisdom. NULL is accepted. */
CONVOLVE_API void convolve_wisdom_forget(convolve_context *ctx);

/*
 * Measures device-to-device copy bandwidth with a copy of `bytes` bytes
 * (GB/s, counting bytes read plus bytes written). Errors: BACKEND_UNAVAILABLE,
 * DEVICE, DEVICE_OUT_OF_MEMORY, INVALID_ARGUMENT.
 */
CONVOLVE_API convolve_status convolve_device_copy_bandwidth(convolve_context *ctx, size_t bytes,
                                                            int runs, double *gb_per_s);

/* ------------------------------------------------------------------------ */
/* Host arrays and files                                                    */
/* ------------------------------------------------------------------------ */

typedef struct convolve_array convolve_array;

/* A contiguous host array (interleaved channels), zero-filled.
 * Errors: INVALID_ARGUMENT, BAD_LAYOUT, SIZE_OVERFLOW, OUT_OF_MEMORY. */
CONVOLVE_API convolve_status convolve_array_create(convolve_context *ctx, convolve_array **array,
                                                   convolve_dtype dtype, int ndim,
                                                   const size_t *shape, size_t channels);
/* Frees an array; NULL is accepted. */
CONVOLVE_API void convolve_array_free(convolve_array *array);
/* Its layout (contiguous, C order, interleaved channels). */
CONVOLVE_API const convolve_layout *convolve_array_layout(const convolve_array *array);
/* Its elements. */
CONVOLVE_API void *convolve_array_data(convolve_array *array);
CONVOLVE_API const void *convolve_array_const_data(const convolve_array *array);
/* Its size in bytes. */
CONVOLVE_API size_t convolve_array_bytes(const convolve_array *array);

typedef enum convolve_format {
    CONVOLVE_FORMAT_AUTO = 0, /* by the file name's extension (and, on load, its magic bytes) */
    CONVOLVE_FORMAT_NPY =
        1, /* numpy .npy: float32/64, uint8/16, 1 to 3 dims (+1 on save for channels) */
    CONVOLVE_FORMAT_PNG = 2,  /* 8/16-bit gray, gray+alpha, RGB, RGBA */
    CONVOLVE_FORMAT_JPEG = 3, /* 8-bit gray or RGB */
    CONVOLVE_FORMAT_PNM = 4,  /* PGM/PPM (P2, P3, P5, P6), 8 or 16 bits */
    CONVOLVE_FORMAT_TEXT =
        5, /* whitespace-separated numbers; a line a row, a blank line ends a plane */
    CONVOLVE_FORMAT_TIFF =
        6 /* uint8/16, float32/64; 1 to 4 channels; a page a 2-D image, pages a 3-D stack */
} convolve_format;

/*
 * TIFF (libtiff): loads 8/16-bit unsigned and 32/64-bit float samples, gray,
 * gray+alpha, RGB or RGBA, chunky or planar, in strips or tiles, with any
 * compression scheme libtiff decodes (JPEG's YCbCr as RGB); one page as a
 * 2-D image, several pages as a 3-D stack (pages, height, width), whose
 * pages must agree in size, type and channels (else FORMAT); pages marked
 * reduced-resolution (thumbnails) are skipped. Saves a 2-D array as one page
 * and a 3-D array as a page per plane, uncompressed. A libconvolve built
 * without libtiff refuses TIFF: FORMAT on load, UNSUPPORTED on save, with a
 * message that says so.
 */

/* "auto", "npy", "png", "jpeg", "pnm", "text", "tiff"; NULL for unknown. */
CONVOLVE_API const char *convolve_format_name(convolve_format format);
/* The index-th file extension (lower case, without the dot) that names
 * format, or with CONVOLVE_FORMAT_AUTO the index-th of all formats ("npy",
 * "png", "jpg", "jpeg", ...); NULL past the last. */
CONVOLVE_API const char *convolve_format_extension(convolve_format format, size_t index);
/* The format a path's extension names (.npy .png .jpg .jpeg .pgm .ppm .pnm .txt
 * .tif .tiff); CONVOLVE_FORMAT_AUTO when none does. */
CONVOLVE_API convolve_format convolve_format_from_path(const char *path);

/* convolve_format_detect looks at no more than this many leading bytes. */
#define CONVOLVE_FORMAT_DETECT_BYTES 8

/*
 * The format whose magic number opens data[0..size-1]: NPY ("\x93NUMPY"),
 * PNG ("\x89PNG"), JPEG (FF D8 FF), PNM ("P1" to "P7" and a blank or '#')
 * or TIFF ("II*\0", "MM\0*", or BigTIFF's "II+\0", "MM\0+");
 * CONVOLVE_FORMAT_AUTO when none does (text has no magic number). This is
 * what convolve_array_load and _load_memory go by with format AUTO; only the
 * first CONVOLVE_FORMAT_DETECT_BYTES bytes are read. data may be NULL when
 * size is 0. A recognised magic number does not mean the rest is valid.
 */
CONVOLVE_API convolve_format convolve_format_detect(const void *data, size_t size);

/* 1 for the image formats (PNG, JPEG, PNM), which hold 2-D arrays of integer
 * samples with channels; 0 for the others and for unknown values. */
CONVOLVE_API int convolve_format_is_image(convolve_format format);

/*
 * Whether convolve_array_save can write, in `format`, an array of the
 * layout's element type, dimensions, extents and channels (strides are not
 * looked at): CONVOLVE_OK when it can. When it cannot, UNSUPPORTED, and the
 * context's message says what the format holds, checked in this order:
 * element type ("PNG holds uint8 or uint16 data"), dimensions ("image files
 * hold 2-D images"), channels ("JPEG holds 1 (gray) or 3 (RGB) channels"),
 * extents ("JPEG holds at most 65500 pixels per side"). NPY holds every
 * valid layout. Errors: INVALID_ARGUMENT (NULL layout, unknown element type,
 * format AUTO or unknown), BAD_LAYOUT (ndim outside 1..3, a zero extent or
 * zero channels), SIZE_OVERFLOW (the array's byte count overflows).
 */
CONVOLVE_API convolve_status convolve_format_can_hold(convolve_context *ctx, convolve_format format,
                                                      const convolve_layout *layout);

/*
 * Reads a file into a new array. Images load as 2-D arrays with channels
 * (uint8, or uint16 for 16-bit PNG/PNM); TIFF as above; .npy arrays load
 * with 1 channel and their own dimensions (big-endian data and Fortran order
 * are converted to the host's byte order and C order); text loads as float64
 * with 1, 2 or 3 dimensions (planes, rows, columns; leading dimensions of
 * size one dropped).
 * Errors: INVALID_ARGUMENT, IO, FORMAT (malformed, truncated, unsupported),
 * SIZE_OVERFLOW, OUT_OF_MEMORY.
 */
CONVOLVE_API convolve_status convolve_array_load(convolve_context *ctx, convolve_array **array,
                                                 const char *path, convolve_format format);

/* The same, from bytes in memory (format must not be AUTO unless the bytes
 * carry a magic number: .npy, PNG, JPEG, PNM, TIFF). */
CONVOLVE_API convolve_status convolve_array_load_memory(convolve_context *ctx,
                                                        convolve_array **array, const void *data,
                                                        size_t size, convolve_format format);

/*
 * Writes an array to a file, atomically: the data goes to a temporary file
 * beside it that is renamed over `path` only when complete, so a failure
 * leaves any old file untouched. Images need uint8 (or uint16 for PNG/PNM)
 * 2-D arrays with 1 to 4 channels (JPEG and PNM: 1 or 3); TIFF takes any
 * element type, 2 or 3 dimensions and 1 to 4 channels; .npy takes any
 * array (channels > 1 become a last axis); TEXT takes float arrays of 1 or 2
 * dimensions and 1 channel (convolve_format_can_hold answers exactly this).
 * jpeg_quality is 1..100, or 0 for 95.
 * Errors: INVALID_ARGUMENT, UNSUPPORTED (an array the format cannot hold: the
 * message is convolve_format_can_hold's, with what the array has), IO,
 * OUT_OF_MEMORY.
 */
CONVOLVE_API convolve_status convolve_array_save(convolve_context *ctx, const convolve_array *array,
                                                 const char *path, convolve_format format,
                                                 int jpeg_quality);

/*
 * A .npy file described without reading its data (convolve_npy_inspect), so
 * that a caller can map or stream arrays larger than memory. When neither
 * byte_swapped nor fortran_order is set, the file's bytes from data_offset
 * on are exactly the array of `layout` (contiguous, C order, host byte
 * order); otherwise convolve_array_load converts them.
 */
typedef struct convolve_npy_info {
    convolve_layout layout; /* as convolve_array_load gives it: C order, 1 channel */
    size_t data_offset;     /* bytes from the start of the file to the first element */
    int byte_swapped;       /* the data is stored in the other byte order */
    int fortran_order;      /* the data is stored in Fortran order (2-D, 3-D) */
} convolve_npy_info;

/* convolve_npy_header never writes more bytes than this. */
#define CONVOLVE_NPY_HEADER_MAX 256

/*
 * Reads and checks the header of the .npy file at path, as convolve_array_load
 * does (the same rules and messages, the file's size included), without
 * reading the data. Errors: INVALID_ARGUMENT, IO (cannot open or read; a
 * directory, a device or anything but a regular file), FORMAT, SIZE_OVERFLOW.
 */
CONVOLVE_API convolve_status convolve_npy_inspect(convolve_context *ctx, const char *path,
                                                  convolve_npy_info *info);

/*
 * Writes into buf the header (preamble and padded dict) that
 * convolve_array_save gives a .npy file holding an array of the layout's
 * element type, extents and channels (strides are not looked at; channels
 * > 1 become a last axis); *size receives its length, at most
 * CONVOLVE_NPY_HEADER_MAX and a multiple of 64: the array's elements, C order,
 * host byte order, follow it. Errors: INVALID_ARGUMENT (NULL, unknown element
 * type, capacity too small), BAD_LAYOUT, SIZE_OVERFLOW.
 */
CONVOLVE_API convolve_status convolve_npy_header(convolve_context *ctx,
                                                 const convolve_layout *layout, void *buf,
                                                 size_t capacity, size_t *size);

/*
 * A temporary file for what is to replace the file at path, as
 * convolve_array_save writes: in path's folder (so that a rename replaces
 * path), open for reading and writing, mode 0644 less the umask, or the
 * owner, group (where permitted) and mode of the regular file at path if
 * there is one. Where the file system allows and need_name is 0 it has no
 * name (Linux's O_TMPFILE), so that a process ending before
 * convolve_temp_file_name leaves nothing, and name receives ""; else it is
 * created under a fresh name ".BASE.XXXXXX" beside path, written into
 * name. name_size must be at least strlen(path) + 9. Returns the file
 * descriptor, or -1 with errno set (EISDIR: path ends in '/', "." or "..";
 * ENAMETOOLONG: name_size too small; else what creating the file gave).
 */
CONVOLVE_API int convolve_temp_file_open(const char *path, int need_name, char *name,
                                         size_t name_size);

/*
 * Gives the unnamed temporary file fd (convolve_temp_file_open) a fresh name
 * ".BASE.XXXXXX" beside path, written into name (name_size as above), so
 * that it can be renamed over path. 0, or -1 with errno set.
 */
CONVOLVE_API int convolve_temp_file_name(int fd, const char *path, char *name, size_t name_size);

/*
 * Converts an array to another element type: float to integer rounds to
 * nearest (ties to even) and saturates; NaN becomes 0. Errors: INVALID_ARGUMENT,
 * OUT_OF_MEMORY.
 */
CONVOLVE_API convolve_status convolve_array_convert(convolve_context *ctx,
                                                    const convolve_array *src, convolve_dtype dtype,
                                                    convolve_array **dst);

#ifdef __cplusplus
}
#endif

#endif /* CONVOLVE_H */
