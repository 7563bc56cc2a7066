/*
 * fuzz_npy.c - libFuzzer harness for the .npy reader (cvio_read_npy): any
 * input must load or fail cleanly; a loaded array must survive the .npy
 * writer and reader unchanged.
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    convolve_array *a = NULL;
    convolve_status st = cvio_read_npy(fuzz_context(), data, size, &a);
    fuzz_check_read(st, a);
    if (a) {
        FUZZ_CHECK(convolve_array_layout(a)->channels == 1);
        fuzz_round_trip(a, cvio_write_npy, cvio_read_npy, 1);
    }
    convolve_array_free(a);
    return 0;
}
