/*
 * tiff.c - TIFF through libtiff (4.5 or later), from and to memory.
 *
 * Read: 8- and 16-bit unsigned and 32- and 64-bit float samples; 1 to 4
 * samples per pixel (gray, gray+alpha, RGB, RGBA; extra samples are kept as
 * channels); chunky (contiguous) or planar (separate) samples; strips or
 * tiles; any compression scheme this libtiff decodes (JPEG-compressed YCbCr
 * is read as RGB); either byte order; classic TIFF and BigTIFF. One page
 * loads as a 2-D image (height, width) with channels; several pages load as
 * a 3-D stack (pages, height, width), and then every page must have the same
 * size, sample type and channels. Pages marked as reduced-resolution
 * (thumbnails, pyramid levels) are skipped. The Orientation tag is ignored:
 * rows load as stored. Any libtiff error is a FORMAT error: a damaged file
 * never loads as a partly filled picture.
 * Before anything is allocated, each page's compressed bytes, clamped to the
 * file, must be enough to decode to the pixels its header declares (at the
 * largest expansion of its compression scheme), and the whole file enough
 * for all its pages together.
 * Write: uint8, uint16, float32 or float64 arrays of 2 dimensions (one page)
 * or 3 (a page per plane, as microscopy stacks are), 1 to 4 channels (what
 * format.c says TIFF holds), uncompressed, chunky, in strips; BigTIFF when
 * the data passes 4 GiB.
 *
 * Built without libtiff (CONVOLVE_HAVE_TIFF undefined), reading is a FORMAT
 * error and writing UNSUPPORTED, both saying so.
 */
#include "io.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CONVOLVE_HAVE_TIFF

#include <stdarg.h>
#include <tiffio.h>

/* Largest single allocation libtiff may make beyond the file's own size. */
#define TIFF_MAX_EXTRA_ALLOC ((tmsize_t)256 << 20)

/* Bytes of pixel data a strip is written in (about). */
#define TIFF_WRITE_STRIP_BYTES ((size_t)256 << 10)

/* The TIFF being read or written, and what libtiff said went wrong. */
typedef struct {
    const unsigned char *data; /* read: the file */
    size_t size;               /* read: its size; write: bytes written */
    size_t pos;
    cvi_buf *out;      /* write: where the bytes go */
    size_t base;       /* write: out->size when writing began */
    int multi;         /* read: the file has more than one directory */
    int decoding;      /* read: a strip or tile is being decoded */
    char msg[256];     /* libtiff's first error */
    char warning[256]; /* libtiff's first warning that pixels or pages are wrong */
} tiff_io;

static int on_error(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap)
{
    (void)tif;
    tiff_io *s = user;
    if (!s->msg[0]) {
        char text[200];
        vsnprintf(text, sizeof text, fmt, ap);
        if (module && *module)
            snprintf(s->msg, sizeof s->msg, "%s: %s", module, text);
        else
            snprintf(s->msg, sizeof s->msg, "%s", text);
    }
    return 1; /* handled: nothing reaches libtiff's global handlers */
}

/* Unknown tags and the like leave the pixels right; but libtiff only warns
 * when it replaces byte counts that cannot be right by its own guess (the
 * pixels may then come from bytes past the strip), when a directory points
 * back at an earlier one, and when a codec decodes fewer bytes than a strip
 * needs (JBIG: "Only decoded 259 bytes, whereas 1961 requested"; the rest
 * of the strip is then left as it was): those are kept, and make the read
 * fail. So does every other warning raised while a strip or tile decodes,
 * but LZW's "not terminated with EOI code", after which libtiff itself
 * fails a strip that comes out short. */
static int on_warning(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap)
{
    (void)tif;
    tiff_io *s = user;
    char text[200];
    vsnprintf(text, sizeof text, fmt, ap);
    const int wrong = strstr(text, "ByteCounts") || strstr(text, "looping") ||
                      (s->decoding && !strstr(text, "not terminated with EOI"));
    if (!s->warning[0] && wrong) {
        if (s->decoding && module && *module)
            snprintf(s->warning, sizeof s->warning, "%s: %s", module, text);
        else
            snprintf(s->warning, sizeof s->warning, "%s", text);
    }
    return 1;
}

static tmsize_t read_proc(thandle_t h, void *buf, tmsize_t n)
{
    tiff_io *s = (tiff_io *)h;
    size_t len = s->size;
    const unsigned char *src = s->out ? s->out->data + s->base : s->data;
    if (n < 0 || s->pos >= len)
        return 0;
    size_t k = (size_t)n < len - s->pos ? (size_t)n : len - s->pos;
    memcpy(buf, src + s->pos, k);
    s->pos += k;
    return (tmsize_t)k;
}

