/*
 * _core.c - the convolve package's C extension: plans of libconvolve (its
 * public API, include/convolve.h, only) run on Python buffers (PEP 3118) or
 * on device pointers. It uses the Python C API alone (no numpy C API), so one
 * source builds against numpy 1.x and 2.x.
 *
 * A Plan owns a context and a convolve_plan. It is made from a layout the
 * Python layer mapped from the arrays (up to 3 spatial axes and a channel
 * axis, plus outer batch loops of (count, input step, output step) for the
 * array's remaining axes) and the arrays' own shape and strides, which every
 * execution's buffers must match; at creation the bytes the layout and the
 * loops reach are checked to lie within the arrays' spans, so a mapping
 * mistake can raise but never touch memory outside the arrays. Executions
 * release the GIL and hold the plan's lock (a context serves one thread at
 * a time); on the main thread, long ones check for signals through the
 * plan's progress callback (check_signals) and stop with the handler's
 * exception (KeyboardInterrupt).
 *
 * HostBuffer holds pinned host memory of libconvolve's pool
 * (convolve_host_alloc) behind the buffer protocol, for the numpy arrays
 * the package makes for GPU runs; the pool gets it back with the last
 * reference.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convolve.h"

#define CORE_MAX_NDIM 64 /* numpy 2's limit (numpy 1: 32) */

static PyObject *core_error; /* convolve.ConvolveError (a RuntimeError) */

/* ---- errors ------------------------------------------------------------- */

/* Raises the Python exception for a libconvolve status, with the context's message. */
static PyObject *raise_status(convolve_status st, const convolve_context *ctx, const char *what)
{
    const char *msg = ctx ? convolve_last_error(ctx) : "";
    PyObject *type;
    switch (st) {
    case CONVOLVE_ERROR_INVALID_ARGUMENT:
    case CONVOLVE_ERROR_BAD_LAYOUT:
    case CONVOLVE_ERROR_BAD_FILTER:
    case CONVOLVE_ERROR_BAD_ORIGIN:
    case CONVOLVE_ERROR_SIZE_OVERFLOW: type = PyExc_ValueError; break;
    case CONVOLVE_ERROR_OUT_OF_MEMORY: type = PyExc_MemoryError; break;
    default: type = core_error; break;
    }
    PyErr_Format(type, "%s: %s (%s)", what, (msg && *msg) ? msg : convolve_status_description(st),
                 convolve_status_name(st));
    return NULL;
}

/* ---- argument parsing helpers -------------------------------------------- */

/* Reads a tuple of at most `max` integers into out; returns the count or -1. */
static int read_ssize_tuple(PyObject *obj, Py_ssize_t *out, int max, const char *what)
{
    if (!PyTuple_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a tuple", what);
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(obj);
    if (n > max) {
        PyErr_Format(PyExc_ValueError, "%s has %zd entries; at most %d", what, n, max);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t v = PyLong_AsSsize_t(PyTuple_GET_ITEM(obj, i));
        if (v == -1 && PyErr_Occurred())
            return -1;
        out[i] = v;
    }
    return (int)n;
}

static int parse_dtype(PyObject *name, convolve_dtype *dt)
{
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    if (!s) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "dtype must be a str");
        return -1;
    }
    if (convolve_dtype_parse(s, dt) != CONVOLVE_OK) {
        PyErr_Format(PyExc_ValueError, "unsupported dtype '%s' for libconvolve", s);
        return -1;
    }
    return 0;
}

/* (dtype, shape, channels, strides, channel_stride) -> layout */
static int parse_layout(PyObject *obj, convolve_layout *l, const char *what)
{
    PyObject *dt, *shape, *strides;
    Py_ssize_t channels, cstride;
    if (!PyTuple_Check(obj) ||
        !PyArg_ParseTuple(obj, "OOnOn", &dt, &shape, &channels, &strides, &cstride)) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "%s layout must be a tuple", what);
        return -1;
    }
    memset(l, 0, sizeof *l);
    if (parse_dtype(dt, &l->dtype) < 0)
        return -1;
    Py_ssize_t sh[CONVOLVE_MAX_DIMS], st[CONVOLVE_MAX_DIMS];
    int n = read_ssize_tuple(shape, sh, CONVOLVE_MAX_DIMS, "layout shape");
    if (n < 0)
        return -1;
    if (read_ssize_tuple(strides, st, CONVOLVE_MAX_DIMS, "layout strides") != n) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "%s layout: shape and strides differ in length", what);
        return -1;
    }
    if (n < 1 || channels < 1) {
        PyErr_Format(PyExc_ValueError, "%s layout: %d axes and %zd channels", what, n, channels);
        return -1;
    }
    l->ndim = n;
    for (int a = 0; a < n; a++) {
        if (sh[a] < 1) {
            PyErr_Format(PyExc_ValueError, "%s layout: extent %zd", what, sh[a]);
            return -1;
        }
        l->shape[a] = (size_t)sh[a];
        l->strides[a] = st[a];
    }
    l->channels = (size_t)channels;
    l->channel_stride = cstride;
    return 0;
}

