/*
 * fuzz_pnm.c - libFuzzer harness for the PGM/PPM reader (cvio_read_pnm): any
 * input must load or fail cleanly; a loaded image (2-D, 1 or 3 channels)
 * must survive the PNM writer (binary, full maxval) and reader unchanged.
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    convolve_array *a = NULL;
    convolve_status st = cvio_read_pnm(fuzz_context(), data, size, &a);
    fuzz_check_read(st, a);
    if (a) {
        const convolve_layout *L = convolve_array_layout(a);
        FUZZ_CHECK(L->ndim == 2 && (L->channels == 1 || L->channels == 3));
        FUZZ_CHECK(L->dtype == CONVOLVE_UINT8 || L->dtype == CONVOLVE_UINT16);
        fuzz_round_trip(a, cvio_write_pnm, cvio_read_pnm, 1);
    }
    convolve_array_free(a);
    return 0;
}
