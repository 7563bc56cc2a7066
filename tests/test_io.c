/*
 * test_io.c - host arrays and files: round trips through every format, dtype
 * and channel count; TIFFs that libtiff writes in every layout the reader
 * takes (built with libtiff); hand-made malformed inputs for each reader (bad magic,
 * truncation, bad headers, unsupported variants, huge dimensions), each of
 * which must fail with the right status and a message; element conversion;
 * and atomic saves (a failed save leaves the old file and no temporary file).
 * Fixtures are made here, in a temporary directory, not committed.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <jpeglib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#ifdef CONVOLVE_HAVE_TIFF
#include <tiffio.h>
#endif

static convolve_context *ctx;
static char tmpdir[256];

/* ---- helpers ------------------------------------------------------------- */

static const char *tpath(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static void write_bytes(const char *path, const void *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "cannot create %s", path);
    if (!f)
        return;
    CHECK(fwrite(d, 1, n, f) == n, "short write %s", path);
    fclose(f);
}

/* Reads a file into a malloc'd buffer; NULL if missing. */
static unsigned char *read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    unsigned char *b = malloc(cap);
    size_t r;
    while ((r = fread(b + len, 1, cap - len, f)) > 0) {
        len += r;
        if (len == cap)
            b = realloc(b, cap *= 2);
    }
    fclose(f);
    *n = len;
    return b;
}

static int contains(const unsigned char *d, size_t n, const char *s)
{
    size_t m = strlen(s);
    for (size_t i = 0; i + m <= n; i++)
        if (memcmp(d + i, s, m) == 0)
            return 1;
    return 0;
}

static int file_equals(const char *path, const void *d, size_t n)
{
    size_t m;
    unsigned char *b = read_bytes(path, &m);
    int eq = b && m == n && memcmp(b, d, n) == 0;
    free(b);
    return eq;
}

/* Number of entries in tmpdir whose names start with '.' (temporary files). */
static int hidden_files(void)
{
    DIR *d = opendir(tmpdir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    if (d)
        closedir(d);
    return n;
}

static convolve_array *make_array(convolve_dtype t, int ndim, const size_t *shape, size_t ch)
{
    convolve_array *a = NULL;
    CHECK_OK(ctx, convolve_array_create(ctx, &a, t, ndim, shape, ch));
    if (a)
        h_fill_typed(t, convolve_array_data(a), convolve_layout_count(convolve_array_layout(a)),
                     100.0);
    return a;
}

static int same_layout(const convolve_layout *a, const convolve_layout *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->channels != b->channels)
        return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i])
            return 0;
    return 1;
}

/* Loads bytes from memory (format f) and expects status want. */
static convolve_status load_mem(const void *d, size_t n, convolve_format f, convolve_array **out)
{
    convolve_array *a = NULL;
    convolve_status st = convolve_array_load_memory(ctx, &a, d, n, f);
    if (out)
        *out = a;
    else
        convolve_array_free(a);
    return st;
}

#define EXPECT_MEM(data, size, fmt, want, what)                                           \
    do {                                                                                  \
        convolve_status st_ = load_mem(data, size, fmt, NULL);                            \
        CHECK(st_ == (want), "%s: got %s (%s), want %s", what, convolve_status_name(st_), \
              convolve_last_error(ctx), convolve_status_name(want));                      \
        if (st_ != CONVOLVE_OK)                                                           \
            CHECK(convolve_last_error(ctx)[0] != '\0', "%s: no message", what);           \
    } while (0)

/* The message of the last failure contains s. */
#define EXPECT_MSG(s)                                                             \
    CHECK(strstr(convolve_last_error(ctx), s) != NULL, "message '%s' lacks '%s'", \
          convolve_last_error(ctx), s)

/* ---- arrays ------------------------------------------------------------------ */

static void arrays(void)
{
    size_t shape[3] = {2, 3, 4};
    convolve_array *a = NULL;
    CHECK_OK(ctx, convolve_array_create(ctx, &a, CONVOLVE_UINT16, 3, shape, 2));
    const convolve_layout *L = convolve_array_layout(a);
    CHECK(L->ndim == 3 && L->channels == 2 && L->strides[2] == 4 && L->strides[0] == 48, "layout");
    CHECK(convolve_array_bytes(a) == 96, "bytes %zu", convolve_array_bytes(a));
    const unsigned char *p = convolve_array_const_data(a);
    int zero = 1;
    for (size_t i = 0; i < 96; i++)
        zero &= p[i] == 0;
    CHECK(zero, "not zero-filled");
    convolve_array_free(a);
    convolve_array_free(NULL);
    CHECK(convolve_array_layout(NULL) == NULL && convolve_array_bytes(NULL) == 0, "NULL array");

    CHECK_STATUS(ctx, convolve_array_create(ctx, NULL, CONVOLVE_UINT8, 1, shape, 1),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_array_create(ctx, &a, (convolve_dtype)9, 1, shape, 1),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_array_create(ctx, &a, CONVOLVE_UINT8, 4, shape, 1),
                 CONVOLVE_ERROR_BAD_LAYOUT);
    CHECK_STATUS(ctx, convolve_array_create(ctx, &a, CONVOLVE_UINT8, 2, shape, 0),
                 CONVOLVE_ERROR_BAD_LAYOUT);
    size_t zero_shape[2] = {3, 0}, huge[3] = {SIZE_MAX / 2, 4, 4};
    CHECK_STATUS(ctx, convolve_array_create(ctx, &a, CONVOLVE_UINT8, 2, zero_shape, 1),
                 CONVOLVE_ERROR_BAD_LAYOUT);
    CHECK_STATUS(ctx, convolve_array_create(ctx, &a, CONVOLVE_FLOAT64, 3, huge, 1),
                 CONVOLVE_ERROR_SIZE_OVERFLOW);
    CHECK(a == NULL, "array set on failure");

    CHECK(convolve_format_from_path("a/b.NPY") == CONVOLVE_FORMAT_NPY, "npy ext");
    CHECK(convolve_format_from_path("x.jpeg") == CONVOLVE_FORMAT_JPEG, "jpeg ext");
    CHECK(convolve_format_from_path("x.JPG") == CONVOLVE_FORMAT_JPEG, "jpg ext");
    CHECK(convolve_format_from_path("x.pgm") == CONVOLVE_FORMAT_PNM, "pgm ext");
    CHECK(convolve_format_from_path("x.ppm") == CONVOLVE_FORMAT_PNM, "ppm ext");
    CHECK(convolve_format_from_path("x.pnm") == CONVOLVE_FORMAT_PNM, "pnm ext");
    CHECK(convolve_format_from_path("x.txt") == CONVOLVE_FORMAT_TEXT, "txt ext");
    CHECK(convolve_format_from_path("x.png") == CONVOLVE_FORMAT_PNG, "png ext");
    CHECK(convolve_format_from_path("x.tif") == CONVOLVE_FORMAT_TIFF, "tif ext");
    CHECK(convolve_format_from_path("a/x.TIFF") == CONVOLVE_FORMAT_TIFF, "tiff ext");
    CHECK(convolve_format_from_path("x.tf") == CONVOLVE_FORMAT_AUTO, "unknown ext");
    CHECK(strcmp(convolve_format_name(CONVOLVE_FORMAT_TIFF), "tiff") == 0 &&
              convolve_format_name((convolve_format)7) == NULL,
          "tiff name");
    CHECK(convolve_format_from_path("dir.png/x") == CONVOLVE_FORMAT_AUTO, "dir ext");
    CHECK(convolve_format_from_path(".png") == CONVOLVE_FORMAT_AUTO, "hidden file");
    CHECK(convolve_format_from_path(NULL) == CONVOLVE_FORMAT_AUTO, "NULL path");
    /* every extension listed names its format; each format's are among all */
    const char *want = "npy png jpg jpeg pgm ppm pnm tif tiff txt";
    char got[128] = "";
    for (size_t i = 0; convolve_format_extension(CONVOLVE_FORMAT_AUTO, i); i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "",
                 convolve_format_extension(CONVOLVE_FORMAT_AUTO, i));
    CHECK(strcmp(got, want) == 0, "extensions: '%s', expected '%s'", got, want);
    for (int f = CONVOLVE_FORMAT_NPY; f <= CONVOLVE_FORMAT_TIFF; f++) {
        size_t n = 0;
        for (const char *e; (e = convolve_format_extension((convolve_format)f, n)) != NULL; n++) {
            char path[32];
            snprintf(path, sizeof path, "x.%s", e);
            CHECK(convolve_format_from_path(path) == (convolve_format)f, "%s: format %d", path, f);
        }
        CHECK(n > 0, "format %s has no extension", convolve_format_name((convolve_format)f));
    }
    CHECK(convolve_format_extension((convolve_format)7, 0) == NULL, "unknown format's extension");
}