/* Writes at the current position, growing the output (a gap left by a seek
 * past the end reads as zeros). */
static tmsize_t write_proc(thandle_t h, void *buf, tmsize_t n)
{
    tiff_io *s = (tiff_io *)h;
    if (!s->out || n < 0)
        return -1;
    size_t end;
    if (!cvi_add_size(s->pos, (size_t)n, &end))
        return -1;
    static const unsigned char zeros[256];
    while (s->size < s->pos) { /* fill a gap */
        size_t k = s->pos - s->size < sizeof zeros ? s->pos - s->size : sizeof zeros;
        if (!cvi_buf_append(s->out, zeros, k))
            return -1;
        s->size += k;
    }
    size_t overlap = s->size - s->pos < (size_t)n ? s->size - s->pos : (size_t)n;
    if (overlap)
        memcpy(s->out->data + s->base + s->pos, buf, overlap);
    if (!cvi_buf_append(s->out, (const unsigned char *)buf + overlap, (size_t)n - overlap))
        return -1;
    if (end > s->size)
        s->size = end;
    s->pos = end;
    return n;
}

static toff_t seek_proc(thandle_t h, toff_t off, int whence)
{
    tiff_io *s = (tiff_io *)h;
    uint64_t from = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? s->pos : s->size;
    int64_t delta = (int64_t)off; /* SEEK_CUR and SEEK_END may move back */
    uint64_t to = whence == SEEK_SET ? (uint64_t)off : from + (uint64_t)delta;
    if ((whence != SEEK_SET && delta < 0 && (uint64_t)-delta > from) || to > (uint64_t)SIZE_MAX / 2)
        return (toff_t)-1;
    s->pos = (size_t)to;
    return (toff_t)to;
}

static int close_proc(thandle_t h)
{
    (void)h;
    return 0;
}

static toff_t size_proc(thandle_t h)
{
    return (toff_t)((tiff_io *)h)->size;
}

/* Reading maps the file: libtiff then takes uncompressed strips in place. */
static int map_proc(thandle_t h, void **base, toff_t *size)
{
    tiff_io *s = (tiff_io *)h;
    if (s->out)
        return 0;
    *base = (void *)(uintptr_t)s->data; /* libtiff only reads a mapping opened "r" */
    *size = (toff_t)s->size;
    return 1;
}

static void unmap_proc(thandle_t h, void *base, toff_t size)
{
    (void)h, (void)base, (void)size;
}

static TIFF *open_tiff(tiff_io *s, const char *mode, tmsize_t max_alloc)
{
    TIFFOpenOptions *opts = TIFFOpenOptionsAlloc();
    if (!opts)
        return NULL;
    TIFFOpenOptionsSetErrorHandlerExtR(opts, on_error, s);
    TIFFOpenOptionsSetWarningHandlerExtR(opts, on_warning, s);
    if (max_alloc > 0)
        TIFFOpenOptionsSetMaxSingleMemAlloc(opts, max_alloc);
    TIFF *tif = TIFFClientOpenExt("TIFF", mode, (thandle_t)s, read_proc, write_proc, seek_proc,
                                  close_proc, size_proc, map_proc, unmap_proc, opts);
    TIFFOpenOptionsFree(opts);
    return tif;
}

/* ---- read ------------------------------------------------------------------ */

/* Largest ratio of decoded to encoded bytes of a compression scheme (an
 * upper bound: a run or match of the longest length in the fewest bits). */
static size_t max_expansion(uint16_t compression)
{
    switch (compression) {
    case COMPRESSION_NONE: return 1;
    case COMPRESSION_PACKBITS: return 64; /* 2 bytes: a run of 128 */
    case COMPRESSION_ADOBE_DEFLATE:
    case COMPRESSION_DEFLATE: return 1032; /* a 258-byte match in 2 bits */
    case COMPRESSION_LZW: return 4096;     /* a 4096-byte string per 9..12-bit code, at most */
    case COMPRESSION_JPEG: return 4096;    /* 1 bit per 8x8 block and component */
    default:
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
        return (size_t)1 << 12; /* tests/fuzz: keeps decodes within its memory limit */
#else
        return (size_t)1 << 17; /* zstd, LZMA and the rest: generous */
#endif
    }
}

