/*
 * jpeg.c - JPEG through libjpeg(-turbo), from and to memory.
 *
 * Read: grayscale images load as 1 channel, YCbCr and RGB as 3 (RGB, as
 * libjpeg converts them); CMYK and YCCK are FORMAT errors. libjpeg's
 * warnings (premature end of data, corrupt data) are errors too, so a
 * truncated file never yields a partly grey picture.
 * Write: uint8 2-D arrays of 1 (gray) or 3 (RGB) channels.
 *
 * libjpeg reports errors through error_exit, which here longjmps back to the
 * decode or encode; their state lives in a struct owned by the caller.
 */
#include "io.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

_Static_assert(JPEG_MAX_DIMENSION == CVIO_JPEG_MAX_SIDE,
               "format.c's JPEG size limit must be libjpeg's");

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX];
} jpeg_err;

static void on_error_exit(j_common_ptr cinfo)
{
    jpeg_err *e = (jpeg_err *)cinfo->err;
    cinfo->err->format_message(cinfo, e->msg);
    longjmp(e->jump, 1);
}

/* msg_level -1 is a warning: corrupt or missing data. Treated as an error. */
static void on_emit_message(j_common_ptr cinfo, int msg_level)
{
    if (msg_level < 0)
        on_error_exit(cinfo);
}

static void init_err(jpeg_err *e)
{
    jpeg_std_error(&e->pub);
    e->pub.error_exit = on_error_exit;
    e->pub.emit_message = on_emit_message;
    e->msg[0] = '\0';
}

typedef struct {
    struct jpeg_decompress_struct cinfo;
    jpeg_err err;
    int created;
    convolve_array *array;
} jpeg_read_state;

/* 0 on success, -1 with s->err.msg set, or a convolve_status > 0. */
static int decode(convolve_context *ctx, jpeg_read_state *s, const unsigned char *data, size_t size)
{
    struct jpeg_decompress_struct *ci = &s->cinfo;
    ci->err = &s->err.pub;
    if (setjmp(s->err.jump))
        return -1;
    jpeg_create_decompress(ci);
    s->created = 1;
    jpeg_mem_src(ci, data, (unsigned long)size);
    jpeg_read_header(ci, TRUE);
    size_t channels;
    switch (ci->jpeg_color_space) {
    case JCS_GRAYSCALE:
        ci->out_color_space = JCS_GRAYSCALE;
        channels = 1;
        break;
    case JCS_YCbCr:
    case JCS_RGB:
        ci->out_color_space = JCS_RGB;
        channels = 3;
        break;
    case JCS_CMYK:
    case JCS_YCCK:
        return (int)cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                              "CMYK JPEG images are not supported (convert to RGB first)");
    default:
        return (int)cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                              "JPEG colour space %d is not supported (gray and RGB are)",
                              (int)ci->jpeg_color_space);
    }
    convolve_status st = cvio_check_image_size(ctx, "JPEG image", ci->image_width, ci->image_height,
                                               channels, 1);
    if (st == CONVOLVE_OK)
        st = cvio_check_pixel_limit(ctx, "JPEG image", ci->image_width, ci->image_height, 1);
    if (st != CONVOLVE_OK)
        return (int)st;
    jpeg_start_decompress(ci);
    if ((size_t)ci->output_components != channels || ci->output_width != ci->image_width ||
        ci->output_height != ci->image_height) {
        snprintf(s->err.msg, sizeof s->err.msg, "unexpected output geometry");
        return -1;
    }
    size_t shape[2] = {ci->output_height, ci->output_width};
    st = cvio_array_new(ctx, &s->array, CONVOLVE_UINT8, 2, shape, channels, "JPEG image");
    if (st != CONVOLVE_OK)
        return (int)st;
    size_t rowbytes = shape[1] * channels;
    while (ci->output_scanline < ci->output_height) {
        JSAMPROW row = (unsigned char *)s->array->data + (size_t)ci->output_scanline * rowbytes;
        if (jpeg_read_scanlines(ci, &row, 1) != 1) {
            snprintf(s->err.msg, sizeof s->err.msg, "no scanline returned");
            return -1;
        }
    }
    jpeg_finish_decompress(ci);
    return 0;
}

