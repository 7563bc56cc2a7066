#!/usr/bin/env python3
"""peers.py - convolve against cuDNN (PyTorch, TF32 off) and CuPy on the GPU,
on the same data, in one run, with the device's copy bandwidth and FMA peak.

For every target shape of the fast-path issue it times, with CUDA events
(median of --runs after warm-up, on device-resident tensors):
  ours    libconvolve's planner ("auto") through convolve_execute_device on the
          same torch tensors (zero copies), and `convolve bench` (the CLI's own
          timing) as a second opinion;
  cudnn   torch.nn.functional.conv1d/2d/3d (zero padding, one channel);
  cupy    cupyx.scipy.ndimage.correlate / correlate1d / gaussian_filter.
It checks that the results agree (relative L2 against cuDNN or CuPy; integer
outputs within 1 grey level of CuPy, which truncates where we round) and
prints a ratio table: peer time / ours, our share of copy bandwidth and of
the FP32 FMA peak, and the issue's target for the row.

  python3 bench/peers.py [--build build] [--runs 20] [--quick] [--json out.json]

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
    print(f"peers.py: needs torch and cupy ({e})")
    sys.exit(2)

torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.benchmark = True


def median_ms(fn, runs, warmup=3):
    """Median of `runs` timings of fn() with CUDA events (each run timed alone)."""
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


class Ours:
    """A libconvolve plan on device tensors, through ctypes."""

    def __init__(self, build):
        os.environ["CONVOLVE_BUILD_DIR"] = build
        import convolve_ctypes as cc
        self.cc = cc
        self.lib = cc.load_library()
        self.ctx = C.c_void_p()
        assert self.lib.convolve_context_create(C.byref(self.ctx)) == cc.OK

    def plan(self, shape, channels, dtype, weights=None, gaussian_sigma=None, ndim=None,
             mode="constant"):
        cc, lib = self.cc, self.lib
        ndim = ndim or len(shape)
        f = C.c_void_p()
        if gaussian_sigma is not None:
            st = lib.convolve_filter_create_named(self.ctx, C.byref(f),
                                                  f"gaussian:{gaussian_sigma!r}".encode(), ndim)
        else:
            w = np.ascontiguousarray(weights, dtype=np.float64)
            ks = (C.c_size_t * w.ndim)(*w.shape)
            st = lib.convolve_filter_create(self.ctx, C.byref(f), w.ndim, ks,
                                            w.ctypes.data_as(C.POINTER(C.c_double)))
        assert st == cc.OK, lib.convolve_last_error(self.ctx)
        lay = cc.Layout()
        lay.dtype = cc.DTYPES[np.dtype(dtype)]
        lay.ndim = ndim
        step = np.dtype(dtype).itemsize * channels
        for a in range(ndim - 1, -1, -1):
            lay.shape[a] = shape[a]
            lay.strides[a] = step
            step *= shape[a]
        lay.channels = channels
        lay.channel_stride = np.dtype(dtype).itemsize
        opt = cc.Options()
        lib.convolve_options_init_size(C.byref(opt), C.sizeof(opt))
        opt.operation = 1  # correlate, as the peers do
        opt.mode = cc.MODES.index(mode)
        opt.backend = cc.BACKEND_CUDA
        plan = C.c_void_p()
        st = lib.convolve_plan_create(self.ctx, C.byref(plan), C.byref(lay), C.byref(lay), f,
                                      C.byref(opt))
        lib.convolve_filter_free(f)
        assert st == cc.OK, lib.convolve_last_error(self.ctx)
        return plan, lib.convolve_plan_strategy(plan).decode()

    def run(self, plan, x, y):
        stream = C.c_void_p(torch.cuda.current_stream().cuda_stream)
        st = self.lib.convolve_execute_device(plan, C.c_void_p(x.data_ptr()),
                                              C.c_void_p(y.data_ptr()), stream)
        assert st == self.cc.OK, self.lib.convolve_last_error(self.ctx)

    def free(self, plan):
        self.lib.convolve_plan_free(plan)


def rel_l2(a, b):
    a = a.double()
    b = b.double()
    return float(torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(b))


def cli_bench(cli, args):
    """`convolve bench ... --json`: its rows and the copy bandwidth it measured."""
    out = subprocess.run([cli, "bench", *args, "--json"], capture_output=True, text=True)
    if out.returncode not in (0, 1):
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout)


def gpu_facts():
    p = torch.cuda.get_device_properties(0)
    clock = None
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True)
        clock = float(q.stdout.split()[0]) * 1e6
    except Exception:  # noqa: BLE001 - nvidia-smi may be missing
        clock = 1.98e9
    peak = p.multi_processor_count * 128 * 2 * clock  # FP32 FMA lanes per SM on Hopper
    return p.name, p.multi_processor_count, clock, peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="smaller shapes (a smoke test)")
    ap.add_argument("--json", help="write the rows here too")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    cli = os.path.join(build, "convolve")
    ours = Ours(build)
    name, sms, clock, peak = gpu_facts()
    runs = max(a.runs, 20)
    N2 = 2048 if a.quick else 8192
    N1 = 1 << (22 if a.quick else 28)
    N3 = 128 if a.quick else 512
    torch.manual_seed(1)

    # copy bandwidth, measured here (read + write) on a buffer like the inputs
    buf = torch.empty(N2 * N2, device="cuda")
    dst = torch.empty_like(buf)
    copy_ms = median_ms(lambda: dst.copy_(buf), runs)
    copy_gbps = 2 * buf.numel() * 4 / (copy_ms * 1e-3) / 1e9
    del buf, dst
    print(f"peers.py: {name}, {sms} SMs, FP32 FMA peak {peak / 1e12:.1f} TFLOP/s "
          f"(at {clock / 1e9:.2f} GHz), copy {copy_gbps:.0f} GB/s (read + write), "
          f"median of {runs} runs", flush=True)
    rows = []

    def add(case, target, ours_ms, ran, bytes_moved, flops, cudnn_ms=None, cupy_ms=None,
            agree="", bench_ms=None):
        floor_ms = bytes_moved / (copy_gbps * 1e9) * 1e3
        row = dict(case=case, target=target, ran=ran, ours_ms=ours_ms, bench_ms=bench_ms,
                   cudnn_ms=cudnn_ms, cupy_ms=cupy_ms, pct_copy=100 * floor_ms / ours_ms,
                   pct_fma=100 * flops / (ours_ms * 1e-3) / peak,
                   vs_cudnn=cudnn_ms / ours_ms if cudnn_ms else None,
                   vs_cupy=cupy_ms / ours_ms if cupy_ms else None, agree=agree)
        rows.append(row)
        print(f"  {case:34s} ours {ours_ms:8.3f} ms ({ran}); cudnn "
              f"{cudnn_ms if cudnn_ms else float('nan'):8.3f}; cupy "
              f"{cupy_ms if cupy_ms else float('nan'):8.3f}; {row['pct_copy']:5.1f}% copy, "
              f"{row['pct_fma']:5.1f}% FMA; {agree}", flush=True)

    # ---- 2-D float32, dense, zero border --------------------------------
    x = torch.rand(N2, N2, device="cuda")
    y = torch.empty_like(x)
    bench = cli_bench(cli, ["--shape", f"{N2}x{N2}", "--radius", "1,2,3,4,7,8,15",
                            "--strategy", "auto", "--runs", str(runs)])
    bench_ms = {r["radius"]: r.get("median_ms") for r in bench["results"]}
    for r in (1, 2, 3, 4, 7, 8, 15):
        K = 2 * r + 1
        w = torch.rand(K, K, device="cuda") / (K * K)
        plan, ran = ours.plan((N2, N2), 1, np.float32, w.cpu().numpy().astype(np.float64))
        t_ours = median_ms(lambda: ours.run(plan, x, y), runs)
        xt, wt = x.view(1, 1, N2, N2), w.view(1, 1, K, K)
        ref = F.conv2d(xt, wt, padding=r)[0, 0]
        t_dnn = median_ms(lambda: F.conv2d(xt, wt, padding=r), runs)
        xc, wc = cp.asarray(x), cp.asarray(w)
        t_cupy = median_ms(lambda: cndi.correlate(xc, wc, mode="constant"), runs)
        err = rel_l2(y, ref)
        target = (">=85% copy" if r <= 3 else ">=50% FMA" if r <= 8 else ">=10x cuDNN")
        add(f"2-D f32 {N2}^2 r={r} dense", target, t_ours, ran, N2 * N2 * 8, 2 * K * K * N2 * N2,
            t_dnn, t_cupy, f"relL2 vs cuDNN {err:.1e}", bench_ms.get(r))
        ours.free(plan)
    # any border mode: reflect (peers have none on the GPU but CuPy)
    for r in (1, 2, 3):
        K = 2 * r + 1
        w = torch.rand(K, K, device="cuda") / (K * K)
        plan, ran = ours.plan((N2, N2), 1, np.float32, w.cpu().numpy().astype(np.float64),
                              mode="reflect")
        t_ours = median_ms(lambda: ours.run(plan, x, y), runs)
        xc, wc = cp.asarray(x), cp.asarray(w)
        ref = torch.as_tensor(cndi.correlate(xc, wc, mode="reflect"), device="cuda")
        t_cupy = median_ms(lambda: cndi.correlate(xc, wc, mode="reflect"), runs)
        add(f"2-D f32 {N2}^2 r={r} reflect", ">=85% copy", t_ours, ran, N2 * N2 * 8,
            2 * K * K * N2 * N2, None, t_cupy, f"relL2 vs CuPy {rel_l2(y, ref):.1e}")
        ours.free(plan)

    # ---- 2-D separable Gaussian ------------------------------------------
    for r in (2, 4, 8, 16):
        sigma = r / 4.0
        plan, ran = ours.plan((N2, N2), 1, np.float32, gaussian_sigma=sigma)
        t_ours = median_ms(lambda: ours.run(plan, x, y), runs)
        xc = cp.asarray(x)
        ref = torch.as_tensor(cndi.gaussian_filter(xc, sigma, mode="constant", truncate=4.0),
                              device="cuda")
        t_cupy = median_ms(lambda: cndi.gaussian_filter(xc, sigma, mode="constant", truncate=4.0),
                           runs)
        K = 2 * r + 1
        g = torch.exp(-0.5 * (torch.arange(K, device="cuda") - r) ** 2 / sigma ** 2)
        g = g / g.sum()
        xt = x.view(1, 1, N2, N2)
        gy, gx = g.view(1, 1, K, 1), g.view(1, 1, 1, K)
        t_dnn = median_ms(lambda: F.conv2d(F.conv2d(xt, gx, padding=(0, r)), gy,
                                           padding=(r, 0)), runs)
        add(f"2-D f32 {N2}^2 gaussian r={r}", ">=75% copy", t_ours, ran, N2 * N2 * 8,
            4 * K * N2 * N2, t_dnn, t_cupy, f"relL2 vs CuPy {rel_l2(y, ref):.1e}")
        ours.free(plan)
    del x, y

    # ---- uint8 RGB ------------------------------------------------------
    xu = torch.randint(0, 256, (N2, N2, 3), dtype=torch.uint8, device="cuda")
    yu = torch.empty_like(xu)
    for r in (1, 2):
        K = 2 * r + 1
        w = np.random.default_rng(r).uniform(0.2, 1.0, (K, K))
        w /= w.sum()
        plan, ran = ours.plan((N2, N2), 3, np.uint8, w)
        t_ours = median_ms(lambda: ours.run(plan, xu, yu), runs)
        xc = cp.asarray(xu)
        w3 = cp.asarray(w.reshape(K, K, 1))
        ref = torch.as_tensor(cndi.correlate(xc.astype(cp.float32), w3.astype(cp.float32),
                                             mode="constant"), device="cuda")
        t_cupy = median_ms(lambda: cndi.correlate(xc, w3, mode="constant"), runs)
        diff = float((yu.float() - torch.round(ref).clamp(0, 255)).abs().max())
        gpix = N2 * N2 / (t_ours * 1e-3) / 1e9
        add(f"u8 RGB {N2}^2 r={r} ({gpix:.1f} Gpx/s)", ">=80% copy", t_ours, ran, N2 * N2 * 6,
            3 * 2 * K * K * N2 * N2, None, t_cupy, f"max |diff| {diff:.0f} grey level")
        ours.free(plan)
    del xu, yu

    # ---- 1-D, 31 taps ---------------------------------------------------
    x1 = torch.rand(N1, device="cuda")
    y1 = torch.empty_like(x1)
    w = torch.rand(31, device="cuda") / 31
    plan, ran = ours.plan((N1,), 1, np.float32, w.cpu().numpy().astype(np.float64))
    t_ours = median_ms(lambda: ours.run(plan, x1, y1), runs)
    xt, wt = x1.view(1, 1, N1), w.view(1, 1, 31)
    ref = F.conv1d(xt, wt, padding=15)[0, 0]
    t_dnn = median_ms(lambda: F.conv1d(xt, wt, padding=15), runs)
    xc, wc = cp.asarray(x1), cp.asarray(w)
    t_cupy = median_ms(lambda: cndi.correlate1d(xc, wc, mode="constant"), runs)
    add(f"1-D f32 2^{N1.bit_length() - 1} 31 taps", ">=85% copy", t_ours, ran, N1 * 8,
        2 * 31 * N1, t_dnn, t_cupy, f"relL2 vs cuDNN {rel_l2(y1, ref):.1e}")
    ours.free(plan)
    del x1, y1

    # ---- 3-D --------------------------------------------------------------
    x3 = torch.rand(N3, N3, N3, device="cuda")
    y3 = torch.empty_like(x3)
    for K, target in ((3, ">=80% copy"), (7, ">=50% FMA")):
        w = torch.rand(K, K, K, device="cuda") / K ** 3
        plan, ran = ours.plan((N3, N3, N3), 1, np.float32, w.cpu().numpy().astype(np.float64))
        t_ours = median_ms(lambda: ours.run(plan, x3, y3), runs)
        xt, wt = x3.view(1, 1, N3, N3, N3), w.view(1, 1, K, K, K)
        ref = F.conv3d(xt, wt, padding=K // 2)[0, 0]
        t_dnn = median_ms(lambda: F.conv3d(xt, wt, padding=K // 2), runs)
        xc, wc = cp.asarray(x3), cp.asarray(w)
        t_cupy = median_ms(lambda: cndi.correlate(xc, wc, mode="constant"), runs)
        add(f"3-D f32 {N3}^3 {K}x{K}x{K}", target, t_ours, ran, N3 ** 3 * 8, 2 * K ** 3 * N3 ** 3,
            t_dnn, t_cupy, f"relL2 vs cuDNN {rel_l2(y3, ref):.1e}")
        ours.free(plan)
    del x3, y3

    print("\n| case | target | ours ms (strategy) | bench ms | cuDNN ms | CuPy ms | cuDNN/ours "
          "| CuPy/ours | % copy | % FMA | agreement |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")

    def fmt(v, f="{:.3f}"):
        return f.format(v) if v is not None else "-"
    for r in rows:
        print(f"| {r['case']} | {r['target']} | {r['ours_ms']:.3f} ({r['ran']}) | "
              f"{fmt(r['bench_ms'])} | {fmt(r['cudnn_ms'])} | {fmt(r['cupy_ms'])} | "
              f"{fmt(r['vs_cudnn'], '{:.2f}x')} | {fmt(r['vs_cupy'], '{:.2f}x')} | "
              f"{r['pct_copy']:.1f}% | {r['pct_fma']:.1f}% | {r['agree']} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(device=name, sms=sms, clock_hz=clock, fma_peak=peak,
                           copy_gbps=copy_gbps, runs=runs, date=time.strftime("%Y-%m-%d"),
                           rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