static void conversion(void)
{
    size_t n = 12;
    convolve_array *a = NULL, *b = NULL;
    CHECK_OK(ctx, convolve_array_create(ctx, &a, CONVOLVE_FLOAT64, 1, &n, 1));
    const double v[12] = {0.5,   1.5,   2.5, -0.5,      -3,      254.5,
                          255.5, 1e300, NAN, -INFINITY, 3.49999, 65535.5};
    const uint8_t want8[12] = {0, 2, 2, 0, 0, 254, 255, 255, 0, 0, 3, 255};
    const uint16_t want16[12] = {0, 2, 2, 0, 0, 254, 256, 65535, 0, 0, 3, 65535};
    memcpy(convolve_array_data(a), v, sizeof v);
    CHECK_OK(ctx, convolve_array_convert(ctx, a, CONVOLVE_UINT8, &b));
    for (size_t i = 0; b && i < n; i++)
        CHECK(((uint8_t *)convolve_array_data(b))[i] == want8[i], "u8[%zu] = %d, want %d", i,
              ((uint8_t *)convolve_array_data(b))[i], want8[i]);
    convolve_array_free(b);
    CHECK_OK(ctx, convolve_array_convert(ctx, a, CONVOLVE_UINT16, &b));
    for (size_t i = 0; b && i < n; i++)
        CHECK(((uint16_t *)convolve_array_data(b))[i] == want16[i], "u16[%zu] = %d, want %d", i,
              ((uint16_t *)convolve_array_data(b))[i], want16[i]);
    /* back to float32 exactly */
    convolve_array *c = NULL;
    CHECK_OK(ctx, convolve_array_convert(ctx, b, CONVOLVE_FLOAT32, &c));
    for (size_t i = 0; c && i < n; i++)
        CHECK(((float *)convolve_array_data(c))[i] == (float)want16[i], "f32[%zu]", i);
    convolve_array_free(c);
    /* same type: a copy */
    CHECK_OK(ctx, convolve_array_convert(ctx, b, CONVOLVE_UINT16, &c));
    CHECK(c && c != b && memcmp(convolve_array_data(c), convolve_array_data(b), 24) == 0, "copy");
    convolve_array_free(c);
    convolve_array_free(b);
    CHECK_STATUS(ctx, convolve_array_convert(ctx, NULL, CONVOLVE_UINT8, &b),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_array_convert(ctx, a, (convolve_dtype)7, &b),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    convolve_array_free(a);
}

/* ---- round trips ------------------------------------------------------------- */

/* Saves a, loads it back (format f for both), and returns the loaded array. */
static convolve_array *round_trip(const convolve_array *a, const char *name, convolve_format f,
                                  int quality)
{
    const char *path = tpath(name);
    convolve_status st = convolve_array_save(ctx, a, path, f, quality);
    CHECK(st == CONVOLVE_OK, "save %s: %s", name, convolve_last_error(ctx));
    if (st != CONVOLVE_OK)
        return NULL;
    convolve_array *b = NULL;
    st = convolve_array_load(ctx, &b, path, f);
    CHECK(st == CONVOLVE_OK, "load %s: %s", name, convolve_last_error(ctx));
    return b;
}

static void expect_identical(const convolve_array *a, const convolve_array *b, const char *what)
{
    CHECK(b && same_layout(convolve_array_layout(a), convolve_array_layout(b)),
          "%s: layout differs", what);
    if (b && same_layout(convolve_array_layout(a), convolve_array_layout(b)))
        CHECK(memcmp(convolve_array_const_data(a), convolve_array_const_data(b),
                     convolve_array_bytes(a)) == 0,
              "%s: data differs", what);
}

static void round_trips(void)
{
    const convolve_dtype types[4] = {CONVOLVE_FLOAT32, CONVOLVE_FLOAT64, CONVOLVE_UINT8,
                                     CONVOLVE_UINT16};
    const size_t shapes[3][3] = {{7}, {5, 6}, {3, 4, 5}};
    char name[64];

    /* .npy: every dtype, dims 1-3 */
    for (int t = 0; t < 4; t++)
        for (int nd = 1; nd <= 3; nd++) {
            convolve_array *a = make_array(types[t], nd, shapes[nd - 1], 1);
            snprintf(name, sizeof name, "rt_%s_%d.npy", convolve_dtype_name(types[t]), nd);
            convolve_array *b = round_trip(a, name, CONVOLVE_FORMAT_AUTO, 0);
            expect_identical(a, b, name);
            convolve_array_free(b);
            /* the file is what numpy writes: a 64-byte aligned header */
            size_t n;
            unsigned char *bytes = read_bytes(tpath(name), &n);
            CHECK(bytes && n == 128 + convolve_array_bytes(a) && bytes[6] == 1 &&
                      bytes[127] == '\n',
                  "%s: header layout", name);
            /* and it loads from memory with the format sniffed */
            if (bytes) {
                CHECK_OK(ctx, load_mem(bytes, n, CONVOLVE_FORMAT_AUTO, &b));
                expect_identical(a, b, "npy from memory");
                convolve_array_free(b);
            }
            free(bytes);
            convolve_array_free(a);
        }
    /* .npy with channels: a trailing axis */
    {
        convolve_array *a = make_array(CONVOLVE_UINT8, 2, (size_t[]){4, 5}, 3);
        convolve_array *b = round_trip(a, "rgb.npy", CONVOLVE_FORMAT_NPY, 0);
        const convolve_layout *L = b ? convolve_array_layout(b) : NULL;
        CHECK(L && L->ndim == 3 && L->shape[0] == 4 && L->shape[1] == 5 && L->shape[2] == 3 &&
                  L->channels == 1,
              "rgb.npy shape");
        if (L)
            CHECK(memcmp(convolve_array_data(b), convolve_array_data(a), 60) == 0, "rgb.npy data");
        convolve_array_free(b);
        size_t n;
        unsigned char *bytes = read_bytes(tpath("rgb.npy"), &n);
        CHECK(bytes && contains(bytes, n, "'shape': (4, 5, 3)"), "rgb.npy header");
        free(bytes);
        convolve_array_free(a);
        /* a 3-D array with channels saves as 4-D, which does not load */
        a = make_array(CONVOLVE_FLOAT32, 3, (size_t[]){2, 3, 4}, 2);
        CHECK_OK(ctx, convolve_array_save(ctx, a, tpath("v4.npy"), CONVOLVE_FORMAT_AUTO, 0));
        CHECK_STATUS(ctx, convolve_array_load(ctx, &b, tpath("v4.npy"), CONVOLVE_FORMAT_AUTO),
                     CONVOLVE_ERROR_FORMAT);
        EXPECT_MSG("4 dimensions");
        EXPECT_MSG("v4.npy");
        convolve_array_free(a);
    }

    /* PNG: uint8 and uint16, 1-4 channels, odd sizes */
    for (int t = 2; t < 4; t++)
        for (size_t ch = 1; ch <= 4; ch++) {
            convolve_array *a = make_array(types[t], 2, (size_t[]){9, 13}, ch);
            snprintf(name, sizeof name, "rt_%s_%zu.png", convolve_dtype_name(types[t]), ch);
            convolve_array *b = round_trip(a, name, CONVOLVE_FORMAT_AUTO, 0);
            expect_identical(a, b, name);
            convolve_array_free(b);
            convolve_array_free(a);
        }
    /* PNM: uint8 and uint16, 1 and 3 channels */
    for (int t = 2; t < 4; t++)
        for (size_t ch = 1; ch <= 3; ch += 2) {
            convolve_array *a = make_array(types[t], 2, (size_t[]){6, 11}, ch);
            snprintf(name, sizeof name, "rt_%s_%zu.%s", convolve_dtype_name(types[t]), ch,
                     ch == 1 ? "pgm" : "ppm");
            convolve_array *b = round_trip(a, name, CONVOLVE_FORMAT_AUTO, 0);
            expect_identical(a, b, name);
            convolve_array_free(b);
            convolve_array_free(a);
        }
    /* JPEG: lossy; a smooth picture comes back close */
    for (size_t ch = 1; ch <= 3; ch += 2) {
        size_t h = 24, w = 40;
        convolve_array *a = make_array(CONVOLVE_UINT8, 2, (size_t[]){h, w}, ch);
        uint8_t *p = convolve_array_data(a);
        for (size_t y = 0; y < h; y++)
            for (size_t x = 0; x < w; x++)
                for (size_t c = 0; c < ch; c++)
                    p[(y * w + x) * ch + c] = (uint8_t)(40 + 3 * x + 2 * y + 20 * c);
        snprintf(name, sizeof name, "rt_%zu.jpg", ch);
        convolve_array *b = round_trip(a, name, CONVOLVE_FORMAT_AUTO, 100);
        CHECK(b && same_layout(convolve_array_layout(a), convolve_array_layout(b)), "%s layout",
              name);
        if (b) {
            const uint8_t *q = convolve_array_data(b);
            int maxd = 0;
            for (size_t i = 0; i < h * w * ch; i++)
                maxd = abs(p[i] - q[i]) > maxd ? abs(p[i] - q[i]) : maxd;
            CHECK(maxd <= 4, "%s: max difference %d at quality 100", name, maxd);
        }
        convolve_array_free(b);
        /* the default quality (0 -> 95) also works, and is smaller than 100 */
        CHECK_OK(ctx, convolve_array_save(ctx, a, tpath("q95.jpg"), CONVOLVE_FORMAT_JPEG, 0));
        convolve_array_free(a);
    }
    /* TEXT: float64 and float32, 1-D and 2-D, exact */
    for (int t = 0; t < 2; t++)
        for (int nd = 1; nd <= 2; nd++) {
            convolve_array *a = make_array(types[t], nd, shapes[nd - 1], 1);
            if (nd == 2) /* extreme values too */
                ((double *)convolve_array_data(a))[0] = t ? 1e-300 : 0.0;
            snprintf(name, sizeof name, "rt_%s_%d.txt", convolve_dtype_name(types[t]), nd);
            convolve_array *b = round_trip(a, name, CONVOLVE_FORMAT_AUTO, 0);
            convolve_array *a64 = NULL;
            CHECK_OK(ctx, convolve_array_convert(ctx, a, CONVOLVE_FLOAT64, &a64));
            expect_identical(a64, b, name);
            convolve_array_free(a64);
            convolve_array_free(b);
            convolve_array_free(a);
        }
}

/* ---- hand-made files --------------------------------------------------------- */

/* A .npy file from a header dict (padded to 64 bytes) and raw data. */
static size_t make_npy(unsigned char *out, int major, const char *dict, const void *data, size_t n)
{
    size_t pre = major == 1 ? 10 : 12, hl = strlen(dict);
    size_t total = pre + hl + 1;
    size_t pad = (64 - total % 64) % 64;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (unsigned char)major;
    out[7] = 0;
    size_t hlen = hl + pad + 1;
    for (size_t k = 0; k < pre - 8; k++)
        out[8 + k] = (unsigned char)(hlen >> (8 * k));
    memcpy(out + pre, dict, hl);
    memset(out + pre + hl, ' ', pad);
    out[pre + hl + pad] = '\n';
    memcpy(out + pre + hlen, data, n);
    return pre + hlen + n;
}

/* The n bytes at data, written to a file: convolve_npy_inspect says what
 * convolve_array_load says of it (status and message), or, when the file
 * loads, describes it as loaded. */
static void expect_inspect_as_load(const unsigned char *data, size_t n, const char *what)
{
    const char *path = tpath("inspect_as_load.npy");
    write_bytes(path, data, n);
    convolve_array *a = NULL;
    convolve_status want = convolve_array_load(ctx, &a, path, CONVOLVE_FORMAT_NPY);
    char want_msg[1024];
    snprintf(want_msg, sizeof want_msg, "%s", convolve_last_error(ctx));
    convolve_npy_info info;
    convolve_status got = convolve_npy_inspect(ctx, path, &info);
    CHECK(got == want, "%s: inspect %s, load %s", what, convolve_status_name(got),
          convolve_status_name(want));
    if (got == want && want != CONVOLVE_OK)
        CHECK(!strcmp(convolve_last_error(ctx), want_msg), "%s: inspect says '%s', load '%s'", what,
              convolve_last_error(ctx), want_msg);
    if (got == want && want == CONVOLVE_OK)
        CHECK(same_layout(&info.layout, convolve_array_layout(a)), "%s: layout", what);
    convolve_array_free(a);
}

static void npy_inputs(void)
{
    unsigned char buf[4096];
    const double d6[6] = {1, 2, 3, 4, 5, 6};
    size_t n;
    convolve_array *a;

    /* good: versions 2.0 and 3.0, '=' and '<' orders, double quotes, no trailing comma */
    n = make_npy(buf, 2, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", d6, 48);
    CHECK_OK(ctx, load_mem(buf, n, CONVOLVE_FORMAT_NPY, &a));
    CHECK(a && convolve_array_layout(a)->ndim == 2 && convolve_array_layout(a)->shape[1] == 3 &&
              ((double *)convolve_array_data(a))[5] == 6,
          "v2.0");
    convolve_array_free(a);
    n = make_npy(buf, 3, "{\"shape\":(6,),\"descr\":\"=f8\",\"fortran_order\":False}", d6, 48);
    CHECK_OK(ctx, load_mem(buf, n, CONVOLVE_FORMAT_AUTO, &a));
    CHECK(a && convolve_array_layout(a)->ndim == 1 && convolve_array_layout(a)->shape[0] == 6,
          "v3.0");
    convolve_array_free(a);
    /* big-endian data is byte-swapped */
    {
        const double src[3] = {1.5, -2.25, 1e10};
        unsigned char be[24];
        for (int i = 0; i < 3; i++) {
            unsigned char le[8];
            memcpy(le, &src[i], 8);
            for (int b = 0; b < 8; b++)
                be[i * 8 + b] = le[7 - b];
        }
        n = make_npy(buf, 1, "{'descr': '>f8', 'fortran_order': False, 'shape': (3,), }", be, 24);
        CHECK_OK(ctx, load_mem(buf, n, CONVOLVE_FORMAT_NPY, &a));
        CHECK(a && ((double *)convolve_array_data(a))[1] == -2.25 &&
                  ((double *)convolve_array_data(a))[2] == 1e10,
              "big-endian f8");
        convolve_array_free(a);
        const unsigned char u2[4] = {0x01, 0x02, 0xFF, 0x00};
        n = make_npy(buf, 1, "{'descr': '>u2', 'fortran_order': False, 'shape': (2,), }", u2, 4);
        CHECK_OK(ctx, load_mem(buf, n, CONVOLVE_FORMAT_NPY, &a));
        CHECK(a && ((uint16_t *)convolve_array_data(a))[0] == 0x0102 &&
                  ((uint16_t *)convolve_array_data(a))[1] == 0xFF00,
              "big-endian u2");
        convolve_array_free(a);
        n = make_npy(buf, 1, "{'descr': '<u1', 'fortran_order': False, 'shape': (2, 2), }", u2, 4);
        CHECK_OK(ctx, load_mem(buf, n, CONVOLVE_FORMAT_NPY, &a));
        CHECK(a && convolve_array_layout(a)->dtype == CONVOLVE_UINT8, "<u1");
        convolve_array_free(a);
    }

    /* Fortran order: element (i, j, k) lies at i + d0 * (j + d1 * k); it loads
     * transposed into C order, with the same value at each index, in either
     * byte order */
    for (int big = 0; big <= 1; big++)
        for (int nd = 2; nd <= 3; nd++) {
            const size_t d0 = 3, d1 = 4, d2 = nd == 3 ? 5 : 1, count = d0 * d1 * d2;
            uint16_t f[60], want[60];
            for (size_t i = 0; i < d0; i++)
                for (size_t j = 0; j < d1; j++)
                    for (size_t k = 0; k < d2; k++) {
                        uint16_t v = (uint16_t)h_randint(0, 65535);
                        want[(i * d1 + j) * d2 + k] = v;
                        f[i + d0 * (j + d1 * k)] = big ? (uint16_t)(v >> 8 | v << 8)
                                                       : v; /* host is little-endian */
                    }
            char dict[128];
            snprintf(dict, sizeof dict,
                     "{'descr': '%cu2', 'fortran_order': True, 'shape': "
                     "(%zu, %zu%s), }",
                     big ? '>' : '<', d0, d1, nd == 3 ? ", 5" : "");
            n = make_npy(buf, 1, dict, f, count * 2);
            CHECK_OK(ctx, load_mem(buf, n, CONVOLVE_FORMAT_NPY, &a));
            const convolve_layout *L = a ? convolve_array_layout(a) : NULL;
            CHECK(L && L->ndim == nd && L->shape[0] == d0 && L->shape[1] == d1 &&
                      (nd == 2 || L->shape[2] == d2),
                  "Fortran %d-D shape", nd);
            if (L)
                CHECK(memcmp(convolve_array_data(a), want, count * 2) == 0,
                      "Fortran %d-D (%s-endian) values", nd, big ? "big" : "little");
            convolve_array_free(a);
        }
    /* a 1-D Fortran-order array is the same bytes */
    n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (6,), }", d6, 48);
    CHECK_OK(ctx, load_mem(buf, n, CONVOLVE_FORMAT_NPY, &a));
    CHECK(a && memcmp(convolve_array_data(a), d6, 48) == 0, "Fortran 1-D");
    convolve_array_free(a);

    struct {
        int major;
        const char *dict;
        size_t bytes;
        convolve_status want;
        const char *msg;
    } bad[] = {
        {1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", 40, CONVOLVE_ERROR_FORMAT,
         "truncated"},
        {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 8, CONVOLVE_ERROR_FORMAT,
         "0-dimensional"},
        {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1, 2, 3), }", 48,
         CONVOLVE_ERROR_FORMAT, "4 dimensions"},
        {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 3), }", 0, CONVOLVE_ERROR_FORMAT,
         "empty"},
        {1, "{'descr': '<i8', 'fortran_order': False, 'shape': (6,), }", 48, CONVOLVE_ERROR_FORMAT,
         "'<i8' is not supported"},
        {1, "{'descr': '|f4', 'fortran_order': False, 'shape': (6,), }", 24, CONVOLVE_ERROR_FORMAT,
         "not supported"},
        {1, "{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (6,), }", 48,
         CONVOLVE_ERROR_FORMAT, "structured"},
        {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", 40,
         CONVOLVE_ERROR_FORMAT, "truncated"},
        {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", 56,
         CONVOLVE_ERROR_FORMAT, "after"},
        {1, "{'descr': '<f8', 'fortran_order': False, }", 48, CONVOLVE_ERROR_FORMAT,
         "lacks the key 'shape'"},
        {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), 'x': 1}", 48,
         CONVOLVE_ERROR_FORMAT, "unexpected key 'x'"},
        {1, "{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (6,)}", 48,
         CONVOLVE_ERROR_FORMAT, "duplicate"},
        {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (6)}", 48, CONVOLVE_ERROR_FORMAT,
         "tuple"},
        {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), } x", 48,
         CONVOLVE_ERROR_FORMAT, "after its closing"},
        {1, "['descr', '<f8']", 48, CONVOLVE_ERROR_FORMAT, "not a dict"},
        {1, "{'descr': '<f8' 'fortran_order': False, 'shape': (6,)}", 48, CONVOLVE_ERROR_FORMAT,
         "malformed"},
        {1, "{'descr': '<f8', 'fortran_order': 0, 'shape': (6,)}", 48, CONVOLVE_ERROR_FORMAT,
         "True or False"},
        {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999999,)}", 48,
         CONVOLVE_ERROR_FORMAT, "overflows"},
        {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", 48,
         CONVOLVE_ERROR_SIZE_OVERFLOW, "overflows"},
        {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000,)}", 48,
         CONVOLVE_ERROR_FORMAT, "truncated"},
    };
    unsigned char zeros[64] = {0};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        n = make_npy(buf, bad[k].major, bad[k].dict, zeros, bad[k].bytes);
        char what[64];
        snprintf(what, sizeof what, "bad npy %zu", k);
        EXPECT_MEM(buf, n, CONVOLVE_FORMAT_NPY, bad[k].want, what);
        EXPECT_MSG(bad[k].msg);
        expect_inspect_as_load(buf, n, what);
    }
    /* preamble problems */
    n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", d6, 48);
    buf[1] = 'X';
    EXPECT_MEM(buf, n, CONVOLVE_FORMAT_NPY, CONVOLVE_ERROR_FORMAT, "bad magic");
    EXPECT_MSG("magic");
    buf[1] = 'N';
    buf[6] = 4;
    EXPECT_MEM(buf, n, CONVOLVE_FORMAT_NPY, CONVOLVE_ERROR_FORMAT, "bad version");
    EXPECT_MSG("version 4.0");
    buf[6] = 1;
    buf[8] = 0xFF, buf[9] = 0x7F;
    EXPECT_MEM(buf, n, CONVOLVE_FORMAT_NPY, CONVOLVE_ERROR_FORMAT, "header length");
    EXPECT_MSG("past the end");
    EXPECT_MEM(buf, 7, CONVOLVE_FORMAT_NPY, CONVOLVE_ERROR_FORMAT, "7 bytes");
    /* truncated at every length */
    n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", d6, 48);
    int all = 1;
    for (size_t cut = 0; cut < n; cut++) {
        all &= load_mem(buf, cut, CONVOLVE_FORMAT_NPY, NULL) == CONVOLVE_ERROR_FORMAT;
        char what[64];
        snprintf(what, sizeof what, "npy cut at %zu", cut);
        expect_inspect_as_load(buf, cut, what);
    }
    CHECK(all, "some truncated .npy loaded");
}

/* convolve_npy_inspect of good files (every type, 1-3 dimensions, the other
 * byte order, Fortran order) and its refusals; convolve_npy_header gives the
 * bytes convolve_array_save writes before the data. */
