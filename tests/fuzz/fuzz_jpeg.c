/*
 * fuzz_jpeg.c - libFuzzer harness for the JPEG reader (cvio_read_jpeg): any
 * input must load or fail cleanly; a loaded image (2-D uint8, 1 or 3
 * channels) must come back from the JPEG writer and reader with the same
 * shape (JPEG is lossy, so not the same data). Inputs whose header declares
 * more than FUZZ_JPEG_MAX_PIXELS (but no more than the reader's own limit,
 * which it refuses before decoding) are skipped, as libjpeg-turbo's own
 * fuzzers do: decoding them is slow and may rightly take gigabytes.
 */
#include "fuzz_common.h"

/* The writer at its default quality. */
static convolve_status write_jpeg(convolve_context *ctx, const convolve_array *a, cvi_buf *out)
{
    return cvio_write_jpeg(ctx, a, 0, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t pixels = fuzz_jpeg_pixels(data, size);
    if (pixels > FUZZ_JPEG_MAX_PIXELS && pixels <= CVIO_MAX_PIXELS)
        return 0;
    convolve_array *a = NULL;
    convolve_status st = cvio_read_jpeg(fuzz_context(), data, size, &a);
    fuzz_check_read(st, a);
    if (a) {
        const convolve_layout *L = convolve_array_layout(a);
        FUZZ_CHECK(L->ndim == 2 && L->dtype == CONVOLVE_UINT8);
        FUZZ_CHECK(L->channels == 1 || L->channels == 3);
        if (convolve_array_bytes(a) <= ((size_t)1 << 18))
            fuzz_round_trip(a, write_jpeg, cvio_read_jpeg, 0);
    }
    convolve_array_free(a);
    return 0;
}