/* What one page holds. */
typedef struct {
    uint32_t width, height;
    convolve_dtype dtype;
    size_t channels;
    int planar; /* samples in separate planes */
    int tiled;
    uint32_t tile_w, tile_h; /* tiles; or width and rows per strip */
    uint16_t compression;
    size_t unit_bytes; /* what one strip or tile decodes to (the largest) */
} tiff_page;

static const char *channels_name(size_t c)
{
    static const char *const k[] = {"", "gray", "gray+alpha", "RGB", "RGBA"};
    return c <= 4 ? k[c] : "?";
}

/* A FORMAT error about page (0-based) of a stack, or about the file when
 * page is NO_PAGE or the file has one page. */
#define NO_PAGE ((size_t)-1)

static convolve_status page_error(convolve_context *ctx, const tiff_io *s, size_t page,
                                  const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static convolve_status page_error(convolve_context *ctx, const tiff_io *s, size_t page,
                                  const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (page == NO_PAGE || !s->multi)
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "TIFF: %s", text);
    return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "TIFF page %zu: %s", page + 1, text);
}

/* The element type of bps-bit samples of SampleFormat fmt; FORMAT for what
 * is not supported. */
static convolve_status sample_dtype(convolve_context *ctx, const tiff_io *s, size_t page,
                                    uint16_t bps, uint16_t fmt, convolve_dtype *dtype)
{
    if (fmt == SAMPLEFORMAT_UINT || fmt == SAMPLEFORMAT_VOID) {
        if (bps == 8)
            *dtype = CONVOLVE_UINT8;
        else if (bps == 16)
            *dtype = CONVOLVE_UINT16;
        else
            return page_error(ctx, s, page,
                              "%u-bit unsigned samples are not supported (8 or 16 "
                              "bits, or 32/64-bit float)",
                              bps);
    } else if (fmt == SAMPLEFORMAT_IEEEFP) {
        if (bps == 32)
            *dtype = CONVOLVE_FLOAT32;
        else if (bps == 64)
            *dtype = CONVOLVE_FLOAT64;
        else
            return page_error(ctx, s, page,
                              "%u-bit float samples are not supported (32 or 64 "
                              "bits)",
                              bps);
    } else {
        return page_error(ctx, s, page,
                          "%u-bit %s samples are not supported; convolve reads "
                          "uint8, uint16, float32 and float64",
                          bps, fmt == SAMPLEFORMAT_INT ? "signed integer" : "complex");
    }
    return CONVOLVE_OK;
}

/* Checks the Photometric interpretation photo (spp samples per pixel) is
 * one this reader loads: gray, RGB, or JPEG-compressed YCbCr, which libjpeg
 * is told to convert to RGB; FORMAT for the rest. */
static convolve_status check_photometric(convolve_context *ctx, TIFF *tif, const tiff_io *s,
                                         size_t page, uint16_t photo, uint16_t spp,
                                         uint16_t compression)
{
    if (compression == COMPRESSION_JPEG && photo == PHOTOMETRIC_YCBCR) {
        /* libjpeg converts to RGB (and upsamples the chroma) */
        if (!TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB))
            return page_error(ctx, s, page, "cannot convert its JPEG YCbCr to RGB");
        photo = PHOTOMETRIC_RGB;
    }
    switch (photo) {
    case PHOTOMETRIC_MINISBLACK: return CONVOLVE_OK;
    case PHOTOMETRIC_RGB:
        if (spp < 3)
            return page_error(ctx, s, page, "RGB with %u samples per pixel", spp);
        return CONVOLVE_OK;
    case PHOTOMETRIC_MINISWHITE:
        return page_error(ctx, s, page,
                          "white-is-zero gray (Photometric 0) is not supported; "
                          "save it as black-is-zero");
    case PHOTOMETRIC_PALETTE:
        return page_error(ctx, s, page,
                          "palette (indexed colour) images are not supported; "
                          "save it as RGB");
    case PHOTOMETRIC_SEPARATED:
        return page_error(ctx, s, page,
                          "CMYK (separated) images are not supported; save it as "
                          "RGB");
    case PHOTOMETRIC_YCBCR:
        return page_error(ctx, s, page, "YCbCr is supported only JPEG-compressed; save it as RGB");
    default: return page_error(ctx, s, page, "Photometric %u is not supported (gray, RGB)", photo);
    }
}

/* Reads the current directory's description into *p; FORMAT for what is not
 * supported. */