static void npy_inspect(void)
{
    const convolve_dtype types[4] = {CONVOLVE_FLOAT32, CONVOLVE_FLOAT64, CONVOLVE_UINT8,
                                     CONVOLVE_UINT16};
    for (int t = 0; t < 4; t++)
        for (int nd = 1; nd <= 3; nd++)
            for (size_t ch = 1; ch <= (nd < 3 ? 3u : 1u); ch += 2) {
                size_t shape[3] = {(size_t)h_randint(1, 9), (size_t)h_randint(1, 9),
                                   (size_t)h_randint(1, 9)};
                convolve_array *a = NULL;
                CHECK_OK(ctx, convolve_array_create(ctx, &a, types[t], nd, shape, ch));
                unsigned char *d = a ? convolve_array_data(a) : NULL;
                for (size_t i = 0; d && i < convolve_array_bytes(a); i++)
                    d[i] = (unsigned char)h_randint(1, 255);
                const char *path = tpath("inspect.npy");
                CHECK_OK(ctx, convolve_array_save(ctx, a, path, CONVOLVE_FORMAT_NPY, 0));
                size_t n = 0;
                unsigned char *bytes = read_bytes(path, &n);
                unsigned char header[CONVOLVE_NPY_HEADER_MAX + 1];
                size_t hlen = 0;
                CHECK_OK(ctx, convolve_npy_header(ctx, convolve_array_layout(a), header,
                                                  sizeof header, &hlen));
                CHECK(bytes && hlen % 64 == 0 && hlen <= CONVOLVE_NPY_HEADER_MAX &&
                          hlen + convolve_array_bytes(a) == n && memcmp(bytes, header, hlen) == 0,
                      "npy header %s %d-D %zu ch", convolve_dtype_name(types[t]), nd, ch);
                size_t short_len = 1;
                CHECK_STATUS(ctx,
                             convolve_npy_header(ctx, convolve_array_layout(a), header, hlen - 1,
                                                 &short_len),
                             CONVOLVE_ERROR_INVALID_ARGUMENT);
                CHECK(short_len == 0, "npy header: size set on failure");
                convolve_npy_info info;
                memset(&info, 0xAB, sizeof info);
                CHECK_OK(ctx, convolve_npy_inspect(ctx, path, &info));
                /* channels come back as a last axis, as convolve_array_load gives them */
                convolve_array *b = NULL;
                CHECK_OK(ctx, convolve_array_load(ctx, &b, path, CONVOLVE_FORMAT_NPY));
                CHECK(b && same_layout(&info.layout, convolve_array_layout(b)) &&
                          info.data_offset == hlen && !info.byte_swapped && !info.fortran_order &&
                          memcmp(bytes + info.data_offset, convolve_array_data(b),
                                 convolve_array_bytes(b)) == 0,
                      "npy inspect %s %d-D %zu ch", convolve_dtype_name(types[t]), nd, ch);
                convolve_array_free(b);
                free(bytes);
                convolve_array_free(a);
            }
    /* the other byte order, Fortran order: said, and left to the loader */
    unsigned char buf[512];
    const uint16_t u6[6] = {1, 2, 3, 4, 5, 6};
    const char *dicts[3] = {"{'descr': '>u2', 'fortran_order': False, 'shape': (6,), }",
                            "{'descr': '<u2', 'fortran_order': True, 'shape': (2, 3), }",
                            "{'descr': '<u2', 'fortran_order': True, 'shape': (6,), }"};
    for (int k = 0; k < 3; k++) {
        size_t n = make_npy(buf, 1, dicts[k], u6, 12);
        write_bytes(tpath("order.npy"), buf, n);
        convolve_npy_info info;
        CHECK_OK(ctx, convolve_npy_inspect(ctx, tpath("order.npy"), &info));
        CHECK(info.byte_swapped == (k == 0) && info.fortran_order == (k == 1) &&
                  info.data_offset + 12 == n && info.layout.dtype == CONVOLVE_UINT16,
              "npy inspect order %d", k);
    }
    /* what is not a .npy file */
    convolve_npy_info info;
    CHECK_STATUS(ctx, convolve_npy_inspect(ctx, tpath("no such.npy"), &info), CONVOLVE_ERROR_IO);
    EXPECT_MSG("no such.npy");
    CHECK_STATUS(ctx, convolve_npy_inspect(ctx, tmpdir, &info), CONVOLVE_ERROR_IO);
    EXPECT_MSG("directory");
    CHECK_STATUS(ctx, convolve_npy_inspect(ctx, "/dev/zero", &info), CONVOLVE_ERROR_IO);
    EXPECT_MSG("device");
    CHECK_STATUS(ctx, convolve_npy_inspect(ctx, NULL, &info), CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_npy_inspect(ctx, tpath("order.npy"), NULL),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    convolve_layout L;
    size_t shape[1] = {4}, hlen;
    CHECK_OK(ctx, convolve_layout_init(&L, CONVOLVE_FLOAT32, 1, shape, 1));
    CHECK_STATUS(ctx, convolve_npy_header(ctx, NULL, buf, sizeof buf, &hlen),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_npy_header(ctx, &L, NULL, 16, &hlen),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    L.ndim = 4;
    CHECK_STATUS(ctx, convolve_npy_header(ctx, &L, buf, sizeof buf, &hlen),
                 CONVOLVE_ERROR_BAD_LAYOUT);
    L.ndim = 1;
    L.dtype = (convolve_dtype)9;
    CHECK_STATUS(ctx, convolve_npy_header(ctx, &L, buf, sizeof buf, &hlen),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
}

/* A PNG chunk with its CRC. */
static size_t png_chunk(unsigned char *out, const char *type, const unsigned char *d, size_t n)
{
    out[0] = (unsigned char)(n >> 24), out[1] = (unsigned char)(n >> 16);
    out[2] = (unsigned char)(n >> 8), out[3] = (unsigned char)n;
    memcpy(out + 4, type, 4);
    if (n)
        memcpy(out + 8, d, n);
    uLong crc = crc32(0, out + 4, (uInt)(n + 4));
    out[8 + n] = (unsigned char)(crc >> 24), out[9 + n] = (unsigned char)(crc >> 16);
    out[10 + n] = (unsigned char)(crc >> 8), out[11 + n] = (unsigned char)crc;
    return n + 12;
}

static void png_inputs(void)
{
    /* a real PNG from the writer */
    convolve_array *a = make_array(CONVOLVE_UINT8, 2, (size_t[]){32, 32}, 3);
    CHECK_OK(ctx, convolve_array_save(ctx, a, tpath("src.png"), CONVOLVE_FORMAT_PNG, 0));
    convolve_array_free(a);
    size_t n;
    unsigned char *png = read_bytes(tpath("src.png"), &n);
    if (!png) {
        CHECK(0, "no src.png");
        return;
    }
    EXPECT_MEM(png, n, CONVOLVE_FORMAT_AUTO, CONVOLVE_OK, "good png");
    /* truncation anywhere fails: never a partial picture */
    int all = 1;
    for (size_t cut = 0; cut < n; cut += (cut < 64 ? 1 : 7))
        if (load_mem(png, cut, CONVOLVE_FORMAT_PNG, NULL) != CONVOLVE_ERROR_FORMAT) {
            all = 0;
            fprintf(stderr, "truncated PNG at %zu of %zu loaded\n", cut, n);
        }
    CHECK(all, "truncated PNG");
    load_mem(png, n / 2, CONVOLVE_FORMAT_PNG, NULL);
    EXPECT_MSG("malformed PNG");
    /* the truncated file, loaded from disk, names the file */
    write_bytes(tpath("cut.png"), png, n - 20);
    CHECK_STATUS(ctx, convolve_array_load(ctx, &a, tpath("cut.png"), CONVOLVE_FORMAT_AUTO),
                 CONVOLVE_ERROR_FORMAT);
    EXPECT_MSG("cut.png");
    /* a flipped byte in the image data: CRC error */
    png[n / 2] ^= 0x55;
    EXPECT_MEM(png, n, CONVOLVE_FORMAT_PNG, CONVOLVE_ERROR_FORMAT, "corrupt IDAT");
    png[n / 2] ^= 0x55;
    /* bad signature */
    png[1] = 'Q';
    EXPECT_MEM(png, n, CONVOLVE_FORMAT_PNG, CONVOLVE_ERROR_FORMAT, "png signature");
    EXPECT_MSG("signature");
    free(png);

    /* hand-made: huge dimensions (rejected before any allocation) */
    unsigned char f[256];
    size_t k = 0;
    memcpy(f, "\x89PNG\r\n\x1a\n", 8);
    k = 8;
    unsigned char ihdr[13] = {0, 0x0F, 0x42, 0x40, 0, 0x0F, 0x42, 0x40, 8, 2, 0, 0, 0};
    k += png_chunk(f + k, "IHDR", ihdr, 13); /* 1000000 x 1000000 RGB */
    unsigned char z[64];
    uLongf zn = sizeof z;
    unsigned char raw[4] = {0, 1, 2, 3};
    compress(z, &zn, raw, 4);
    k += png_chunk(f + k, "IDAT", z, zn);
    k += png_chunk(f + k, "IEND", NULL, 0);
    EXPECT_MEM(f, k, CONVOLVE_FORMAT_PNG, CONVOLVE_ERROR_FORMAT, "huge png");
    EXPECT_MSG("limit");
    /* found by fuzzing: 40000 x 40000 RGB within the limit, but 12 bytes of
     * image data (refused before allocating 4.8 GB) */
    k = 8;
    unsigned char ih40k[13] = {0, 0, 0x9C, 0x40, 0, 0, 0x9C, 0x40, 8, 2, 0, 0, 0};
    k += png_chunk(f + k, "IHDR", ih40k, 13);
    k += png_chunk(f + k, "IDAT", z, zn);
    k += png_chunk(f + k, "IEND", NULL, 0);
    EXPECT_MEM(f, k, CONVOLVE_FORMAT_PNG, CONVOLVE_ERROR_FORMAT, "png without its data");
    EXPECT_MSG("cannot hold");
    /* found by fuzzing: a chunk claiming 1 GiB past the end of the file
     * (libpng allocated that much before reading it) */
    k = 8;
    k += png_chunk(f + k, "IHDR", ih40k, 13);
    memcpy(f + k, "\x40\0\0\0tEXtab", 10);
    k += 10;
    EXPECT_MEM(f, k, CONVOLVE_FORMAT_PNG, CONVOLVE_ERROR_FORMAT, "png chunk past the end");
    EXPECT_MSG("past the end");
    /* hand-made: a 2x2 gray+alpha 16-bit image, and 2x1 palette 4-bit */
    k = 8;
    unsigned char ih2[13] = {0, 0, 0, 2, 0, 0, 0, 2, 16, 4, 0, 0, 0};
    k += png_chunk(f + k, "IHDR", ih2, 13);
    unsigned char rows[2 * 9] = {0, 0x12, 0x34, 0xFF, 0xFF, 0,    1, 0,    2,
                                 0, 0xAB, 0xCD, 0,    0,    0x80, 0, 0x7F, 0xFF};
    zn = sizeof z;
    compress(z, &zn, rows, sizeof rows);
    k += png_chunk(f + k, "IDAT", z, zn);
    k += png_chunk(f + k, "IEND", NULL, 0);
    CHECK_OK(ctx, load_mem(f, k, CONVOLVE_FORMAT_PNG, &a));
    if (a) {
        const convolve_layout *L = convolve_array_layout(a);
        const uint16_t *p = convolve_array_data(a);
        CHECK(L->dtype == CONVOLVE_UINT16 && L->channels == 2 && L->shape[0] == 2, "ga16 layout");
        CHECK(p[0] == 0x1234 && p[1] == 0xFFFF && p[3] == 2 && p[4] == 0xABCD && p[7] == 0x7FFF,
              "ga16 values %x %x %x %x", p[0], p[1], p[4], p[7]);
        convolve_array_free(a);
    }
    k = 8;
    unsigned char ih3[13] = {0, 0, 0, 2, 0, 0, 0, 1, 4, 3, 0, 0, 0};
    k += png_chunk(f + k, "IHDR", ih3, 13);
    unsigned char plte[6] = {10, 20, 30, 200, 100, 50};
    k += png_chunk(f + k, "PLTE", plte, 6);
    unsigned char prow[2] = {0, 0x10}; /* filter 0; pixels 1, 0 */
    zn = sizeof z;
    compress(z, &zn, prow, 2);
    k += png_chunk(f + k, "IDAT", z, zn);
    k += png_chunk(f + k, "IEND", NULL, 0);
    CHECK_OK(ctx, load_mem(f, k, CONVOLVE_FORMAT_PNG, &a));
    if (a) {
        const uint8_t *p = convolve_array_data(a);
        CHECK(convolve_array_layout(a)->channels == 3 && p[0] == 200 && p[2] == 50 && p[3] == 10,
              "palette expansion");
        convolve_array_free(a);
    }
    /* too little image data: an error, not a half-filled picture */
    k = 8;
    k += png_chunk(f + k, "IHDR", ih2, 13);
    zn = sizeof z;
    compress(z, &zn, rows, 9);
    k += png_chunk(f + k, "IDAT", z, zn);
    k += png_chunk(f + k, "IEND", NULL, 0);
    EXPECT_MEM(f, k, CONVOLVE_FORMAT_PNG, CONVOLVE_ERROR_FORMAT, "short IDAT");
}

/* Writes a 16x16 CMYK JPEG with libjpeg. */
static unsigned char *cmyk_jpeg(unsigned long *size)
{
    struct jpeg_compress_struct ci;
    struct jpeg_error_mgr err;
    unsigned char *mem = NULL;
    ci.err = jpeg_std_error(&err);
    jpeg_create_compress(&ci);
    jpeg_mem_dest(&ci, &mem, size);
    ci.image_width = 16;
    ci.image_height = 16;
    ci.input_components = 4;
    ci.in_color_space = JCS_CMYK;
    jpeg_set_defaults(&ci);
    jpeg_start_compress(&ci, TRUE);
    unsigned char row[64];
    memset(row, 100, sizeof row);
    while (ci.next_scanline < 16) {
        JSAMPROW r = row;
        jpeg_write_scanlines(&ci, &r, 1);
    }
    jpeg_finish_compress(&ci);
    jpeg_destroy_compress(&ci);
    return mem;
}

static void jpeg_inputs(void)
{
    convolve_array *a = make_array(CONVOLVE_UINT8, 2, (size_t[]){40, 48}, 3);
    CHECK_OK(ctx, convolve_array_save(ctx, a, tpath("src.jpg"), CONVOLVE_FORMAT_JPEG, 90));
    convolve_array_free(a);
    size_t n;
    unsigned char *jpg = read_bytes(tpath("src.jpg"), &n);
    if (!jpg) {
        CHECK(0, "no src.jpg");
        return;
    }
    EXPECT_MEM(jpg, n, CONVOLVE_FORMAT_AUTO, CONVOLVE_OK, "good jpeg");
    int all = 1;
    for (size_t cut = 0; cut + 2 < n; cut += (cut < 700 ? 3 : 37))
        if (load_mem(jpg, cut, CONVOLVE_FORMAT_JPEG, NULL) != CONVOLVE_ERROR_FORMAT) {
            all = 0;
            fprintf(stderr, "truncated JPEG at %zu of %zu loaded\n", cut, n);
        }
    CHECK(all, "truncated JPEG");
    load_mem(jpg, n - 100, CONVOLVE_FORMAT_JPEG, NULL);
    EXPECT_MSG("malformed JPEG");
    EXPECT_MSG("Premature end");
    /* huge dimensions in the frame header */
    for (size_t i = 2; i + 9 < n; i++)
        if (jpg[i] == 0xFF && (jpg[i + 1] == 0xC0 || jpg[i + 1] == 0xC2)) {
            jpg[i + 5] = 0xFD, jpg[i + 6] = 0xE8; /* height 65000 */
            jpg[i + 7] = 0xFD, jpg[i + 8] = 0xE8; /* width 65000 */
            break;
        }
    EXPECT_MEM(jpg, n, CONVOLVE_FORMAT_JPEG, CONVOLVE_ERROR_FORMAT, "huge jpeg");
    EXPECT_MSG("limit");
    jpg[0] = 0;
    EXPECT_MEM(jpg, n, CONVOLVE_FORMAT_JPEG, CONVOLVE_ERROR_FORMAT, "jpeg signature");
    free(jpg);
    /* garbage after a valid SOI */
    const unsigned char junk[16] = {0xFF, 0xD8, 0xFF, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    EXPECT_MEM(junk, sizeof junk, CONVOLVE_FORMAT_AUTO, CONVOLVE_ERROR_FORMAT, "junk jpeg");
    /* CMYK */
    unsigned long cs = 0;
    unsigned char *cmyk = cmyk_jpeg(&cs);
    EXPECT_MEM(cmyk, cs, CONVOLVE_FORMAT_JPEG, CONVOLVE_ERROR_FORMAT, "cmyk");
    EXPECT_MSG("CMYK");
    free(cmyk);
    /* a grey JPEG loads with 1 channel */
    a = make_array(CONVOLVE_UINT8, 2, (size_t[]){8, 8}, 1);
    convolve_array *b = round_trip(a, "gray.jpg", CONVOLVE_FORMAT_JPEG, 0);
    CHECK(b && convolve_array_layout(b)->channels == 1, "gray jpeg channels");
    convolve_array_free(b);
    convolve_array_free(a);
}

static void pnm_inputs(void)
{
    const char *p2 = "P2 # a comment\n# another\n3 2\n# maxval next\n9\n0 1 2\n3 4 9\n";
    convolve_array *a;
    CHECK_OK(ctx, load_mem(p2, strlen(p2), CONVOLVE_FORMAT_AUTO, &a));
    if (a) {
        const uint8_t *p = convolve_array_data(a);
        CHECK(convolve_array_layout(a)->shape[0] == 2 && convolve_array_layout(a)->shape[1] == 3 &&
                  p[0] == 0 && p[4] == 4 && p[5] == 9,
              "P2 values");
        convolve_array_free(a);
    }
    const char *p3 = "P3\n2 1\n1000\n1 2 3 1000 999 0\n";
    CHECK_OK(ctx, load_mem(p3, strlen(p3), CONVOLVE_FORMAT_PNM, &a));
    if (a) {
        const uint16_t *p = convolve_array_data(a);
        CHECK(convolve_array_layout(a)->dtype == CONVOLVE_UINT16 &&
                  convolve_array_layout(a)->channels == 3 && p[3] == 1000 && p[4] == 999,
              "P3 maxval 1000");
        convolve_array_free(a);
    }
    const unsigned char p5[] = "P5\n2 2\n65535\n\x01\x02\x03\x04\xFF\xFF\x00\x07";
    CHECK_OK(ctx, load_mem(p5, sizeof p5 - 1, CONVOLVE_FORMAT_PNM, &a));
    if (a) {
        const uint16_t *p = convolve_array_data(a);
        CHECK(p[0] == 0x0102 && p[1] == 0x0304 && p[2] == 0xFFFF && p[3] == 7, "P5 16-bit");
        convolve_array_free(a);
    }
    struct {
        const char *data;
        size_t size; /* 0: strlen */
        const char *msg;
    } bad[] = {
        {"P2\n3 2\n9\n0 1 2\n3 4\n", 0, "truncated"},
        {"P2\n3 2\n9\n0 1 2\n3 4 10\n", 0, "above maxval"},
        {"P2\n3 2\n9\n0 1 2\n3 4 5 6\n", 0, "after its"},
        {"P2\n3 2\n9\n0 1 x\n3 4 5\n", 0, "not a decimal"},
        {"P2\n3 2\n0\n", 0, "maxval is not a positive"},
        {"P2\n3 2\n65536\n", 0, "maxval is too large"},
        {"P2\n3\n", 0, "truncated before its height"},
        {"P2\n-3 2 9\n", 0, "width is not a positive"},
        {"P5\n3 2\n255\n\x01\x02\x03\x04\x05", 0, "truncated"},
        {"P5\n2 1\n255\n\x01\x02garbage", 0, "after its raster"},
        {"P5\n2 1\n100\n\x01\xC8", 0, "above maxval"},
        {"P5\n2 1\n255", 0, "truncated"},
        {"P6\n100000 100000\n255\n", 0, "limit"},
        {"P3 46000 46000 255\n0 1 2\n", 0, "cannot hold"}, /* found by fuzzing */
        {"P1\n2 2\n0 1 1 0\n", 0, "PBM"},
        {"P4\n2 2\n", 0, "PBM"},
        {"P7\nWIDTH 2\n", 0, "PAM"},
        {"P9\n", 0, "magic"},
        {"P2x 3 2 9\n", 0, "magic"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char what[64];
        snprintf(what, sizeof what, "bad pnm %zu", k);
        size_t sz = bad[k].size ? bad[k].size : strlen(bad[k].data);
        EXPECT_MEM(bad[k].data, sz, CONVOLVE_FORMAT_PNM, CONVOLVE_ERROR_FORMAT, what);
        EXPECT_MSG(bad[k].msg);
    }
}

static void text_inputs(void)
{
    convolve_array *a;
    const char *t3 = "# weights\n1 2 3\n4 5 6\n\n\n  7 8 9 # c\n10 11 12\n# only a comment\n";
    CHECK_OK(ctx, load_mem(t3, strlen(t3), CONVOLVE_FORMAT_TEXT, &a));
    if (a) {
        const convolve_layout *L = convolve_array_layout(a);
        CHECK(L->ndim == 3 && L->shape[0] == 2 && L->shape[1] == 2 && L->shape[2] == 3 &&
                  L->dtype == CONVOLVE_FLOAT64 && ((double *)convolve_array_data(a))[11] == 12,
              "3-D text");
        convolve_array_free(a);
    }
    const char *t1 = "\n 0.25\t0.5   -1e-3\r\n\n";
    CHECK_OK(ctx, load_mem(t1, strlen(t1), CONVOLVE_FORMAT_TEXT, &a));
    CHECK(a && convolve_array_layout(a)->ndim == 1 && convolve_array_layout(a)->shape[0] == 3 &&
              ((double *)convolve_array_data(a))[2] == -1e-3,
          "1-D text");
    convolve_array_free(a);
    const char *t2 = "1\n2\n# comment lines do not end a plane\n3";
    CHECK_OK(ctx, load_mem(t2, strlen(t2), CONVOLVE_FORMAT_TEXT, &a));
    CHECK(a && convolve_array_layout(a)->ndim == 2 && convolve_array_layout(a)->shape[0] == 3 &&
              convolve_array_layout(a)->shape[1] == 1,
          "column text");
    convolve_array_free(a);
    struct {
        const char *data;
        const char *msg;
    } bad[] = {
        {"1 2 3\n4 5\n", "line 2 has 2 numbers where earlier rows have 3"},
        {"1 2\n3 4\n\n5 6\n", "plane at line 4 has 1 rows where the first has 2"},
        {"1 2\n3 x4\n", "line 2: 'x4' is not a number"},
        {"1,2,3\n", "'1,2,3' is not a number"},
        {"  \n# nothing\n", "no numbers"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char what[64];
        snprintf(what, sizeof what, "bad text %zu", k);
        EXPECT_MEM(bad[k].data, strlen(bad[k].data), CONVOLVE_FORMAT_TEXT, CONVOLVE_ERROR_FORMAT,
                   what);
        EXPECT_MSG(bad[k].msg);
    }
    EXPECT_MEM("1 2\0 3", 6, CONVOLVE_FORMAT_TEXT, CONVOLVE_ERROR_FORMAT, "NUL in text");
    /* text has no magic number: AUTO from memory cannot tell */
    EXPECT_MEM("1 2 3\n", 6, CONVOLVE_FORMAT_AUTO, CONVOLVE_ERROR_FORMAT, "text auto");
    EXPECT_MSG("magic");
}

/* ---- TIFF --------------------------------------------------------------------- */

#ifdef CONVOLVE_HAVE_TIFF

/* How a hand-made TIFF is laid out (libtiff writes it). */
typedef struct {
    const char *mode;     /* "w" little-endian, "wb" big-endian, "w8" BigTIFF */
    uint16_t compression; /* COMPRESSION_* */
    uint16_t predictor;   /* 0: none */
    int planar;           /* samples in separate planes */
    uint32_t tile;        /* square tiles of this side; 0: strips */
    uint32_t rps;         /* rows per strip */
} tiff_spec;

/* Writes one page (h x w pixels of spp interleaved samples of dtype t, host
 * order) into the open TIFF as spec says. Returns 1 on success. */
static int tiff_put_page(TIFF *tif, const tiff_spec *s, convolve_dtype t, uint32_t h, uint32_t w,
                         uint16_t spp, const void *data, uint16_t photometric)
{
    const size_t es = convolve_dtype_size(t);
    const int fl = t == CONVOLVE_FLOAT32 || t == CONVOLVE_FLOAT64;
    int ok = TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, w) &&
             TIFFSetField(tif, TIFFTAG_IMAGELENGTH, h) &&
             TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, (uint16_t)(es * 8)) &&
             TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, spp) &&
             TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT,
                          fl ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT) &&
             TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, photometric) &&
             TIFFSetField(tif, TIFFTAG_PLANARCONFIG,
                          s->planar ? PLANARCONFIG_SEPARATE : PLANARCONFIG_CONTIG) &&
             TIFFSetField(tif, TIFFTAG_COMPRESSION, s->compression);
    if (ok && (spp == 2 || spp == 4)) {
        uint16_t extra = EXTRASAMPLE_UNASSALPHA;
        ok = TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, (uint16_t)1, &extra);
    }
    if (ok && s->predictor)
        ok = TIFFSetField(tif, TIFFTAG_PREDICTOR, s->predictor);
    if (ok && s->compression == COMPRESSION_JPEG) {
        ok = TIFFSetField(tif, TIFFTAG_JPEGQUALITY, 100);
        if (ok && photometric == PHOTOMETRIC_YCBCR)
            ok = TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
    }
    if (ok && s->tile)
        ok = TIFFSetField(tif, TIFFTAG_TILEWIDTH, s->tile) &&
             TIFFSetField(tif, TIFFTAG_TILELENGTH, s->tile);
    else if (ok)
        ok = TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, s->rps);
    if (!ok)
        return 0;
    const unsigned char *src = data;
    const size_t pixel = es * spp, planes = s->planar ? spp : 1, unit = s->planar ? es : pixel;
    const uint32_t uw = s->tile ? s->tile : w, uh = s->tile ? s->tile : s->rps;
    unsigned char *buf = calloc((size_t)uw * uh, unit);
    uint32_t index = 0;
    for (size_t p = 0; p < planes && ok; p++)
        for (uint32_t y0 = 0; y0 < h && ok; y0 += uh)
            for (uint32_t x0 = 0; x0 < w && ok; x0 += uw, index++) {
                /* a tile past the image's edge repeats the edge (JPEG stays smooth) */
                uint32_t rows = h - y0 < uh ? h - y0 : uh;
                uint32_t fill_rows = s->tile ? uh : rows;
                for (uint32_t y = 0; y < fill_rows; y++)
                    for (uint32_t x = 0; x < uw; x++) {
                        uint32_t sy = y0 + y < h ? y0 + y : h - 1, sx = x0 + x < w ? x0 + x : w - 1;
                        memcpy(buf + ((size_t)y * uw + x) * unit,
                               src + ((size_t)sy * w + sx) * pixel + p * es, unit);
                    }
                if (s->tile)
                    ok = TIFFWriteEncodedTile(tif, index, buf, (tmsize_t)uw * uh * unit) >= 0;
                else
                    ok = TIFFWriteEncodedStrip(tif, index, buf, (tmsize_t)rows * uw * unit) >= 0;
            }
    free(buf);
    return ok && TIFFWriteDirectory(tif);
}

