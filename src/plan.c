/*
 * plan.c - plans: validation of everything a convolution is given (once, at
 * the API boundary), the canonical problem every backend receives, the choice
 * of backend and strategy, and execution on host or device memory.
 */
#include "internal.h"
#include "layout.h"
#include "cpu/cpu_backend.h"
#include "cuda/backend.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Under backend AUTO, the GPU is used when it is usable and the work
 * (outputs x filter taps) reaches this; below it, transfers dominate. */
#define CVI_AUTO_CUDA_MIN_WORK ((size_t)1 << 24)

void convolve_options_init(convolve_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->operation = CONVOLVE_OP_CONVOLVE;
    o->mode = CONVOLVE_MODE_REFLECT;
    o->backend = CONVOLVE_BACKEND_AUTO;
}

static convolve_status check_options(convolve_context *ctx, const convolve_options *o)
{
    if (o->operation != CONVOLVE_OP_CONVOLVE && o->operation != CONVOLVE_OP_CORRELATE)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "unknown operation %d",
                         (int)o->operation);
    if (!convolve_mode_name(o->mode))
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "unknown boundary mode %d",
                         (int)o->mode);
    if (!convolve_backend_name(o->backend))
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "unknown backend %d",
                         (int)o->backend);
    if (o->autotune != 0 && o->autotune != 1)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "autotune is %d; use 0 or 1",
                         o->autotune);
    if (o->threads < 0)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "threads is %d; use 0 for all, or a positive count", o->threads);
    return CONVOLVE_OK;
}

/* Builds the canonical problem (see internal.h) into plan->problem. */
static convolve_status build_problem(convolve_plan *plan, const convolve_filter *f,
                                     const convolve_options *o)
{
    convolve_context *ctx = plan->ctx;
    cvi_problem *p = &plan->problem;
    int nd = plan->in.ndim, pad = 3 - nd;
    memset(p, 0, sizeof *p);
    p->ndim = nd;
    p->channels = plan->in.channels;
    p->in_type = plan->in.dtype;
    p->out_type = plan->out.dtype;
    p->in_cstride = plan->in.channel_stride;
    p->out_cstride = plan->out.channel_stride;
    p->mode = (int)o->mode;
    p->cval = o->cval;
    p->threads = o->threads;
    int flip = o->operation == CONVOLVE_OP_CONVOLVE;
    for (int a = 0; a < 3; a++) {
        p->shape[a] = p->ksize[a] = 1;
        p->koff[a] = 0;
    }
    for (int a = 0; a < nd; a++) {
        size_t K = f->shape[a];
        ptrdiff_t origin = o->origin[a];
        ptrdiff_t lo = -(ptrdiff_t)(K / 2), hi = (ptrdiff_t)((K - 1) / 2);
        if (origin < lo || origin > hi)
            return cvi_error(ctx, CONVOLVE_ERROR_BAD_ORIGIN,
                             "origin %td on axis %d is outside the filter: with extent %zu it must "
                             "lie in [%td, %td]", origin, a, K, lo, hi);
        if (flip)
            origin = -origin - (K % 2 == 0 ? 1 : 0);
        p->shape[a + pad] = plan->in.shape[a];
        p->in_strides[a + pad] = plan->in.strides[a];
        p->out_strides[a + pad] = plan->out.strides[a];
        p->ksize[a + pad] = K;
        p->koff[a + pad] = (ptrdiff_t)(K / 2) + origin;
    }
    p->kcount = f->count;

    plan->weights = malloc(f->count * sizeof(double));
    if (!plan->weights)
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for the filter");
    for (size_t i = 0; i < f->count; i++) /* C-order reversal flips every axis */
        plan->weights[i] = f->dense[flip ? f->count - 1 - i : i];
    p->weights = plan->weights;

    if (f->separable) {
        static const double one = 1.0;
        for (int a = 0; a < 3; a++)
            p->taps[a] = &one;
        for (int a = 0; a < nd; a++) {
            size_t K = f->shape[a];
            plan->taps[a] = malloc(K * sizeof(double));
            if (!plan->taps[a])
                return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for taps");
            for (size_t i = 0; i < K; i++)
                plan->taps[a][i] = f->taps[a][flip ? K - 1 - i : i];
            p->taps[a + pad] = plan->taps[a];
        }
        p->separable = 1;
    }
    return CONVOLVE_OK;
}