static convolve_status describe_page(convolve_context *ctx, TIFF *tif, const tiff_io *s,
                                     size_t page, tiff_page *p)
{
    uint32_t w = 0, h = 0, depth = 1;
    uint16_t bps = 1, spp = 1, fmt = SAMPLEFORMAT_UINT, photo, planar = PLANARCONFIG_CONTIG;
    uint16_t compression = COMPRESSION_NONE;
    memset(p, 0, sizeof *p);
    if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w) || !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h))
        return page_error(ctx, s, page, "no ImageWidth or ImageLength tag");
    TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bps);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &fmt);
    TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
    TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
    TIFFGetFieldDefaulted(tif, TIFFTAG_IMAGEDEPTH, &depth);
    if (!TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photo))
        photo = spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
    if (w == 0 || h == 0)
        return page_error(ctx, s, page, "size %lux%lu is empty", (unsigned long)w,
                          (unsigned long)h);
    if (depth != 1)
        return page_error(ctx, s, page, "ImageDepth %lu (SGI volume tiles) is not supported",
                          (unsigned long)depth);

    convolve_status st;
    if ((st = sample_dtype(ctx, s, page, bps, fmt, &p->dtype)) != CONVOLVE_OK ||
        (st = check_photometric(ctx, tif, s, page, photo, spp, compression)) != CONVOLVE_OK)
        return st;
    if (spp < 1 || spp > 4)
        return page_error(ctx, s, page,
                          "%u samples per pixel; 1 to 4 are supported (gray, "
                          "gray+alpha, RGB, RGBA)",
                          spp);
    if (planar != PLANARCONFIG_CONTIG && planar != PLANARCONFIG_SEPARATE)
        return page_error(ctx, s, page, "PlanarConfiguration %u is not valid", planar);
    if (compression == COMPRESSION_JBIG)
        /* libtiff's JBIG codec decodes one bit plane (bilevel images only),
         * so an 8-bit page comes out short; and libjbig sizes its buffers
         * from its own header, past libtiff's allocation limit (a 506-byte
         * file asked for 15 GB) */
        return page_error(ctx, s, page,
                          "JBIG compression holds bilevel (1-bit) images, which "
                          "are not supported (8 or 16-bit, 32/64-bit float samples are)");
    if (!TIFFIsCODECConfigured(compression)) {
        const TIFFCodec *c = TIFFFindCODEC(compression);
        return page_error(ctx, s, page,
                          "compression scheme %u (%s) cannot be decoded by this "
                          "libtiff",
                          compression, c && c->name ? c->name : "unknown");
    }
    p->width = w;
    p->height = h;
    p->channels = spp;
    p->planar = planar == PLANARCONFIG_SEPARATE && spp > 1;
    p->compression = compression;
    p->tiled = TIFFIsTiled(tif);
    if (p->tiled) {
        if (!TIFFGetField(tif, TIFFTAG_TILEWIDTH, &p->tile_w) ||
            !TIFFGetField(tif, TIFFTAG_TILELENGTH, &p->tile_h) || p->tile_w == 0 || p->tile_h == 0)
            return page_error(ctx, s, page, "tiled, but without a valid tile size");
    } else {
        uint32_t rps = h;
        TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rps);
        p->tile_w = w;
        p->tile_h = rps == 0 || rps > h ? h : rps;
    }
    return cvio_check_image_size(ctx, "TIFF image", w, h, spp, convolve_dtype_size(p->dtype));
}

/* Bytes of strip or tile i that lie within the file. */
static uint64_t strile_bytes_in_file(TIFF *tif, uint32_t i, size_t size)
{
    int err = 0;
    uint64_t off = TIFFGetStrileOffsetWithErr(tif, i, &err);
    uint64_t n = err ? 0 : TIFFGetStrileByteCountWithErr(tif, i, &err);
    if (err || off >= size)
        return 0;
    return n < size - off ? n : size - off;
}

/* Checks the current page's strips or tiles against its size: their count,
 * and that their bytes within the file can decode to the pixels the page
 * declares and to a whole strip or tile (so that a small file cannot make us
 * allocate much); sets p->unit_bytes. */