/* Writes `pages` pages of a (pages x h x w x spp) array to path; 1 on success. */
static int tiff_write(const char *path, const tiff_spec *s, const convolve_array *a)
{
    const convolve_layout *L = convolve_array_layout(a);
    const size_t pages = L->ndim == 3 ? L->shape[0] : 1;
    const uint32_t h = (uint32_t)L->shape[L->ndim - 2], w = (uint32_t)L->shape[L->ndim - 1];
    const size_t page_bytes = convolve_array_bytes(a) / pages;
    TIFF *tif = TIFFOpen(path, s->mode);
    if (!tif)
        return 0;
    int ok = 1;
    for (size_t p = 0; p < pages && ok; p++)
        ok = tiff_put_page(tif, s, L->dtype, h, w, (uint16_t)L->channels,
                           (const unsigned char *)convolve_array_const_data(a) + p * page_bytes,
                           L->channels >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK);
    TIFFClose(tif);
    return ok;
}

/* Sets the value of tag (SHORT or LONG, count 1) in the first directory of a
 * little-endian classic TIFF in memory; 1 if found. */
static int tiff_patch(unsigned char *d, size_t n, uint16_t tag, uint32_t value)
{
#define RD16(p) ((uint32_t)(p)[0] | (uint32_t)(p)[1] << 8)
#define RD32(p) (RD16(p) | RD16((p) + 2) << 16)
    if (n < 8 || d[0] != 'I')
        return 0;
    size_t ifd = RD32(d + 4);
    if (ifd + 2 > n)
        return 0;
    for (size_t k = 0, count = RD16(d + ifd); k < count && ifd + 14 + 12 * k <= n; k++) {
        unsigned char *e = d + ifd + 2 + 12 * k;
        if (RD16(e) != tag)
            continue;
        if (RD16(e + 2) == 3) { /* SHORT */
            e[8] = (unsigned char)value, e[9] = (unsigned char)(value >> 8);
        } else {
            for (int b = 0; b < 4; b++)
                e[8 + b] = (unsigned char)(value >> (8 * b));
        }
        return 1;
    }
    return 0;
#undef RD16
#undef RD32
}

/* Loads path with format AUTO (content first): the array, or NULL. */
static convolve_array *tiff_load(const char *path)
{
    convolve_array *b = NULL;
    convolve_status st = convolve_array_load(ctx, &b, path, CONVOLVE_FORMAT_AUTO);
    CHECK(st == CONVOLVE_OK, "load %s: %s", path, convolve_last_error(ctx));
    return b;
}

/* Files libtiff writes in every layout we read: sample types, channels,
 * chunky and planar, strips and tiles (with partial edge tiles), the
 * compression schemes, byte orders, predictors, BigTIFF and stacks. */
