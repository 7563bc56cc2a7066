/*
 * fast_direct_u8.cu - instances of the fast direct kernels (fast_direct.cuh):
 * uint8 gray and RGB, dense K = 3, 5 (the sizes that stay memory-bound for
 * 8-bit images) and separable K = 3..9.
 */
#include "fast_direct.cuh"

template <int C>
static cvk_direct_kernel_fn pick(int K, int separable)
{
    typedef unsigned char T;
    if (separable) {
        switch (K) {
            CVK_DIRECT_CASE(3, C, T, true)
            CVK_DIRECT_CASE(5, C, T, true)
            CVK_DIRECT_CASE(7, C, T, true)
            CVK_DIRECT_CASE(9, C, T, true)
        default: return 0;
        }
    }
    switch (K) {
        CVK_DIRECT_CASE(3, C, T, false)
        CVK_DIRECT_CASE(5, C, T, false)
    default: return 0;
    }
}

cvk_direct_kernel_fn cvk_direct2d_u8(int channels, int K, int separable)
{
    return channels == 1 ? pick<1>(K, separable) : channels == 3 ? pick<3>(K, separable) : 0;
}