/* Picks backend and strategy; on success plan->strategy is set and, for
 * CUDA, plan->backend_state is prepared. */
static convolve_status choose(convolve_plan *plan, const convolve_filter *filter,
                              const convolve_options *o)
{
    convolve_context *ctx = plan->ctx;
    const cvi_problem *p = &plan->problem;
    const char *name = o->strategy;
    int named = name && *name && strcmp(name, "auto") != 0;
    convolve_backend backend = o->backend;
    char why[CVI_REASON_SIZE] = "";

    if (backend == CONVOLVE_BACKEND_CUDA) {
        if (!convolve_backend_built(CONVOLVE_BACKEND_CUDA))
            return cvi_error(ctx, CONVOLVE_ERROR_BACKEND_UNAVAILABLE,
                             "the CUDA backend was asked for, but this libconvolve was built "
                             "without CUDA");
        if (!cvi_cuda_usable(ctx))
            return cvi_error(ctx, CONVOLVE_ERROR_BACKEND_UNAVAILABLE,
                             "the CUDA backend was asked for, but no GPU can be used: %s",
                             ctx->device.reason);
    }
    if (backend == CONVOLVE_BACKEND_AUTO) {
        int gpu = 0;
        if (named) /* the backend that has a strategy of that name; the GPU first */
            gpu = cvi_strategy_find(CONVOLVE_BACKEND_CUDA, name) && cvi_cuda_usable(ctx);
        else if (convolve_backend_built(CONVOLVE_BACKEND_CUDA)) {
            size_t count = convolve_layout_count(&plan->in), work;
            gpu = (!cvi_mul_size(count, p->kcount, &work) || work >= CVI_AUTO_CUDA_MIN_WORK) &&
                  cvi_cuda_usable(ctx);
        }
        backend = gpu ? CONVOLVE_BACKEND_CUDA : CONVOLVE_BACKEND_CPU;
    }

    const cvi_strategy *s = NULL;
    if (!named && o->autotune) {
        convolve_status st = cvi_tune(ctx, &plan->in, &plan->out, filter, o, p, backend, &s);
        if (st != CONVOLVE_OK)
            return st;
    }
    if (s) {
        /* the autotune's choice, which serves */
    } else if (named) {
        s = cvi_strategy_find(backend, name);
        if (!s && backend == CONVOLVE_BACKEND_CPU && o->backend == CONVOLVE_BACKEND_AUTO &&
            cvi_strategy_find(CONVOLVE_BACKEND_CUDA, name))
            return cvi_error(ctx, CONVOLVE_ERROR_BACKEND_UNAVAILABLE,
                             "strategy '%s' runs on the GPU, and no GPU can be used: %s", name,
                             convolve_backend_built(CONVOLVE_BACKEND_CUDA)
                                 ? ctx->device.reason
                                 : "this libconvolve was built without CUDA");
        if (!s) {
            char list[512] = "";
            for (size_t i = 0, n = cvi_strategy_total(); i < n; i++) {
                const cvi_strategy *t = cvi_strategy_at(i);
                if (t->backend == backend && (t->dims >> (p->ndim - 1) & 1)) {
                    strncat(list, " ", sizeof list - strlen(list) - 1);
                    strncat(list, t->name, sizeof list - strlen(list) - 1);
                }
            }
            return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                             "no strategy '%s' on the %s backend; %d-D strategies there:%s", name,
                             convolve_backend_name(backend), p->ndim, list);
        }
        if (!(s->dims >> (p->ndim - 1) & 1))
            return cvi_error(ctx, CONVOLVE_ERROR_UNSUPPORTED,
                             "strategy '%s' does not serve %d-D arrays", name, p->ndim);
        if (s->check && s->check(s, p, ctx, why, sizeof why) != CONVOLVE_OK)
            return cvi_error(ctx, CONVOLVE_ERROR_UNSUPPORTED, "strategy '%s' cannot serve this "
                             "case: %s", name, why);
    } else if (backend == CONVOLVE_BACKEND_CUDA) {
        s = cvcu_pick(ctx, p, why, sizeof why);
        if (!s) {
            if (o->backend == CONVOLVE_BACKEND_CUDA)
                return cvi_error(ctx, CONVOLVE_ERROR_UNSUPPORTED,
                                 "no CUDA strategy can serve this case: %s", why);
            s = cvi_cpu_pick(p);
        }
    } else {
        s = cvi_cpu_pick(p);
    }

    if (s->backend == CONVOLVE_BACKEND_CUDA) {
        convolve_status st = cvcu_prepare(ctx, s, p, &plan->backend_state);
        if (st != CONVOLVE_OK) {
            /* AUTO with no strategy named falls back to the CPU */
            if (o->backend != CONVOLVE_BACKEND_AUTO || named)
                return st;
            s = cvi_cpu_pick(p);
        }
    }
    plan->strategy = s;
    plan->cpu_fallback = s->backend == CONVOLVE_BACKEND_CUDA &&
                         o->backend == CONVOLVE_BACKEND_AUTO && !named;
    return CONVOLVE_OK;
}