/* ---- spans ---------------------------------------------------------------- */

/* Lowest and one-past-highest byte offsets (from element 0) that `n` axes of
 * extents ext and strides str reach, elements of `item` bytes; -1 on overflow. */
static int span_of(int n, const Py_ssize_t *ext, const Py_ssize_t *str, Py_ssize_t item,
                   Py_ssize_t *lo, Py_ssize_t *hi)
{
    Py_ssize_t l = 0, h = 0;
    for (int a = 0; a < n; a++) {
        if (ext[a] < 1)
            return -1;
        Py_ssize_t r;
        if (__builtin_mul_overflow(ext[a] - 1, str[a], &r))
            return -1;
        if (r < 0 ? __builtin_add_overflow(l, r, &l) : __builtin_add_overflow(h, r, &h))
            return -1;
    }
    if (__builtin_add_overflow(h, item, &h))
        return -1;
    *lo = l;
    *hi = h;
    return 0;
}

/* ---- the Plan type ---------------------------------------------------------- */

typedef struct {
    int ndim;
    Py_ssize_t itemsize;
    char format; /* struct code: f d B H */
    Py_ssize_t shape[CORE_MAX_NDIM];
    Py_ssize_t strides[CORE_MAX_NDIM];
} expected_array;

typedef struct {
    PyObject_HEAD convolve_context *ctx;
    convolve_plan *plan;
    PyThread_type_lock lock;
    int device; /* 1: a CUDA plan run on device pointers */
    int nbatch;
    Py_ssize_t batch_count[CORE_MAX_NDIM];
    Py_ssize_t batch_in[CORE_MAX_NDIM], batch_out[CORE_MAX_NDIM];
    Py_ssize_t in_lo, in_hi, out_lo, out_hi; /* byte spans of the arrays */
    expected_array in, out;
    int on_main;       /* this execution runs on the main thread */
    double last_check; /* when signals were last checked (seconds) */
} PlanObject;

static char format_of(convolve_dtype dt)
{
    switch (dt) {
    case CONVOLVE_FLOAT32: return 'f';
    case CONVOLVE_FLOAT64: return 'd';
    case CONVOLVE_UINT8: return 'B';
    default: return 'H';
    }
}

/* (shape, strides) of an N-d array -> expected_array */
static int parse_expected(PyObject *shape, PyObject *strides, convolve_dtype dt, expected_array *e,
                          const char *what)
{
    e->itemsize = (Py_ssize_t)convolve_dtype_size(dt);
    e->format = format_of(dt);
    int n = read_ssize_tuple(shape, e->shape, CORE_MAX_NDIM, what);
    if (n < 0)
        return -1;
    if (read_ssize_tuple(strides, e->strides, CORE_MAX_NDIM, what) != n) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "%s: shape and strides differ in length", what);
        return -1;
    }
    e->ndim = n;
    return 0;
}

/* Parses the filter spec and creates the filter:
 *   ("dense", shape, weights)          weights: a buffer of float64, C order
 *   ("separable", (taps0, taps1, ...)) each a buffer of float64 */
