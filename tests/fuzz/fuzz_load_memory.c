/*
 * fuzz_load_memory.c - libFuzzer harness for the public
 * convolve_array_load_memory with format auto-detection: the magic number
 * picks .npy, PNG, JPEG, PNM or TIFF (anything else fails with FORMAT). Checks the
 * array through the public accessors, and that a conversion to float64 keeps
 * the shape. Large JPEG headers are skipped as in fuzz_jpeg.c.
 */
#include "fuzz_common.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) {
        uint64_t pixels = fuzz_jpeg_pixels(data, size);
        if (pixels > FUZZ_JPEG_MAX_PIXELS && pixels <= CVIO_MAX_PIXELS)
            return 0;
    }
    convolve_context *ctx = fuzz_context();
    convolve_array *a = NULL;
    convolve_status st = convolve_array_load_memory(ctx, &a, data, size, CONVOLVE_FORMAT_AUTO);
    fuzz_check_read(st, a);
    if (!a)
        return 0;
    FUZZ_CHECK(convolve_last_error(ctx)[0] == '\0');
    convolve_array *b = NULL;
    st = convolve_array_convert(ctx, a, CONVOLVE_FLOAT64, &b);
    FUZZ_CHECK(st == CONVOLVE_OK);
    const convolve_layout *L = convolve_array_layout(a), *M = convolve_array_layout(b);
    FUZZ_CHECK(M->dtype == CONVOLVE_FLOAT64 && M->ndim == L->ndim && M->channels == L->channels);
    FUZZ_CHECK(memcmp(M->shape, L->shape, sizeof L->shape[0] * (size_t)L->ndim) == 0);
    fuzz_check_read(st, b);
    convolve_array_free(b);
    convolve_array_free(a);
    return 0;
}
