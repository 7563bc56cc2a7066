/*
 * fast_direct_f32.cu - instances of the fast direct kernels (fast_direct.cuh):
 * dense 2-D float32 gray filters, K = 3..17, and 1-D float32, K = 3..33.
 */
#include "fast_direct.cuh"

fd_kernel_fn fd_pick_dense_f32(int K)
{
    switch (K) {
        FD_CASE(3, 1, float, false) FD_CASE(5, 1, float, false) FD_CASE(7, 1, float, false)
        FD_CASE(9, 1, float, false) FD_CASE(11, 1, float, false) FD_CASE(13, 1, float, false)
        FD_CASE(15, 1, float, false) FD_CASE(17, 1, float, false)
    default: return 0;
    }
}

fd_kernel_fn fd_pick_1d(int K)
{
#define FD1_CASE(K) \
    case K: return fd1_kernel<K, 8>;
    switch (K) {
        FD1_CASE(3) FD1_CASE(5) FD1_CASE(7) FD1_CASE(9) FD1_CASE(11) FD1_CASE(13) FD1_CASE(15)
        FD1_CASE(17) FD1_CASE(19) FD1_CASE(21) FD1_CASE(23) FD1_CASE(25) FD1_CASE(27)
        FD1_CASE(29) FD1_CASE(31) FD1_CASE(33)
    default: return 0;
    }
#undef FD1_CASE
}
