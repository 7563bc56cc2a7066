/*
 * fast.h - what the fast CPU strategies (src/cpu/fast_*.c, fft.c) share:
 * the instruction-set choice, the row kernels, gathering extended input rows
 * and storing output rows with conversion, scratch memory, the drivers.
 *
 * Every strategy works on contiguous rows of the compute type: float for
 * float32/uint8/uint16 problems, double when the input or output is float64
 * or the filter is long (CVCPU_DOUBLE_TAPS).
 * A row is gathered from the strided, typed input (one channel, the boundary
 * mode applied), filtered by vectorised kernels that see only contiguous
 * memory, and stored with conversion (integers rounded to nearest, ties to
 * even, and saturated, exactly as cvi_store_double).
 */
#ifndef CONVOLVE_CPU_FAST_H
#define CONVOLVE_CPU_FAST_H

#include "cpu_backend.h"

/* OpenMP directives that vanish (without warnings) when OpenMP is off:
 * CVCPU_OMP(omp parallel ...). */
#ifdef _OPENMP
#define CVCPU_OMP(directive) _Pragma(#directive)
#else
#define CVCPU_OMP(directive)
#endif

/* Multiply-adds worth a thread of its own (every fast strategy's threads). */
#define CVCPU_WORK_PER_THREAD 4e6

/* ---- instruction sets ------------------------------------------------- */

enum { CVCPU_ISA_PORTABLE = 0, CVCPU_ISA_AVX2 = 1, CVCPU_ISA_AVX512 = 2 };

/* The instruction set the kernels use (isa.c): the best this CPU has,
 * capped by the environment's CONVOLVE_CPU_ISA (both read once per
 * process, on the first call) and by cvcpu_fast_limit_isa. Thread-safe. */
int cvcpu_isa(void);

/* CONVOLVE_CPU_ISA's values: "portable" (or "scalar"), "avx2", "avx512" give
 * CVCPU_ISA_*; anything else (NULL included) -1, which sets no cap. */
int cvcpu_isa_parse(const char *name);

/* The kernels' function attributes on x86-64: AVX2 with FMA; AVX-512F with
 * AVX2 and FMA as well, as the AVX-512 kernels also use their 256-bit forms
 * (every AVX-512F CPU has both). */
#if defined(__x86_64__) && defined(__GNUC__)
#define CVCPU_AVX2 __attribute__((target("avx2,fma")))
#define CVCPU_AVX512 __attribute__((target("avx512f,avx2,fma")))
/* AVX-512F alone (fft.c's 512-bit transposes and butterflies): without FMA
 * for their 256-bit and scalar code, whose sums then round as they always
 * have (contracting them into FMAs would move the CPU FFT's last bits) */
#define CVCPU_AVX512F_ONLY __attribute__((target("avx512f")))
#endif

/* ---- row kernels -------------------------------------------------------- */

/* Rows handed to kernels are padded: n outputs are computed as CVCPU_ROUND(n)
 * (out must hold that many) and each row must be readable for
 * CVCPU_ROUND(n) + K - 1 elements. */
#define CVCPU_PAD 16
#define CVCPU_ROUND(n) (((n) + CVCPU_PAD - 1) / CVCPU_PAD * CVCPU_PAD)

/*
 * out[x] = sum_{p < nrows} sum_{k < K} w[p*K + k] * rows[p][x + k]
 * for x in [0, CVCPU_ROUND(n)); elements of the compute type (float or double).
 */
typedef void (*cvcpu_corr_fn)(void *out, size_t n, const void *const *rows, size_t nrows,
                              const void *w, size_t K);

/* The kernel for a compute type (dbl: double, else float) and instruction set. */
cvcpu_corr_fn cvcpu_corr_kernel(int dbl, int isa);

/*
 * Register-blocked dense kernel on CVCPU_RB = 4 output rows at once:
 * out[r][x] = sum_{k0 < K0} sum_{k1 < K1} sum_{k < K2} w[(k0*K1 + k1)*K2 + k]
 *             * rows[k0*J + r + k1][x + k],   J = 4 + K1 - 1,
 * for r < 4, x in [0, CVCPU_ROUND(n)): J consecutive input rows per filter
 * plane k0, each loaded vector shared by the output rows it feeds; the sum
 * runs in the same order as cvcpu_corr_fn's. NULL where the instruction set
 * has none (the caller then uses cvcpu_corr_fn row by row).
 */
#define CVCPU_RB 4
typedef void (*cvcpu_corr4_fn)(void *const *out, size_t n, const void *const *rows, size_t K0,
                               size_t K1, const void *w, size_t K2);