static convolve_filter *make_filter(convolve_context *ctx, PyObject *spec)
{
    const char *kind;
    PyObject *a, *b = NULL;
    if (!PyTuple_Check(spec) || !PyArg_ParseTuple(spec, "sO|O", &kind, &a, &b)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "filter must be a tuple");
        return NULL;
    }
    convolve_filter *f = NULL;
    convolve_status st = CONVOLVE_OK; /* set on every path that reaches its test */
    if (strcmp(kind, "dense") == 0 && b) {
        Py_ssize_t sh[CONVOLVE_MAX_DIMS];
        int n = read_ssize_tuple(a, sh, CONVOLVE_MAX_DIMS, "filter shape");
        if (n < 0)
            return NULL;
        size_t shape[CONVOLVE_MAX_DIMS], count = 1;
        for (int i = 0; i < n; i++) {
            if (sh[i] < 1) {
                PyErr_SetString(PyExc_ValueError, "filter extents must be positive");
                return NULL;
            }
            shape[i] = (size_t)sh[i];
            if (__builtin_mul_overflow(count, shape[i], &count)) {
                PyErr_SetString(PyExc_ValueError, "filter too large");
                return NULL;
            }
        }
        Py_buffer w;
        if (PyObject_GetBuffer(b, &w, PyBUF_SIMPLE) < 0)
            return NULL;
        if ((size_t)w.len != count * sizeof(double)) {
            PyBuffer_Release(&w);
            PyErr_SetString(PyExc_ValueError, "filter weights do not match its shape");
            return NULL;
        }
        double *copy = malloc(w.len ? (size_t)w.len : 1);
        if (!copy) {
            PyBuffer_Release(&w);
            PyErr_NoMemory();
            return NULL;
        }
        memcpy(copy, w.buf, (size_t)w.len); /* aligned doubles whatever the buffer's alignment */
        PyBuffer_Release(&w);
        st = convolve_filter_create(ctx, &f, n, shape, copy);
        free(copy);
    } else if (strcmp(kind, "separable") == 0 && !b) {
        if (!PyTuple_Check(a) || PyTuple_GET_SIZE(a) < 1 ||
            PyTuple_GET_SIZE(a) > CONVOLVE_MAX_DIMS) {
            PyErr_SetString(PyExc_ValueError, "separable filter: a tuple of 1 to 3 tap buffers");
            return NULL;
        }
        int n = (int)PyTuple_GET_SIZE(a);
        size_t lengths[CONVOLVE_MAX_DIMS];
        double *taps[CONVOLVE_MAX_DIMS] = {NULL, NULL, NULL};
        int ok = 1;
        for (int i = 0; i < n && ok; i++) {
            Py_buffer w;
            if (PyObject_GetBuffer(PyTuple_GET_ITEM(a, i), &w, PyBUF_SIMPLE) < 0) {
                ok = 0;
                break;
            }
            if (w.len < (Py_ssize_t)sizeof(double) || w.len % (Py_ssize_t)sizeof(double)) {
                PyErr_SetString(PyExc_ValueError,
                                "separable filter: taps must hold float64 values");
                ok = 0;
            } else if (!(taps[i] = malloc((size_t)w.len))) {
                PyErr_NoMemory();
                ok = 0;
            } else {
                memcpy(taps[i], w.buf, (size_t)w.len);
                lengths[i] = (size_t)w.len / sizeof(double);
            }
            PyBuffer_Release(&w);
        }
        if (ok)
            st = convolve_filter_create_separable(ctx, &f, n, lengths, (const double *const *)taps);
        for (int i = 0; i < n; i++)
            free(taps[i]);
        if (!ok)
            return NULL;
    } else {
        PyErr_Format(PyExc_ValueError, "unknown filter kind '%s'", kind);
        return NULL;
    }
    if (st != CONVOLVE_OK) {
        raise_status(st, ctx, "filter");
        return NULL;
    }
    return f;
}

/* ---- signals during executions ------------------------------------------ */

/* Seconds between two checks for signals during one execution. */
#define CORE_SIGNAL_INTERVAL 0.05

static PyObject *main_thread_fn; /* threading.main_thread */

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 1 if the calling thread (holding the GIL) is Python's main thread, the
 * only one that runs signal handlers; 0 otherwise or when that cannot be
 * told (no exception left set). */
static int on_main_thread(void)
{
    PyObject *t = main_thread_fn ? PyObject_CallObject(main_thread_fn, NULL) : NULL;
    PyObject *ident = t ? PyObject_GetAttrString(t, "ident") : NULL;
    unsigned long id = ident ? PyLong_AsUnsignedLong(ident) : 0;
    Py_XDECREF(ident);
    Py_XDECREF(t);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return ident && id == PyThread_get_thread_ident();
}

/* The progress callback of every plan: libconvolve calls it on the thread
 * that called execute, with the GIL released, at the start of each run and
 * after each slab (CPU runs longer than a few tens of milliseconds are cut
 * into slabs; CUDA runs on host memory stream in slabs). On the main
 * thread, at most every CORE_SIGNAL_INTERVAL seconds, it takes the GIL and
 * runs the pending signal handlers (PyErr_CheckSignals); one that raised
 * (KeyboardInterrupt for Ctrl-C) cancels the run, and its exception stays
 * set for execute to raise. Runs shorter than the interval never take the
 * GIL. */
static int check_signals(void *user, const convolve_progress *progress)
{
    PlanObject *self = user;
    if (!self->on_main || progress->slabs_done == progress->slabs_total)
        return 0;
    double t = mono_s();
    if (t - self->last_check < CORE_SIGNAL_INTERVAL)
        return 0;
    self->last_check = t;
    PyGILState_STATE g = PyGILState_Ensure();
    int raised = PyErr_CheckSignals() < 0;
    PyGILState_Release(g);
    return raised;
}

