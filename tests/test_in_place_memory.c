/*
 * test_in_place_memory.c - the memory an in-place run takes beyond its
 * array (CTest label cpu), measured as the growth of this process's peak
 * resident set (a process of its own, so that no earlier test set the
 * peak): a float64 array of 3 rows filtered in place along them by a
 * 401-tap filter (the filter 130 times longer than the axis) and a
 * 1001-tap one, on the CPU, each after the same run into another array.
 * The in-place run may take the array's bytes again (a copy of it) and a
 * little beyond what one more run into another array takes; its result is
 * byte for byte that of the run into another array.
 */
#include "harness.h"

#include <sys/resource.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

static convolve_context *ctx;

/* The peak resident set so far, in bytes. */
static size_t peak_bytes(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (size_t)u.ru_maxrss * 1024;
}

/* rows x cols float64, filtered along the rows by k taps, in place. */
static void case_rows(size_t rows, size_t cols, size_t k, convolve_mode mode)
{
    size_t shape[2] = {rows, cols}, ks[2] = {k, 1}, n = rows * cols;
    const size_t bytes = n * sizeof(double);
    convolve_layout l;
    convolve_layout_init(&l, CONVOLVE_FLOAT64, 2, shape, 1);
    double *w = malloc(k * sizeof *w);
    h_fill(w, k);
    convolve_filter *f;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, ks, w));
    convolve_options o;
    convolve_options_init(&o);
    o.backend = CONVOLVE_BACKEND_CPU;
    o.mode = mode;
    convolve_plan *p;
    CHECK_OK(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o));
    double *a = malloc(bytes), *want = malloc(bytes);
    h_fill(a, n);
    memset(want, 0, bytes);
    /* the run into another array first: its own buffers set the peak; then
     * what one more such run adds (0 where the allocator reuses them, their
     * size under AddressSanitizer, which holds freed memory back) */
    CHECK_OK(ctx, convolve_execute(p, a, want));
    size_t before = peak_bytes();
    CHECK_OK(ctx, convolve_execute(p, a, want));
    const size_t again = peak_bytes() - before;
    before = peak_bytes();
    CHECK_OK(ctx, convolve_execute(p, a, a));
    const size_t grew = peak_bytes() - before;
    /* that, the array again, and 2 MiB for allocator and page rounding */
    const size_t most = again + bytes + ((size_t)2 << 20);
    CHECK(grew <= most,
          "%zu x %zu float64 (%zu bytes), %zu taps along the %zu rows, %s, in place: the peak "
          "resident set grew by %zu bytes, more than the array, 2 MiB and the %zu bytes a run "
          "into another array added (%zu)",
          rows, cols, bytes, k, rows, convolve_mode_name(mode), grew, again, most);
    CHECK(memcmp(a, want, bytes) == 0, "%zu taps, %s: in place differs from out of place", k,
          convolve_mode_name(mode));
    printf("%zu x %zu float64 (%.2f MiB), %zu taps, %s: in place, the peak grew by %.2f MiB "
           "(out of place: %.2f MiB)\n",
           rows, cols, (double)bytes / 1048576.0, k, convolve_mode_name(mode),
           (double)grew / 1048576.0, (double)again / 1048576.0);
    convolve_plan_free(p);
    convolve_filter_free(f);
    free(w), free(a), free(want);
}

int main(void)
{
    h_seed("test_in_place_memory");
#ifdef __GLIBC__
    /* blocks of 64 KiB and more mapped, and unmapped when freed: the peak
     * follows what is allocated, not where the heap placed it */
    mallopt(M_MMAP_THRESHOLD, 64 << 10);
#endif
    CHECK_OK(NULL, convolve_context_create(&ctx));
    case_rows(3, 16384, 401, CONVOLVE_MODE_REFLECT);
    case_rows(2, 8192, 1001, CONVOLVE_MODE_WRAP);
    convolve_context_free(ctx);
    return h_finish("test_in_place_memory");
}
