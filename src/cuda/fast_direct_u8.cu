/*
 * fast_direct_u8.cu - instances of the fast direct kernels (fast_direct.cuh):
 * uint8 gray, RGB and RGBA, dense K = 3, 5 (the sizes that stay memory-bound
 * for 8-bit images); 8 elements a lane, 4 for RGB and RGBA dense 5x5 (RGBA
 * takes RGB's choices). Separable filters on uint8 images take
 * fast_sep_int.cu's fused kernel (measured faster at every K; its pick has
 * the numbers).
 *
 * Each instance shifts its accumulator rows and is held to 6 blocks a
 * multiprocessor (80 registers; the compiler's choice was 94 to 112 with
 * rotated rows, 5 or 4 blocks). H200, 8192^2 gray / 4096^2 RGB reflect,
 * `convolve bench --dtype uint8 --strategy direct --runs 30`, strips as
 * fast_direct.cu's launcher now sizes them, three rounds in one build:
 * 3x3 0.1134-0.1138 / 0.0926-0.0929 ms, 5x5 0.1733-0.1739 / 0.1783-0.1788,
 * against 0.1256 / 0.0984 and 0.2475 / 0.2044 rotated at the compiler's
 * registers (strips of one wave: 0.1285 / 0.1011, 0.2312 / 0.2084). Rows
 * rotated at 6 blocks: 0.139 / 0.109, 0.254 / 0.204; shifted at 8 blocks
 * (64 registers) they spill (gray 5x5 0.341). STEADY (the rows inside the strip
 * without the per-row tests): 3x3 0.1115-0.1120 / 0.0904-0.0906, RGB 5x5
 * 0.1694-0.1697, kept; gray 5x5 0.1795 (more spills at 8 lanes), not kept.
 */
#include "fast_direct.cuh"

/* An instance: K, channels, lanes, STEADY; 6 blocks a multiprocessor, rows
 * shifted. */
#define CVK_U8_INSTANCE(K, C, V, ST) \
    cvk_direct2d_kernel<K, C, unsigned char, false, V, 6, 0, false, ST>

/* RGB dense 5x5 with 4 elements a lane (fewer accumulators, more warps):
 * H100, u8 RGB 4096^2 5x5 -> float32 0.243-0.245 ms against 0.282-0.296
 * with 8; the same change made u8 gray 3x3 (0.228-0.337 against 0.198) and
 * RGB separable 9 taps (0.343-0.349 against 0.313) slower. */
int cvk_direct2d_u8_lanes(int channels, int K, int separable)
{
    return channels >= 3 && !separable && K == 5 ? 4 : 8;
}

cvk_direct_kernel_fn cvk_direct2d_u8(int channels, int K, int separable)
{
    if (separable) /* fast_sep_int.cu */
        return 0;
    if ((K != 3 && K != 5) || channels < 1 || channels > 4)
        return 0; /* the key below is unique only so: 3 channels at K = 11 named RGBA 3x3 */
    switch (channels * 8 + K) {
    case 1 * 8 + 3: return CVK_U8_INSTANCE(3, 1, 8, true);
    case 3 * 8 + 3: return CVK_U8_INSTANCE(3, 3, 8, true);
    case 4 * 8 + 3: return CVK_U8_INSTANCE(3, 4, 8, true);
    case 1 * 8 + 5: return CVK_U8_INSTANCE(5, 1, 8, false);
    case 3 * 8 + 5: return CVK_U8_INSTANCE(5, 3, 4, true);
    case 4 * 8 + 5: return CVK_U8_INSTANCE(5, 4, 4, true);
    default: return 0;
    }
}
