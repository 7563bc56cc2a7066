/*
 * names.c - version queries and the names of statuses, element types, modes
 * and backends, with their parsers (file formats: src/io/format.c).
 */
#include "internal.h"

#include <string.h>

/* The kernels' mirrors of the public enums (src/kernel_math.h). */
_Static_assert(CVI_DTYPE_FLOAT32 == (int)CONVOLVE_FLOAT32 &&
                   CVI_DTYPE_FLOAT64 == (int)CONVOLVE_FLOAT64 &&
                   CVI_DTYPE_UINT8 == (int)CONVOLVE_UINT8 &&
                   CVI_DTYPE_UINT16 == (int)CONVOLVE_UINT16,
               "CVI_DTYPE_* must equal convolve_dtype");
_Static_assert(CVI_CAST_ROUND_SATURATE == (int)CONVOLVE_CAST_ROUND_SATURATE &&
                   CVI_CAST_TRUNCATE == (int)CONVOLVE_CAST_TRUNCATE,
               "CVI_CAST_* must mirror convolve_integer_cast");
_Static_assert(CVI_MODE_REFLECT == (int)CONVOLVE_MODE_REFLECT &&
                   CVI_MODE_CONSTANT == (int)CONVOLVE_MODE_CONSTANT &&
                   CVI_MODE_NEAREST == (int)CONVOLVE_MODE_NEAREST &&
                   CVI_MODE_MIRROR == (int)CONVOLVE_MODE_MIRROR &&
                   CVI_MODE_WRAP == (int)CONVOLVE_MODE_WRAP,
               "CVI_MODE_* must equal convolve_mode");

unsigned convolve_version_number(void)
{
    return CONVOLVE_VERSION_NUMBER;
}

const char *convolve_version_string(void)
{
    return CONVOLVE_VERSION_STRING;
}

typedef struct {
    const char *name;
    const char *description;
} status_text;

/* Indexed by status number; the numbers are fixed (include/convolve.h). */
static const status_text k_status[] = {
    {"CONVOLVE_OK", "success"},
    {"CONVOLVE_ERROR_INVALID_ARGUMENT", "invalid argument"},
    {"CONVOLVE_ERROR_BAD_LAYOUT", "bad array layout (dimensions, shape, channels or strides)"},
    {"CONVOLVE_ERROR_BAD_FILTER", "bad filter"},
    {"CONVOLVE_ERROR_BAD_ORIGIN", "origin outside the filter"},
    {"CONVOLVE_ERROR_SIZE_OVERFLOW", "size too large: byte count overflows"},
    {"CONVOLVE_ERROR_OUT_OF_MEMORY", "out of host memory"},
    {"CONVOLVE_ERROR_UNSUPPORTED", "not supported by the chosen strategy or format"},
    {"CONVOLVE_ERROR_BACKEND_UNAVAILABLE", "backend not built in or no usable device"},
    {"CONVOLVE_ERROR_DEVICE", "CUDA device error"},
    {"CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY", "out of device memory"},
    {"CONVOLVE_ERROR_IO", "file input/output error"},
    {"CONVOLVE_ERROR_FORMAT", "malformed or unsupported file content"},
    {"CONVOLVE_ERROR_INTERNAL", "internal error in libconvolve"},
    {"CONVOLVE_ERROR_CANCELLED", "cancelled by the progress callback"},
    {"CONVOLVE_ERROR_LIMIT", "an image declares more pixels than the context's limit"},
};

const char *convolve_status_name(convolve_status status)
{
    size_t i = (size_t)status;
    if (i < sizeof k_status / sizeof k_status[0])
        return k_status[i].name;
    return "CONVOLVE_STATUS_UNKNOWN";
}

const char *convolve_status_description(convolve_status status)
{
    size_t i = (size_t)status;
    if (i < sizeof k_status / sizeof k_status[0])
        return k_status[i].description;
    return "unknown status";
}

/* Looks `name` up in a NULL-terminated table; returns its index or -1. */
static int lookup(const char *const *table, const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; table[i]; i++)
        if (strcmp(table[i], name) == 0)
            return i;
    return -1;
}

static const char *const k_dtype[] = {"float32", "float64", "uint8", "uint16", NULL};
static const char *const k_mode[] = {"reflect", "constant", "nearest", "mirror", "wrap", NULL};
static const char *const k_backend[] = {"auto", "cpu", "cuda", NULL};

/* The names in a NULL-terminated table. */
#define COUNT_NAMES(table) (sizeof table / sizeof table[0] - 1)

/* Each table has a name for every value of its enum, in the enum's order. */
_Static_assert(sizeof k_status / sizeof k_status[0] == CONVOLVE_ERROR_LIMIT + 1,
               "a status without a name");
_Static_assert(COUNT_NAMES(k_dtype) == CONVOLVE_UINT16 + 1, "a dtype without a name");
_Static_assert(COUNT_NAMES(k_mode) == CONVOLVE_MODE_WRAP + 1, "a mode without a name");
_Static_assert(COUNT_NAMES(k_backend) == CONVOLVE_BACKEND_CUDA + 1, "a backend without a name");

size_t convolve_dtype_size(convolve_dtype dtype)
{
    switch (dtype) {
    case CONVOLVE_FLOAT32: return 4;
    case CONVOLVE_FLOAT64: return 8;
    case CONVOLVE_UINT8: return 1;
    case CONVOLVE_UINT16: return 2;
    }
    return 0;
}

const char *convolve_dtype_name(convolve_dtype dtype)
{
    return (unsigned)dtype < COUNT_NAMES(k_dtype) ? k_dtype[dtype] : NULL;
}

convolve_status convolve_dtype_parse(const char *name, convolve_dtype *dtype)
{
    int i = lookup(k_dtype, name);
    if (i < 0 || !dtype)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    *dtype = (convolve_dtype)i;
    return CONVOLVE_OK;
}

const char *convolve_mode_name(convolve_mode mode)
{
    return (unsigned)mode < COUNT_NAMES(k_mode) ? k_mode[mode] : NULL;
}

convolve_status convolve_mode_parse(const char *name, convolve_mode *mode)
{
    int i = lookup(k_mode, name);
    if (i < 0 || !mode)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    *mode = (convolve_mode)i;
    return CONVOLVE_OK;
}

const char *convolve_backend_name(convolve_backend backend)
{
    return (unsigned)backend < COUNT_NAMES(k_backend) ? k_backend[backend] : NULL;
}

convolve_status convolve_backend_parse(const char *name, convolve_backend *backend)
{
    int i = lookup(k_backend, name);
    if (i < 0 || !backend)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    *backend = (convolve_backend)i;
    return CONVOLVE_OK;
}