static convolve_status check_page_data(convolve_context *ctx, TIFF *tif, const tiff_io *s,
                                       size_t page, tiff_page *p)
{
    const size_t esize = convolve_dtype_size(p->dtype);
    const size_t pixel = esize * p->channels, row = (size_t)p->width * pixel;
    const size_t planes = p->planar ? p->channels : 1;
    const size_t across = (p->width + (size_t)p->tile_w - 1) / p->tile_w;
    const size_t down = (p->height + (size_t)p->tile_h - 1) / p->tile_h;
    const uint32_t count = p->tiled ? TIFFNumberOfTiles(tif) : TIFFNumberOfStrips(tif);
    size_t want;
    if (!cvi_mul_size(across * down, planes, &want) || count != want)
        return page_error(ctx, s, page, "%lu %s where its size needs %zu", (unsigned long)count,
                          p->tiled ? "tiles" : "strips", want);
    const size_t unit_pixel = p->planar ? esize : pixel;
    if (!cvi_mul_size((size_t)p->tile_w * p->tile_h, unit_pixel, &p->unit_bytes) ||
        p->unit_bytes > ((size_t)1 << 40))
        return page_error(ctx, s, page, "a %lux%lu %s is too large", (unsigned long)p->tile_w,
                          (unsigned long)p->tile_h, p->tiled ? "tile" : "strip");
    uint64_t in_file = 0, largest = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t n = strile_bytes_in_file(tif, i, s->size);
        in_file += n;
        if (n > largest)
            largest = n;
    }
    const size_t ratio = max_expansion(p->compression);
    const size_t page_bytes = row * p->height;
    if (page_bytes / ratio > in_file || p->unit_bytes / ratio > largest)
        return page_error(ctx, s, page,
                          "%llu bytes of image data cannot hold %lux%lu pixels of "
                          "%zu %s channel%s (truncated?)",
                          (unsigned long long)in_file, (unsigned long)p->width,
                          (unsigned long)p->height, p->channels, convolve_dtype_name(p->dtype),
                          p->channels == 1 ? "" : "s");
    return CONVOLVE_OK;
}

/* Decodes the current page (checked by check_page_data) into dst (height *
 * width * channels samples, chunky). scratch is a buffer of *scratch_size
 * bytes, grown as needed. A strip or tile that decodes short, or with a
 * warning, fails the page; dst and scratch are zeroed first, so that no
 * byte of the result can come from uninitialised memory whatever a codec
 * does. */
static convolve_status decode_page(convolve_context *ctx, TIFF *tif, tiff_io *s, size_t page,
                                   const tiff_page *p, unsigned char *dst, unsigned char **scratch,
                                   size_t *scratch_size)
{
    const size_t esize = convolve_dtype_size(p->dtype);
    const size_t pixel = esize * p->channels, row = (size_t)p->width * pixel;
    const size_t across = (p->width + (size_t)p->tile_w - 1) / p->tile_w;
    const size_t down = (p->height + (size_t)p->tile_h - 1) / p->tile_h;
    const size_t unit_pixel = p->planar ? esize : pixel, unit_bytes = p->unit_bytes;
    const uint32_t count = p->tiled ? TIFFNumberOfTiles(tif) : TIFFNumberOfStrips(tif);
    const int direct = !p->tiled && !p->planar; /* strips decode in place */
    if (!direct && *scratch_size < unit_bytes) {
        unsigned char *q = realloc(*scratch, unit_bytes);
        if (!q)
            return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "TIFF: out of memory");
        memset(q, 0, unit_bytes); /* a codec that falls short leaves zeros, never garbage */
        *scratch = q;
        *scratch_size = unit_bytes;
    }
    memset(dst, 0, p->height * row);

    for (uint32_t i = 0; i < count; i++) {
        const size_t plane = i / (across * down), k = i % (across * down);
        const size_t x0 = (k % across) * p->tile_w, y0 = (k / across) * p->tile_h;
        const size_t rows = p->height - y0 < p->tile_h ? p->height - y0 : p->tile_h;
        const size_t cols = p->width - x0 < p->tile_w ? p->width - x0 : p->tile_w;
        tmsize_t expect, got;
        s->decoding = 1;
        if (p->tiled) {
            expect = (tmsize_t)unit_bytes;
            got = TIFFReadEncodedTile(tif, i, *scratch, expect);
        } else {
            expect = (tmsize_t)(rows * (size_t)p->width * unit_pixel);
            got = TIFFReadEncodedStrip(tif, i, direct ? dst + y0 * row : *scratch, expect);
        }
        s->decoding = 0;
        if (got != expect || s->msg[0] || s->warning[0])
            return page_error(ctx, s, page, "%s %lu: %s", p->tiled ? "tile" : "strip",
                              (unsigned long)i,
                              s->msg[0]       ? s->msg
                              : s->warning[0] ? s->warning
                                              : "decoded to fewer bytes than its size needs");
        if (direct)
            continue;
        const size_t src_row = (size_t)p->tile_w * unit_pixel;
        for (size_t y = 0; y < rows; y++) {
            const unsigned char *src = *scratch + y * src_row;
            unsigned char *out = dst + (y0 + y) * row + x0 * pixel;
            if (!p->planar) {
                memcpy(out, src, cols * pixel);
                continue;
            }
            out += plane * esize;
            for (size_t x = 0; x < cols; x++)
                memcpy(out + x * pixel, src + x * esize, esize);
        }
    }
    return CONVOLVE_OK;
}

