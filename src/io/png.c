/*
 * png.c - PNG through libpng, from and to memory.
 *
 * Read: 8- and 16-bit gray, gray+alpha, RGB and RGBA; palette images and bit
 * depths below 8 are expanded to 8 bits (a tRNS chunk becomes an alpha
 * channel); 16-bit images load as uint16 in host byte order. Interlaced
 * images are de-interlaced. The whole file must be there: a truncated or
 * corrupt image stream is a FORMAT error, never a partly filled picture.
 * Before anything is allocated, each chunk must lie within the file and the
 * image stream be long enough to inflate to the pixels the header declares.
 * Write: uint8 or uint16 2-D arrays of 1 to 4 channels.
 *
 * libpng reports errors by longjmp: everything a decode or encode changes
 * lives in a struct owned by the caller, which frees it after the jump.
 */
#include "io.h"

#include <png.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* format.c refuses larger images before libpng sees them */
_Static_assert(CVIO_PNG_MAX_SIDE <= PNG_USER_WIDTH_MAX && CVIO_PNG_MAX_SIDE <= PNG_USER_HEIGHT_MAX,
               "format.c's PNG size limit must be within libpng's");

typedef struct {
    png_structp png;
    png_infop info;
    const unsigned char *data; /* read: the file */
    size_t size, pos;
    cvi_buf *out; /* write: where the bytes go */
    int level;    /* write: zlib level (convolve_context_set_png_compression) */
    unsigned char **rows;
    convolve_array *array;
    char msg[256];    /* libpng's error message */
    char detail[128]; /* the IHDR warning that explains "Invalid IHDR data" */
    int bad_data;     /* a warning said the image data is damaged */
    uint64_t idat;    /* read: bytes of its IDAT chunks */
} png_state;

static void on_error(png_structp png, png_const_charp msg)
{
    png_state *s = png_get_error_ptr(png);
    if (s->detail[0] && strstr(msg, "IHDR"))
        snprintf(s->msg, sizeof s->msg, "%s (%s)", msg, s->detail);
    else
        snprintf(s->msg, sizeof s->msg, "%s", msg);
    png_longjmp(png, 1);
}

/* Warnings about the image stream mean pixels are missing or wrong; those
 * about ancillary chunks (colour profiles, text) do not. libpng explains a
 * bad header (zero or huge width, ...) only in a warning before its error. */
static void on_warning(png_structp png, png_const_charp msg)
{
    png_state *s = png_get_error_ptr(png);
    if (strstr(msg, "in IHDR") && !s->detail[0])
        snprintf(s->detail, sizeof s->detail, "%s", msg);
    if (strstr(msg, "IDAT") || strstr(msg, "image data") || strstr(msg, "Read Error") ||
        strstr(msg, "runcat")) {
        if (!s->bad_data)
            snprintf(s->msg, sizeof s->msg, "%s", msg);
        s->bad_data = 1;
    }
}

static void read_fn(png_structp png, png_bytep dst, png_size_t n)
{
    png_state *s = png_get_io_ptr(png);
    if (n > s->size - s->pos)
        png_error(png, "file truncated");
    memcpy(dst, s->data + s->pos, n);
    s->pos += n;
}

/* Largest ratio of inflated to deflated bytes a zlib stream can reach
 * (a 258-byte match in 2 bits). */
#define PNG_MAX_INFLATE_RATIO 1032

/* Walks the chunks up to IEND, adding the IDAT bytes (the image stream) into
 * *idat. Returns 0, or the offset of a chunk that runs past the end of the
 * data: libpng would allocate the length it claims before finding that out. */