cvcpu_corr4_fn cvcpu_corr4_kernel(int dbl, int isa);

/*
 * Row conversions between float and the integer types, for contiguous rows:
 * to integers rounding to nearest (ties to even) and saturating, NaN to 0,
 * as cvi_saturate_u8/u16; from integers exactly; from double with scipy's
 * cast (CVI_CAST_TRUNCATE). NULL where the instruction
 * set has none (the portable loops of fast_common.c serve).
 */
typedef struct cvcpu_cvt {
    void (*to_u8)(void *dst, const float *src, size_t n);
    void (*to_u16)(void *dst, const float *src, size_t n);
    void (*from_u8)(float *dst, const void *src, size_t n);
    void (*from_u16)(float *dst, const void *src, size_t n);
    /* scipy's cast of doubles divided by divisor (cvi_truncate_u8/u16) */
    void (*trunc_u8)(void *dst, const double *src, size_t n, double divisor, double tol);
    void (*trunc_u16)(void *dst, const double *src, size_t n, double divisor, double tol);
} cvcpu_cvt;

const cvcpu_cvt *cvcpu_cvt_kernels(int isa);

/* ---- one execution ------------------------------------------------------ */

/* Filters of at least this many taps along an axis compute in double
 * whatever the types (cvcpu_compute_double). */
#define CVCPU_DOUBLE_TAPS 128

/* Whether the fast strategies compute p in double: float64 data, scipy's
 * integer cast (its sums are double), an axis of at least
 * CVCPU_DOUBLE_TAPS taps, or taps folded onto the array (each the sum of
 * many). Slabs and windows of a plan get the plan's answer. */
static inline int cvcpu_compute_double(const cvi_problem *p)
{
    return cvi_needs_double(p) || p->folded || p->ksize[0] >= CVCPU_DOUBLE_TAPS ||
           p->ksize[1] >= CVCPU_DOUBLE_TAPS || p->ksize[2] >= CVCPU_DOUBLE_TAPS;
}

typedef struct cvcpu_exec {
    const cvi_problem *p;
    const char *in;
    char *out;
    int dbl;   /* compute in double */
    size_t es; /* bytes per compute element (4 or 8) */
    int isa;
    int stream;   /* store float32 output rows with non-temporal stores */
    int in_place; /* input rows are contiguous in the compute type: read them as they are */
    cvcpu_corr_fn corr;
    const cvcpu_cvt *cvt;
    int threads;
} cvcpu_exec;

/* Sets up one execution of p with `threads` threads (at least 1). */
void cvcpu_exec_init(cvcpu_exec *e, const cvi_problem *p, int threads, const void *in, void *out);

/* Uses no more threads than `work` (multiply-adds, about) keeps busy: below a
 * few milliseconds of work, waking and joining threads costs more than it
 * saves, and a second thread that has to wait for a busy core can cost a
 * whole scheduler time slice. */
void cvcpu_limit_threads(cvcpu_exec *e, double work);

/* Short work (below CVCPU_SHORT_WORK multiply-adds, about a millisecond on
 * one thread) with the default thread count uses no more threads than
 * there are cores no other task runs on (at least 1): each parallel region
 * waits for its slowest thread, and a thread that shares a core with a busy
 * process waits for its turn. cvcpu_free_cores() counts them: the CPUs less
 * the tasks the kernel has running or runnable (/proc/loadavg, the caller
 * included), read at most every 10 ms; -1 where that count cannot be
 * trusted (not Linux; the process may run on fewer CPUs than the machine
 * has, as in a container's cpuset). cvcpu_threads_for_free is the rule. */
#define CVCPU_SHORT_WORK 3e7
int cvcpu_free_cores(void);
int cvcpu_threads_for_free(int threads, int free_cores);

/* The input's element (j0, j1, column 0) of channel c: the start of a row;
 * NULL when j0 or j1 is -1 (a row of cval in CONSTANT mode). */
static inline const char *cvcpu_in_row(const cvcpu_exec *e, size_t c, ptrdiff_t j0, ptrdiff_t j1)
{
    if (j0 < 0 || j1 < 0)
        return NULL;
    const cvi_problem *p = e->p;
    return e->in + j0 * p->in_strides[0] + j1 * p->in_strides[1] + (ptrdiff_t)c * p->in_cstride;
}