static void tiff_layouts(void)
{
    static const convolve_dtype types[4] = {CONVOLVE_UINT8, CONVOLVE_UINT16, CONVOLVE_FLOAT32,
                                            CONVOLVE_FLOAT64};
    static const uint16_t schemes[] = {
        COMPRESSION_NONE, COMPRESSION_LZW,  COMPRESSION_ADOBE_DEFLATE, COMPRESSION_PACKBITS,
        COMPRESSION_ZSTD, COMPRESSION_LZMA, COMPRESSION_DEFLATE};
    static const char *const modes[3] = {"w", "wb", "w8"};
    int made = 0, n = 0;
    for (int t = 0; t < 4; t++)
        for (uint16_t spp = 1; spp <= 4; spp++)
            for (int variant = 0; variant < 4; variant++, n++) {
                tiff_spec s = {modes[n % 3], schemes[n % 7],         0,
                               variant & 1,  (variant & 2) ? 16 : 0, (uint32_t)(1 + n % 5)};
                if (!TIFFIsCODECConfigured(s.compression))
                    s.compression = COMPRESSION_LZW;
                /* (libtiff 4.5 writes the floating-point predictor wrongly in a
                 * byte-swapped file, its own reader disagreeing; tests/py reads
                 * such a file made by hand) */
                const int fl = types[t] == CONVOLVE_FLOAT32 || types[t] == CONVOLVE_FLOAT64;
                if (s.compression != COMPRESSION_NONE && s.compression != COMPRESSION_PACKBITS &&
                    n % 2 && !(fl && s.mode[1] == 'b'))
                    s.predictor = fl ? PREDICTOR_FLOATINGPOINT : PREDICTOR_HORIZONTAL;
                const size_t pages = n % 4 == 3 ? 3 : 1;
                size_t shape[3] = {pages, 23 + (size_t)n % 3, 37};
                convolve_array *a = make_array(types[t], pages > 1 ? 3 : 2,
                                               pages > 1 ? shape : shape + 1, spp);
                char name[96];
                snprintf(name, sizeof name, "lay_%s_%u_%d_%s_c%u_p%u.tif",
                         convolve_dtype_name(types[t]), spp, variant, s.mode, s.compression,
                         s.predictor);
                if (!tiff_write(tpath(name), &s, a)) {
                    CHECK(0, "libtiff could not write %s", name);
                } else {
                    made++;
                    convolve_array *b = tiff_load(tpath(name));
                    expect_identical(a, b, name);
                    convolve_array_free(b);
                }
                convolve_array_free(a);
            }
    CHECK(made == 64, "made %d of 64 layouts", made);

    /* JPEG: gray, and RGB stored as YCbCr (converted back to RGB), in strips
     * and tiles; lossy, so a smooth picture comes back close */
    for (int k = 0; k < 4; k++) {
        const uint16_t spp = k < 2 ? 1 : 3;
        const size_t h = 40, w = 56;
        convolve_array *a = make_array(CONVOLVE_UINT8, 2, (size_t[]){h, w}, spp);
        uint8_t *p = convolve_array_data(a);
        for (size_t y = 0; y < h; y++)
            for (size_t x = 0; x < w; x++)
                for (size_t c = 0; c < spp; c++)
                    p[(y * w + x) * spp + c] = (uint8_t)(20 + x + 2 * y + 30 * c);
        tiff_spec s = {"w", COMPRESSION_JPEG, 0, 0, k % 2 ? 16 : 0, 16};
        TIFF *tif = TIFFOpen(tpath("jpeg.tif"), "w");
        int ok = tif && tiff_put_page(tif, &s, CONVOLVE_UINT8, (uint32_t)h, (uint32_t)w, spp, p,
                                      spp == 3 ? PHOTOMETRIC_YCBCR : PHOTOMETRIC_MINISBLACK);
        if (tif)
            TIFFClose(tif);
        CHECK(ok, "libtiff could not write JPEG TIFF %d", k);
        convolve_array *b = ok ? tiff_load(tpath("jpeg.tif")) : NULL;
        CHECK(b && same_layout(convolve_array_layout(a), convolve_array_layout(b)),
              "JPEG TIFF %d layout", k);
        if (b && same_layout(convolve_array_layout(a), convolve_array_layout(b))) {
            const uint8_t *q = convolve_array_data(b);
            int maxd = 0;
            for (size_t i = 0; i < h * w * spp; i++)
                maxd = abs(p[i] - q[i]) > maxd ? abs(p[i] - q[i]) : maxd;
            CHECK(maxd <= 6, "JPEG TIFF %d: max difference %d", k, maxd);
        }
        convolve_array_free(b);
        convolve_array_free(a);
    }
}

/* What our writer makes: every type, 1 to 4 channels, one page or a stack;
 * libtiff reads the pages back with the tags a viewer needs. */
static void tiff_writer(void)
{
    static const convolve_dtype types[4] = {CONVOLVE_UINT8, CONVOLVE_UINT16, CONVOLVE_FLOAT32,
                                            CONVOLVE_FLOAT64};
    for (int t = 0; t < 4; t++)
        for (size_t ch = 1; ch <= 4; ch++)
            for (int nd = 2; nd <= 3; nd++) {
                size_t shape[3] = {4, 9 + ch, 13};
                convolve_array *a = make_array(types[t], nd, nd == 3 ? shape : shape + 1, ch);
                char name[64];
                snprintf(name, sizeof name, "w_%s_%zu_%d.tiff", convolve_dtype_name(types[t]), ch,
                         nd);
                convolve_array *b = round_trip(a, name, CONVOLVE_FORMAT_AUTO, 0);
                expect_identical(a, b, name);
                convolve_array_free(b);
                TIFF *tif = TIFFOpen(tpath(name), "r");
                CHECK(tif != NULL, "libtiff cannot open %s", name);
                if (tif) {
                    uint16_t fmt = 0, spp = 0, photo = 0, bps = 0;
                    TIFFGetField(tif, TIFFTAG_SAMPLEFORMAT, &fmt);
                    TIFFGetField(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
                    TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photo);
                    TIFFGetField(tif, TIFFTAG_BITSPERSAMPLE, &bps);
                    CHECK(spp == ch && bps == 8 * convolve_dtype_size(types[t]) &&
                              fmt == (t >= 2 ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT) &&
                              photo == (ch >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK),
                          "%s tags", name);
                    CHECK(TIFFNumberOfDirectories(tif) == (nd == 3 ? 4 : 1), "%s pages", name);
                    TIFFClose(tif);
                }
                convolve_array_free(a);
            }
    /* the writer refuses what TIFF does not hold here */
    convolve_array *a1 = make_array(CONVOLVE_FLOAT32, 1, (size_t[]){5}, 1);
    convolve_array *a5 = make_array(CONVOLVE_UINT8, 2, (size_t[]){3, 3}, 5);
    CHECK_STATUS(ctx, convolve_array_save(ctx, a1, tpath("x.tif"), CONVOLVE_FORMAT_AUTO, 0),
                 CONVOLVE_ERROR_UNSUPPORTED);
    EXPECT_MSG("2-D images and 3-D stacks");
    CHECK_STATUS(ctx, convolve_array_save(ctx, a5, tpath("x.tif"), CONVOLVE_FORMAT_TIFF, 0),
                 CONVOLVE_ERROR_UNSUPPORTED);
    EXPECT_MSG("1 to 4 channels");
    CHECK(access(tpath("x.tif"), F_OK) != 0, "a refused save left a file");
    convolve_array_free(a1);
    convolve_array_free(a5);
}

/* Makes a small TIFF with one page per spec'd call and returns its bytes. */
static unsigned char *tiff_bytes(const char *name, const tiff_spec *s, const convolve_array *a,
                                 size_t *n)
{
    *n = 0;
    if (!tiff_write(tpath(name), s, a)) {
        CHECK(0, "libtiff could not write %s", name);
        return NULL;
    }
    return read_bytes(tpath(name), n);
}

/* Writes one page of raw tags (what libtiff lets us write that we refuse). */
static unsigned char *tiff_odd(const char *name, uint16_t bps, uint16_t fmt, uint16_t spp,
                               uint16_t photo, size_t *n)
{
    TIFF *tif = TIFFOpen(tpath(name), "w");
    uint32_t w = 4, h = 3;
    int ok = tif && TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, w) &&
             TIFFSetField(tif, TIFFTAG_IMAGELENGTH, h) &&
             TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, bps) &&
             TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, spp) &&
             TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, fmt) &&
             TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, photo) &&
             TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG) &&
             TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, h);
    if (ok && photo == PHOTOMETRIC_PALETTE) {
        uint16_t map[3][256];
        memset(map, 0, sizeof map);
        ok = TIFFSetField(tif, TIFFTAG_COLORMAP, map[0], map[1], map[2]);
    }
    if (ok && spp > 4) {
        uint16_t extra[8] = {0};
        ok = TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, (uint16_t)(spp - 1), extra);
    }
    unsigned char pixels[4 * 3 * 8 * 8];
    for (size_t i = 0; i < sizeof pixels; i++)
        pixels[i] = (unsigned char)h_randint(0, 255);
    if (ok)
        ok = TIFFWriteEncodedStrip(tif, 0, pixels, (tmsize_t)((w * spp * bps + 7) / 8 * h)) >= 0 &&
             TIFFWriteDirectory(tif);
    if (tif)
        TIFFClose(tif);
    CHECK(ok, "libtiff could not write %s", name);
    return ok ? read_bytes(tpath(name), n) : NULL;
}

/* Stacks whose pages disagree, kinds we refuse, damaged files and sizes the
 * data cannot back: each a FORMAT error with a message, never a crash or a
 * partly filled array. */
static void tiff_inputs(void)
{
    tiff_spec plain = {"w", COMPRESSION_NONE, 0, 0, 0, 2};
    size_t n;
    unsigned char *d;

    /* pages that disagree in size, then in type */
    for (int k = 0; k < 2; k++) {
        TIFF *tif = TIFFOpen(tpath("mixed.tif"), "w");
        convolve_array *p1 = make_array(CONVOLVE_UINT16, 2, (size_t[]){5, 6}, 1);
        convolve_array *p2 = make_array(k ? CONVOLVE_UINT8 : CONVOLVE_UINT16, 2,
                                        (size_t[]){5, k ? 6 : 7}, 1);
        int ok = tif &&
                 tiff_put_page(tif, &plain, CONVOLVE_UINT16, 5, 6, 1, convolve_array_data(p1),
                               PHOTOMETRIC_MINISBLACK) &&
                 tiff_put_page(tif, &plain, k ? CONVOLVE_UINT8 : CONVOLVE_UINT16, 5, k ? 6 : 7, 1,
                               convolve_array_data(p2), PHOTOMETRIC_MINISBLACK);
        if (tif)
            TIFFClose(tif);
        CHECK(ok, "libtiff could not write mixed pages");
        convolve_array *b = NULL;
        CHECK_STATUS(ctx, convolve_array_load(ctx, &b, tpath("mixed.tif"), CONVOLVE_FORMAT_AUTO),
                     CONVOLVE_ERROR_FORMAT);
        EXPECT_MSG("TIFF page 2");
        EXPECT_MSG(k ? "uint8" : "7x5");
        EXPECT_MSG("must agree");
        CHECK(b == NULL, "array set on failure");
        convolve_array_free(p1);
        convolve_array_free(p2);
    }

    /* JBIG: libtiff's codec decodes one bit plane of an 8-bit page ("Only
     * decoded 259 bytes, whereas 1961 requested"), leaving the rest of the
     * strip as it was, and libjbig allocates what its own header says: the
     * page is refused before decoding */
    if (TIFFIsCODECConfigured(COMPRESSION_JBIG)) {
        tiff_spec jbig = {"w", COMPRESSION_JBIG, 0, 0, 0, 37};
        convolve_array *a = make_array(CONVOLVE_UINT8, 2, (size_t[]){37, 53}, 1);
        if (!tiff_write(tpath("jbig.tif"), &jbig, a)) {
            CHECK(0, "libtiff could not write a JBIG TIFF");
        } else {
            convolve_array *b = NULL;
            CHECK_STATUS(ctx, convolve_array_load(ctx, &b, tpath("jbig.tif"), CONVOLVE_FORMAT_AUTO),
                         CONVOLVE_ERROR_FORMAT);
            EXPECT_MSG("JBIG compression holds bilevel");
            CHECK(b == NULL, "array set on failure");
            convolve_array_free(b);
        }
        convolve_array_free(a);
    } else {
        printf("test_io: this libtiff has no JBIG codec; the short-decode case is not run\n");
    }

    /* a reduced-resolution page (a thumbnail) is skipped */
    {
        TIFF *tif = TIFFOpen(tpath("thumb.tif"), "w");
        convolve_array *big = make_array(CONVOLVE_UINT8, 2, (size_t[]){8, 10}, 3);
        convolve_array *small = make_array(CONVOLVE_UINT8, 2, (size_t[]){2, 3}, 3);
        int ok = tif &&
                 tiff_put_page(tif, &plain, CONVOLVE_UINT8, 8, 10, 3, convolve_array_data(big),
                               PHOTOMETRIC_RGB) &&
                 TIFFSetField(tif, TIFFTAG_SUBFILETYPE, (uint32_t)FILETYPE_REDUCEDIMAGE) &&
                 tiff_put_page(tif, &plain, CONVOLVE_UINT8, 2, 3, 3, convolve_array_data(small),
                               PHOTOMETRIC_RGB);
        if (tif)
            TIFFClose(tif);
        CHECK(ok, "libtiff could not write a thumbnail");
        convolve_array *b = ok ? tiff_load(tpath("thumb.tif")) : NULL;
        expect_identical(big, b, "thumbnail skipped");
        convolve_array_free(b);
        convolve_array_free(big);
        convolve_array_free(small);
    }

    /* kinds we refuse */
    static const struct {
        uint16_t bps, fmt, spp, photo;
        const char *msg;
    } odd[] = {
        {16, SAMPLEFORMAT_INT, 1, PHOTOMETRIC_MINISBLACK, "signed integer"},
        {32, SAMPLEFORMAT_UINT, 1, PHOTOMETRIC_MINISBLACK, "32-bit unsigned"},
        {12, SAMPLEFORMAT_UINT, 1, PHOTOMETRIC_MINISBLACK, "12-bit unsigned"},
        {1, SAMPLEFORMAT_UINT, 1, PHOTOMETRIC_MINISBLACK, "1-bit unsigned"},
        {16, SAMPLEFORMAT_IEEEFP, 1, PHOTOMETRIC_MINISBLACK, "16-bit float"},
        {8, SAMPLEFORMAT_UINT, 1, PHOTOMETRIC_MINISWHITE, "white-is-zero"},
        {8, SAMPLEFORMAT_UINT, 1, PHOTOMETRIC_PALETTE, "palette"},
        {8, SAMPLEFORMAT_UINT, 4, PHOTOMETRIC_SEPARATED, "CMYK"},
        {8, SAMPLEFORMAT_UINT, 5, PHOTOMETRIC_MINISBLACK, "5 samples per pixel"},
        {8, SAMPLEFORMAT_UINT, 2, PHOTOMETRIC_RGB, "RGB with 2 samples"},
        {8, SAMPLEFORMAT_UINT, 3, PHOTOMETRIC_CIELAB, "Photometric 8"},
    };
    for (size_t k = 0; k < sizeof odd / sizeof odd[0]; k++) {
        char name[32];
        snprintf(name, sizeof name, "odd%zu.tif", k);
        d = tiff_odd(name, odd[k].bps, odd[k].fmt, odd[k].spp, odd[k].photo, &n);
        if (!d)
            continue;
        EXPECT_MEM(d, n, CONVOLVE_FORMAT_AUTO, CONVOLVE_ERROR_FORMAT, name);
        EXPECT_MSG(odd[k].msg);
        free(d);
    }

    /* a compression scheme libtiff cannot decode (JPEG 2000's number) */
    convolve_array *g = make_array(CONVOLVE_UINT8, 2, (size_t[]){6, 8}, 1);
    d = tiff_bytes("g.tif", &plain, g, &n);
    if (d) {
        CHECK(tiff_patch(d, n, TIFFTAG_COMPRESSION, 34712), "no Compression tag");
        EXPECT_MEM(d, n, CONVOLVE_FORMAT_TIFF, CONVOLVE_ERROR_FORMAT, "JPEG 2000");
        EXPECT_MSG("cannot be decoded");
        free(d);
    }
    /* a header declaring far more pixels than its data can hold: refused
     * before the pixels are allocated (deflate, one strip) */
    tiff_spec deflate = {"w", COMPRESSION_ADOBE_DEFLATE, 0, 0, 0, 6};
    d = tiff_bytes("huge.tif", &deflate, g, &n);
    if (d) {
        CHECK(tiff_patch(d, n, TIFFTAG_IMAGEWIDTH, 40000) &&
                  tiff_patch(d, n, TIFFTAG_IMAGELENGTH, 40000) &&
                  tiff_patch(d, n, TIFFTAG_ROWSPERSTRIP, 40000),
              "patching huge.tif");
        EXPECT_MEM(d, n, CONVOLVE_FORMAT_TIFF, CONVOLVE_ERROR_FORMAT, "huge claim");
        EXPECT_MSG("cannot hold 40000x40000 pixels");
        free(d);
    }
    /* uncompressed: the strips must hold every byte */
    d = tiff_bytes("short.tif", &plain, g, &n);
    if (d) {
        CHECK(tiff_patch(d, n, TIFFTAG_IMAGELENGTH, 7), "patching short.tif");
        EXPECT_MEM(d, n, CONVOLVE_FORMAT_TIFF, CONVOLVE_ERROR_FORMAT, "one row short");
        free(d);
    }
    /* a next-directory offset past the end of the file */
    d = tiff_bytes("next.tif", &plain, g, &n);
    if (d) {
        size_t ifd = (size_t)d[4] | (size_t)d[5] << 8 | (size_t)d[6] << 16 | (size_t)d[7] << 24;
        size_t entries = (size_t)d[ifd] | (size_t)d[ifd + 1] << 8, at = ifd + 2 + 12 * entries;
        CHECK(at + 4 <= n, "next.tif layout");
        if (at + 4 <= n) {
            d[at] = 0xF0, d[at + 1] = 0xFF, d[at + 2] = 0xFF, d[at + 3] = 0x0F;
            EXPECT_MEM(d, n, CONVOLVE_FORMAT_TIFF, CONVOLVE_ERROR_FORMAT, "next IFD");
            EXPECT_MSG("directory 2 cannot be read");
        }
        free(d);
    }
    convolve_array_free(g);
    /* not a TIFF; and cut short anywhere, a stack never loads */
    EXPECT_MEM("II*\0", 4, CONVOLVE_FORMAT_TIFF, CONVOLVE_ERROR_FORMAT, "8 bytes");
    EXPECT_MEM("GIF89a....", 10, CONVOLVE_FORMAT_TIFF, CONVOLVE_ERROR_FORMAT, "bad magic");
    EXPECT_MSG("not a TIFF file");
    convolve_array *st = make_array(CONVOLVE_UINT16, 3, (size_t[]){2, 5, 6}, 2);
    tiff_spec lzw = {"w", COMPRESSION_LZW, PREDICTOR_HORIZONTAL, 1, 0, 2};
    d = tiff_bytes("stack.tif", &lzw, st, &n);
    if (d) {
        convolve_array *b = NULL;
        CHECK_OK(ctx, load_mem(d, n, CONVOLVE_FORMAT_AUTO, &b));
        expect_identical(st, b, "LZW planar stack");
        convolve_array_free(b);
        int loaded = 0;
        for (size_t cut = 0; cut < n; cut++)
            loaded += load_mem(d, cut, CONVOLVE_FORMAT_TIFF, NULL) == CONVOLVE_OK;
        CHECK(loaded == 0, "%d truncated TIFFs loaded", loaded);
        free(d);
    }
    convolve_array_free(st);
}