static size_t scan_chunks(const unsigned char *d, size_t size, uint64_t *idat)
{
    *idat = 0;
    for (size_t pos = 8; size - pos >= 8;) {
        size_t len = (size_t)d[pos] << 24 | (size_t)d[pos + 1] << 16 | (size_t)d[pos + 2] << 8 |
                     d[pos + 3];
        if (len > size - pos - 8 || size - pos - 8 - len < 4) /* data and CRC */
            return pos;
        if (memcmp(d + pos + 4, "IDAT", 4) == 0)
            *idat += len;
        if (memcmp(d + pos + 4, "IEND", 4) == 0)
            break;
        pos += 12 + len;
    }
    return 0;
}

/* The part of the decode that libpng may leave by longjmp: 0 on success,
 * else -1 with s->msg set, or a convolve_status > 0 with ctx's message set. */
static int decode(convolve_context *ctx, png_state *s)
{
    if (setjmp(png_jmpbuf(s->png)))
        return -1;
    png_set_read_fn(s->png, s, read_fn);
    png_read_info(s->png, s->info);
    png_uint_32 w, h;
    int depth, color, interlace;
    png_get_IHDR(s->png, s->info, &w, &h, &depth, &color, &interlace, NULL, NULL);
    /* Refuse an image stream too short for the pixels the header declares
     * before allocating them (a few bytes may declare gigabytes). */
    uint64_t pixels = (uint64_t)w * h;
    if (pixels <= CVIO_MAX_PIXELS && /* else refused below */
        pixels * depth * png_get_channels(s->png, s->info) / 8 / PNG_MAX_INFLATE_RATIO > s->idat) {
        snprintf(s->msg, sizeof s->msg,
                 "%llu bytes of image data cannot hold %lux%lu pixels "
                 "(truncated?)",
                 (unsigned long long)s->idat, (unsigned long)w, (unsigned long)h);
        return -1;
    }
    png_set_expand(s->png); /* palette -> RGB, gray < 8 bits -> 8, tRNS -> alpha */
    if (depth == 16 && cvio_little_endian())
        png_set_swap(s->png);
    png_set_interlace_handling(s->png);
    png_read_update_info(s->png, s->info);
    size_t channels = png_get_channels(s->png, s->info);
    int out_depth = png_get_bit_depth(s->png, s->info);
    if (channels < 1 || channels > 4 || (out_depth != 8 && out_depth != 16)) {
        snprintf(s->msg, sizeof s->msg, "unexpected %zu channels of %d bits after expansion",
                 channels, out_depth);
        return -1;
    }
    size_t esize = out_depth == 16 ? 2 : 1;
    convolve_status st = cvio_check_image_size(ctx, "PNG image", w, h, channels, esize);
    if (st == CONVOLVE_OK)
        st = cvio_check_pixel_limit(ctx, "PNG image", w, h, 1);
    if (st != CONVOLVE_OK)
        return (int)st;
    size_t rowbytes = (size_t)w * channels * esize;
    if (png_get_rowbytes(s->png, s->info) != rowbytes) {
        snprintf(s->msg, sizeof s->msg, "row size %zu, expected %zu",
                 (size_t)png_get_rowbytes(s->png, s->info), rowbytes);
        return -1;
    }
    size_t shape[2] = {h, w};
    st = cvio_array_new(ctx, &s->array, esize == 2 ? CONVOLVE_UINT16 : CONVOLVE_UINT8, 2, shape,
                        channels, "PNG image");
    if (st != CONVOLVE_OK)
        return (int)st;
    s->rows = malloc((size_t)h * sizeof *s->rows);
    if (!s->rows)
        return (int)cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "PNG image: out of memory");
    for (size_t y = 0; y < h; y++)
        s->rows[y] = (unsigned char *)s->array->data + y * rowbytes;
    png_read_image(s->png, s->rows);
    png_read_end(s->png, NULL); /* reads up to IEND: a file cut short fails here */
    return 0;
}