static inline char *cvcpu_out_row(const cvcpu_exec *e, size_t c, size_t i0, size_t i1, size_t x)
{
    const cvi_problem *p = e->p;
    return e->out + (ptrdiff_t)i0 * p->out_strides[0] + (ptrdiff_t)i1 * p->out_strides[1] +
           (ptrdiff_t)x * p->out_strides[2] + (ptrdiff_t)c * p->out_cstride;
}

/* dst[t] = the extended input along axis 2 at column q0 + t, t in [0, L),
 * for the row that starts at `row` (from cvcpu_in_row; NULL: all cval). */
void cvcpu_gather(const cvcpu_exec *e, const char *row, ptrdiff_t q0, size_t L, void *dst);

/* Asks the caches for the input columns [q0, q0 + L) of the row that starts
 * at `row` (NULL: nothing), which a later cvcpu_gather will read: the loads
 * then overlap the computation in between. */
void cvcpu_prefetch(const cvcpu_exec *e, const char *row, ptrdiff_t q0, size_t L);

/*
 * Splits the columns [xa, xa + wdt) of an output row for a filter of K2 taps
 * along axis 2: a left border [xa, xl), a middle [xl, xr) whose taps all lie
 * inside the input row (a multiple of 16 columns, which in-place reading can
 * use) and a right border [xr, xa + wdt). Without in-place reading or room
 * for a middle, xl = xr = xa + wdt.
 */
void cvcpu_split_columns(const cvcpu_exec *e, size_t xa, size_t wdt, size_t *xl, size_t *xr);

/* Extent (elements) of a border buffer for cvcpu_filter_row. */
static inline size_t cvcpu_edge_pad(size_t K2)
{
    return (2 * K2 + 48 + 15) / 16 * 16;
}

/*
 * out[x - xa] = sum_k w[k] * ext[x + k - koff2] for x in [xa, xa + wdt), the
 * row starting at `row` (non-NULL): the middle [xl, xr) read in place, the
 * rest gathered into `edge` (2 * cvcpu_edge_pad(K2) elements) or, without a
 * middle, the whole extended row gathered into `ext` (wdt + K2 - 1 + 16).
 */
void cvcpu_filter_row(const cvcpu_exec *e, const char *row, size_t xa, size_t wdt, size_t xl,
                      size_t xr, void *edge, void *ext, void *out, const void *w, size_t K2);

/* Stores n compute-type values to the output row at dst (its axis-2 stride). */
void cvcpu_store(const cvcpu_exec *e, char *dst, size_t n, const void *src);

/* Ends a thread's stores (a fence after non-temporal stores). */
void cvcpu_store_done(const cvcpu_exec *e);

/* dst[0..n) = v in the compute type. */
void cvcpu_fill(const cvcpu_exec *e, void *dst, size_t n, double v);

/* Copies n doubles into the compute type, times scale. */
void cvcpu_convert_weights(const cvcpu_exec *e, void *dst, const double *w, size_t n, double scale);

/* ---- memory ------------------------------------------------------------- */

/* 64-byte aligned, zero-filled; NULL on failure or overflow of n * size. */
void *cvcpu_alloc(size_t n, size_t size);
void cvcpu_free(void *ptr);

/* Rounds up to a multiple of 16 elements (64-byte rows for float). */
static inline size_t cvcpu_round16(size_t n)
{
    return (n + 15) / 16 * 16;
}

/* ---- partitions ----------------------------------------------------------- */

static inline size_t cvcpu_div_up(size_t a, size_t b)
{
    return (a + b - 1) / b;
}

/*
 * Column tile width *tw and band height *rb for items that each hold
 * `ring_rows` rows of a tile (plus the K2 - 1 halo) in cache, with `outer`
 * items per band and tile (planes), enough items for the threads,
 * and bands tall enough that their K1 - 1 halo rows cost little. With
 * band_rows_max > 0, bands are at most that tall.
 */
void cvcpu_plan_tiles(const cvi_problem *p, size_t es, int threads, size_t ring_rows, size_t outer,
                      size_t band_rows_max, size_t *tw, size_t *rb);

/* The outputs p computes: lo[a] + [0, m[a]) along each axis (the window's
 * rows along the slowest axis); *tiles = p with those extents, for
 * cvcpu_plan_tiles (the direct and separable strategies give each output
 * the same bytes however their tiles fall). */
static inline void cvcpu_outputs(const cvi_problem *p, size_t lo[3], size_t m[3],
                                 cvi_problem *tiles)
{
    *tiles = *p;
    for (int a = 0; a < 3; a++) {
        size_t hi;
        cvi_window_range(p, a, &lo[a], &hi);
        m[a] = hi - lo[a];
        tiles->shape[a] = m[a];
    }
}