#else /* built without libtiff */

static void tiff_layouts(void) {}

static void tiff_writer(void)
{
    convolve_array *a = make_array(CONVOLVE_UINT8, 2, (size_t[]){3, 3}, 1), *b = NULL;
    CHECK_STATUS(ctx, convolve_array_save(ctx, a, tpath("x.tif"), CONVOLVE_FORMAT_AUTO, 0),
                 CONVOLVE_ERROR_UNSUPPORTED);
    EXPECT_MSG("built without TIFF");
    CHECK_STATUS(ctx,
                 convolve_array_load_memory(ctx, &b, "II*\0\x08\0\0\0", 8, CONVOLVE_FORMAT_AUTO),
                 CONVOLVE_ERROR_FORMAT);
    EXPECT_MSG("built without TIFF");
    convolve_array_free(a);
    printf("test_io: built without TIFF; only its refusal is tested\n");
}

static void tiff_inputs(void) {}

#endif

static void load_errors(void)
{
    convolve_array *a = NULL;
    CHECK_STATUS(ctx, convolve_array_load(ctx, &a, tpath("missing.npy"), CONVOLVE_FORMAT_AUTO),
                 CONVOLVE_ERROR_IO);
    EXPECT_MSG("missing.npy");
    CHECK_STATUS(ctx, convolve_array_load(ctx, &a, tmpdir, CONVOLVE_FORMAT_AUTO),
                 CONVOLVE_ERROR_IO);
    EXPECT_MSG("directory");
    write_bytes(tpath("empty.npy"), "", 0);
    CHECK_STATUS(ctx, convolve_array_load(ctx, &a, tpath("empty.npy"), CONVOLVE_FORMAT_AUTO),
                 CONVOLVE_ERROR_FORMAT);
    EXPECT_MSG("empty");
    write_bytes(tpath("data.bin"), "hello", 5);
    CHECK_STATUS(ctx, convolve_array_load(ctx, &a, tpath("data.bin"), CONVOLVE_FORMAT_AUTO),
                 CONVOLVE_ERROR_FORMAT);
    EXPECT_MSG("cannot tell the format");
    /* the extension says npy, the content is garbage */
    write_bytes(tpath("junk.npy"), "hello world", 11);
    CHECK_STATUS(ctx, convolve_array_load(ctx, &a, tpath("junk.npy"), CONVOLVE_FORMAT_AUTO),
                 CONVOLVE_ERROR_FORMAT);
    EXPECT_MSG("not a .npy file");
    /* a .txt weights file; and the magic number wins over a wrong extension */
    write_bytes(tpath("w.txt"), "1 2 1\n", 6);
    CHECK_OK(ctx, convolve_array_load(ctx, &a, tpath("w.txt"), CONVOLVE_FORMAT_AUTO));
    convolve_array_free(a);
    write_bytes(tpath("really_pgm.png"), "P2 1 1 255 7\n", 13);
    CHECK_OK(ctx, convolve_array_load(ctx, &a, tpath("really_pgm.png"), CONVOLVE_FORMAT_AUTO));
    CHECK(a && ((uint8_t *)convolve_array_data(a))[0] == 7, "sniffed pgm");
    convolve_array_free(a);
    /* an explicit format is obeyed */
    CHECK_STATUS(ctx, convolve_array_load(ctx, &a, tpath("w.txt"), CONVOLVE_FORMAT_NPY),
                 CONVOLVE_ERROR_FORMAT);
    CHECK_STATUS(ctx, convolve_array_load(ctx, NULL, tpath("w.txt"), CONVOLVE_FORMAT_AUTO),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_array_load(ctx, &a, NULL, CONVOLVE_FORMAT_AUTO),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_array_load(ctx, &a, tpath("w.txt"), (convolve_format)17),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_array_load_memory(ctx, &a, NULL, 4, CONVOLVE_FORMAT_NPY),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_array_load_memory(ctx, &a, "", 0, CONVOLVE_FORMAT_AUTO),
                 CONVOLVE_ERROR_FORMAT);
    /* a NULL context is accepted (no message) */
    CHECK(convolve_array_load(NULL, &a, tpath("missing.npy"), CONVOLVE_FORMAT_AUTO) ==
              CONVOLVE_ERROR_IO,
          "NULL context");
}

/* ---- formats: detection and what each can hold --------------------------------- */

/* convolve_format_detect on the magic numbers (and what falls short of
 * them), agreeing with the files the writers make; convolve_format_is_image. */
static void format_detection(void)
{
    static const struct {
        const char *bytes;
        size_t size;
        convolve_format want;
    } k_cases[] = {
        {"\x93NUMPY\x01\x00", 8, CONVOLVE_FORMAT_NPY},
        {"\x93NUMPY", 6, CONVOLVE_FORMAT_NPY},
        {"\x93NUMP", 5, CONVOLVE_FORMAT_AUTO},
        {"\x93NUMPX", 6, CONVOLVE_FORMAT_AUTO},
        {"\x89PNG\r\n\x1a\n", 8, CONVOLVE_FORMAT_PNG},
        {"\x89PN", 3, CONVOLVE_FORMAT_AUTO},
        {"\xff\xd8\xff\xe0", 4, CONVOLVE_FORMAT_JPEG},
        {"\xff\xd8", 2, CONVOLVE_FORMAT_AUTO},
        {"\xff\xd8\x00", 3, CONVOLVE_FORMAT_AUTO},
        {"P5 4 4 255", 10, CONVOLVE_FORMAT_PNM},
        {"P2\n", 3, CONVOLVE_FORMAT_PNM},
        {"P6#", 3, CONVOLVE_FORMAT_PNM},
        {"P4 8 1", 6, CONVOLVE_FORMAT_PNM}, /* PBM: the reader refuses it by name */
        {"P8 4 4", 6, CONVOLVE_FORMAT_AUTO},
        {"P5x", 3, CONVOLVE_FORMAT_AUTO},
        {"1 2 3\n", 6, CONVOLVE_FORMAT_AUTO}, /* text has no magic number */
        {"", 0, CONVOLVE_FORMAT_AUTO},
    };
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++)
        CHECK(convolve_format_detect(k_cases[i].bytes, k_cases[i].size) == k_cases[i].want,
              "case %zu: got %s, want %s", i,
              convolve_format_name(convolve_format_detect(k_cases[i].bytes, k_cases[i].size)),
              convolve_format_name(k_cases[i].want));
    CHECK(convolve_format_detect(NULL, 0) == CONVOLVE_FORMAT_AUTO, "NULL data");

    /* what the writers make is detected as what they wrote */
    static const struct {
        const char *name;
        convolve_format format;
        convolve_dtype dtype;
    } k_files[] = {
        {"d.npy", CONVOLVE_FORMAT_NPY, CONVOLVE_FLOAT32},
        {"d.png", CONVOLVE_FORMAT_PNG, CONVOLVE_UINT8},
        {"d.jpg", CONVOLVE_FORMAT_JPEG, CONVOLVE_UINT8},
        {"d.pgm", CONVOLVE_FORMAT_PNM, CONVOLVE_UINT16},
        {"d.txt", CONVOLVE_FORMAT_TEXT, CONVOLVE_FLOAT64},
#ifdef CONVOLVE_HAVE_TIFF
        {"d.tif", CONVOLVE_FORMAT_TIFF, CONVOLVE_FLOAT32},
#endif
    };
    for (size_t i = 0; i < sizeof k_files / sizeof k_files[0]; i++) {
        convolve_array *a = make_array(k_files[i].dtype, 2, (size_t[]){5, 7}, 1);
        CHECK_OK(ctx, convolve_array_save(ctx, a, tpath(k_files[i].name), CONVOLVE_FORMAT_AUTO, 0));
        size_t n = 0;
        unsigned char *d = read_bytes(tpath(k_files[i].name), &n);
        convolve_format want = k_files[i].format == CONVOLVE_FORMAT_TEXT ? CONVOLVE_FORMAT_AUTO
                                                                         : k_files[i].format;
        CHECK(d && convolve_format_detect(d, n) == want, "%s detected as %s", k_files[i].name,
              convolve_format_name(d ? convolve_format_detect(d, n) : CONVOLVE_FORMAT_AUTO));
        /* only the first CONVOLVE_FORMAT_DETECT_BYTES bytes count */
        CHECK(d && n > CONVOLVE_FORMAT_DETECT_BYTES &&
                  convolve_format_detect(d, CONVOLVE_FORMAT_DETECT_BYTES) == want,
              "%s from its first bytes", k_files[i].name);
        CHECK(convolve_format_from_path(tpath(k_files[i].name)) == k_files[i].format, "%s by name",
              k_files[i].name);
        free(d);
        convolve_array_free(a);
        unlink(tpath(k_files[i].name));
    }

    for (int f = -1; f <= 42; f++) {
        int image = f == CONVOLVE_FORMAT_PNG || f == CONVOLVE_FORMAT_JPEG ||
                    f == CONVOLVE_FORMAT_PNM;
        CHECK(convolve_format_is_image((convolve_format)f) == image, "format %d: is_image %d", f,
              convolve_format_is_image((convolve_format)f));
    }
}

/* convolve_format_can_hold answers what convolve_array_save does: for every
 * format, type, dimensionality and channel count, it says OK exactly when
 * the save succeeds, and the save's message starts with its reason; then
 * extents, the order of the checks, and bad arguments. */
