/*
 * fast_direct_batch.cu - batched instances of the fast direct kernels
 * (fast_direct.cuh): float32 gray filters over a batch of 2-D images in one
 * launch (blockIdx.z picks the image: a stack's planes under a filter of
 * extent 1 along z, or planar channels), dense K = 3, 5, 7 and separable
 * K = 3..13, each tuned as its single-image instance (cvk_f32_tuning in
 * fast_direct.cuh). Larger filters keep the generated kernels, whose
 * batches were not slower than one image at a time there.
 */
#include "fast_direct.cuh"

cvk_direct_kernel_fn cvk_direct2d_dense_f32_batch(int K)
{
    switch (K) {
        CVK_DIRECT_CASE_F32_BATCH(3, false)
        CVK_DIRECT_CASE_F32_BATCH(5, false)
        CVK_DIRECT_CASE_F32_BATCH(7, false)
    default: return 0;
    }
}

cvk_direct_kernel_fn cvk_direct2d_sep_f32_batch(int K)
{
    switch (K) {
        CVK_DIRECT_CASE_F32_BATCH(3, true)
        CVK_DIRECT_CASE_F32_BATCH(5, true)
        CVK_DIRECT_CASE_F32_BATCH(7, true)
        CVK_DIRECT_CASE_F32_BATCH(9, true)
        CVK_DIRECT_CASE_F32_BATCH(11, true)
        CVK_DIRECT_CASE_F32_BATCH(13, true)
    default: return 0;
    }
}
