#!/usr/bin/env python3
"""generality.py - the GPU generality suite: a matrix of cases over element
types, channel counts, filter shapes (odd, even, non-square, separable,
long), modes and dimensionalities, timed through convolve_execute_device on
device arrays against CuPy (cupyx.scipy.ndimage, same arrays) and cuDNN
(torch, TF32 off) where cuDNN applies (float data, zero border).

For each case it prints the strategy "auto" picked, its median time (CUDA
events), the share of copy bandwidth (bytes = input + output) and of the
FP32 FMA peak (2 flops a tap an output; a separable filter's taps summed),
the ratio of each peer's time to ours, the fastest of our CUDA strategies
that serve the case and auto's time over it, and whether the results agree
with CuPy (float: relative L2; integers: within one level, as CuPy
truncates where we round).

  python3 bench/generality.py [--build build] [--runs 20] [--quick] [--json out.json]
                              [--only SUBSTRING] [--no-strategies]

Needs a GPU, torch and cupy (the GPU machine's python3 has both).
"""
import argparse
import ctypes as C
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "py"))

import numpy as np  # noqa: E402

try:
    import cupy as cp
    import cupyx.scipy.ndimage as cndi
    import torch
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover
    print(f"generality.py: needs torch and cupy ({e})")
    sys.exit(2)

torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True

TORCH = {np.float32: torch.float32, np.float64: torch.float64, np.uint8: torch.uint8,
         np.uint16: torch.uint16 if hasattr(torch, "uint16") else torch.int32}
CUDA_STRATEGIES = ["direct", "separable", "fft", "tiled-out", "tiled-in", "tiled", "constant",
                   "basic", "cached"]


def median_ms(fn, runs, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return float(np.median(times))


def gaussian_taps(sigma):
    r = int(4.0 * sigma + 0.5)
    x = np.arange(-r, r + 1, dtype=np.float64)
    g = np.exp(-0.5 * x * x / (sigma * sigma))
    return g / g.sum()


class Case:
    """One row: shape (spatial, slowest first), channels, dtype, filter
    (dense weights, or per-axis taps), mode, planar channels."""

    def __init__(self, name, shape, channels, dtype, mode, dense=None, taps=None, planar=False,
                 out_dtype=None, cast=False, divisor=0.0):
        self.name, self.shape, self.C, self.dtype = name, tuple(shape), channels, dtype
        self.mode, self.dense, self.taps, self.planar = mode, dense, taps, planar
        self.out_dtype = out_dtype or dtype
        # scipy's cast (CONVOLVE_CAST_TRUNCATE) and its divisor, as the
        # Python package runs each pass of an integer image
        self.cast, self.divisor = cast, divisor

    @property
    def ndim(self):
        return len(self.shape)

    def weights(self):
        if self.dense is not None:
            return self.dense
        w = self.taps[0]
        for t in self.taps[1:]:
            w = np.multiply.outer(w, t)
        return w

    def flops_per_output(self):
        if self.taps is not None:
            return 2 * sum(len(t) for t in self.taps if len(t) > 1)
        return 2 * self.dense.size


class Ours:
    def __init__(self, build):
        os.environ["CONVOLVE_BUILD_DIR"] = build
        import convolve_ctypes as cc
        self.cc = cc
        self.lib = cc.load_library()
        self.ctx = C.c_void_p()
        assert self.lib.convolve_context_create(C.byref(self.ctx)) == cc.OK

    def layout(self, case, dtype):
        cc = self.cc
        lay = cc.Layout()
        lay.dtype = cc.DTYPES[np.dtype(dtype)]
        lay.ndim = case.ndim
        es = np.dtype(dtype).itemsize
        lay.channels = case.C
        if case.planar:
            step = es
            for a in range(case.ndim - 1, -1, -1):
                lay.shape[a] = case.shape[a]
                lay.strides[a] = step
                step *= case.shape[a]
            lay.channel_stride = step
        else:
            step = es * case.C
            for a in range(case.ndim - 1, -1, -1):
                lay.shape[a] = case.shape[a]
                lay.strides[a] = step
                step *= case.shape[a]
            lay.channel_stride = es
        return lay

    def plan(self, case, strategy=None):
        cc, lib = self.cc, self.lib
        f = C.c_void_p()
        if case.taps is not None:
            arrs = [np.ascontiguousarray(t, dtype=np.float64) for t in case.taps]
            lens = (C.c_size_t * case.ndim)(*[len(t) for t in arrs])
            ptrs = (C.POINTER(C.c_double) * case.ndim)(
                *[t.ctypes.data_as(C.POINTER(C.c_double)) for t in arrs])
            st = lib.convolve_filter_create_separable(self.ctx, C.byref(f), case.ndim, lens, ptrs)
        else:
            w = np.ascontiguousarray(case.dense, dtype=np.float64)
            ks = (C.c_size_t * w.ndim)(*w.shape)
            st = lib.convolve_filter_create(self.ctx, C.byref(f), w.ndim, ks,
                                            w.ctypes.data_as(C.POINTER(C.c_double)))
        assert st == cc.OK, lib.convolve_last_error(self.ctx)
        li, lo = self.layout(case, case.dtype), self.layout(case, case.out_dtype)
        opt = cc.Options()
        lib.convolve_options_init_size(C.byref(opt), C.sizeof(opt))
        opt.operation = 1  # correlate, as CuPy's correlate
        opt.mode = cc.MODES.index(case.mode)
        opt.backend = cc.BACKEND_CUDA
        if case.cast:
            opt.integer_cast = 1
            opt.divisor = case.divisor
        if strategy:
            opt.strategy = strategy.encode()
        plan = C.c_void_p()
        st = lib.convolve_plan_create(self.ctx, C.byref(plan), C.byref(li), C.byref(lo), f,
                                      C.byref(opt))
        lib.convolve_filter_free(f)
        if st != cc.OK:
            return None, lib.convolve_last_error(self.ctx).decode()
        return plan, lib.convolve_plan_strategy(plan).decode()

    def run(self, plan, x, y):
        stream = C.c_void_p(torch.cuda.current_stream().cuda_stream)
        st = self.lib.convolve_execute_device(plan, C.c_void_p(x.data_ptr()),
                                              C.c_void_p(y.data_ptr()), stream)
        assert st == self.cc.OK, self.lib.convolve_last_error(self.ctx)

    def free(self, plan):
        self.lib.convolve_plan_free(plan)


def gpu_facts():
    p = torch.cuda.get_device_properties(0)
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm",
                            "--format=csv,noheader,nounits"], capture_output=True, text=True)
        clock = float(q.stdout.split()[0]) * 1e6
    except Exception:  # noqa: BLE001
        clock = 1.98e9
    return p.name, p.multi_processor_count, clock, p.multi_processor_count * 128 * 2 * clock


