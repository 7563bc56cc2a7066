/*
 * fast_direct_u8.cu - instances of the fast direct kernels (fast_direct.cuh):
 * uint8 gray and RGB, dense K = 3, 5 (the sizes that stay memory-bound for
 * 8-bit images); 8 elements a lane, 4 for RGB dense 5x5. Separable filters
 * on uint8 images take fast_sep_int.cu's fused kernel (measured faster at
 * every K; its pick has the numbers).
 */
#include "fast_direct.cuh"

template <int C, int V>
static cvk_direct_kernel_fn pick(int K)
{
    typedef unsigned char T;
    switch (K) {
        CVK_DIRECT_CASE_V(3, C, T, false, V)
        CVK_DIRECT_CASE_V(5, C, T, false, V)
    default: return 0;
    }
}

/* RGB dense 5x5 with 4 elements a lane (fewer accumulators, more warps):
 * H100, u8 RGB 4096^2 5x5 -> float32 0.243-0.245 ms against 0.282-0.296
 * with 8; the same change made u8 gray 3x3 (0.228-0.337 against 0.198) and
 * RGB separable 9 taps (0.343-0.349 against 0.313) slower. */
int cvk_direct2d_u8_lanes(int channels, int K, int separable)
{
    return channels == 3 && !separable && K == 5 ? 4 : 8;
}

cvk_direct_kernel_fn cvk_direct2d_u8(int channels, int K, int separable)
{
    if (separable) /* fast_sep_int.cu */
        return 0;
    if (cvk_direct2d_u8_lanes(channels, K, separable) == 4)
        return cvk_direct2d_kernel<5, 3, unsigned char, false, 4>;
    return channels == 1 ? pick<1, 8>(K) : channels == 3 ? pick<3, 8>(K) : 0;
}