/* (operation, mode, cval, origins, backend, strategy or None, threads, autotune
 * [, integer cast "round" or "truncate", divisor]) */
static int parse_options(PyObject *obj, convolve_options *o, PyObject **strategy_keep)
{
    const char *op, *mode, *backend, *cast = "round";
    double cval, divisor = 0.0;
    PyObject *origins, *strategy;
    int threads, autotune;
    if (!PyTuple_Check(obj) ||
        !PyArg_ParseTuple(obj, "ssdOsOip|sd", &op, &mode, &cval, &origins, &backend, &strategy,
                          &threads, &autotune, &cast, &divisor)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "options must be a tuple");
        return -1;
    }
    convolve_options_init(o);
    if (strcmp(op, "correlate") == 0)
        o->operation = CONVOLVE_OP_CORRELATE;
    else if (strcmp(op, "convolve") == 0)
        o->operation = CONVOLVE_OP_CONVOLVE;
    else {
        PyErr_Format(PyExc_ValueError, "unknown operation '%s'", op);
        return -1;
    }
    if (convolve_mode_parse(mode, &o->mode) != CONVOLVE_OK) {
        PyErr_Format(PyExc_ValueError, "unknown mode '%s'", mode);
        return -1;
    }
    if (convolve_backend_parse(backend, &o->backend) != CONVOLVE_OK) {
        PyErr_Format(PyExc_ValueError, "unknown backend '%s'; use 'auto', 'cpu' or 'cuda'",
                     backend);
        return -1;
    }
    o->cval = cval;
    Py_ssize_t org[CONVOLVE_MAX_DIMS] = {0, 0, 0};
    if (read_ssize_tuple(origins, org, CONVOLVE_MAX_DIMS, "origins") < 0)
        return -1;
    for (int a = 0; a < CONVOLVE_MAX_DIMS; a++)
        o->origin[a] = org[a];
    if (strategy != Py_None) {
        const char *s = PyUnicode_Check(strategy) ? PyUnicode_AsUTF8(strategy) : NULL;
        if (!s) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "strategy must be a str or None");
            return -1;
        }
        o->strategy = s; /* the plan copies what it needs; strategy outlives the call */
        *strategy_keep = strategy;
    }
    o->threads = threads;
    o->autotune = autotune;
    o->progress = check_signals; /* progress_user: the Plan, set by make_plan */
    if (strcmp(cast, "truncate") == 0)
        o->integer_cast = CONVOLVE_CAST_TRUNCATE;
    else if (strcmp(cast, "round") != 0) {
        PyErr_Format(PyExc_ValueError, "unknown integer cast '%s'; use 'round' or 'truncate'",
                     cast);
        return -1;
    }
    o->divisor = divisor;
    return 0;
}

static void Plan_dealloc(PlanObject *self)
{
    convolve_plan_free(self->plan);
    convolve_context_free(self->ctx);
    if (self->lock)
        PyThread_free_lock(self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Plan(in_layout, out_layout, filter, options, in_array, out_array, batch, device)
 *   in_array/out_array: (shape, strides) of the N-d arrays the layouts map
 *   batch: ((count, in_step, out_step), ...) loops outside the layout */
/* The batch loops ((count, in_step, out_step) tuples) into self; -1 with
 * an exception set when they are not valid. */
static int parse_batch(PlanObject *self, PyObject *batch)
{
    Py_ssize_t nb = PyTuple_GET_SIZE(batch);
    if (nb > CORE_MAX_NDIM) {
        PyErr_SetString(PyExc_ValueError, "too many batch loops");
        return -1;
    }
    self->nbatch = (int)nb;
    for (Py_ssize_t i = 0; i < nb; i++) {
        PyObject *t = PyTuple_GET_ITEM(batch, i);
        if (!PyTuple_Check(t) || !PyArg_ParseTuple(t, "nnn", &self->batch_count[i],
                                                   &self->batch_in[i], &self->batch_out[i])) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "batch loops are (count, in_step, out_step)");
            return -1;
        }
        if (self->batch_count[i] < 1) {
            PyErr_SetString(PyExc_ValueError, "batch counts must be positive");
            return -1;
        }
    }
    return 0;
}

/* Sets each array's span (self->in_lo .. out_hi) and checks that what the
 * layouts and the batch loops reach lies within it; -1 with an exception
 * set when not. */