convolve_status convolve_plan_create(convolve_context *ctx, convolve_plan **out_plan,
                                     const convolve_layout *in, const convolve_layout *out,
                                     const convolve_filter *filter,
                                     const convolve_options *options)
{
    if (!out_plan)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "convolve_plan_create: plan is NULL");
    *out_plan = NULL;
    if (!ctx || !filter)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_plan_create: %s is NULL", ctx ? "filter" : "context");
    convolve_options defaults;
    if (!options) {
        convolve_options_init(&defaults);
        options = &defaults;
    }
    convolve_status st;
    if ((st = check_options(ctx, options)) != CONVOLVE_OK ||
        (st = cvi_check_layout(ctx, in, "input", 0)) != CONVOLVE_OK ||
        (st = cvi_check_layout(ctx, out, "output", 1)) != CONVOLVE_OK)
        return st;
    if (in->ndim != out->ndim || in->channels != out->channels)
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_LAYOUT,
                         "input (%d-D, %zu channel%s) and output (%d-D, %zu channel%s) differ",
                         in->ndim, in->channels, in->channels == 1 ? "" : "s", out->ndim,
                         out->channels, out->channels == 1 ? "" : "s");
    for (int a = 0; a < in->ndim; a++)
        if (in->shape[a] != out->shape[a])
            return cvi_error(ctx, CONVOLVE_ERROR_BAD_LAYOUT,
                             "input and output differ along axis %d (%zu and %zu)", a,
                             in->shape[a], out->shape[a]);
    if (filter->ndim != in->ndim)
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER,
                         "the filter has %d dimension%s and the input %d; they must match",
                         filter->ndim, filter->ndim == 1 ? "" : "s", in->ndim);

    convolve_plan *plan = calloc(1, sizeof *plan);
    if (!plan)
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for a plan");
    plan->ctx = ctx;
    plan->in = *in;
    plan->out = *out;
    if ((st = build_problem(plan, filter, options)) != CONVOLVE_OK ||
        (st = choose(plan, filter, options)) != CONVOLVE_OK) {
        convolve_plan_free(plan);
        return st;
    }
    *out_plan = plan;
    return cvi_ok(ctx);
}

void convolve_plan_free(convolve_plan *plan)
{
    if (!plan)
        return;
    cvcu_release(plan->backend_state);
    for (int a = 0; a < 3; a++)
        free(plan->taps[a]);
    free(plan->weights);
    free(plan);
}

