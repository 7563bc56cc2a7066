/*
 * fast_direct_sep.cu - instances of the fast direct kernels (fast_direct.cuh):
 * separable 2-D float32 gray filters, K = 3..33.
 */
#include "fast_direct.cuh"

#define SEP(K) CVK_DIRECT_CASE(K, 1, float, true)

/* K = 5 shifts its accumulator rows and is held to 8 blocks a
 * multiprocessor: H200, 8192^2 reflect, two rounds in one build, 0.180 ms
 * against 0.229 rotated at the compiler's registers (64), 0.214 rotated at
 * 8 blocks, 0.288 at 10 (48 registers, spills); K = 3 and 7 rotate at the
 * compiler's registers (K = 3 at 10 or 12 blocks 0.204, 0.268 against
 * 0.172; K = 7 at 8 blocks 0.281 against 0.254). */

cvk_direct_kernel_fn cvk_direct2d_sep_f32(int K)
{
    switch (K) {
        SEP(3)
        CVK_DIRECT_CASE_TUNED(5, 1, float, true, 4, 8, 0)
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
