/*
 * fuzz_text.c - libFuzzer harness for the weights-text reader
 * (cvio_read_text): any input must load or fail cleanly; a loaded array is
 * float64 with 1 channel, and one of 1 or 2 dimensions must survive the text
 * writer and reader unchanged (NaN as NaN).
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    convolve_array *a = NULL;
    convolve_status st = cvio_read_text(fuzz_context(), data, size, &a);
    fuzz_check_read(st, a);
    if (a) {
        const convolve_layout *L = convolve_array_layout(a);
        FUZZ_CHECK(L->dtype == CONVOLVE_FLOAT64 && L->channels == 1);
        if (L->ndim <= 2)
            fuzz_round_trip(a, cvio_write_text, cvio_read_text, 1);
    }
    convolve_array_free(a);
    return 0;
}