convolve_backend convolve_plan_backend(const convolve_plan *plan)
{
    return plan && plan->strategy ? plan->strategy->backend : CONVOLVE_BACKEND_AUTO;
}

const char *convolve_plan_strategy(const convolve_plan *plan)
{
    return plan && plan->strategy ? plan->strategy->name : NULL;
}

/* Checks data pointers: non-NULL, aligned to the element, and (host memory)
 * the output's bytes apart from the input's. */
static convolve_status check_pointers(convolve_plan *plan, const void *in, void *out,
                                      int check_overlap)
{
    convolve_context *ctx = plan->ctx;
    if (!in || !out)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "%s pointer is NULL",
                         in ? "output" : "input");
    if ((uintptr_t)in % convolve_dtype_size(plan->in.dtype) ||
        (uintptr_t)out % convolve_dtype_size(plan->out.dtype))
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "%s pointer is not aligned to its element size",
                         (uintptr_t)in % convolve_dtype_size(plan->in.dtype) ? "input" : "output");
    if (check_overlap) {
        ptrdiff_t ilo, ihi, olo, ohi;
        cvi_layout_span(&plan->in, &ilo, &ihi);
        cvi_layout_span(&plan->out, &olo, &ohi);
        uintptr_t i0 = (uintptr_t)in + (uintptr_t)ilo, i1 = (uintptr_t)in + (uintptr_t)ihi;
        uintptr_t o0 = (uintptr_t)out + (uintptr_t)olo, o1 = (uintptr_t)out + (uintptr_t)ohi;
        if (o0 < i1 && i0 < o1)
            return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                             "the output overlaps the input; convolution cannot run in place");
    }
    return CONVOLVE_OK;
}

convolve_status convolve_execute(convolve_plan *plan, const void *in, void *out)
{
    if (!plan)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    convolve_status st = check_pointers(plan, in, out, 1);
    if (st != CONVOLVE_OK)
        return st;
    if (plan->strategy->backend == CONVOLVE_BACKEND_CUDA) {
        st = cvcu_execute_host(plan->ctx, plan->backend_state, in, out);
        if (st == CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY && plan->cpu_fallback) {
            /* AUTO chose the GPU and its memory ran out: the plan moves to
             * the CPU for good (convolve_plan_backend then says so) */
            cvcu_release(plan->backend_state);
            plan->backend_state = NULL;
            plan->strategy = cvi_cpu_pick(&plan->problem);
            plan->cpu_fallback = 0;
            st = cvi_cpu_execute(plan->ctx, plan->strategy, &plan->problem, in, out);
        }
    } else
        st = cvi_cpu_execute(plan->ctx, plan->strategy, &plan->problem, in, out);
    return st == CONVOLVE_OK ? cvi_ok(plan->ctx) : st;
}

convolve_status convolve_execute_device(convolve_plan *plan, const void *in, void *out,
                                        void *stream)
{
    if (!plan)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    if (plan->strategy->backend != CONVOLVE_BACKEND_CUDA)
        return cvi_error(plan->ctx, CONVOLVE_ERROR_UNSUPPORTED,
                         "convolve_execute_device needs a CUDA plan; this one runs '%s' on the CPU",
                         plan->strategy->name);
    convolve_status st = check_pointers(plan, in, out, 0);
    if (st != CONVOLVE_OK)
        return st;
    st = cvcu_execute_device(plan->ctx, plan->backend_state, in, out, stream);
    return st == CONVOLVE_OK ? cvi_ok(plan->ctx) : st;
}

convolve_status convolve_run(convolve_context *ctx, const convolve_layout *in_layout,
                             const void *in, const convolve_layout *out_layout, void *out,
                             const convolve_filter *filter, const convolve_options *options)
{
    convolve_plan *plan;
    convolve_status st = convolve_plan_create(ctx, &plan, in_layout, out_layout, filter, options);
    if (st != CONVOLVE_OK)
        return st;
    st = convolve_execute(plan, in, out);
    convolve_plan_free(plan);
    return st;
}