static int check_spans(PlanObject *self, const convolve_layout *in, const convolve_layout *out)
{
    Py_ssize_t ext[CONVOLVE_MAX_DIMS + 1 + CORE_MAX_NDIM],
        si[CONVOLVE_MAX_DIMS + 1 + CORE_MAX_NDIM], so[CONVOLVE_MAX_DIMS + 1 + CORE_MAX_NDIM];
    int n = 0;
    for (int a = 0; a < in->ndim; a++) {
        ext[n] = (Py_ssize_t)in->shape[a];
        si[n] = in->strides[a];
        so[n++] = out->strides[a];
    }
    ext[n] = (Py_ssize_t)in->channels;
    si[n] = in->channel_stride;
    so[n++] = out->channel_stride;
    for (int i = 0; i < self->nbatch; i++) {
        ext[n] = self->batch_count[i];
        si[n] = self->batch_in[i];
        so[n++] = self->batch_out[i];
    }
    Py_ssize_t lo, hi;
    if (span_of(self->in.ndim, self->in.shape, self->in.strides, self->in.itemsize, &self->in_lo,
                &self->in_hi) < 0 ||
        span_of(self->out.ndim, self->out.shape, self->out.strides, self->out.itemsize,
                &self->out_lo, &self->out_hi) < 0) {
        PyErr_SetString(PyExc_ValueError, "array shape and strides overflow");
        return -1;
    }
    if (span_of(n, ext, si, self->in.itemsize, &lo, &hi) < 0 || lo < self->in_lo ||
        hi > self->in_hi) {
        PyErr_SetString(PyExc_ValueError, "internal: the input layout reaches outside the array");
        return -1;
    }
    if (span_of(n, ext, so, self->out.itemsize, &lo, &hi) < 0 || lo < self->out_lo ||
        hi > self->out_hi) {
        PyErr_SetString(PyExc_ValueError, "internal: the output layout reaches outside the array");
        return -1;
    }
    return 0;
}

/* The lock, the context and the plan of self (a CUDA plan for device
 * arrays); -1 with an exception set on failure. */
static int make_plan(PlanObject *self, PyObject *filt, const convolve_layout *in,
                     const convolve_layout *out, const convolve_options *o, int device)
{
    self->lock = PyThread_allocate_lock();
    if (!self->lock) {
        PyErr_NoMemory();
        return -1;
    }
    convolve_status st = convolve_context_create(&self->ctx);
    if (st != CONVOLVE_OK) {
        raise_status(st, NULL, "context");
        return -1;
    }
    convolve_filter *f = make_filter(self->ctx, filt);
    if (!f)
        return -1;
    convolve_options opt = *o;
    opt.progress_user = self;
    o = &opt;
    Py_BEGIN_ALLOW_THREADS st = convolve_plan_create(self->ctx, &self->plan, in, out, f, o);
    Py_END_ALLOW_THREADS convolve_filter_free(f);
    if (st != CONVOLVE_OK) {
        raise_status(st, self->ctx, "plan");
        return -1;
    }
    if (device && convolve_plan_backend(self->plan) != CONVOLVE_BACKEND_CUDA) {
        PyErr_SetString(core_error, "plan: device arrays need a CUDA plan");
        return -1;
    }
    return 0;
}

