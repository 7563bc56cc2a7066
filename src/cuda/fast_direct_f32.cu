/*
 * fast_direct_f32.cu - instances of the fast direct kernels (fast_direct.cuh):
 * dense 2-D float32 gray filters, K = 3..17, and 1-D float32, K = 3..33.
 */
#include "fast_direct.cuh"

#define DENSE(K) CVK_DIRECT_CASE(K, 1, float, false)
#define DENSE_TUNED(K, MINB) CVK_DIRECT_CASE_TUNED(K, 1, float, false, 4, MINB, 0)

/* K = 3, 5, 7 shift their accumulator rows (the rotation's K-times unrolled
 * loop stalled on instruction fetch) and hold 10, 8 and 6 blocks a
 * multiprocessor (48, 64 and 80 registers at most): H200, 8192^2 reflect,
 * 0.196, 0.205 and 0.277 ms against 0.275 (the generated tile), 0.274 and
 * 0.380 before, rotated at the compiler's registers (docs/architecture.md,
 * "Measured choices"). */
cvk_direct_kernel_fn cvk_direct2d_dense_f32(int K)
{
    switch (K) {
        DENSE_TUNED(3, 10)
        DENSE_TUNED(5, 8)
        DENSE_TUNED(7, 6)
        DENSE(9)
        DENSE(11)
        DENSE(13)
        DENSE(15)
        DENSE(17)
    default: return 0;
    }
}

#define SIGNAL(K) \
    case K: return cvk_direct1d_kernel<K, 8>;

cvk_direct_kernel_fn cvk_direct1d_f32(int K)
{
    switch (K) {
        SIGNAL(3)
        SIGNAL(5)
        SIGNAL(7)
        SIGNAL(9)
        SIGNAL(11)
        SIGNAL(13)
        SIGNAL(15)
        SIGNAL(17)
        SIGNAL(19)
        SIGNAL(21)
        SIGNAL(23)
        SIGNAL(25)
        SIGNAL(27)
        SIGNAL(29)
        SIGNAL(31)
        SIGNAL(33)
    default: return 0;
    }
}
