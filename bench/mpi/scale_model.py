#!/usr/bin/env python3
"""The cost model of docs/scale.md: parallel efficiency of libconvolve_mpi's
distributed plans on many nodes, for 3-D float32 volumes.

One rank per node. Per execution a rank posts its halo messages, computes its
whole box with one local plan while they travel (the interior), waits for
what is still in flight, then computes the edge pieces from the halos
(src/mpi/halo.c). So

    T = max(T_interior, T_comm) + T_edges + T_copy
    T_interior = t_c * V                       V = the box's elements
    T_comm     = m * alpha + s * H / beta      H = halo elements received,
               (+ 2 * s * H / beta_pcie on GPU nodes: halos staged through host)
    T_edges    = t_c * (elements of the edge pieces' input boxes)
    T_copy     = s * (H + edge inputs + edge outputs kept) / copy_bw
                 (packing halos, filling the pieces' input boxes from halos
                 and own elements, storing the pieces' outputs)
    E          = t_c * V / T                   (1: no decomposition overhead)

with m the neighbours a rank exchanges with (3^d - 1 for d split axes and a
dense filter: faces, edges and corners), s = 4 bytes. The exchange is hidden
while T_comm <= T_interior. Assumes progress during the interior (the plan's
progress thread, or NIC offload), interior ranks (edge ranks have fewer
neighbours), boxes as even as the grid allows, and no other traffic.

usage: bench/mpi/scale_model.py [--alpha 2e-6] [--beta 25e9] [--pcie 50e9]
       [--tgpu 4.64e-12] [--tcpu 40e-12] [--radius 1]
       [--kernel-ms MS --kernel-box AxBxC] [--exchange-ms MS --exchange-mb MB]

--kernel-ms/--kernel-box take t_c of the GPU node from a measured
single-GPU kernel time on a box (bench/mpi/mpi_device_scaling: kernel_ms,
box0); --exchange-ms/--exchange-mb take the GPU node's staging cost from a
measured device-resident halo exchange (exchange_ms) of that many MB
received by a rank (rank_halo_MB): faces to the host, packing, MPI within
the node, halos back, per byte, in place of 2 / pcie. The network's alpha
and beta are still added on top (conservative: the measured exchange
already includes the node's own MPI copy).
"""
import argparse
import math


