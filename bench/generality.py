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

After the main table it prints the targets table of issue 25: each case's
target class (target_class(), from the case's element type, dimensionality
and filter shape), the targets of that class in words, the measured value
each is about and whether it is met; with --ncu, the limiter of our auto
plan's kernels as Nsight Compute sees them (the script runs itself under ncu
as a child, --ncu-child NAME, one case a child).

  python3 bench/generality.py [--build build] [--runs 20] [--quick] [--json out.json]
                              [--only SUBSTRING] [--no-strategies] [--ncu]
  python3 bench/generality.py --dry-run [--quick]   # the cases and their targets

Needs a GPU, torch and cupy (the GPU machine's python3 has both), and ncu
on PATH for --ncu; --dry-run and --help need numpy only.
"""
import argparse
import ctypes as C
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "py"))

import numpy as np  # noqa: E402

# set by gpu_imports(): the timing modes need them, --dry-run does not
cp = cndi = torch = F = None
TORCH = {}


def gpu_imports():
    """Imports cupy and torch into the module's globals; exits 2 without them."""
    global cp, cndi, torch, F
    try:
        import cupy as cp
        import cupyx.scipy.ndimage as cndi
        import torch
        import torch.nn.functional as F
    except ImportError as e:  # pragma: no cover
        print(f"generality.py: needs torch and cupy ({e}); --dry-run needs neither")
        sys.exit(2)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    TORCH.update({np.float32: torch.float32, np.float64: torch.float64, np.uint8: torch.uint8,
                  np.uint16: torch.uint16 if hasattr(torch, "uint16") else torch.int32})

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

    def extents(self):
        """The filter's taps an axis (separable) or its dense shape."""
        if self.taps is not None:
            return tuple(len(t) for t in self.taps)
        return tuple(self.dense.shape)

    def radius(self):
        """The filter's largest reach from the centre: k // 2 over the axes
        (scipy's origin 0; an even k reaches k // 2 on one side)."""
        return max(k // 2 for k in self.extents())

    def filter_words(self):
        ext = "x".join(str(k) for k in self.extents())
        return f"separable {ext}" if self.taps is not None else f"dense {ext}"


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
    N1b = 1 << (20 if quick else 26)
    S, M = (8, 256) if quick else (64, 1024)  # a stack of S images of M x M
    rng = np.random.default_rng(7)

    def dense(*shape):
        w = rng.uniform(0.1, 1.0, shape)
        return w / w.sum()
    box2 = [np.full(5, 0.2)] * 2
    one = np.ones(1)
    out = [
        # the issue's table
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
        # issue 25's cases the ones above lack (last, so that the weights and
        # inputs of the ones above stay as in earlier runs)
        Case(f"u8 RGB {N2b}^2 gaussian:1", (N2b, N2b), 3, np.uint8, "reflect",
             taps=[gaussian_taps(1.0)] * 2),
        Case(f"u8 gray {N2}^2 gaussian:1.2", (N2, N2), 1, np.uint8, "reflect",
             taps=[gaussian_taps(1.2)] * 2),
        Case(f"u16 RGB {N2b}^2 gaussian:3", (N2b, N2b), 3, np.uint16, "reflect",
             taps=[gaussian_taps(3.0)] * 2),
        Case(f"f64 3-D {N3b}^3 gaussian:2", (N3b, N3b, N3b), 1, np.float64, "reflect",
             taps=[gaussian_taps(2.0)] * 3),
        Case(f"f32 {S}x{M}^2 stack 1x5x5", (S, M, M), 1, np.float32, "reflect",
             dense(1, 5, 5)),
        Case(f"f64 1-D 2^{N1b.bit_length() - 1} 127 taps", (N1b,), 1, np.float64, "reflect",
             dense(127)),
    ]
    return out


# ---- issue 25's targets -----------------------------------------------------
# A case's class follows from its fields: the input's element type, the
# array's dimensionality, separable taps or a dense shape and its extents.
# "sigma <= 2" reads as a radius <= 8 an axis (scipy's gaussian truncates at
# 4 sigma); a dense filter with one axis of extent 1 over a 3-D array (a
# stack of images filtered as a batch) is a 2-D filter.
CLASS_WORDS = {
    "integer": "integer image, <= 11 taps an axis",
    "separable-3d": "3-D separable float, sigma <= 2",
    "dense-copy": "dense float32 2-D, r <= 2",
    "dense-fma": "dense float32 2-D, r = 3..8",
    "other": "everything else",
}
# (row key, threshold, at least (True) or at most, target in words)
CLASS_TARGETS = {
    "integer": [("pct_copy", 50.0, True, ">= 50% of copy")],
    "separable-3d": [("pct_copy", 50.0, True, ">= 50% of copy"),
                     ("vs_cupy", 3.0, True, ">= 3x CuPy")],
    "dense-copy": [("pct_copy", 80.0, True, ">= 80% of copy")],
    "dense-fma": [("pct_fma", 60.0, True, ">= 60% of FMA peak")],
    "other": [("vs_cupy", 1.5, True, ">= 1.5x CuPy"),
              ("vs_cudnn", 1.0, True, ">= cuDNN")],
}
# every case, when the strategies are timed
AUTO_TARGET = ("auto_over_best", 1.10, False, "auto within 10% of best")
FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def target_class(case):
    """The class of issue 25's targets a case belongs to (a CLASS_WORDS key)."""
    ext = case.extents()
    wide = [k for k in ext if k > 1]
    dt, out = np.dtype(case.dtype), np.dtype(case.out_dtype)
    if dt in (np.dtype(np.uint8), np.dtype(np.uint16)) and case.ndim == 2 and max(ext) <= 11:
        return "integer"
    if (case.taps is not None and case.ndim == 3 and len(wide) == 3 and dt in FLOATS
            and dt == out and case.radius() <= 8):
        return "separable-3d"
    if (case.dense is not None and dt == np.dtype(np.float32) and out == dt
            and len(wide) == 2):
        r = case.radius()
        if r <= 2:
            return "dense-copy"
        if r <= 8:
            return "dense-fma"
    return "other"


def cudnn_serves(case):
    """Whether main() times cuDNN on the case: float data, zero border, one
    channel."""
    return (case.mode == "constant" and case.C == 1
            and np.dtype(case.dtype) in FLOATS)


def case_targets(case):
    """The targets a case is held to: (row key, threshold, at least, words),
    its class's (cuDNN's only where cuDNN serves) and auto's."""
    own = [t for t in CLASS_TARGETS[target_class(case)]
           if t[0] != "vs_cudnn" or cudnn_serves(case)]
    return own + [AUTO_TARGET]


def show_value(key, v):
    return {"pct_copy": f"{v:.1f}% copy", "pct_fma": f"{v:.1f}% FMA",
            "vs_cupy": f"{v:.2f}x CuPy", "vs_cudnn": f"{v:.2f}x cuDNN",
            "auto_over_best": f"auto/best {v:.2f}"}[key]


def evaluate_targets(case, row):
    """The targets of a case against its measured row (main()'s dict): a list
    of dicts (target, key, threshold, measured, shown, met). A target whose
    value the run lacks (cuDNN does not serve; strategies not timed) is left
    out."""
    out = []
    for key, thr, at_least, words in case_targets(case):
        v = row.get(key)
        if v is None:
            continue
        met = v >= thr if at_least else v <= thr
        out.append(dict(target=words, key=key, threshold=thr, measured=v,
                        shown=show_value(key, v), met=bool(met)))
    return out


# ---- Nsight Compute ---------------------------------------------------------
# What one execution of the auto plan's kernels spends its time on. The
# child (--ncu-child) brackets that execution with cudaProfilerStart/Stop and
# ncu runs with --profile-from-start off, so every kernel of the plan is
# profiled (cuFFT's too), none of the set-up's.
NCU_TIME = "gpu__time_duration.sum"
NCU_METRICS = [
    NCU_TIME,
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "launch__registers_per_thread",
]
# asked for too; left out again when this ncu does not know them
NCU_EXTRA = ["sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
             "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"]
# the units a limiter can be, in the order ties go
NCU_UNITS = [
    ("DRAM", "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("FMA pipe", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"),
    ("FP64 pipe", "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active"),
    ("ALU pipe", "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"),
    ("L1/shared", "l1tex__throughput.avg.pct_of_peak_sustained_active"),
    ("L2", "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("issue", "smsp__issue_active.avg.pct_of_peak_sustained_active"),
]
NCU_BOUND = 60.0  # % of a unit's peak from which it is the limiter
TIME_NS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6,
           "second": 1e9, "s": 1e9}


def ncu_number(text):
    """A value of ncu's CSV as a float (thousands separators dropped), or
    None (n/a, empty)."""
    t = text.strip().replace(",", "").replace("%", "")
    try:
        return float(t)
    except ValueError:
        return None


def parse_ncu_csv(text):
    """The kernels of `ncu --csv` output, whatever else the text holds (the
    program's output, ==PROF== lines): a list of dicts, one a kernel launch in
    order, with "Kernel Name" and each metric found as a float (the duration
    in ns). Reads the raw page (a column a metric, then a row of units) and
    the details page (a row a metric: Metric Name, Metric Unit, Metric
    Value)."""
    header, units, kernels, by_id = None, {}, [], {}
    for line in text.splitlines():
        if not line.startswith('"'):
            continue
        cells = next(csv.reader([line]), [])
        if "ID" in cells and "Kernel Name" in cells:
            header, units = cells, {}
            continue
        if header is None or len(cells) != len(header):
            continue
        rec = dict(zip(header, cells))
        kid = rec["ID"].strip()
        if not kid.isdigit():  # the raw page's units row
            units = rec
            continue
        if "Metric Name" in rec and "Metric Value" in rec:
            k = by_id.get(kid)
            if k is None:
                k = by_id[kid] = {"Kernel Name": rec["Kernel Name"]}
                kernels.append(k)
            m, v = rec["Metric Name"].strip(), ncu_number(rec["Metric Value"])
            if m == NCU_TIME and v is not None:
                v *= TIME_NS.get(rec.get("Metric Unit", "nsecond").strip(), 1.0)
            k[m] = v
            continue
        k = {"Kernel Name": rec["Kernel Name"]}
        for m in NCU_METRICS + NCU_EXTRA:
            if m in rec:
                k[m] = ncu_number(rec[m])
        if k.get(NCU_TIME) is not None:
            k[NCU_TIME] *= TIME_NS.get(units.get(NCU_TIME, "nsecond").strip(), 1.0)
        kernels.append(k)
    return kernels


def summarize_kernels(kernels):
    """One plan's kernels as one: each percentage averaged with the kernels'
    durations as weights, the durations summed (ms), the registers a thread
    of the longest kernel; None without kernels."""
    if not kernels:
        return None
    times = [k.get(NCU_TIME) or 0.0 for k in kernels]
    total = sum(times)
    out = dict(kernels=len(kernels), ms=total * 1e-6,
               names=sorted({k["Kernel Name"] for k in kernels}))
    for m in NCU_METRICS[1:] + NCU_EXTRA:
        if m == "launch__registers_per_thread":
            continue
        pairs = [(k[m], t) for k, t in zip(kernels, times) if k.get(m) is not None]
        if not pairs:
            continue
        w = sum(t for _, t in pairs)
        out[m] = (sum(v * t for v, t in pairs) / w if w > 0
                  else sum(v for v, _ in pairs) / len(pairs))
    longest = kernels[max(range(len(kernels)), key=lambda i: times[i])]
    out["launch__registers_per_thread"] = longest.get("launch__registers_per_thread")
    return out


def limiter(summary):
    """The unit that bounds the kernels: the busiest of NCU_UNITS when it
    passes NCU_BOUND ("DRAM 85%"), else the SM as a whole when it does,
    else latency with the issue rate and the achieved occupancy."""
    if summary is None:
        return "no kernels profiled"
    units = [(summary[m], name) for name, m in NCU_UNITS if summary.get(m) is not None]
    if units:
        v, name = max(units, key=lambda u: u[0])
        if v >= NCU_BOUND:
            return f"{name} {v:.0f}%"
    sm = summary.get("sm__throughput.avg.pct_of_peak_sustained_elapsed")
    if sm is not None and sm >= NCU_BOUND:
        return f"SM {sm:.0f}%"
    issue = summary.get("smsp__issue_active.avg.pct_of_peak_sustained_active")
    occ = summary.get("sm__warps_active.avg.pct_of_peak_sustained_active")

    def pct(v):
        return f"{v:.0f}%" if v is not None else "?"
    return f"latency (issue {pct(issue)}, occupancy {pct(occ)})"


def ncu_binary(name):
    """ncu's path: NAME on PATH, else CUDA's default place; None if neither."""
    found = shutil.which(name)
    if found:
        return found
    if name == "ncu" and os.access("/usr/local/cuda/bin/ncu", os.X_OK):
        return "/usr/local/cuda/bin/ncu"
    return None


def ncu_has_option(ncu, option, cache={}):
    """Whether `ncu --help` lists OPTION (older versions lack some)."""
    if (ncu, option) not in cache:
        try:
            h = subprocess.run([ncu, "--help"], capture_output=True, text=True, timeout=60)
            cache[(ncu, option)] = option in h.stdout + h.stderr
        except (OSError, subprocess.TimeoutExpired):
            cache[(ncu, option)] = False
    return cache[(ncu, option)]


def run_ncu(ncu, a, case):
    """Profiles one auto execution of CASE in a child under ncu: returns
    (summary or None, message); the message says what went wrong, or how
    many kernels were profiled."""
    child = [sys.executable, os.path.abspath(__file__), "--build", os.path.abspath(a.build),
             "--ncu-child", case.name] + (["--quick"] if a.quick else [])
    metrics = NCU_METRICS + NCU_EXTRA
    for attempt in range(2):
        # the details page, a row a metric, by metric name (newer ncu print
        # labels by default; --print-metric-name serves that page only)
        names = (["--print-metric-name", "name"]
                 if ncu_has_option(ncu, "--print-metric-name") else [])
        cmd = [ncu, "--csv", "--page", "details", "--print-units", "base"] + names + [
            "--clock-control", "none", "--profile-from-start", "off",
            "--metrics", ",".join(metrics)] + child
        # ncu in a new process group (setsid), so that a timeout ends ncu and
        # the child it started; ended too when this script is (main() turns
        # SIGTERM into SystemExit)
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
        try:
            text, _ = p.communicate(timeout=a.ncu_timeout)
        except subprocess.TimeoutExpired:
            return None, f"ncu timed out after {a.ncu_timeout} s"
        finally:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.communicate()
        kernels = parse_ncu_csv(text)
        if kernels:
            s = summarize_kernels(kernels)
            return s, f"{s['kernels']} kernel(s), {s['ms']:.3f} ms under ncu"
        if attempt == 0 and "metric" in text.lower() and "==ERROR==" in text:
            metrics = NCU_METRICS  # an ncu that lacks an extra metric: the core set only
            continue
        break
    # why: ncu's error, else the last line of the output that is not ncu's
    # chatter (the child's traceback ends with its exception)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "==ERROR==" in ln]
    other = [ln for ln in lines if not ln.startswith(("==", '"'))]
    why = (errors or other or [""])[-1]
    return None, f"no kernel profiled (ncu exit {p.returncode}) {why}"[:200].strip()


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


def device_arrays(case):
    """The case's arrays on the device: x (the input as made), xc and xt (the
    input as a CuPy array and a torch tensor of the case's element type), yc
    and yt (one output buffer, as CuPy array and as torch tensor)."""
    x = make_input(case)
    if case.dtype == np.uint16:
        xc = cp.asarray(x).astype(cp.uint16)
        xt = torch.as_tensor(xc, device="cuda")
    else:
        xc = cp.asarray(x)
        xt = x
    yc = cp.empty(xc.shape, dtype=case.out_dtype)
    yt = torch.as_tensor(yc, device="cuda")
    return x, xc, xt, yc, yt


def profiler(on):
    """cudaProfilerStart (on) or Stop: what ncu --profile-from-start off obeys."""
    try:
        import torch.cuda.profiler as tprof
        (tprof.start if on else tprof.stop)()
    except (ImportError, AttributeError, RuntimeError):
        from cupy.cuda import profiler as cprof
        (cprof.start if on else cprof.stop)()


def ncu_child(a):
    """--ncu-child NAME (run under ncu by run_ncu): NAME's arrays and auto
    plan, two executions, then one between cudaProfilerStart and Stop, the
    one ncu profiles. Prints to stderr only, so ncu's CSV stays whole."""
    gpu_imports()
    found = [c for c in cases(a.quick) if c.name == a.ncu_child]
    if not found:
        print(f"ncu-child: no case named {a.ncu_child!r}", file=sys.stderr)
        return 2
    case = found[0]
    ours = Ours(os.path.abspath(a.build))
    torch.manual_seed(1)
    x, xc, xt, yc, yt = device_arrays(case)
    plan, ran = ours.plan(case)
    if plan is None:
        print(f"ncu-child: {case.name}: auto refused: {ran}", file=sys.stderr)
        return 3
    for _ in range(2):
        ours.run(plan, xt, yt)
    torch.cuda.synchronize()
    profiler(True)
    ours.run(plan, xt, yt)
    torch.cuda.synchronize()
    profiler(False)
    ours.free(plan)
    print(f"ncu-child: {case.name}: {ran} profiled", file=sys.stderr)
    return 0


def dry_run(a):
    """--dry-run: the cases (after --only) with their shapes, element types,
    filters and targets, as a table; needs neither a GPU nor cupy/torch."""
    sel = selected_cases(a)
    print(f"generality.py --dry-run: {len(sel)} cases ({'quick' if a.quick else 'full'} sizes)")
    print("| case | shape | dtype | filter | mode | class | targets |")
    print("|---|---|---|---|---|---|---|")
    for c in sel:
        shape = "x".join(str(n) for n in c.shape)
        if c.C > 1:
            shape = f"{c.C}x{shape} planar" if c.planar else f"{shape} x{c.C}"
        dt = np.dtype(c.dtype).name
        if np.dtype(c.out_dtype) != np.dtype(c.dtype):
            dt += f" -> {np.dtype(c.out_dtype).name}"
        cls = target_class(c)
        words = "; ".join(t[3] for t in case_targets(c))
        print(f"| {c.name} | {shape} | {dt} | {c.filter_words()} | {c.mode} | {cls} | {words} |")
    return 0


def selected_cases(a):
    return [c for c in cases(a.quick)
            if not a.only or any(o in c.name for o in a.only.split("|"))]


def print_targets(targets):
    """The targets table: a row a case, its targets joined with "; "."""
    print("\n| case | target | measured | met | limiter |")
    print("|---|---|---|---|---|")
    met_all = 0
    for t in targets:
        if "error" in t:
            print(f"| {t['case']} | {'; '.join(t['words'])} | refused | no | - |")
            continue
        ts = t["targets"]
        met_all += all(x["met"] for x in ts)
        print(f"| {t['case']} | {'; '.join(x['target'] for x in ts)} | "
              f"{'; '.join(x['shown'] for x in ts)} | "
              f"{'; '.join('yes' if x['met'] else 'no' for x in ts)} | {t['limiter']} |")
    print(f"\ncases meeting all their targets: {met_all} of {len(targets)}")


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
    ap.add_argument("--dry-run", action="store_true",
                    help="list the cases, their shapes, types and targets; no GPU needed")
    ap.add_argument("--ncu", action="store_true",
                    help="profile each case's auto execution with Nsight Compute (the limiter)")
    ap.add_argument("--ncu-bin", default="ncu", help="Nsight Compute's CLI (default: ncu)")
    ap.add_argument("--ncu-timeout", type=int, default=300,
                    help="seconds for each case's profile (default 300)")
    ap.add_argument("--ncu-child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.dry_run:
        return dry_run(a)
    if a.ncu_child:
        return ncu_child(a)
    gpu_imports()
    ncu = None
    if a.ncu:
        ncu = ncu_binary(a.ncu_bin)
        if ncu is None:
            print(f"generality.py: --ncu: {a.ncu_bin} (Nsight Compute's CLI) is not on PATH "
                  "(nor in /usr/local/cuda/bin): no limiters", flush=True)
        else:
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run_ncu's clean-up
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
    rows, measured = [], []
    for case in selected_cases(a):
        torch.manual_seed(len(rows) + 1)
        x, xc, xt, yc, yt = device_arrays(case)
        t0 = time.perf_counter()
        plan, ran = ours.plan(case)
        plan_ms = (time.perf_counter() - t0) * 1e3
        if plan is None:
            print(f"  {case.name}: auto refused: {ran}", flush=True)
            rows.append(dict(case=case.name, error=ran))
            measured.append((case, rows[-1]))
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
        if cudnn_serves(case):
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
        measured.append((case, row))
        print(f"  {case.name:36s} {ran:10s} {t_auto:8.3f} ms  {row['pct_copy']:5.1f}% copy "
              f"{row['pct_fma']:5.1f}% FMA  CuPy {t_cupy:8.3f} ({row['vs_cupy']:5.2f}x)  "
              f"cuDNN {t_dnn if t_dnn else float('nan'):8.3f}  best {best} "
              f"{best_ms if best_ms else float('nan'):.3f}  {agree}  (plan {plan_ms:.0f} ms, "
              f"first call {first_ms:.0f} ms)", flush=True)
        del x, xc, yc, xt, yt, run_cupy, ref, got
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
    # issue 25's targets, and with --ncu what limits each case's kernels
    cp.get_default_memory_pool().free_all_blocks()
    torch.cuda.empty_cache()
    targets = []
    for case, r in measured:
        t = dict(case=case.name, target_class=target_class(case))
        if "error" in r:
            t.update(error=r["error"], words=[x[3] for x in case_targets(case)])
            targets.append(t)
            continue
        t["targets"] = evaluate_targets(case, r)
        t["limiter"] = "-" if not a.ncu else "ncu missing"
        if ncu:
            summary, msg = run_ncu(ncu, a, case)
            t["limiter"] = limiter(summary) if summary else f"ncu: {msg}"
            t["ncu"], t["ncu_message"] = summary, msg
            print(f"  ncu {case.name}: {t['limiter']} ({msg})", flush=True)
        targets.append(t)
    print_targets(targets)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(dict(device=name, sms=sms, clock_hz=clock, fma_peak=peak,
                           copy_gbps=copy_gbps, runs=runs, date=time.strftime("%Y-%m-%d"),
                           rows=rows, targets=targets), fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
