/*
 * fuzz_common.h - what the libFuzzer harnesses (tests/fuzz/fuzz_*.c) share:
 * a check that aborts (so libFuzzer records the input), the invariants every
 * loaded array must satisfy, the status a reader may return, and a round trip
 * through a writer and back.
 */
#ifndef CONVOLVE_FUZZ_COMMON_H
#define CONVOLVE_FUZZ_COMMON_H

#include "io/io.h"

#include <stddef.h>
#include <stdint.h>

/* Aborts with the condition's text and where it failed. */
#define FUZZ_CHECK(cond) ((cond) ? (void)0 : fuzz_fail(__FILE__, __LINE__, #cond))

void fuzz_fail(const char *file, int line, const char *what);

/* The context every harness uses (created once, never freed). */
convolve_context *fuzz_context(void);

/* After a reader returned st with *array = a: on success the array's layout
 * is valid, contiguous and C order, its byte count is the product of shape,
 * channels and element size, and every byte is read (so ASan sees a short
 * buffer); on failure a is NULL, st is FORMAT, SIZE_OVERFLOW or
 * OUT_OF_MEMORY and the context holds a message. */
void fuzz_check_read(convolve_status st, const convolve_array *a);

typedef convolve_status (*fuzz_reader)(convolve_context *, const unsigned char *, size_t,
                                       convolve_array **);
typedef convolve_status (*fuzz_writer)(convolve_context *, const convolve_array *, cvi_buf *);

/* Writes a with write (which must accept it), reads the bytes back with read,
 * and checks the same dtype, dimensions, shape and channels; and, when
 * exact, the same data (NaN equal to NaN for floats). */
void fuzz_round_trip(const convolve_array *a, fuzz_writer write, fuzz_reader read, int exact);

/* Pixels (width * height) a JPEG's header declares, 0 if libjpeg cannot read
 * its header. */
uint64_t fuzz_jpeg_pixels(const uint8_t *data, size_t size);

/* Largest image the JPEG harnesses decode: libjpeg sizes its buffers from
 * the header (a progressive image keeps every coefficient), and a header of
 * a few bytes may declare up to the readers' limit of 2^31 pixels. */
#define FUZZ_JPEG_MAX_PIXELS ((uint64_t)1 << 20)

#endif