convolve_status cvio_read_png(convolve_context *ctx, const unsigned char *data, size_t size,
                              convolve_array **array)
{
    *array = NULL;
    if (size < 8 || png_sig_cmp(data, 0, 8) != 0)
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "not a PNG file (bad signature)");
    png_state s;
    memset(&s, 0, sizeof s);
    size_t bad = scan_chunks(data, size, &s.idat);
    if (bad)
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                         "malformed PNG: the chunk at byte %zu runs "
                         "past the end of the file (truncated?)",
                         bad);
    s.data = data;
    s.size = size;
    s.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &s, on_error, on_warning);
    if (s.png)
        s.info = png_create_info_struct(s.png);
    if (!s.png || !s.info) {
        png_destroy_read_struct(s.png ? &s.png : NULL, NULL, NULL);
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "PNG: out of memory");
    }
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    /* tests/fuzz: mutated chunks keep their old checksums; decode them anyway */
    png_set_crc_action(s.png, PNG_CRC_QUIET_USE, PNG_CRC_QUIET_USE);
#ifdef PNG_IGNORE_ADLER32
    png_set_option(s.png, PNG_IGNORE_ADLER32, PNG_OPTION_ON);
#endif
#endif
    int r = decode(ctx, &s);
    png_destroy_read_struct(&s.png, &s.info, NULL);
    free(s.rows);
    if (r == 0 && s.bad_data)
        r = -1;
    if (r != 0) {
        convolve_array_free(s.array);
        if (r > 0)
            return (convolve_status)r;
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "malformed PNG: %s", s.msg);
    }
    *array = s.array;
    return CONVOLVE_OK;
}

static void write_fn(png_structp png, png_bytep src, png_size_t n)
{
    png_state *s = png_get_io_ptr(png);
    if (!cvi_buf_append(s->out, src, n))
        png_error(png, "out of memory");
}

static void flush_fn(png_structp png)
{
    (void)png;
}

static int encode(png_state *s, const convolve_array *a)
{
    if (setjmp(png_jmpbuf(s->png)))
        return -1;
    const convolve_layout *L = &a->layout;
    static const int k_color[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                                   PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
    int depth = L->dtype == CONVOLVE_UINT16 ? 16 : 8;
    png_set_write_fn(s->png, s, write_fn, flush_fn);
    /* fast levels with one filter (trying each per row costs more than it
     * saves there), libpng's choice per row from level 4 on */
    png_set_compression_level(s->png, s->level);
    if (s->level == 0)
        png_set_filter(s->png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
    else if (s->level <= 3)
        png_set_filter(s->png, PNG_FILTER_TYPE_BASE, PNG_FILTER_AVG);
    png_set_IHDR(s->png, s->info, (png_uint_32)L->shape[1], (png_uint_32)L->shape[0], depth,
                 k_color[L->channels], PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(s->png, s->info);
    if (depth == 16 && cvio_little_endian())
        png_set_swap(s->png);
    size_t rowbytes = (size_t)L->strides[0];
    for (size_t y = 0; y < L->shape[0]; y++)
        png_write_row(s->png, (png_const_bytep)a->data + y * rowbytes);
    png_write_end(s->png, NULL);
    return 0;
}

convolve_status cvio_write_png(convolve_context *ctx, const convolve_array *array, cvi_buf *out)
{
    png_state s;
    memset(&s, 0, sizeof s);
    s.out = out;
    s.level = convolve_context_png_compression(ctx);
    s.level = s.level < 0 ? CONVOLVE_DEFAULT_PNG_COMPRESSION : s.level;
    s.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &s, on_error, on_warning);
    if (s.png)
        s.info = png_create_info_struct(s.png);
    if (!s.png || !s.info) {
        png_destroy_write_struct(s.png ? &s.png : NULL, NULL);
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "PNG: out of memory");
    }
    int r = encode(&s, array);
    png_destroy_write_struct(&s.png, &s.info);
    if (r != 0)
        return cvi_error(
            ctx, strstr(s.msg, "memory") ? CONVOLVE_ERROR_OUT_OF_MEMORY : CONVOLVE_ERROR_INTERNAL,
            "PNG encoding failed: %s", s.msg);
    return CONVOLVE_OK;
}
