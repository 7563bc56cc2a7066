/*
 * fast_direct_sep.cu - instances of the fast direct kernels (fast_direct.cuh):
 * separable 2-D float32 gray filters, K = 3..33.
 */
#include "fast_direct.cuh"

#define SEP(K) CVK_DIRECT_CASE_F32(K, true)

/* Each as tuned in fast_direct.cuh (cvk_f32_tuning, with the measurements). */
cvk_direct_kernel_fn cvk_direct2d_sep_f32(int K)
{
    switch (K) {
        SEP(3)
        SEP(5)
        SEP(7)
        SEP(9)
        SEP(11)
        SEP(13)
        SEP(15)
        SEP(17)
        SEP(19)
        SEP(21)
        SEP(23)
        SEP(25)
        SEP(27)
        SEP(29)
        SEP(31)
        SEP(33)
    default: return 0;
    }
}
