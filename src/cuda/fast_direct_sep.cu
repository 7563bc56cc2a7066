/*
 * fast_direct_sep.cu - instances of the fast direct kernels (fast_direct.cuh):
 * separable 2-D float32 gray filters, K = 3..33.
 */
#include "fast_direct.cuh"

fd_kernel_fn fd_pick_sep_f32(int K)
{
    switch (K) {
        FD_CASE(3, 1, float, true) FD_CASE(5, 1, float, true) FD_CASE(7, 1, float, true)
        FD_CASE(9, 1, float, true) FD_CASE(11, 1, float, true) FD_CASE(13, 1, float, true)
        FD_CASE(15, 1, float, true) FD_CASE(17, 1, float, true) FD_CASE(19, 1, float, true)
        FD_CASE(21, 1, float, true) FD_CASE(23, 1, float, true) FD_CASE(25, 1, float, true)
        FD_CASE(27, 1, float, true) FD_CASE(29, 1, float, true) FD_CASE(31, 1, float, true)
        FD_CASE(33, 1, float, true)
    default: return 0;
    }
}
