/*
 * util.cu - device helpers of the CUDA backend that are not convolutions: a
 * pseudo-random fill of device buffers (benchmark inputs) and the check that
 * this build has machine code or PTX the current device can run.
 */
#include "device_common.cuh"

/* splitmix64: a well-mixed 64-bit hash of i and the seed. */
__device__ __forceinline__ unsigned long long cvk_mix(unsigned long long x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

__global__ void __launch_bounds__(256)
    cvk_fill_kernel(void *p, long long n, int type, unsigned long long seed)
{
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        const unsigned long long h = cvk_mix((unsigned long long)i ^ seed);
        /* 24 and 53 random bits give floats and doubles in [-1, 1) */
        switch (type) {
        case 0: ((float *)p)[i] = (float)(h >> 40) * 0x1.0p-23f - 1.0f; break;
        case 1: ((double *)p)[i] = (double)(h >> 11) * 0x1.0p-52 - 1.0; break;
        case 2: ((uint8_t *)p)[i] = (uint8_t)(h >> 56); break;
        default: ((uint16_t *)p)[i] = (uint16_t)(h >> 48); break;
        }
    }
}

extern "C" cudaError_t cvk_fill_random(void *p, long long n, int type, unsigned long long seed,
                                       cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    long long blocks = (n + 255) / 256;
    if (blocks > CVK_FLAT_MAX_BLOCKS)
        blocks = CVK_FLAT_MAX_BLOCKS;
    CVK_LAUNCH(cvk_fill_kernel, (unsigned)blocks, 256, 0, stream, (p, n, type, seed));
    return cudaGetLastError();
}

extern "C" cudaError_t cvk_check_kernel_image(void)
{
    cudaFuncAttributes attr;
    return cudaFuncGetAttributes(&attr, (const void *)cvk_fill_kernel);
}
