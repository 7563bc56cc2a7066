/*
 * fast_direct_f32.cu - instances of the fast direct kernels (fast_direct.cuh):
 * dense 2-D float32 gray filters, K = 3..17 and the even K = 2, 4, 6, and
 * 1-D float32, K = 3..33.
 */
#include "fast_direct.cuh"

#define DENSE(K) CVK_DIRECT_CASE(K, 1, float, false)
#define DENSE_TUNED(K, MINB) CVK_DIRECT_CASE_TUNED(K, 1, float, false, 4, MINB, 0)

/* Every K shifts its accumulator rows (the rotation's K-times unrolled
 * loop stalled on instruction fetch); each is held to the blocks a
 * multiprocessor measured fastest: K = 3, 5, 7 to 8, 8 and 6 (64, 64 and
 * 80 registers at most), H200, 8192^2 reflect, 0.196, 0.205 and 0.277 ms
 * against 0.275 (the generated tile), 0.274 and 0.380 before, rotated at
 * the compiler's registers (K = 3 was held to 10 blocks, 48 registers,
 * until rows of cval moved into the ring: then 8, 9, 10, 11 blocks took
 * 0.171, 0.174, 0.182, 0.219 ms); K = 9, 11, 13, 15 to 6, 5, 5 and 4 (80, 90, 96
 * and 120 registers), H200, 8192^2 constant, 0.361, 0.488, 0.627 and 0.782
 * ms against the generated tile's 0.413, 0.590, 0.727 and 0.909, and the
 * compiler's registers' 0.578, 0.493, 0.651 and 0.797
 * (docs/architecture.md, "Measured choices"). The even K = 2, 4, 6 (the
 * window K / 2 elements left of an output, K / 2 - 1 right: scipy's even
 * sizes) are held as their odd neighbours below. */
cvk_direct_kernel_fn cvk_direct2d_dense_f32(int K)
{
    switch (K) {
        DENSE_TUNED(2, 8)
        DENSE_TUNED(3, 8)
        DENSE_TUNED(4, 8)
        DENSE_TUNED(5, 8)
        DENSE_TUNED(6, 6)
        DENSE_TUNED(7, 6)
        DENSE_TUNED(9, 6)
        DENSE_TUNED(11, 5)
        DENSE_TUNED(13, 5)
        DENSE_TUNED(15, 4)
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