static void format_capacity(void)
{
    const convolve_format formats[] = {
        CONVOLVE_FORMAT_NPY,  CONVOLVE_FORMAT_PNG,  CONVOLVE_FORMAT_JPEG,
        CONVOLVE_FORMAT_PNM,  CONVOLVE_FORMAT_TEXT,
#ifdef CONVOLVE_HAVE_TIFF
        CONVOLVE_FORMAT_TIFF,
#endif
    };
    const int nformats = (int)(sizeof formats / sizeof formats[0]);
    const size_t shape[3] = {3, 4, 5};
    int held = 0, refused = 0;
    for (int f = 0; f < nformats; f++)
        for (int t = 0; t < 4; t++)
            for (int nd = 1; nd <= 3; nd++)
                for (size_t ch = 1; ch <= 5; ch++) {
                    convolve_array *a = make_array((convolve_dtype)t, nd, shape, ch);
                    if (!a)
                        continue;
                    const convolve_layout *L = convolve_array_layout(a);
                    convolve_status hold = convolve_format_can_hold(ctx, formats[f], L);
                    char reason[512];
                    snprintf(reason, sizeof reason, "%s", convolve_last_error(ctx));
                    convolve_status save = convolve_array_save(ctx, a, tpath("cap.out"), formats[f],
                                                               0);
                    CHECK(hold == save &&
                              (hold == CONVOLVE_OK || hold == CONVOLVE_ERROR_UNSUPPORTED),
                          "%s, %s, %d-D, %zu channels: can_hold %s (%s), save %s (%s)",
                          convolve_format_name(formats[f]), convolve_dtype_name(L->dtype), nd, ch,
                          convolve_status_name(hold), reason, convolve_status_name(save),
                          convolve_last_error(ctx));
                    if (hold == CONVOLVE_ERROR_UNSUPPORTED) {
                        char want[600];
                        snprintf(want, sizeof want, "'%s': %s, not ", tpath("cap.out"), reason);
                        CHECK(!strncmp(convolve_last_error(ctx), want, strlen(want)),
                              "save's message '%s' does not start with '%s'",
                              convolve_last_error(ctx), want);
                        refused++;
                    } else {
                        held += hold == CONVOLVE_OK;
                    }
                    convolve_array_free(a);
                }
    unlink(tpath("cap.out"));
    /* npy: 60; png: 2 types x 4 channels; jpeg: 2 (1 and 3 channels);
     * pnm: 2 x 2; text: 2 types x 2 dimensionalities; tiff: 4 types x 2
     * dimensionalities x 4 channels */
#ifdef CONVOLVE_HAVE_TIFF
    CHECK(held == 60 + 8 + 2 + 4 + 4 + 32, "%d combinations held", held);
#else
    CHECK(held == 60 + 8 + 2 + 4 + 4, "%d combinations held", held);
#endif
    CHECK(held + refused == 60 * nformats, "%d held + %d refused", held, refused);

    /* extents: PNG up to 1000000 per side, JPEG up to 65500 */
    convolve_layout L;
    CHECK_OK(NULL, convolve_layout_init(&L, CONVOLVE_UINT8, 2, (size_t[]){1, 1000000}, 1));
    CHECK_OK(ctx, convolve_format_can_hold(ctx, CONVOLVE_FORMAT_PNG, &L));
    L.shape[0] = 1000001;
    CHECK_STATUS(ctx, convolve_format_can_hold(ctx, CONVOLVE_FORMAT_PNG, &L),
                 CONVOLVE_ERROR_UNSUPPORTED);
    EXPECT_MSG("PNG holds at most 1000000 pixels per side");
    CHECK_OK(ctx, convolve_format_can_hold(ctx, CONVOLVE_FORMAT_PNM, &L));
    CHECK_OK(ctx, convolve_format_can_hold(ctx, CONVOLVE_FORMAT_NPY, &L));
    L.shape[0] = 65500;
    L.shape[1] = 1;
    CHECK_OK(ctx, convolve_format_can_hold(ctx, CONVOLVE_FORMAT_JPEG, &L));
    L.shape[0] = 65501;
    CHECK_STATUS(ctx, convolve_format_can_hold(ctx, CONVOLVE_FORMAT_JPEG, &L),
                 CONVOLVE_ERROR_UNSUPPORTED);
    EXPECT_MSG("JPEG holds at most 65500 pixels per side");
    convolve_array *wide = make_array(CONVOLVE_UINT8, 2, (size_t[]){1, 65501}, 1);
    CHECK_STATUS(ctx, convolve_array_save(ctx, wide, tpath("wide.jpg"), CONVOLVE_FORMAT_AUTO, 0),
                 CONVOLVE_ERROR_UNSUPPORTED);
    EXPECT_MSG("not 65501x1");
    convolve_array_free(wide);
#ifdef CONVOLVE_HAVE_TIFF
    /* TIFF: 32-bit sides */
    CHECK_OK(NULL, convolve_layout_init(&L, CONVOLVE_UINT8, 2, (size_t[]){1, 4294967295u}, 1));
    CHECK_OK(ctx, convolve_format_can_hold(ctx, CONVOLVE_FORMAT_TIFF, &L));
    L.shape[1] = (size_t)4294967296u;
    CHECK_STATUS(ctx, convolve_format_can_hold(ctx, CONVOLVE_FORMAT_TIFF, &L),
                 CONVOLVE_ERROR_UNSUPPORTED);
    EXPECT_MSG("TIFF holds at most 4294967295 pixels per side");
#endif

    /* the order of the checks: type, dimensions, channels, extents */
    CHECK_OK(NULL, convolve_layout_init(&L, CONVOLVE_FLOAT32, 3, (size_t[]){2, 2, 70000}, 5));
    CHECK_STATUS(ctx, convolve_format_can_hold(ctx, CONVOLVE_FORMAT_JPEG, &L),
                 CONVOLVE_ERROR_UNSUPPORTED);
    CHECK(!strcmp(convolve_last_error(ctx), "JPEG holds uint8 data"), "%s",
          convolve_last_error(ctx));
    L.dtype = CONVOLVE_UINT8;
    CHECK_STATUS(ctx, convolve_format_can_hold(ctx, CONVOLVE_FORMAT_JPEG, &L),
                 CONVOLVE_ERROR_UNSUPPORTED);
    CHECK(!strcmp(convolve_last_error(ctx), "image files hold 2-D images"), "%s",
          convolve_last_error(ctx));
    L.ndim = 2;
    L.shape[1] = 70000;
    CHECK_STATUS(ctx, convolve_format_can_hold(ctx, CONVOLVE_FORMAT_JPEG, &L),
                 CONVOLVE_ERROR_UNSUPPORTED);
    CHECK(!strcmp(convolve_last_error(ctx), "JPEG holds 1 (gray) or 3 (RGB) channels"), "%s",
          convolve_last_error(ctx));
    L.channels = 3;
    CHECK_STATUS(ctx, convolve_format_can_hold(ctx, CONVOLVE_FORMAT_JPEG, &L),
                 CONVOLVE_ERROR_UNSUPPORTED);
    EXPECT_MSG("65500");
    /* strides are not looked at */
    L.shape[1] = 7;
    L.strides[0] = L.strides[1] = 0;
    CHECK_OK(ctx, convolve_format_can_hold(ctx, CONVOLVE_FORMAT_JPEG, &L));

    /* bad arguments */
    CHECK_STATUS(ctx, convolve_format_can_hold(ctx, CONVOLVE_FORMAT_NPY, NULL),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_format_can_hold(ctx, CONVOLVE_FORMAT_AUTO, &L),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_format_can_hold(ctx, (convolve_format)42, &L),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    convolve_layout bad = L;
    bad.dtype = (convolve_dtype)9;
    CHECK_STATUS(ctx, convolve_format_can_hold(ctx, CONVOLVE_FORMAT_NPY, &bad),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    bad = L;
    bad.ndim = 4;
    CHECK_STATUS(ctx, convolve_format_can_hold(ctx, CONVOLVE_FORMAT_NPY, &bad),
                 CONVOLVE_ERROR_BAD_LAYOUT);
    bad = L;
    bad.channels = 0;
    CHECK_STATUS(ctx, convolve_format_can_hold(ctx, CONVOLVE_FORMAT_NPY, &bad),
                 CONVOLVE_ERROR_BAD_LAYOUT);
    bad = L;
    bad.shape[0] = 0;
    CHECK_STATUS(ctx, convolve_format_can_hold(ctx, CONVOLVE_FORMAT_NPY, &bad),
                 CONVOLVE_ERROR_BAD_LAYOUT);
    bad = L;
    bad.shape[0] = bad.shape[1] = (size_t)1 << 40;
    CHECK_STATUS(ctx, convolve_format_can_hold(ctx, CONVOLVE_FORMAT_NPY, &bad),
                 CONVOLVE_ERROR_SIZE_OVERFLOW);
    CHECK(convolve_format_can_hold(NULL, CONVOLVE_FORMAT_PNG, &L) == CONVOLVE_OK, "NULL context");
}

/* ---- saving -------------------------------------------------------------------- */

/* convolve_temp_file_open and _name: unnamed until named (where the file
 * system allows), beside the target, with the mode of the file replaced. */
static void temp_files(void)
{
    const char *target = tpath("temp_target.bin");
    char name[600];
    const int hidden = hidden_files();
    write_bytes(target, "old", 3);
    CHECK(chmod(target, 0640) == 0, "chmod: %s", strerror(errno));
    int fd = convolve_temp_file_open(target, 0, name, sizeof name);
    CHECK(fd >= 0, "convolve_temp_file_open: %s", strerror(errno));
    if (fd < 0)
        return;
    struct stat sb;
    CHECK(fstat(fd, &sb) == 0 && (sb.st_mode & 07777) == 0640, "mode %o, expected 0640",
          (unsigned)(sb.st_mode & 07777));
    if (name[0] == '\0') { /* unnamed: nothing in the folder yet */
        CHECK(hidden_files() == hidden, "an unnamed temporary file shows in the folder");
        CHECK(convolve_temp_file_name(fd, target, name, sizeof name) == 0,
              "convolve_temp_file_name: %s", strerror(errno));
    }
    const char *slash = strrchr(name, '/');
    CHECK(slash && strncmp(name, tmpdir, strlen(tmpdir)) == 0 &&
              strncmp(slash + 1, ".temp_target.bin.", 17) == 0 && strlen(slash + 1) == 23,
          "temporary name '%s' not .BASE.XXXXXX beside the target", name);
    CHECK(write(fd, "new", 3) == 3 && close(fd) == 0, "writing the temporary file");
    CHECK(rename(name, target) == 0, "rename: %s", strerror(errno));
    CHECK(hidden_files() == hidden, "a temporary file left behind");
    unsigned char got[8] = {0};
    FILE *f = fopen(target, "rb");
    CHECK(f && fread(got, 1, sizeof got, f) == 3 && memcmp(got, "new", 3) == 0,
          "the target does not hold what was written");
    if (f)
        fclose(f);
    /* a name from the start; the errors */
    fd = convolve_temp_file_open(target, 1, name, sizeof name);
    CHECK(fd >= 0 && name[0] && stat(name, &sb) == 0, "need_name: no named file");
    if (fd >= 0) {
        close(fd);
        unlink(name);
    }
    errno = 0;
    CHECK(convolve_temp_file_open(target, 0, name, strlen(target) + 8) < 0 && errno == ENAMETOOLONG,
          "a small name buffer: errno %d", errno);
    errno = 0;
    CHECK(convolve_temp_file_open(tpath("dir/"), 0, name, sizeof name) < 0 && errno == EISDIR,
          "a path ending in '/': errno %d", errno);
    unlink(target);
    CHECK(hidden_files() == hidden, "a temporary file left behind at the end");
}

static void save_errors(void)
{
    char target[512];
    snprintf(target, sizeof target, "%s", tpath("keep.png"));
    const char old[] = "old contents";
    write_bytes(target, old, sizeof old);
    convolve_array *f = make_array(CONVOLVE_FLOAT32, 2, (size_t[]){4, 4}, 1);
    convolve_array *v = make_array(CONVOLVE_UINT8, 3, (size_t[]){2, 4, 4}, 1);
    convolve_array *c5 = make_array(CONVOLVE_UINT8, 2, (size_t[]){4, 4}, 5);
    convolve_array *c2 = make_array(CONVOLVE_UINT8, 2, (size_t[]){4, 4}, 2);
    convolve_array *u16 = make_array(CONVOLVE_UINT16, 2, (size_t[]){4, 4}, 1);
    convolve_array *u8 = make_array(CONVOLVE_UINT8, 2, (size_t[]){4, 4}, 1);

    /* what the formats cannot hold: UNSUPPORTED, and the old file stays */
    CHECK_STATUS(ctx, convolve_array_save(ctx, f, target, CONVOLVE_FORMAT_AUTO, 0),
                 CONVOLVE_ERROR_UNSUPPORTED);
    EXPECT_MSG("float32");
    CHECK_STATUS(ctx, convolve_array_save(ctx, v, target, CONVOLVE_FORMAT_PNG, 0),
                 CONVOLVE_ERROR_UNSUPPORTED);
    CHECK_STATUS(ctx, convolve_array_save(ctx, c5, target, CONVOLVE_FORMAT_PNG, 0),
                 CONVOLVE_ERROR_UNSUPPORTED);
    CHECK_STATUS(ctx, convolve_array_save(ctx, u16, target, CONVOLVE_FORMAT_JPEG, 0),
                 CONVOLVE_ERROR_UNSUPPORTED);
    CHECK_STATUS(ctx, convolve_array_save(ctx, c2, target, CONVOLVE_FORMAT_JPEG, 0),
                 CONVOLVE_ERROR_UNSUPPORTED);
    CHECK_STATUS(ctx, convolve_array_save(ctx, c2, target, CONVOLVE_FORMAT_PNM, 0),
                 CONVOLVE_ERROR_UNSUPPORTED);
    CHECK_STATUS(ctx, convolve_array_save(ctx, f, target, CONVOLVE_FORMAT_PNM, 0),
                 CONVOLVE_ERROR_UNSUPPORTED);
    CHECK_STATUS(ctx, convolve_array_save(ctx, u8, target, CONVOLVE_FORMAT_TEXT, 0),
                 CONVOLVE_ERROR_UNSUPPORTED);
    convolve_array *f3 = make_array(CONVOLVE_FLOAT64, 3, (size_t[]){2, 2, 2}, 1);
    CHECK_STATUS(ctx, convolve_array_save(ctx, f3, target, CONVOLVE_FORMAT_TEXT, 0),
                 CONVOLVE_ERROR_UNSUPPORTED);
    convolve_array_free(f3);
    CHECK_STATUS(ctx, convolve_array_save(ctx, u8, target, CONVOLVE_FORMAT_JPEG, 101),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_array_save(ctx, u8, target, CONVOLVE_FORMAT_JPEG, -1),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_array_save(ctx, u8, tpath("x.unknown"), CONVOLVE_FORMAT_AUTO, 0),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_array_save(ctx, NULL, target, CONVOLVE_FORMAT_PNG, 0),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_array_save(ctx, u8, NULL, CONVOLVE_FORMAT_PNG, 0),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_array_save(ctx, u8, "", CONVOLVE_FORMAT_PNG, 0),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK(file_equals(target, old, sizeof old), "old file changed by a failed save");

    /* I/O failures: a missing directory; a directory in the way */
    CHECK_STATUS(ctx,
                 convolve_array_save(ctx, u8, tpath("no/such/dir/x.png"), CONVOLVE_FORMAT_AUTO, 0),
                 CONVOLVE_ERROR_IO);
    EXPECT_MSG("no/such/dir/x.png");
    mkdir(tpath("adir.png"), 0755);
    CHECK_STATUS(ctx, convolve_array_save(ctx, u8, tpath("adir.png"), CONVOLVE_FORMAT_AUTO, 0),
                 CONVOLVE_ERROR_IO);
    rmdir(tpath("adir.png"));
    /* unwritable even for root: under a regular file, and in /proc */
    CHECK_STATUS(ctx,
                 convolve_array_save(ctx, u8, tpath("keep.png/x.png"), CONVOLVE_FORMAT_AUTO, 0),
                 CONVOLVE_ERROR_IO);
    CHECK_STATUS(
        ctx, convolve_array_save(ctx, u8, "/proc/convolve_test_io.png", CONVOLVE_FORMAT_AUTO, 0),
        CONVOLVE_ERROR_IO);
    CHECK_STATUS(ctx, convolve_array_save(ctx, u8, tpath("sub/"), CONVOLVE_FORMAT_PNG, 0),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    /* a directory that is not writable (root may write anyway) */
    mkdir(tpath("ro"), 0755);
    write_bytes(tpath("ro/keep.png"), old, sizeof old);
    chmod(tpath("ro"), 0555);
    if (geteuid() != 0) {
        CHECK_STATUS(ctx,
                     convolve_array_save(ctx, u8, tpath("ro/keep.png"), CONVOLVE_FORMAT_AUTO, 0),
                     CONVOLVE_ERROR_IO);
        EXPECT_MSG("ro/keep.png");
        CHECK(file_equals(tpath("ro/keep.png"), old, sizeof old), "read-only dir: file changed");
    } else {
        printf("test_io: running as root; skipping the read-only directory check\n");
    }
    chmod(tpath("ro"), 0755);
    unlink(tpath("ro/keep.png"));
    rmdir(tpath("ro"));
    CHECK(hidden_files() == 0, "a temporary file was left behind");

    /* a new file gets mode 0644 less the umask */
    mode_t old_mask = umask(022);
    struct stat sb;
    CHECK_OK(ctx, convolve_array_save(ctx, u8, tpath("new1.png"), CONVOLVE_FORMAT_AUTO, 0));
    CHECK(stat(tpath("new1.png"), &sb) == 0 && (sb.st_mode & 0777) == 0644, "mode %o",
          (unsigned)(sb.st_mode & 0777));
    umask(077);
    CHECK_OK(ctx, convolve_array_save(ctx, u8, tpath("new2.png"), CONVOLVE_FORMAT_AUTO, 0));
    CHECK(stat(tpath("new2.png"), &sb) == 0 && (sb.st_mode & 0777) == 0600,
          "mode %o under umask 077", (unsigned)(sb.st_mode & 0777));
    umask(old_mask);
    /* a replaced file keeps its mode (whatever the umask), and its owner and
     * group where permitted (root: any) */
    CHECK(chmod(target, 0640) == 0, "chmod: %s", strerror(errno));
    const int root = geteuid() == 0;
    if (root)
        CHECK(chown(target, 12345, 23456) == 0, "chown: %s", strerror(errno));
    CHECK_OK(ctx, convolve_array_save(ctx, u8, target, CONVOLVE_FORMAT_AUTO, 0));
    CHECK(stat(target, &sb) == 0 && (sb.st_mode & 07777) == 0640, "replaced: mode %o, not 640",
          (unsigned)(sb.st_mode & 07777));
    if (root)
        CHECK(sb.st_uid == 12345 && sb.st_gid == 23456, "replaced: owner %u:%u, not 12345:23456",
              (unsigned)sb.st_uid, (unsigned)sb.st_gid);
    CHECK(chmod(target, 0644) == 0, "chmod: %s", strerror(errno));
    convolve_array *back = NULL;
    CHECK_OK(ctx, convolve_array_load(ctx, &back, target, CONVOLVE_FORMAT_AUTO));
    expect_identical(u8, back, "replaced file");
    convolve_array_free(back);
    /* a symbolic link is followed: the file it names is replaced, the link stays */
    write_bytes(tpath("real.png"), old, sizeof old);
    CHECK(symlink("real.png", tpath("link.png")) == 0, "symlink: %s", strerror(errno));
    CHECK_OK(ctx, convolve_array_save(ctx, u8, tpath("link.png"), CONVOLVE_FORMAT_AUTO, 0));
    CHECK(lstat(tpath("link.png"), &sb) == 0 && S_ISLNK(sb.st_mode), "the link was replaced");
    CHECK_OK(ctx, convolve_array_load(ctx, &back, tpath("real.png"), CONVOLVE_FORMAT_AUTO));
    expect_identical(u8, back, "saved through a link");
    convolve_array_free(back);
    /* as cp, a dangling link is not written through: refused, left as it is */
    CHECK(symlink("nothere.png", tpath("dangling.png")) == 0, "symlink: %s", strerror(errno));
    CHECK_STATUS(ctx, convolve_array_save(ctx, u8, tpath("dangling.png"), CONVOLVE_FORMAT_AUTO, 0),
                 CONVOLVE_ERROR_IO);
    EXPECT_MSG("dangling link is not written through");
    CHECK(lstat(tpath("dangling.png"), &sb) == 0 && S_ISLNK(sb.st_mode), "the link was replaced");
    CHECK(access(tpath("nothere.png"), F_OK) != 0, "the dangling link's file was created");
    /* what is not a regular file is not replaced */
    CHECK_STATUS(ctx, convolve_array_save(ctx, u8, "/dev/null", CONVOLVE_FORMAT_PNG, 0),
                 CONVOLVE_ERROR_IO);
    EXPECT_MSG("not a regular file");
    /* a relative path (no directory part) works too */
    char cwd[1024];
    if (getcwd(cwd, sizeof cwd) && chdir(tmpdir) == 0) {
        CHECK_OK(ctx, convolve_array_save(ctx, u8, "rel.pgm", CONVOLVE_FORMAT_AUTO, 0));
        CHECK(access("rel.pgm", F_OK) == 0, "rel.pgm missing");
        CHECK(chdir(cwd) == 0, "chdir back");
    }
    CHECK(hidden_files() == 0, "a temporary file was left behind");

    convolve_array_free(f);
    convolve_array_free(v);
    convolve_array_free(c5);
    convolve_array_free(c2);
    convolve_array_free(u16);
    convolve_array_free(u8);
}

/* ---- the context's file settings ---------------------------------------------- */

/* Saves a with format f to name and returns its bytes (malloc'd), or NULL. */
static unsigned char *saved_bytes(const convolve_array *a, const char *name, convolve_format f,
                                  size_t *n)
{
    CHECK_OK(ctx, convolve_array_save(ctx, a, tpath(name), f, 0));
    return read_bytes(tpath(name), n);
}

/* The pixel limit (decompression bombs) and the PNG compression level. */
static void file_settings(void)
{
    CHECK(convolve_context_max_pixels(ctx) == CONVOLVE_DEFAULT_MAX_PIXELS &&
              CONVOLVE_DEFAULT_MAX_PIXELS == ((size_t)1 << 28),
          "default pixel limit");
    CHECK(convolve_context_png_compression(ctx) == CONVOLVE_DEFAULT_PNG_COMPRESSION,
          "default PNG level");
    CHECK(convolve_context_max_pixels(NULL) == 0 && convolve_context_png_compression(NULL) == -1,
          "getters take NULL");
    CHECK(convolve_context_set_max_pixels(NULL, 5) == CONVOLVE_ERROR_INVALID_ARGUMENT &&
              convolve_context_set_png_compression(NULL, 5) == CONVOLVE_ERROR_INVALID_ARGUMENT,
          "setters refuse NULL");
    CHECK_STATUS(ctx, convolve_context_set_png_compression(ctx, 10),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    EXPECT_MSG("0 (fastest) to 9");
    CHECK_STATUS(ctx, convolve_context_set_png_compression(ctx, -1),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK(strcmp(convolve_status_name(CONVOLVE_ERROR_LIMIT), "CONVOLVE_ERROR_LIMIT") == 0 &&
              CONVOLVE_ERROR_LIMIT == 15,
          "LIMIT is status 15 and has a name");

    /* each image format is refused from its header past the limit, accepted
     * at it; .npy is not limited */
    static const struct {
        convolve_format f;
        const char *name;
        size_t channels;
    } k[] = {{CONVOLVE_FORMAT_PNG, "lim.png", 3},
             {CONVOLVE_FORMAT_JPEG, "lim.jpg", 3},
             {CONVOLVE_FORMAT_PNM, "lim.ppm", 3},
             {CONVOLVE_FORMAT_NPY, "lim.npy", 1}
#ifdef CONVOLVE_HAVE_TIFF
             ,
             {CONVOLVE_FORMAT_TIFF, "lim.tif", 3}
#endif
    };
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        convolve_array *a = make_array(k[i].f == CONVOLVE_FORMAT_NPY ? CONVOLVE_FLOAT32
                                                                     : CONVOLVE_UINT8,
                                       2, (size_t[]){11, 13}, k[i].channels);
        size_t n = 0;
        unsigned char *d = a ? saved_bytes(a, k[i].name, k[i].f, &n) : NULL;
        if (d) {
            CHECK_OK(ctx, convolve_context_set_max_pixels(ctx, 11 * 13 - 1));
            EXPECT_MEM(d, n, k[i].f,
                       k[i].f == CONVOLVE_FORMAT_NPY ? CONVOLVE_OK : CONVOLVE_ERROR_LIMIT,
                       k[i].name);
            if (k[i].f != CONVOLVE_FORMAT_NPY) {
                EXPECT_MSG("13x11 pixels are more than the limit of 142");
                EXPECT_MSG("--max-pixels");
            }
            CHECK_OK(ctx, convolve_context_set_max_pixels(ctx, 11 * 13));
            EXPECT_MEM(d, n, k[i].f, CONVOLVE_OK, k[i].name);
            CHECK_OK(ctx, convolve_context_set_max_pixels(ctx, 0)); /* none */
            EXPECT_MEM(d, n, k[i].f, CONVOLVE_OK, k[i].name);
            free(d);
        }
        convolve_array_free(a);
    }
#ifdef CONVOLVE_HAVE_TIFF
    /* a stack counts its pages together */
    {
        convolve_array *a = make_array(CONVOLVE_UINT16, 3, (size_t[]){3, 5, 6}, 1);
        size_t n = 0;
        unsigned char *d = a ? saved_bytes(a, "stack_lim.tif", CONVOLVE_FORMAT_TIFF, &n) : NULL;
        if (d) {
            CHECK_OK(ctx, convolve_context_set_max_pixels(ctx, 89));
            EXPECT_MEM(d, n, CONVOLVE_FORMAT_TIFF, CONVOLVE_ERROR_LIMIT, "3-page stack");
            EXPECT_MSG("3 pages of 6x5 pixels are more than the limit of 89");
            CHECK_OK(ctx, convolve_context_set_max_pixels(ctx, 90));
            EXPECT_MEM(d, n, CONVOLVE_FORMAT_TIFF, CONVOLVE_OK, "3-page stack");
            free(d);
        }
        convolve_array_free(a);
    }
#endif
    CHECK_OK(ctx, convolve_context_set_max_pixels(ctx, CONVOLVE_DEFAULT_MAX_PIXELS));

    /* PNG levels: the same pixels back at every level; 0 stores, 9 packs */
    {
        convolve_array *a = make_array(CONVOLVE_UINT8, 2, (size_t[]){64, 80}, 3);
        uint8_t *p = a ? convolve_array_data(a) : NULL;
        for (size_t i = 0; p && i < 64 * 80 * 3; i++) /* smooth: compressible */
            p[i] = (uint8_t)((i / 3) % 80 + (i / 240) / 2 + (h_rand_u64() & 3));
        size_t bytes[10] = {0};
        for (int level = 0; a && level <= 9; level += 3) {
            CHECK_OK(ctx, convolve_context_set_png_compression(ctx, level));
            CHECK(convolve_context_png_compression(ctx) == level, "level %d kept", level);
            char name[32];
            snprintf(name, sizeof name, "level%d.png", level);
            convolve_array *b = round_trip(a, name, CONVOLVE_FORMAT_PNG, 0);
            expect_identical(a, b, name);
            convolve_array_free(b);
            free(read_bytes(tpath(name), &bytes[level]));
        }
        CHECK(bytes[0] > 64 * 80 * 3 && bytes[9] < bytes[3] && bytes[3] < bytes[0],
              "PNG sizes by level: 0 %zu, 3 %zu, 9 %zu", bytes[0], bytes[3], bytes[9]);
        convolve_array_free(a);
        CHECK_OK(ctx, convolve_context_set_png_compression(ctx, CONVOLVE_DEFAULT_PNG_COMPRESSION));
    }
}

/* Random damage to valid files of every format: each load must succeed or
 * fail with a status and a message, never crash (run under ASan/UBSan). */
static void mutations(int rounds)
{
    static const struct {
        const char *name;
        convolve_format format;
        convolve_dtype dtype;
        int ndim;
        size_t channels;
    } k[] = {
        {"m.npy", CONVOLVE_FORMAT_NPY, CONVOLVE_FLOAT32, 2, 1},
        {"m.png", CONVOLVE_FORMAT_PNG, CONVOLVE_UINT16, 2, 3},
        {"m.jpg", CONVOLVE_FORMAT_JPEG, CONVOLVE_UINT8, 2, 3},
        {"m.pgm", CONVOLVE_FORMAT_PNM, CONVOLVE_UINT8, 2, 1},
        {"m.txt", CONVOLVE_FORMAT_TEXT, CONVOLVE_FLOAT64, 2, 1},
#ifdef CONVOLVE_HAVE_TIFF
        {"m.tif", CONVOLVE_FORMAT_TIFF, CONVOLVE_UINT16, 2, 2},
#endif
    };
    for (size_t f = 0; f < sizeof k / sizeof k[0]; f++) {
        convolve_array *a = make_array(k[f].dtype, k[f].ndim, (size_t[]){6, 7}, k[f].channels);
        CHECK_OK(ctx, convolve_array_save(ctx, a, tpath(k[f].name), k[f].format, 0));
        convolve_array_free(a);
        size_t n;
        unsigned char *good = read_bytes(tpath(k[f].name), &n);
        if (!good)
            continue;
        unsigned char *m = malloc(n + 16);
        int bad = 0;
        for (int r = 0; r < rounds; r++) {
            memcpy(m, good, n);
            size_t len = n;
            int edits = (int)h_randint(1, 4);
            for (int e = 0; e < edits; e++) {
                size_t at = (size_t)h_randint(0, (long)len - 1);
                switch (h_randint(0, 3)) {
                case 0: m[at] ^= (unsigned char)(1u << h_randint(0, 7)); break;
                case 1: m[at] = (unsigned char)h_randint(0, 255); break;
                case 2: len = at + 1; break;
                default: m[at] = (unsigned char)(h_randint(0, 1) ? 0xFF : '0' + h_randint(0, 9));
                }
            }
            convolve_array *out = NULL;
            convolve_status st = convolve_array_load_memory(ctx, &out, m, len, k[f].format);
            if (st == CONVOLVE_OK)
                bad += out == NULL || convolve_array_bytes(out) == 0;
            else
                bad += out != NULL || convolve_last_error(ctx)[0] == '\0';
            convolve_array_free(out);
        }
        CHECK(bad == 0, "%s: %d mutated loads broke the contract", k[f].name, bad);
        free(m);
        free(good);
    }
}

/* Removes the temporary directory and what the tests left in it. */
static void cleanup(void)
{
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlink(tpath(e->d_name));
    if (d)
        closedir(d);
    rmdir(tmpdir);
}

int main(void)
{
    h_seed("test_io");
    CHECK_OK(NULL, convolve_context_create(&ctx));
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/convolve_test_io.XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        fprintf(stderr, "test_io: cannot make a temporary directory: %s\n", strerror(errno));
        return 1;
    }
#ifdef CONVOLVE_HAVE_TIFF
    TIFFSetWarningHandler(NULL); /* the test's own libtiff calls: quiet */
#endif
    arrays();
    conversion();
    round_trips();
    npy_inputs();
    npy_inspect();
    png_inputs();
    jpeg_inputs();
    pnm_inputs();
    text_inputs();
    tiff_layouts();
    tiff_writer();
    tiff_inputs();
    load_errors();
    format_detection();
    format_capacity();
    save_errors();
    temp_files();
    file_settings();
    const char *rounds = getenv("CONVOLVE_TEST_MUTATIONS"); /* more for a longer soak */
    mutations(rounds ? atoi(rounds) : 400);
    cleanup();
    convolve_context_free(ctx);
    return h_finish("test_io");
}