static PyObject *Plan_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *lin, *lout, *filt, *opts, *ain, *aout, *batch;
    int device;
    if (kwds && PyDict_Size(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Plan takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOOOO!O!O!p", &lin, &lout, &filt, &opts, &PyTuple_Type, &ain,
                          &PyTuple_Type, &aout, &PyTuple_Type, &batch, &device))
        return NULL;

    convolve_layout in, out;
    convolve_options o;
    PyObject *strategy = NULL;
    if (parse_layout(lin, &in, "input") < 0 || parse_layout(lout, &out, "output") < 0 ||
        parse_options(opts, &o, &strategy) < 0)
        return NULL;

    PlanObject *self = (PlanObject *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    self->device = device;
    if (PyTuple_GET_SIZE(ain) != 2 || PyTuple_GET_SIZE(aout) != 2) {
        PyErr_SetString(PyExc_ValueError, "arrays must be (shape, strides)");
        goto fail;
    }
    if (parse_expected(PyTuple_GET_ITEM(ain, 0), PyTuple_GET_ITEM(ain, 1), in.dtype, &self->in,
                       "input array") < 0 ||
        parse_expected(PyTuple_GET_ITEM(aout, 0), PyTuple_GET_ITEM(aout, 1), out.dtype, &self->out,
                       "output array") < 0)
        goto fail;

    if (parse_batch(self, batch) < 0 || check_spans(self, &in, &out) < 0 ||
        make_plan(self, filt, &in, &out, &o, device) < 0)
        goto fail;
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

/* 1 if the buffer has the expected element type, shape and strides. */
static int buffer_matches(const Py_buffer *b, const expected_array *e)
{
    if (b->itemsize != e->itemsize || b->ndim != e->ndim || !b->format)
        return 0;
    const char *f = b->format;
    if (*f == '@' || *f == '=' || *f == '<') {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        if (*f == '<')
            return 0;
#endif
        f++;
    }
    if (f[0] != e->format || f[1] != '\0')
        return 0;
    for (int a = 0; a < e->ndim; a++) {
        if (b->shape[a] != e->shape[a])
            return 0;
        Py_ssize_t s = b->strides ? b->strides[a] : 0;
        if (e->shape[a] > 1 && s != e->strides[a])
            return 0;
    }
    return 1;
}

/* Runs every batch slice; host pointers when stream is NULL and !device. */
static convolve_status run_batches(PlanObject *self, const char *in, char *out, void *stream)
{
    Py_ssize_t idx[CORE_MAX_NDIM] = {0};
    for (;;) {
        const char *pi = in;
        char *po = out;
        for (int i = 0; i < self->nbatch; i++) {
            pi += idx[i] * self->batch_in[i];
            po += idx[i] * self->batch_out[i];
        }
        convolve_status st = self->device ? convolve_execute_device(self->plan, pi, po, stream)
                                          : convolve_execute(self->plan, pi, po);
        if (st != CONVOLVE_OK)
            return st;
        int i = self->nbatch - 1;
        for (; i >= 0; i--) {
            if (++idx[i] < self->batch_count[i])
                break;
            idx[i] = 0;
        }
        if (i < 0)
            return CONVOLVE_OK;
    }
}

/* 1 if two buffers are the same elements: one pointer, element size,
 * shape and strides. */
static int same_elements(const Py_buffer *a, const Py_buffer *b)
{
    if (a->buf != b->buf || a->itemsize != b->itemsize || a->ndim != b->ndim)
        return 0;
    for (int k = 0; k < a->ndim; k++)
        if (a->shape[k] != b->shape[k] || a->strides[k] != b->strides[k])
            return 0;
    return 1;
}

static PyObject *Plan_execute(PlanObject *self, PyObject *args)
{
    PyObject *ain, *aout;
    if (!PyArg_ParseTuple(args, "OO", &ain, &aout))
        return NULL;
    if (self->device) {
        PyErr_SetString(PyExc_TypeError, "this plan runs on device pointers: use execute_device");
        return NULL;
    }
    Py_buffer bi, bo;
    if (PyObject_GetBuffer(ain, &bi, PyBUF_RECORDS_RO) < 0)
        return NULL;
    if (PyObject_GetBuffer(aout, &bo, PyBUF_RECORDS) < 0) {
        PyBuffer_Release(&bi);
        return NULL;
    }
    convolve_status st = CONVOLVE_OK;
    const char *bad = NULL;
    if (!buffer_matches(&bi, &self->in))
        bad = "the input does not match the plan (dtype, shape or strides)";
    else if (!buffer_matches(&bo, &self->out))
        bad = "the output does not match the plan (dtype, shape or strides)";
    else if (!same_elements(&bi, &bo)) { /* the same elements: libconvolve runs in place */
        uintptr_t i0 = (uintptr_t)bi.buf + (uintptr_t)self->in_lo;
        uintptr_t i1 = (uintptr_t)bi.buf + (uintptr_t)self->in_hi;
        uintptr_t o0 = (uintptr_t)bo.buf + (uintptr_t)self->out_lo;
        uintptr_t o1 = (uintptr_t)bo.buf + (uintptr_t)self->out_hi;
        if (o0 < i1 && i0 < o1)
            bad = "the output overlaps the input";
    }
    if (!bad) {
        const int on_main = on_main_thread();
        Py_BEGIN_ALLOW_THREADS PyThread_acquire_lock(self->lock, WAIT_LOCK);
        self->on_main = on_main;
        self->last_check = mono_s();
        st = run_batches(self, (const char *)bi.buf, (char *)bo.buf, NULL);
        self->on_main = 0;
        PyThread_release_lock(self->lock);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&bi);
    PyBuffer_Release(&bo);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, bad);
        return NULL;
    }
    if (PyErr_Occurred()) /* a signal handler raised during the run (it was cancelled) */
        return NULL;
    if (st != CONVOLVE_OK)
        return raise_status(st, self->ctx, "execute");
    Py_RETURN_NONE;
}

/* execute_device(in_ptr, out_ptr, stream_ptr): device pointers to element 0
 * of arrays laid out as planned; asynchronous on the stream. */