def grids(P):
    """Slabs, pencils (2-D grid) and cubes (3-D grid) of P = 2^k ranks."""
    k = int(round(math.log2(P)))
    out = {"slabs": (P, 1, 1)}
    out["pencils"] = (2 ** ((k + 1) // 2), 2 ** (k // 2), 1)
    out["cubes"] = (2 ** ((k + 2) // 3), 2 ** ((k + 1) // 3), 2 ** (k // 3))
    return out


def model(N, P, grid, r, t_c, alpha, beta, pcie, copy_bw=10e9, s=4):
    b = [N / g for g in grid]
    if min(b) < 1:
        return None
    split = [g > 1 for g in grid]
    V = b[0] * b[1] * b[2]
    ext = [b[a] + 2 * r * split[a] for a in range(3)]
    H = ext[0] * ext[1] * ext[2] - V
    m = 3 ** sum(split) - 1
    t_comm = m * alpha + s * H / beta + (2 * s * H / pcie if pcie else 0.0)
    t_int = t_c * V
    # edge pieces: two per split axis, 3r thick (r outputs from 3r inputs),
    # inner along earlier axes, the whole (extended) box along later ones
    edge = kept = 0.0
    for a in range(3):
        if not split[a]:
            continue
        vol = min(3 * r, b[a] + 2 * r)
        out = min(r, b[a])
        for c in range(3):
            if c != a:
                vol *= b[c] if c < a else ext[c]
                out *= b[c]
        edge += 2 * vol
        kept += 2 * out
    t_edge = t_c * edge
    t_copy = s * (H + edge + kept) / copy_bw
    T = max(t_int, t_comm) + t_edge + t_copy
    return {"b": b, "V": V, "H": H, "m": m, "t_int": t_int, "t_comm": t_comm,
            "t_edge": t_edge, "t_copy": t_copy, "T": T, "E": t_c * V / T,
            "hidden": t_comm <= t_int, "mem": 2 * s * V}


def crossing(N, kind, r, t_c, alpha, beta, pcie, copy_bw):
    """The smallest node count (power of 2) at which the exchange is no
    longer hidden behind the interior; None if never before the boxes run out."""
    P = 1
    while True:
        P *= 2
        g = grids(P)[kind]
        res = model(N, P, g, r, t_c, alpha, beta, pcie, copy_bw)
        if res is None:
            return None
        if not res["hidden"]:
            return P


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alpha", type=float, default=2e-6, help="seconds per message")
    ap.add_argument("--beta", type=float, default=25e9, help="network bytes/s per node")
    ap.add_argument("--pcie", type=float, default=50e9, help="host<->GPU bytes/s (staging)")
    ap.add_argument("--tgpu", type=float, default=4.64e-12, help="s per output, GPU node")
    ap.add_argument("--tcpu", type=float, default=40e-12, help="s per output, CPU node")
    ap.add_argument("--radius", type=int, default=1, help="filter radius (K = 2r+1)")
    ap.add_argument("--kernel-ms", type=float, help="measured single-GPU kernel time, ms")
    ap.add_argument("--kernel-box", help="the box it was measured on, AxBxC")
    ap.add_argument("--exchange-ms", type=float, help="measured device-resident exchange, ms")
    ap.add_argument("--exchange-mb", type=float, help="halo MB a rank received in it")
    a = ap.parse_args()
    r = a.radius
    if a.kernel_ms is not None:
        if not a.kernel_box:
            ap.error("--kernel-ms needs --kernel-box")
        v = 1
        for x in a.kernel_box.split("x"):
            v *= int(x)
        a.tgpu = a.kernel_ms * 1e-3 / v
        print("t_c (GPU) from the measured kernel: %.4g ms on %s = %.3g ps/output"
              % (a.kernel_ms, a.kernel_box, a.tgpu * 1e12))
    if a.exchange_ms is not None:
        if not a.exchange_mb:
            ap.error("--exchange-ms needs --exchange-mb")
        a.pcie = 2 * a.exchange_mb * 1e6 / (a.exchange_ms * 1e-3)
        print("staging from the measured exchange: %.4g ms for %.4g MB = %.3g GB/s each way"
              % (a.exchange_ms, a.exchange_mb, a.pcie / 1e9))
    # GPU node: one H200 with its own NIC, boxes resident on the device
    # (copies on the device, ~1 TB/s); CPU node: 64 cores, copies shared by
    # all of them as src/mpi/copy.c does (~100 GB/s copied)
    nodes = (("GPU node", a.tgpu, a.pcie, 141e9, 1e12), ("CPU node", a.tcpu, None, 512e9, 100e9))
    for name, t_c, pcie, mem, copy_bw in nodes:
        print("\n%s: t_c = %.3g ps/output, alpha = %.3g us, beta = %.3g GB/s%s, %.0f GB of "
              "memory, filter %dx%dx%d\n"
              % (name, t_c * 1e12, a.alpha * 1e6, a.beta / 1e9,
                 ", halos staged over PCIe at %.3g GB/s" % (pcie / 1e9) if pcie else "",
                 mem / 1e9, 2 * r + 1, 2 * r + 1, 2 * r + 1))
        print("| volume | nodes | grid | box | GB/node | halo MB | interior ms | comm ms "
              "| edges ms | copies ms | total ms | efficiency | hidden |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for N in (4096, 16384):
            for P in (64, 1024):
                for kind, g in grids(P).items():
                    res = model(N, P, g, r, t_c, a.alpha, a.beta, pcie, copy_bw)
                    if res is None:
                        continue
                    fits = "" if res["mem"] <= mem else " (does not fit)"
                    print("| %d^3 | %d | %s %dx%dx%d | %s | %.1f%s | %.1f | %.3f | %.3f | %.3f | "
                          "%.3f | %.3f | %.0f%% | %s |" % (
                              N, P, kind, g[0], g[1], g[2],
                              "x".join("%g" % x for x in res["b"]), res["mem"] / 1e9, fits,
                              4 * res["H"] / 1e6, res["t_int"] * 1e3, res["t_comm"] * 1e3,
                              res["t_edge"] * 1e3, res["t_copy"] * 1e3, res["T"] * 1e3,
                              100 * res["E"], "yes" if res["hidden"] else "no"))
        print("\nNode count from which the exchange is no longer hidden (%s):\n" % name)
        print("| volume | slabs | pencils | cubes |")
        print("|---|---|---|---|")
        for N in (4096, 16384):
            cells = []
            for kind in ("slabs", "pencils", "cubes"):
                c = crossing(N, kind, r, t_c, a.alpha, a.beta, pcie, copy_bw)
                cells.append("%d" % c if c else "never (boxes run out first)")
            print("| %d^3 | %s |" % (N, " | ".join(cells)))


if __name__ == "__main__":
    main()