convolve_status cvio_read_jpeg(convolve_context *ctx, const unsigned char *data, size_t size,
                               convolve_array **array)
{
    *array = NULL;
    if (size < 3 || data[0] != 0xFF || data[1] != 0xD8 || data[2] != 0xFF)
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "not a JPEG file (bad signature)");
    if (size > (unsigned long)-1)
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "JPEG file too large");
    jpeg_read_state *s = calloc(1, sizeof *s);
    if (!s)
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "JPEG: out of memory");
    init_err(&s->err);
    int r = decode(ctx, s, data, size);
    if (s->created)
        jpeg_destroy_decompress(&s->cinfo);
    convolve_status st = CONVOLVE_OK;
    if (r != 0) {
        convolve_array_free(s->array);
        st = r > 0 ? (convolve_status)r
                   : cvi_error(ctx,
                               strstr(s->err.msg, "memory") ? CONVOLVE_ERROR_OUT_OF_MEMORY
                                                            : CONVOLVE_ERROR_FORMAT,
                               "malformed JPEG: %s", s->err.msg);
    } else {
        *array = s->array;
    }
    free(s);
    return st;
}

#define JPEG_CHUNK 65536

typedef struct {
    struct jpeg_compress_struct cinfo;
    jpeg_err err;
    int created;
    struct jpeg_destination_mgr dest; /* appends to out through chunk */
    cvi_buf *out;
    JOCTET chunk[JPEG_CHUNK];
} jpeg_write_state;

static void dest_init(j_compress_ptr ci)
{
    ci->dest->next_output_byte = ((jpeg_write_state *)ci->client_data)->chunk;
    ci->dest->free_in_buffer = JPEG_CHUNK;
}

static boolean dest_empty(j_compress_ptr ci)
{
    jpeg_write_state *s = ci->client_data;
    if (!cvi_buf_append(s->out, s->chunk, JPEG_CHUNK))
        ERREXIT1(ci, JERR_OUT_OF_MEMORY, 0);
    dest_init(ci);
    return TRUE;
}

static void dest_term(j_compress_ptr ci)
{
    jpeg_write_state *s = ci->client_data;
    if (!cvi_buf_append(s->out, s->chunk, JPEG_CHUNK - ci->dest->free_in_buffer))
        ERREXIT1(ci, JERR_OUT_OF_MEMORY, 0);
}

static int encode(jpeg_write_state *s, const convolve_array *a, int quality)
{
    struct jpeg_compress_struct *ci = &s->cinfo;
    const convolve_layout *L = &a->layout;
    ci->err = &s->err.pub;
    if (setjmp(s->err.jump))
        return -1;
    jpeg_create_compress(ci);
    s->created = 1;
    ci->client_data = s;
    s->dest.init_destination = dest_init;
    s->dest.empty_output_buffer = dest_empty;
    s->dest.term_destination = dest_term;
    ci->dest = &s->dest;
    ci->image_width = (JDIMENSION)L->shape[1];
    ci->image_height = (JDIMENSION)L->shape[0];
    ci->input_components = (int)L->channels;
    ci->in_color_space = L->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(ci);
    jpeg_set_quality(ci, quality, TRUE);
    jpeg_start_compress(ci, TRUE);
    size_t rowbytes = (size_t)L->strides[0];
    while (ci->next_scanline < ci->image_height) {
        JSAMPROW row = (unsigned char *)a->data + (size_t)ci->next_scanline * rowbytes;
        jpeg_write_scanlines(ci, &row, 1);
    }
    jpeg_finish_compress(ci);
    return 0;
}

convolve_status cvio_write_jpeg(convolve_context *ctx, const convolve_array *array, int quality,
                                cvi_buf *out)
{
    if (quality < 0 || quality > 100)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "JPEG quality %d: use 1 to 100, or 0 for the default (95)", quality);
    jpeg_write_state *s = calloc(1, sizeof *s);
    if (!s)
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "JPEG: out of memory");
    init_err(&s->err);
    s->out = out;
    int r = encode(s, array, quality ? quality : 95);
    if (s->created)
        jpeg_destroy_compress(&s->cinfo);
    convolve_status st = CONVOLVE_OK;
    if (r != 0)
        st = cvi_error(ctx,
                       strstr(s->err.msg, "memory") ? CONVOLVE_ERROR_OUT_OF_MEMORY
                                                    : CONVOLVE_ERROR_INTERNAL,
                       "JPEG encoding failed: %s", s->err.msg);
    free(s);
    return st;
}
