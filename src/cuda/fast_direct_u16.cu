/*
 * fast_direct_u16.cu - instances of the fast direct kernels (fast_direct.cuh):
 * uint16 gray, RGB and RGBA, dense K = 3, 5, 8 elements (16 bytes) a lane,
 * rows shifted, 6 blocks a multiprocessor (80 registers), 3x3 with STEADY
 * (the rows inside the strip without the per-row tests); RGBA takes RGB's
 * choices. Separable filters on uint16 images take fast_sep_int.cu's fused
 * kernel.
 *
 * H200, `convolve bench --dtype uint16 --strategy direct --mode reflect
 * --runs 30`, gray 8192^2 / RGB 4096^2, trial instances in one build, two
 * rounds, against the generated tile that served these before
 * (CONVOLVE_DIRECT_KERNELS=generated): 3x3 0.1174-0.1176 / 0.0945-0.0946 ms
 * (57% / 54% of copy) against 0.2189-0.2193 / 0.3057-0.3061; 5x5
 * 0.1740-0.1742 / 0.1461-0.1462 against 0.2515-0.2519 / 0.3204-0.3205.
 * STEADY on 5x5: 0.186 / 0.171 (spills at 8 lanes); 4 elements a lane:
 * 3x3 0.151-0.157 / 0.122-0.128, 5x5 0.204-0.221 / 0.170-0.182; 8 blocks
 * a multiprocessor (64 registers): 3x3 0.117-0.120 / 0.098-0.103, 5x5
 * 0.251-0.307 / 0.217-0.296 (spills).
 */
#include "fast_direct.cuh"

/* An instance: K, channels, STEADY; 8 lanes, 6 blocks a multiprocessor,
 * rows shifted. */
#define CVK_U16_INSTANCE(K, C, ST) \
    cvk_direct2d_kernel<K, C, unsigned short, false, 8, 6, 0, false, ST>

int cvk_direct2d_u16_lanes(int channels, int K, int separable)
{
    (void)channels, (void)K, (void)separable;
    return 8;
}

cvk_direct_kernel_fn cvk_direct2d_u16(int channels, int K, int separable)
{
    if (separable)
        return 0;
    if ((K != 3 && K != 5) || channels < 1 || channels > 4)
        return 0; /* the key below is unique only so: 3 channels at K = 11 named RGBA 3x3 */
    switch (channels * 8 + K) {
    case 1 * 8 + 3: return CVK_U16_INSTANCE(3, 1, true);
    case 3 * 8 + 3: return CVK_U16_INSTANCE(3, 3, true);
    case 4 * 8 + 3: return CVK_U16_INSTANCE(3, 4, true);
    case 1 * 8 + 5: return CVK_U16_INSTANCE(5, 1, false);
    case 3 * 8 + 5: return CVK_U16_INSTANCE(5, 3, false);
    case 4 * 8 + 5: return CVK_U16_INSTANCE(5, 4, false);
    default: return 0;
    }
}
