/*
 * fuzz_tiff.c - libFuzzer harness for the TIFF reader (cvio_read_tiff): any
 * input must load or fail cleanly; a loaded image or stack (2-D or 3-D, 1 to
 * 4 channels) must survive the TIFF writer and reader unchanged (for arrays
 * up to 1 MiB, to keep runs fast). Built without libtiff, every input must
 * fail with FORMAT.
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    convolve_array *a = NULL;
    convolve_status st = cvio_read_tiff(fuzz_context(), data, size, &a);
    fuzz_check_read(st, a);
    if (a) {
        const convolve_layout *L = convolve_array_layout(a);
        FUZZ_CHECK((L->ndim == 2 || L->ndim == 3) && L->channels >= 1 && L->channels <= 4);
        if (convolve_array_bytes(a) <= ((size_t)1 << 20))
            fuzz_round_trip(a, cvio_write_tiff, cvio_read_tiff, 1);
    }
    convolve_array_free(a);
    return 0;
}
