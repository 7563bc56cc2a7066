/*
 * cufft.h (CPU emulation) - the part of cuFFT that src/cuda/fast_fft.cu uses,
 * for the CPU emulation of tests/emu/ (emu_cufft.cpp: naive separable DFTs in
 * double, for the tiny transforms the emulated tests make). Never part of the
 * library proper.
 */
#ifndef CVK_EMU_CUFFT_H
#define CVK_EMU_CUFFT_H

#include "cuda_runtime_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int cufftHandle;
typedef float cufftReal;
typedef double cufftDoubleReal;
typedef struct {
    float x, y;
} cufftComplex;
typedef struct {
    double x, y;
} cufftDoubleComplex;

typedef enum cufftResult_t {
    CUFFT_SUCCESS = 0,
    CUFFT_INVALID_PLAN = 1,
    CUFFT_ALLOC_FAILED = 2,
    CUFFT_INVALID_TYPE = 3,
    CUFFT_INVALID_VALUE = 4,
    CUFFT_INTERNAL_ERROR = 5,
    CUFFT_EXEC_FAILED = 6,
    CUFFT_SETUP_FAILED = 7,
    CUFFT_INVALID_SIZE = 8
} cufftResult;

typedef enum cufftType_t {
    CUFFT_R2C = 0x2a,
    CUFFT_C2R = 0x2c,
    CUFFT_D2Z = 0x6a,
    CUFFT_Z2D = 0x6c
} cufftType;

cufftResult cufftPlanMany(cufftHandle *plan, int rank, int *n, int *inembed, int istride, int idist,
                          int *onembed, int ostride, int odist, cufftType type, int batch);
cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream);
cufftResult cufftDestroy(cufftHandle plan);
cufftResult cufftExecR2C(cufftHandle plan, cufftReal *in, cufftComplex *out);
cufftResult cufftExecC2R(cufftHandle plan, cufftComplex *in, cufftReal *out);
cufftResult cufftExecD2Z(cufftHandle plan, cufftDoubleReal *in, cufftDoubleComplex *out);
cufftResult cufftExecZ2D(cufftHandle plan, cufftDoubleComplex *in, cufftDoubleReal *out);

#ifdef __cplusplus
}
#endif

#endif