def cases(quick):
    N2 = 1024 if quick else 8192
    N2b = 1024 if quick else 4096
    N3 = 64 if quick else 512
    N3b = 64 if quick else 256
    N1 = 1 << (20 if quick else 28)
    rng = np.random.default_rng(7)

    def dense(*shape):
        w = rng.uniform(0.1, 1.0, shape)
        return w / w.sum()
    box2 = [np.full(5, 0.2)] * 2
    one = np.ones(1)
    out = [
        # the table
        Case(f"f64 {N2}^2 dense 3x3", (N2, N2), 1, np.float64, "reflect", dense(3, 3)),
        Case(f"f64 {N2}^2 dense 7x7", (N2, N2), 1, np.float64, "reflect", dense(7, 7)),
        Case(f"f32 {N2}^2 even 4x4", (N2, N2), 1, np.float32, "reflect", dense(4, 4)),
        Case(f"f32 {N2}^2 non-square 3x9", (N2, N2), 1, np.float32, "reflect", dense(3, 9)),
        Case(f"u16 {N2}^2 dense 5x5", (N2, N2), 1, np.uint16, "reflect", dense(5, 5)),
        Case(f"u8 RGBA {N2b}^2 box:2", (N2b, N2b), 4, np.uint8, "reflect", taps=box2),
        Case(f"u8 RGB {N2b}^2 gaussian:2.5", (N2b, N2b), 3, np.uint8, "reflect",
             taps=[gaussian_taps(2.5)] * 2),
        Case(f"u8 RGB {N2b}^2 gaussian:5", (N2b, N2b), 3, np.uint8, "reflect",
             taps=[gaussian_taps(5.0)] * 2),
        Case(f"f32 {N2}^2 gaussian:8 (65 taps)", (N2, N2), 1, np.float32, "reflect",
             taps=[gaussian_taps(8.0)] * 2),
        Case(f"f32 3-D {N3}^3 gaussian:1.5", (N3, N3, N3), 1, np.float32, "reflect",
             taps=[gaussian_taps(1.5)] * 3),
        # the memory-bound and compute-bound targets
        Case(f"f32 {N2}^2 dense 3x3", (N2, N2), 1, np.float32, "reflect", dense(3, 3)),
        Case(f"f32 {N2}^2 dense 5x5", (N2, N2), 1, np.float32, "reflect", dense(5, 5)),
        Case(f"f32 {N2}^2 dense 3x3 zero", (N2, N2), 1, np.float32, "constant", dense(3, 3)),
        Case(f"f32 {N2}^2 dense 7x7 zero", (N2, N2), 1, np.float32, "constant", dense(7, 7)),
        Case(f"f32 {N2}^2 dense 9x9 zero", (N2, N2), 1, np.float32, "constant", dense(9, 9)),
        Case(f"f32 {N2}^2 dense 17x17 zero", (N2, N2), 1, np.float32, "constant", dense(17, 17)),
        Case(f"f32 {N2}^2 gaussian:1 (9 taps)", (N2, N2), 1, np.float32, "reflect",
             taps=[gaussian_taps(1.0)] * 2),
        Case(f"f32 {N2}^2 gaussian:2 (17 taps)", (N2, N2), 1, np.float32, "reflect",
             taps=[gaussian_taps(2.0)] * 2),
        Case(f"f32 {N2}^2 gaussian:16 (129 taps)", (N2, N2), 1, np.float32, "reflect",
             taps=[gaussian_taps(16.0)] * 2),
        Case(f"f32 {N2}^2 gaussian:32 (257 taps)", (N2, N2), 1, np.float32, "reflect",
             taps=[gaussian_taps(32.0)] * 2),
        Case(f"u8 gray {N2}^2 dense 3x3", (N2, N2), 1, np.uint8, "reflect", dense(3, 3)),
        Case(f"u8 RGB {N2b}^2 dense 5x5 -> f32", (N2b, N2b), 3, np.uint8, "mirror", dense(5, 5),
             out_dtype=np.float32),
        Case(f"f32 planar 3x{N2b}^2 5x5 wrap", (N2b, N2b), 3, np.float32, "wrap", dense(5, 5),
             planar=True),
        Case(f"f32 1-D 2^{N1.bit_length() - 1} 31 taps", (N1,), 1, np.float32, "reflect",
             dense(31)),
        Case(f"f32 1-D 2^{N1.bit_length() - 1} gaussian:8", (N1,), 1, np.float32, "nearest",
             dense(65)),
        Case(f"f32 1-D 2^{N1.bit_length() - 1} 257 taps", (N1,), 1, np.float32, "reflect",
             dense(257)),
        Case(f"f32 3-D {N3}^3 3x3x3", (N3, N3, N3), 1, np.float32, "reflect", dense(3, 3, 3)),
        Case(f"f32 3-D {N3}^3 7x7x7 zero", (N3, N3, N3), 1, np.float32, "constant",
             dense(7, 7, 7)),
        Case(f"u16 3-D {N3b}^3 3x3x3 mirror", (N3b, N3b, N3b), 1, np.uint16, "mirror",
             dense(3, 3, 3)),
        # scipy's cast: the 1-D passes the Python package runs for integer
        # images (gaussian_filter(rgb, (s, s, 0)): y on rows of W x C
        # elements, then x on pixels of C channels), and a fused pair
        Case(f"u8 RGB {N2b}^2 gaussian:2 y pass, cast", (N2b, N2b * 3), 1, np.uint8, "reflect",
             taps=[gaussian_taps(2.0), one], cast=True),
        Case(f"u8 RGB {N2b}^2 gaussian:2 x pass, cast", (N2b, N2b), 3, np.uint8, "reflect",
             taps=[one, gaussian_taps(2.0)], cast=True),
        Case(f"u8 RGB {N2b}^2 gaussian:2 both, cast", (N2b, N2b), 3, np.uint8, "reflect",
             taps=[gaussian_taps(2.0)] * 2, cast=True),
        Case(f"u16 RGB {N2b}^2 gaussian:3 x pass, cast", (N2b, N2b), 3, np.uint16, "reflect",
             taps=[one, gaussian_taps(3.0)], cast=True),
        Case(f"u8 gray {N2}^2 uniform 9 x pass, cast", (N2, N2), 1, np.uint8, "reflect",
             taps=[one, np.ones(9)], cast=True, divisor=9.0),
        Case(f"u8 RGBA {N2b}^2 gaussian:1 y pass, cast", (N2b, N2b * 4), 1, np.uint8, "nearest",
             taps=[gaussian_taps(1.0), one], cast=True),
        Case(f"f32 3-D {N3b}^3 2x4x6 even", (N3b, N3b, N3b), 1, np.float32, "nearest",
             dense(2, 4, 6)),
    ]
    return out


