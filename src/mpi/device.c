/*
 * device.c - the GPU a rank computes on: device (rank within its node) %
 * (devices on the node), made current for the calling thread before the
 * rank's libconvolve plans are made (libconvolve plans on the device current
 * when they are created; its CUDA runtime and this one share the driver's
 * current context).
 */
#include "mpi_internal.h"

#ifdef CONVOLVE_MPI_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

int cvmpi_select_device(MPI_Comm comm, int want)
{
    /* collective on every rank, whether it wants a device or not */
    MPI_Comm node;
    int local = 0;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &local);
        MPI_Comm_free(&node);
    }
    if (!want)
        return -1;
#ifdef CONVOLVE_MPI_WITH_CUDA
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
        (void)cudaGetLastError();
        return -1;
    }
    int dev = local % count;
    if (cudaSetDevice(dev) != cudaSuccess || cudaFree(0) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return dev;
#else
    (void)local;
    return -1;
#endif
}
