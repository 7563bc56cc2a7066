/*
 * fast_direct_f32.cu - instances of the fast direct kernels (fast_direct.cuh):
 * dense 2-D float32 gray filters, K = 3..17 and the even K = 2, 4, 6, the
 * non-square 3 x 5, 5 x 3, 3 x 7, 7 x 3, 3 x 9 and 9 x 3 (rows by columns),
 * and 1-D float32, K = 3..33.
 */
#include "fast_direct.cuh"

#define DENSE(K) CVK_DIRECT_CASE_F32(K, false)

/* Each as tuned in fast_direct.cuh (cvk_f32_tuning, with the measurements). */
cvk_direct_kernel_fn cvk_direct2d_dense_f32(int K)
{
    switch (K) {
        DENSE(2)
        DENSE(3)
        DENSE(4)
        DENSE(5)
        DENSE(6)
        DENSE(7)
        DENSE(9)
        DENSE(11)
        DENSE(13)
        DENSE(15)
        DENSE(17)
    default: return 0;
    }
}

/* A non-square instance: KY rows of KX weights, held as the square
 * instance of its larger extent, rows shifted. */
#define RECT(KY, KX)                                                                           \
    case KY * 32 + KX:                                                                         \
        return cvk_direct2d_kernel<KX, 1, float, false, 4,                                     \
                                   cvk_f32_tuning<(KY > KX ? KY : KX), false>::MINB, 0, false, \
                                   false, KY>;

cvk_direct_kernel_fn cvk_direct2d_dense_f32_rect(int KY, int KX)
{
    if (KY < 1 || KY > 9 || KX < 1 || KX > 9)
        return 0; /* the key below is unique only so: 1 x 69 named 3 x 5 */
    switch (KY * 32 + KX) {
        RECT(3, 5)
        RECT(5, 3)
        RECT(3, 7)
        RECT(7, 3)
        RECT(3, 9)
        RECT(9, 3)
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
