/*
 * fuzz_png.c - libFuzzer harness for the PNG reader (cvio_read_png): any
 * input must load or fail cleanly; a loaded image (2-D, 1 to 4 channels,
 * uint8 or uint16) must survive the PNG writer and reader unchanged (for
 * images up to 1 MiB, to keep runs fast).
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    convolve_array *a = NULL;
    convolve_status st = cvio_read_png(fuzz_context(), data, size, &a);
    fuzz_check_read(st, a);
    if (a) {
        const convolve_layout *L = convolve_array_layout(a);
        FUZZ_CHECK(L->ndim == 2 && L->channels >= 1 && L->channels <= 4);
        FUZZ_CHECK(L->dtype == CONVOLVE_UINT8 || L->dtype == CONVOLVE_UINT16);
        if (convolve_array_bytes(a) <= ((size_t)1 << 20))
            fuzz_round_trip(a, cvio_write_png, cvio_read_png, 1);
    }
    convolve_array_free(a);
    return 0;
}