static PyObject *Plan_execute_device(PlanObject *self, PyObject *args)
{
    unsigned long long pin, pout, pstream;
    if (!PyArg_ParseTuple(args, "KKK", &pin, &pout, &pstream))
        return NULL;
    if (!self->device) {
        PyErr_SetString(PyExc_TypeError, "this plan runs on host buffers: use execute");
        return NULL;
    }
    if (!pin || !pout) {
        PyErr_SetString(PyExc_ValueError, "device pointer is NULL");
        return NULL;
    }
    convolve_status st;
    Py_BEGIN_ALLOW_THREADS PyThread_acquire_lock(self->lock, WAIT_LOCK);
    st = run_batches(self, (const char *)(uintptr_t)pin, (char *)(uintptr_t)pout,
                     (void *)(uintptr_t)pstream);
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS if (st != CONVOLVE_OK) return raise_status(st, self->ctx,
                                                                    "execute_device");
    Py_RETURN_NONE;
}

static PyObject *Plan_get_strategy(PlanObject *self, void *closure)
{
    const char *s = convolve_plan_strategy(self->plan);
    return PyUnicode_FromString(s ? s : "");
}

static PyObject *Plan_get_backend(PlanObject *self, void *closure)
{
    const char *s = convolve_backend_name(convolve_plan_backend(self->plan));
    return PyUnicode_FromString(s ? s : "");
}

static PyObject *Plan_get_spans(PlanObject *self, void *closure)
{
    return Py_BuildValue("(nnnn)", self->in_lo, self->in_hi, self->out_lo, self->out_hi);
}

static PyMethodDef Plan_methods[] = {
    {"execute", (PyCFunction)Plan_execute, METH_VARARGS,
     "execute(input, output): run on host buffers shaped as planned (GIL released)."},
    {"execute_device", (PyCFunction)Plan_execute_device, METH_VARARGS,
     "execute_device(in_ptr, out_ptr, stream): run on device pointers, asynchronously."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Plan_getset[] = {
    {"strategy", (getter)Plan_get_strategy, NULL, "the strategy the plan runs", NULL},
    {"backend", (getter)Plan_get_backend, NULL, "'cpu' or 'cuda'", NULL},
    {"spans", (getter)Plan_get_spans, NULL, "byte spans of input and output", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject PlanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "convolve._core.Plan",
    .tp_basicsize = sizeof(PlanObject),
    .tp_dealloc = (destructor)Plan_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A libconvolve plan bound to array layouts, a filter and options.",
    .tp_methods = Plan_methods,
    .tp_getset = Plan_getset,
    .tp_new = Plan_new,
};

/* ---- pinned host memory of the pool -------------------------------------- */

/* A buffer of convolve_host_alloc, exposed through the buffer protocol
 * (writable bytes); given back to the pool when the last reference goes
 * (numpy arrays made on it hold one). */
typedef struct {
    PyObject_HEAD void *ptr;
    Py_ssize_t size;
} HostBufferObject;

static int HostBuffer_getbuffer(HostBufferObject *self, Py_buffer *view, int flags)
{
    return PyBuffer_FillInfo(view, (PyObject *)self, self->ptr, self->size, 0, flags);
}

static void HostBuffer_dealloc(HostBufferObject *self)
{
    convolve_host_free(self->ptr);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyBufferProcs HostBuffer_as_buffer = {
    .bf_getbuffer = (getbufferproc)HostBuffer_getbuffer,
};

static PyTypeObject HostBufferType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "convolve._core.HostBuffer",
    .tp_doc = "Pinned host memory from libconvolve's pool (convolve_host_alloc).",
    .tp_basicsize = sizeof(HostBufferObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)HostBuffer_dealloc,
    .tp_as_buffer = &HostBuffer_as_buffer,
};

static convolve_context *host_ctx; /* the pool calls' context (the GIL held) */

static convolve_context *pool_context(void)
{
    if (!host_ctx && convolve_context_create(&host_ctx) != CONVOLVE_OK)
        host_ctx = NULL;
    return host_ctx;
}

/* host_alloc(nbytes): a HostBuffer of nbytes the pool holds free now, or
 * None (none fits, CUDA not started or not there, any failure: the caller
 * then makes an ordinary array). */
static PyObject *core_host_alloc(PyObject *m, PyObject *arg)
{
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n < 0 && PyErr_Occurred())
        return NULL;
    convolve_context *ctx = pool_context();
    void *ptr = NULL;
    if (n <= 0 || !ctx ||
        convolve_host_alloc(ctx, (size_t)n, CONVOLVE_HOST_ALLOC_POOLED, &ptr) != CONVOLVE_OK ||
        !ptr)
        Py_RETURN_NONE;
    HostBufferObject *b = PyObject_New(HostBufferObject, &HostBufferType);
    if (!b) {
        convolve_host_free(ptr);
        return NULL;
    }
    b->ptr = ptr;
    b->size = n;
    return (PyObject *)b;
}

/* host_reserve(nbytes): convolve_host_reserve; failures are ignored. */
static PyObject *core_host_reserve(PyObject *m, PyObject *arg)
{
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n < 0 && PyErr_Occurred())
        return NULL;
    convolve_context *ctx = pool_context();
    if (n > 0 && ctx)
        (void)convolve_host_reserve(ctx, (size_t)n);
    Py_RETURN_NONE;
}

/* ---- module functions ---------------------------------------------------- */

static PyObject *core_version(PyObject *m, PyObject *noargs)
{
    return PyUnicode_FromString(convolve_version_string());
}

static PyObject *core_backend_built(PyObject *m, PyObject *arg)
{
    const char *s = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    convolve_backend b;
    if (!s || convolve_backend_parse(s, &b) != CONVOLVE_OK) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "backend: 'auto', 'cpu' or 'cuda'");
        return NULL;
    }
    return PyBool_FromLong(convolve_backend_built(b));
}

