/*
 * fast_direct_batch.cu - batched instances of the fast direct kernels
 * (fast_direct.cuh): float32 gray filters over a batch of 2-D images in one
 * launch (blockIdx.z picks the image: a stack's planes under a filter of
 * extent 1 along z, or planar channels), dense K = 3, 5, 7 and separable
 * K = 3..13, each tuned as its single-image instance (fast_direct_f32.cu,
 * fast_direct_sep.cu). Larger filters keep the generated kernels, whose
 * batches were not slower than one image at a time there.
 */
#include "fast_direct.cuh"

cvk_direct_kernel_fn cvk_direct2d_dense_f32_batch(int K)
{
    switch (K) {
        CVK_DIRECT_CASE_BATCH(3, 1, float, false, 4, 8, 0)
        CVK_DIRECT_CASE_BATCH(5, 1, float, false, 4, 8, 0)
        CVK_DIRECT_CASE_BATCH(7, 1, float, false, 4, 6, 0)
    default: return 0;
    }
}

cvk_direct_kernel_fn cvk_direct2d_sep_f32_batch(int K)
{
    switch (K) {
        CVK_DIRECT_CASE_BATCH(3, 1, float, true, 4, 0, -1)
        CVK_DIRECT_CASE_BATCH(5, 1, float, true, 4, 8, 0)
        CVK_DIRECT_CASE_BATCH(7, 1, float, true, 4, 0, -1)
        CVK_DIRECT_CASE_BATCH(9, 1, float, true, 4, 0, -1)
        CVK_DIRECT_CASE_BATCH(11, 1, float, true, 4, 0, -1)
        CVK_DIRECT_CASE_BATCH(13, 1, float, true, 4, 0, -1)
    default: return 0;
    }
}