static int same_kind(const tiff_page *a, const tiff_page *b)
{
    return a->width == b->width && a->height == b->height && a->dtype == b->dtype &&
           a->channels == b->channels;
}

/* The pages read so far, decoded one after another into volume. */
typedef struct {
    unsigned char *volume, *scratch;
    size_t pages, cap, scratch_size;
    size_t page_bytes; /* bytes of one decoded page */
    uint64_t backed;   /* sum over pages of bytes / expansion: must fit in the file */
    tiff_page first;
} tiff_stack;

/* Room in k->volume for one more page (doubling). */
static convolve_status grow_stack(convolve_context *ctx, tiff_stack *k)
{
    if (k->pages < k->cap)
        return CONVOLVE_OK;
    size_t ncap = k->cap ? k->cap * 2 : 1, nbytes;
    if (!cvi_mul_size(ncap, k->page_bytes, &nbytes) || nbytes > (size_t)PTRDIFF_MAX)
        return cvi_error(ctx, CONVOLVE_ERROR_SIZE_OVERFLOW, "TIFF stack: byte count overflows");
    unsigned char *q = realloc(k->volume, nbytes);
    if (!q)
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY,
                         "TIFF stack: out of memory for %zu "
                         "bytes",
                         nbytes);
    k->volume = q;
    k->cap = ncap;
    return CONVOLVE_OK;
}

/* Reads the current directory, a full-resolution page, as the stack's next
 * page: described, compared with the first, checked against the file's size
 * (size bytes), decoded. */
static convolve_status read_page(convolve_context *ctx, TIFF *tif, tiff_io *s, size_t size,
                                 tiff_stack *k)
{
    convolve_status st;
    tiff_page p;
    if (s->warning[0])
        return page_error(ctx, s, k->pages, "%s", s->warning);
    if ((st = describe_page(ctx, tif, s, k->pages, &p)) != CONVOLVE_OK)
        return st;
    if (k->pages == 0) {
        k->first = p;
        k->page_bytes = (size_t)p.width * p.height * p.channels *
                        convolve_dtype_size(p.dtype); /* checked by describe_page */
    } else if (!same_kind(&p, &k->first)) {
        return page_error(ctx, s, k->pages,
                          "%lux%lu %s %s, but page 1 is %lux%lu %s %s: the "
                          "pages of a stack must agree in size, sample type and channels",
                          (unsigned long)p.width, (unsigned long)p.height,
                          channels_name(p.channels), convolve_dtype_name(p.dtype),
                          (unsigned long)k->first.width, (unsigned long)k->first.height,
                          channels_name(k->first.channels), convolve_dtype_name(k->first.dtype));
    }
    if ((st = check_page_data(ctx, tif, s, k->pages, &p)) != CONVOLVE_OK ||
        (st = cvio_check_pixel_limit(ctx, k->pages ? "TIFF stack" : "TIFF image", p.width, p.height,
                                     k->pages + 1)) != CONVOLVE_OK)
        return st;
    k->backed += k->page_bytes / max_expansion(p.compression);
    if (k->backed > size) /* pages that share their image data */
        return page_error(ctx, s, k->pages,
                          "the file (%zu bytes) is too small for %zu pages "
                          "of %lux%lu pixels (image data shared between pages?)",
                          size, k->pages + 1, (unsigned long)p.width, (unsigned long)p.height);
    if ((st = grow_stack(ctx, k)) != CONVOLVE_OK)
        return st;
    st = decode_page(ctx, tif, s, k->pages, &p, k->volume + k->pages * k->page_bytes, &k->scratch,
                     &k->scratch_size);
    if (st == CONVOLVE_OK)
        k->pages++;
    return st;
}

/* The array of the stack's pages (2-D for one page, 3-D for several); takes
 * k->volume. */
static convolve_status stack_array(convolve_context *ctx, tiff_stack *k, convolve_array **array)
{
    size_t shape3[3] = {k->pages, k->first.height, k->first.width};
    int ndim = k->pages > 1 ? 3 : 2;
    convolve_array *a = calloc(1, sizeof *a);
    convolve_status st = a ? convolve_layout_init(&a->layout, k->first.dtype, ndim,
                                                  shape3 + (3 - ndim), k->first.channels)
                           : cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "TIFF: out of memory");
    if (st != CONVOLVE_OK) {
        if (a)
            st = cvi_error(ctx, CONVOLVE_ERROR_SIZE_OVERFLOW, "TIFF stack: too large");
        convolve_array_free(a);
        return st;
    }
    a->bytes = k->pages * k->page_bytes;
    a->data = k->pages < k->cap ? realloc(k->volume, a->bytes) : k->volume;
    if (!a->data)
        a->data = k->volume; /* shrinking failed: keep the larger block */
    k->volume = NULL;
    *array = a;
    return CONVOLVE_OK;
}