def make_input(case):
    shape = list(case.shape)
    if case.planar:
        shape = [case.C] + shape
    elif case.C > 1:
        shape = shape + [case.C]
    if np.issubdtype(case.dtype, np.integer):
        hi = np.iinfo(case.dtype).max
        x = torch.randint(0, hi + 1, shape, dtype=torch.int64, device="cuda")
        if case.dtype == np.uint8:
            return x.to(torch.uint8)
        return x.to(torch.int32)  # uint16 values, stored wider for torch; converted below
    return torch.rand(shape, dtype=TORCH[case.dtype], device="cuda")


def cupy_ref(case, xc):
    """CuPy's correlate on the same data (float64 for integer inputs, so the
    reference rounds correctly) and its time on the native dtype."""
    w = case.weights()
    if case.C > 1:
        w = w.reshape((1,) + w.shape) if case.planar else w.reshape(w.shape + (1,))
    wc = cp.asarray(w)
    if case.taps is not None:
        # a divisor (scipy's uniform filters) as taps divided by it: the same
        # sums to rounding, for the timing and the agreement within a level
        taps = [t / case.divisor if case.divisor and len(t) > 1 else t for t in case.taps]
        def run():
            y = xc
            axes = range(1, case.ndim + 1) if case.planar else range(case.ndim)
            for a, t in zip(axes, taps):
                if len(t) > 1:
                    y = cndi.correlate1d(y, cp.asarray(t), axis=a, mode=case.mode)
            return y
        ref = xc.astype(cp.float64)
        axes = range(1, case.ndim + 1) if case.planar else range(case.ndim)
        for a, t in zip(axes, taps):
            ref = cndi.correlate1d(ref, cp.asarray(t), axis=a, mode=case.mode)
    else:
        def run():
            return cndi.correlate(xc, wc, mode=case.mode)
        ref = cndi.correlate(xc.astype(cp.float64), wc, mode=case.mode)
    return run, ref


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="cases whose names contain one of these (a|b|c)")
    ap.add_argument("--no-strategies", action="store_true",
                    help="time auto and the peers only, not the other strategies")
    ap.add_argument("--strategies", default=",".join(CUDA_STRATEGIES),
                    help="the strategies timed to find the best (default: all CUDA ones)")
    ap.add_argument("--json")
    a = ap.parse_args()
    ours = Ours(os.path.abspath(a.build))
    name, sms, clock, peak = gpu_facts()
    runs = a.runs
    buf = torch.empty(1 << 28, device="cuda")
    dst = torch.empty_like(buf)
    copy_ms = median_ms(lambda: dst.copy_(buf), runs)
    copy_gbps = 2 * buf.numel() * 4 / (copy_ms * 1e-3) / 1e9
    del buf, dst
    print(f"generality.py: {name}, {sms} SMs, FP32 FMA peak {peak / 1e12:.1f} TFLOP/s, "
          f"copy {copy_gbps:.0f} GB/s, median of {runs}", flush=True)
    rows = []
    for case in cases(a.quick):
        if a.only and not any(o in case.name for o in a.only.split("|")):
            continue
        torch.manual_seed(len(rows) + 1)
        x = make_input(case)
        if case.dtype == np.uint16:
            xc = cp.asarray(x).astype(cp.uint16)
            xt = torch.as_tensor(xc, device="cuda")
        else:
            xc = cp.asarray(x)
            xt = x
        yc = cp.empty(xc.shape, dtype=case.out_dtype)
        yt = torch.as_tensor(yc, device="cuda")
        t0 = time.perf_counter()
        plan, ran = ours.plan(case)
        plan_ms = (time.perf_counter() - t0) * 1e3
        if plan is None:
            print(f"  {case.name}: auto refused: {ran}", flush=True)
            rows.append(dict(case=case.name, error=ran))
            continue
        t0 = time.perf_counter()
        ours.run(plan, xt, yt)
        torch.cuda.synchronize()
        first_ms = (time.perf_counter() - t0) * 1e3
        t_auto = median_ms(lambda: ours.run(plan, xt, yt), runs)
        run_cupy, ref = cupy_ref(case, xc)
        t_cupy = median_ms(run_cupy, runs)
        got = yc.astype(cp.float64)
        if np.issubdtype(case.out_dtype, np.integer):
            hi = np.iinfo(case.out_dtype).max
            diff = float(cp.abs(got - cp.clip(cp.rint(ref), 0, hi)).max())
            agree = f"max |diff| {diff:.0f}"
        else:
            err = float(cp.linalg.norm(got - ref) / cp.linalg.norm(ref))
            agree = f"relL2 {err:.1e}"
        ours.free(plan)
        # cuDNN: float data, zero border, one channel
        t_dnn = None
        if case.mode == "constant" and case.C == 1 and case.dtype in (np.float32, np.float64):
            w = torch.as_tensor(case.weights(), dtype=TORCH[case.dtype], device="cuda")
            conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[case.ndim]
            pads = []
            for k in reversed(w.shape):
                lo = k // 2
                pads += [lo, k - 1 - lo]
            xin = x.view((1, 1) + case.shape)
            wk = w.view((1, 1) + tuple(w.shape))
            t_dnn = median_ms(lambda: conv(F.pad(xin, pads), wk), runs)
        # every strategy that serves
        best, best_ms = None, None
        if not a.no_strategies:
            for s in a.strategies.split(","):
                p2, r2 = ours.plan(case, s)
                if p2 is None:
                    continue
                t = median_ms(lambda: ours.run(p2, xt, yt), max(5, runs // 2), warmup=2)
                ours.free(p2)
                if best_ms is None or t < best_ms:
                    best, best_ms = s, t
        nbytes = int(np.prod(case.shape)) * case.C * (np.dtype(case.dtype).itemsize +
                                                      np.dtype(case.out_dtype).itemsize)
        floor_ms = nbytes / (copy_gbps * 1e9) * 1e3
        flops = int(np.prod(case.shape)) * case.C * case.flops_per_output()
        row = dict(case=case.name, ran=ran, ours_ms=t_auto, first_call_ms=first_ms, plan_ms=plan_ms,
                   cupy_ms=t_cupy, cudnn_ms=t_dnn, pct_copy=100 * floor_ms / t_auto,
                   pct_fma=100 * flops / (t_auto * 1e-3) / peak, vs_cupy=t_cupy / t_auto,
                   vs_cudnn=t_dnn / t_auto if t_dnn else None, best=best, best_ms=best_ms,
                   auto_over_best=t_auto / best_ms if best_ms else None, agree=agree)
        rows.append(row)
        print(f"  {case.name:36s} {ran:10s} {t_auto:8.3f} ms  {row['pct_copy']:5.1f}% copy "
              f"{row['pct_fma']:5.1f}% FMA  CuPy {t_cupy:8.3f} ({row['vs_cupy']:5.2f}x)  "
              f"cuDNN {t_dnn if t_dnn else float('nan'):8.3f}  best {best} "
              f"{best_ms if best_ms else float('nan'):.3f}  {agree}  (plan {plan_ms:.0f} ms, "
              f"first call {first_ms:.0f} ms)", flush=True)
        del x, xc, yc, xt, yt
    print("\n| case | auto picks | ms | % copy | % FMA | CuPy ms | vs CuPy | cuDNN ms | vs cuDNN "
          "| best strategy (ms) | auto / best | agreement |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")

    def f(v, fmt="{:.3f}"):
        return fmt.format(v) if v is not None else "-"
    for r in rows:
        if "error" in r:
            print(f"| {r['case']} | refused: {r['error']} |" + " |" * 10)
            continue
        print(f"| {r['case']} | {r['ran']} | {r['ours_ms']:.3f} | {r['pct_copy']:.0f}% | "
              f"{r['pct_fma']:.0f}% | {r['cupy_ms']:.3f} | {r['vs_cupy']:.2f}x | "
              f"{f(r['cudnn_ms'])} | {f(r['vs_cudnn'], '{:.2f}x')} | {r['best']} "
              f"({f(r['best_ms'])}) | {f(r['auto_over_best'], '{:.2f}')} | {r['agree']} |")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(dict(device=name, sms=sms, clock_hz=clock, fma_peak=peak,
                           copy_gbps=copy_gbps, runs=runs, date=time.strftime("%Y-%m-%d"),
                           rows=rows), fh, indent=1)


if __name__ == "__main__":
    main()
