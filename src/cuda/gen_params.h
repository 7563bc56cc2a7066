/*
 * gen_params.h - the argument block of the generated direct kernels
 * (gen_kernels.cuh), shared by host C (gen.c) and device code compiled by
 * nvcc or NVRTC: plain C, no includes.
 */
#ifndef CONVOLVE_CUDA_GEN_PARAMS_H
#define CONVOLVE_CUDA_GEN_PARAMS_H

/* Everything a launch needs besides the weights, by value. Axes: 0 = z
 * (slowest), 1 = y, 2 = x; extents in pixels. Element strides are in
 * elements of the array's own type and may be negative or zero for the
 * input. Channels are either interleaved into the x axis (C > 1: the kernel
 * works on rows of C * n[2] elements, taps C elements apart) or handled as
 * a batch (nbatch > 1, C = 1, batch strides ibs/obs). */
typedef struct cvk_gen_params {
    const void *in;
    void *out;
    long long n[3];
    long long is[3], os[3];     /* z, y, x strides (elements) */
    long long ics, ocs;         /* strides between interleaved channels */
    long long ibs, obs;         /* strides between batches */
    long long tiles_x, tiles_y; /* tiles along x (elements) and y (rows) */
    long long zchunk;           /* tile: output planes per block; strip: rows per block */
    long long nz;               /* blocks along z per batch */
    double cval;
    int nbatch;
    int C;                   /* interleaved channels (1 when batched) */
    int k[3], koff[3];       /* filter extents and offsets (0 <= koff < k) */
    int mode;                /* CVI_MODE_* */
    int out_type;            /* convolve_dtype */
    int in_contig;           /* input x stride == C and channel stride 1 */
    int in_vec;              /* and rows 16-byte aligned: vector staging */
    int out_contig, out_vec; /* the same for the output */
    int nw;                  /* weights (generic kernels copy them to shared memory) */
} cvk_gen_params;

/* 3-D tiles with KZ x BY x BX accumulators at most 64 roll them along z
 * (each input plane staged once, KZ - 1 priming planes a chunk); others
 * stage KZ input planes per output plane. Host code sizes chunks by it. */
#define CVK_GEN_ROLL(KZ, BY, BX) ((KZ) > 0 && (KZ) * (BY) * (BX) <= 64)

/* Host and device (nvcc, NVRTC; the CPU emulation compiles host code only). */
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define CVK_GEN_HD __host__ __device__ __forceinline__
#else
#define CVK_GEN_HD static inline
#endif

/* Shared-memory geometry of a block, in elements of the accumulation type:
 * staged rows of L elements (x halo included, the row's start rounded down
 * to 16 bytes of input so rows stage with 16-byte loads); the first tap of
 * a thread's window lies D elements into its part of a row. */
typedef struct cvk_gen_geom {
    int HLa;         /* left halo, rounded up to 16 bytes of input */
    int D;           /* HLa - koff[2] * C */
    int L;           /* elements per staged row */
    int R;           /* tile: staged rows per plane; strip: rows per chunk */
    int H;           /* tile (separable): x-filtered rows; strip: ring rows */
    int ring;        /* strip: ring period (rows) */
    int W;           /* weights kept in shared memory (0 when in the bank) */
    long long elems; /* shared memory per block, elements */
} cvk_gen_geom;

CVK_GEN_HD void cvk_gen_geometry(int family, int in_size, int C, const int k[3], int ox, int sep,
                                 int bx, int by, int tx, int ty, int weights_in_smem,
                                 cvk_gen_geom *g)
{
    const int VW = 16 / in_size, SW = tx * bx, RC = ty * by;
    const int HL = ox * C, HR = (k[2] - 1 - ox) * C;
    const int nw = family == 1 ? k[2] + k[1] : sep ? k[0] + k[1] + k[2] : k[0] * k[1] * k[2];
    g->HLa = (HL + VW - 1) / VW * VW;
    g->D = g->HLa - HL;
    g->L = (g->HLa + SW + HR + VW - 1) / VW * VW;
    g->W = weights_in_smem ? (nw + 3) / 4 * 4 : 0;
    if (family == 1) {
        g->R = RC;
        g->ring = k[1] + RC - 1;
        g->H = g->ring + by + k[1] - 2; /* rows past the period repeat its first ones */
    } else {
        g->R = RC + k[1] - 1;
        g->ring = 0;
        g->H = sep ? g->R : 0;
    }
    g->elems = (long long)g->W + (long long)g->R * g->L + (long long)g->H * SW;
}

#endif