static int tiff_signature(const unsigned char *data, size_t size)
{
    return size >= 8 &&
           ((data[0] == 'I' && data[1] == 'I' && (data[2] == 42 || data[2] == 43) &&
             data[3] == 0) ||
            (data[0] == 'M' && data[1] == 'M' && data[2] == 0 && (data[3] == 42 || data[3] == 43)));
}

convolve_status cvio_read_tiff(convolve_context *ctx, const unsigned char *data, size_t size,
                               convolve_array **array)
{
    *array = NULL;
    if (!tiff_signature(data, size))
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "not a TIFF file (bad signature)");
    tiff_io s;
    memset(&s, 0, sizeof s);
    s.data = data;
    s.size = size;
    tmsize_t max_alloc = size > (size_t)(INT64_MAX / 4) ? 0 : (tmsize_t)size + TIFF_MAX_EXTRA_ALLOC;
    TIFF *tif = open_tiff(&s, "r", max_alloc);
    if (!tif && !s.msg[0]) {
        /* libtiff fails silently on a first-directory offset of 0 (its
         * allocations at open are small: out of memory is not the likely
         * cause) */
        const size_t at = data[2] == 43 || data[3] == 43 ? 8 : 4, len = at; /* BigTIFF: 8 */
        int zero = size >= at + len;
        for (size_t i = at; zero && i < at + len; i++)
            zero = data[i] == 0;
        if (zero)
            return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                             "malformed TIFF: the header points at no image directory "
                             "(offset 0)");
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                         "malformed TIFF: libtiff cannot open it (no reason given)");
    }
    if (!tif)
        return cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "malformed TIFF: %s", s.msg);

    convolve_status st = CONVOLVE_OK;
    tiff_stack k;
    memset(&k, 0, sizeof k);
    s.multi = !TIFFLastDirectory(tif);
    for (size_t dir = 0;; dir++) {
        uint32_t subfile = 0;
        TIFFGetFieldDefaulted(tif, TIFFTAG_SUBFILETYPE, &subfile);
        if (!(subfile & (FILETYPE_REDUCEDIMAGE | FILETYPE_MASK)) &&
            (st = read_page(ctx, tif, &s, size, &k)) != CONVOLVE_OK)
            break;
        if (TIFFLastDirectory(tif))
            break;
        if (!TIFFReadDirectory(tif)) {
            st = page_error(ctx, &s, NO_PAGE, "directory %zu cannot be read: %s", dir + 2,
                            s.msg[0]       ? s.msg
                            : s.warning[0] ? s.warning
                                           : "(no reason given)");
            break;
        }
        if (s.msg[0]) {
            st = page_error(ctx, &s, NO_PAGE, "directory %zu: %s", dir + 2, s.msg);
            break;
        }
    }
    TIFFClose(tif);
    free(k.scratch);
    if (st == CONVOLVE_OK && k.pages == 0)
        st = page_error(ctx, &s, NO_PAGE, "no full-resolution page (only reduced-resolution ones)");
    if (st == CONVOLVE_OK && s.msg[0])
        st = cvi_error(ctx, CONVOLVE_ERROR_FORMAT, "malformed TIFF: %s", s.msg);
    if (st == CONVOLVE_OK)
        st = stack_array(ctx, &k, array);
    free(k.volume);
    return st;
}

/* ---- write ------------------------------------------------------------------ */

/* Writes the pages; 0 on success, else -1 with s->msg set (or empty when
 * out of memory). */