static PyObject *core_strategies(PyObject *m, PyObject *noargs)
{
    size_t n = convolve_strategy_count();
    PyObject *list = PyList_New(0);
    if (!list)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        convolve_strategy_info info;
        if (convolve_strategy_get(i, &info) != CONVOLVE_OK)
            continue;
        PyObject *t = Py_BuildValue("(ssIs)", info.name, convolve_backend_name(info.backend),
                                    info.dims, info.summary);
        if (!t || PyList_Append(list, t) < 0) {
            Py_XDECREF(t);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(t);
    }
    return list;
}

static PyObject *core_device_info(PyObject *m, PyObject *noargs)
{
    convolve_context *ctx;
    convolve_status st = convolve_context_create(&ctx);
    if (st != CONVOLVE_OK)
        return raise_status(st, NULL, "context");
    convolve_device_info info;
    Py_BEGIN_ALLOW_THREADS st = convolve_device_query(ctx, &info);
    Py_END_ALLOW_THREADS if (st != CONVOLVE_OK)
    {
        raise_status(st, ctx, "device_query");
        convolve_context_free(ctx);
        return NULL;
    }
    convolve_context_free(ctx);
    return Py_BuildValue("{s:O,s:i,s:s,s:n,s:(ii),s:i,s:s}", "available",
                         info.available ? Py_True : Py_False, "device_count", info.device_count,
                         "name", info.name, "total_memory", (Py_ssize_t)info.total_memory,
                         "compute_capability", info.compute_major, info.compute_minor,
                         "multiprocessors", info.multiprocessors, "reason", info.reason);
}

static PyMethodDef core_methods[] = {
    {"version", core_version, METH_NOARGS, "The linked libconvolve's version string."},
    {"backend_built", core_backend_built, METH_O, "True if the backend was compiled in."},
    {"strategies", core_strategies, METH_NOARGS,
     "[(name, backend, dims bitmask, summary)] of the strategies built in."},
    {"device_info", core_device_info, METH_NOARGS, "The CUDA device libconvolve would use."},
    {"host_alloc", core_host_alloc, METH_O,
     "host_alloc(nbytes): a free pinned buffer of libconvolve's pool, or None."},
    {"host_reserve", core_host_reserve, METH_O,
     "host_reserve(nbytes): pins a buffer of nbytes into the pool in the background."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    "_core",
    "libconvolve plans on Python buffers and device pointers (convolve's C extension).",
    -1,
    core_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__core(void)
{
    if (PyType_Ready(&PlanType) < 0 || PyType_Ready(&HostBufferType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (!m)
        return NULL;
    core_error = PyErr_NewExceptionWithDoc(
        "convolve.ConvolveError",
        "libconvolve could not serve the request (a strategy that cannot serve the case, "
        "a backend that is not available, a device error).",
        PyExc_RuntimeError, NULL);
    if (!core_error || PyModule_AddObject(m, "ConvolveError", core_error) < 0) {
        Py_XDECREF(core_error);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(core_error);
    PyObject *threading = PyImport_ImportModule("threading");
    main_thread_fn = threading ? PyObject_GetAttrString(threading, "main_thread") : NULL;
    Py_XDECREF(threading);
    if (!main_thread_fn) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&PlanType);
    if (PyModule_AddObject(m, "Plan", (PyObject *)&PlanType) < 0) {
        Py_DECREF(&PlanType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