/* The tile of work item `it` of the direct and separable strategies, which cut the
 * outputs lo + [0, m) (cvcpu_outputs) into tiles of rb rows and tw columns
 * (nrb bands and ntw tiles a plane, cvcpu_plan_tiles): plane i0, rows
 * [ra, rz) and columns [xa, xa + wdt), as indices of the array. */
typedef struct {
    size_t i0, ra, rz, xa, wdt;
} cvcpu_tile;

static inline cvcpu_tile cvcpu_tile_of(size_t it, size_t ntw, size_t nrb, size_t tw, size_t rb,
                                       const size_t lo[3], const size_t m[3])
{
    cvcpu_tile t;
    const size_t x = it % ntw, b = it / ntw % nrb;
    t.i0 = lo[0] + it / ntw / nrb;
    t.xa = x * tw;
    t.wdt = m[2] - t.xa < tw ? m[2] - t.xa : tw;
    t.ra = b * rb;
    t.rz = t.ra + rb < m[1] ? t.ra + rb : m[1];
    t.ra += lo[1], t.rz += lo[1], t.xa += lo[2];
    return t;
}

/* What the FFT strategy makes before its tiles (the twiddles, the filter's
 * spectrum, each thread's block), kept from one window of an execution to
 * the next (made again if the tiles, types or instruction set differ).
 * cvcpu_fft with no keep makes and frees them itself. */
typedef struct cvcpu_fft_keep {
    void *held;
} cvcpu_fft_keep;

/* Frees what k holds (k may be NULL). */
void cvcpu_fft_keep_free(cvcpu_fft_keep *k);

/* ---- drivers (each serves every problem; OUT_OF_MEMORY is their only error) -- *
 * `threads`: how many threads to use (at least 1).                            */

convolve_status cvcpu_direct(const cvi_problem *p, int threads, const void *in, void *out);
convolve_status cvcpu_separable(const cvi_problem *p, int threads, const void *in, void *out);
convolve_status cvcpu_fft(const cvi_problem *p, int threads, const void *in, void *out,
                          cvcpu_fft_keep *keep);

/* Box filters (fast_box.c): a separable p with one axis of more than one
 * tap, all equal, as running sums in double; cost independent of the taps'
 * count. cvcpu_box_serves says whether p is one. */
int cvcpu_box_serves(const cvi_problem *p);
convolve_status cvcpu_box(const cvi_problem *p, int threads, const void *in, void *out);

/* Which driver `fast` runs for p on the input at `in` (NULL: not known;
 * the FFT is only chosen for inputs without NaN or infinity, which an FFT
 * would spread over a whole tile, and whose largest magnitude keeps its
 * sums within range: cvcpu_fft_range). */
enum { CVCPU_DIRECT = 0, CVCPU_SEPARABLE = 1, CVCPU_FFT = 2, CVCPU_BOX = 3 };
int cvcpu_choose(const cvi_problem *p, int threads, const void *in);

/* The cost model's estimate of `fast` on p with `threads` threads, in
 * milliseconds (the cheapest of direct, separable and FFT; the model was
 * fitted with 2 threads, and is scaled to `threads` as if they all paid). */
double cvcpu_estimate_ms(const cvi_problem *p, int threads);

/* The same for one method (CVCPU_DIRECT, CVCPU_SEPARABLE, CVCPU_FFT), or,
 * for -1, the reference (scalar loops in double). */
double cvcpu_estimate_method_ms(const cvi_problem *p, int threads, int method);

/* Why the FFT strategy cannot serve p ("" and CONVOLVE_OK when it can):
 * its tiles, and its range for any input (cvcpu_fft_range). */
convolve_status cvcpu_fft_check(const cvi_problem *p, char *why, size_t why_size);

/* Whether the FFT's sums stay within its type's range for inputs up to
 * magnitude xmax (< 0: any input, as cvi_fft_range takes it), its
 * transforms counted at their largest (CVCPU_FFT_MAX_BLOCK points, so that
 * a slab's sub-problem gets the plan's answer). */
convolve_status cvcpu_fft_range(const cvi_problem *p, double xmax, char *why, size_t why_size);

/* Rows along the slowest axis a window of the FFT strategy should start at
 * a multiple of: a window that cuts a tile computes it twice. */
size_t cvcpu_fft_window_align(const cvi_problem *p);

/* The FFT's modelled work per output (butterfly passes and the like over
 * tile elements per output); negative when it cannot serve p. */
double cvcpu_fft_cost(const cvi_problem *p);

#endif