static int encode(TIFF *tif, tiff_io *s, const convolve_array *a, unsigned char *strip)
{
    const convolve_layout *L = &a->layout;
    const size_t pages = L->ndim == 3 ? L->shape[0] : 1;
    const uint32_t h = (uint32_t)L->shape[L->ndim - 2], w = (uint32_t)L->shape[L->ndim - 1];
    const size_t esize = convolve_dtype_size(L->dtype), row = (size_t)w * L->channels * esize;
    const size_t page_bytes = row * h;
    size_t rps = TIFF_WRITE_STRIP_BYTES / row;
    rps = rps < 1 ? 1 : rps > h ? h : rps;
    const int is_float = L->dtype == CONVOLVE_FLOAT32 || L->dtype == CONVOLVE_FLOAT64;
    uint16_t alpha = EXTRASAMPLE_UNASSALPHA;
    char software[64];
    snprintf(software, sizeof software, "convolve %s", convolve_version_string());
    for (size_t pg = 0; pg < pages; pg++) {
        int ok = TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, w) &&
                 TIFFSetField(tif, TIFFTAG_IMAGELENGTH, h) &&
                 TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, (uint16_t)(esize * 8)) &&
                 TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, (uint16_t)L->channels) &&
                 TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT,
                              is_float ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT) &&
                 TIFFSetField(tif, TIFFTAG_PHOTOMETRIC,
                              L->channels >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK) &&
                 TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG) &&
                 TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_NONE) &&
                 TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, (uint32_t)rps) &&
                 TIFFSetField(tif, TIFFTAG_ORIENTATION, ORIENTATION_TOPLEFT) &&
                 TIFFSetField(tif, TIFFTAG_SOFTWARE, software);
        if (ok && (L->channels == 2 || L->channels == 4))
            ok = TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, (uint16_t)1, &alpha);
        if (ok && pages > 1) {
            ok = TIFFSetField(tif, TIFFTAG_SUBFILETYPE, (uint32_t)FILETYPE_PAGE);
            if (ok && pages <= 65535)
                ok = TIFFSetField(tif, TIFFTAG_PAGENUMBER, (uint16_t)pg, (uint16_t)pages);
        }
        if (!ok)
            return -1;
        const unsigned char *src = (const unsigned char *)a->data + pg * page_bytes;
        for (size_t y = 0, i = 0; y < h; y += rps, i++) {
            size_t n = (h - y < rps ? h - y : rps) * row;
            memcpy(strip, src + y * row, n); /* libtiff may change what it is given */
            if (TIFFWriteEncodedStrip(tif, (uint32_t)i, strip, (tmsize_t)n) != (tmsize_t)n)
                return -1;
        }
        if (!TIFFWriteDirectory(tif))
            return -1;
    }
    return s->msg[0] ? -1 : 0;
}

convolve_status cvio_write_tiff(convolve_context *ctx, const convolve_array *array, cvi_buf *out)
{
    const convolve_layout *L = &array->layout; /* one TIFF holds (format.c) */
    const size_t esize = convolve_dtype_size(L->dtype);
    const size_t row = L->shape[L->ndim - 1] * L->channels * esize;
    size_t rps = TIFF_WRITE_STRIP_BYTES / row;
    rps = rps < 1 ? 1 : rps > L->shape[L->ndim - 2] ? L->shape[L->ndim - 2] : rps;
    unsigned char *strip = malloc(rps * row);
    if (!strip)
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "TIFF: out of memory encoding");
    tiff_io s;
    memset(&s, 0, sizeof s);
    s.out = out;
    s.base = out->size;
    /* BigTIFF past 4 GiB less room for the directories */
    const int big = array->bytes > (size_t)UINT32_MAX - ((size_t)64 << 20);
    TIFF *tif = open_tiff(&s, big ? "w8" : "w", 0);
    int r = tif ? encode(tif, &s, array, strip) : -1;
    if (tif)
        TIFFClose(tif); /* writes what is pending */
    free(strip);
    if (r == 0 && s.msg[0])
        r = -1;
    if (r != 0) {
        out->size = s.base; /* drop what was written */
        if (!s.msg[0] || strstr(s.msg, "emory"))
            return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "TIFF: out of memory encoding");
        return cvi_error(ctx, CONVOLVE_ERROR_INTERNAL, "TIFF encoding failed: %s", s.msg);
    }
    return CONVOLVE_OK;
}

#else /* !CONVOLVE_HAVE_TIFF */

convolve_status cvio_read_tiff(convolve_context *ctx, const unsigned char *data, size_t size,
                               convolve_array **array)
{
    (void)data, (void)size;
    *array = NULL;
    return cvi_error(ctx, CONVOLVE_ERROR_FORMAT,
                     "cannot read TIFF: this libconvolve was built without TIFF (libtiff 4.5 or "
                     "later was not found when it was configured)");
}

convolve_status cvio_write_tiff(convolve_context *ctx, const convolve_array *array, cvi_buf *out)
{
    (void)array, (void)out;
    return cvi_error(ctx, CONVOLVE_ERROR_UNSUPPORTED,
                     "cannot write TIFF: this libconvolve was built without TIFF (libtiff 4.5 "
                     "or later was not found when it was configured)");
}

#endif
