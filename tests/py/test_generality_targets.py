"""test_generality_targets.py - bench/generality.py without a GPU: its
--dry-run lists every case with the target class of issue 25 derived from the
case's fields (checked here for named cases), the targets are judged against
measured rows as the issue states them, and the --ncu path (ncu's CSV, the
time-weighted summary of a plan's kernels, the limiter, the child run under
a stand-in ncu) gives what it should. Needs numpy only; skipped (77) without
it unless CONVOLVE_REQUIRE_PYTHON=1."""
import argparse
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "bench", "generality.py")

try:
    import numpy  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the machine
    if os.environ.get("CONVOLVE_REQUIRE_PYTHON") == "1":
        print("FAIL: no numpy (%s) (CONVOLVE_REQUIRE_PYTHON=1)" % e, file=sys.stderr)
        sys.exit(1)
    print("skipped: this python (%s) lacks numpy: %s" % (sys.executable, e))
    sys.exit(77)

sys.path.insert(0, os.path.dirname(SCRIPT))
import generality as G  # noqa: E402

# the issue's classes for named cases (full sizes), as the issue reads
EXPECTED = {
    "u8 RGB 4096^2 gaussian:1": "integer",            # 9 taps an axis
    "u8 gray 8192^2 gaussian:1.2": "integer",         # 11 taps: the limit
    "u8 RGBA 4096^2 box:2": "integer",
    "u16 8192^2 dense 5x5": "integer",
    "u8 RGB 4096^2 dense 5x5 -> f32": "integer",      # uint8 input
    "u8 RGB 4096^2 gaussian:2.5": "other",            # 21 taps
    "u16 RGB 4096^2 gaussian:3": "other",             # 25 taps
    "u16 3-D 256^3 3x3x3 mirror": "other",            # not 2-D
    "f32 3-D 512^3 gaussian:1.5": "separable-3d",
    "f64 3-D 256^3 gaussian:2": "separable-3d",       # sigma 2: radius 8
    "f32 64x1024^2 stack 1x5x5": "dense-copy",        # a 2-D filter over a stack
    "f32 8192^2 dense 3x3": "dense-copy",
    "f32 8192^2 even 4x4": "dense-copy",              # reaches 2
    "f32 planar 3x4096^2 5x5 wrap": "dense-copy",
    "f32 8192^2 non-square 3x9": "dense-fma",         # reaches 4
    "f32 8192^2 dense 7x7 zero": "dense-fma",
    "f32 8192^2 dense 17x17 zero": "dense-fma",       # r = 8: the limit
    "f64 8192^2 dense 3x3": "other",                  # float64
    "f64 1-D 2^26 127 taps": "other",
    "f32 1-D 2^28 31 taps": "other",
    "f32 8192^2 gaussian:1 (9 taps)": "other",        # 2-D separable
    "f32 3-D 512^3 3x3x3": "other",                   # 3-D dense
}
ISSUE_25_NEW = ["u8 RGB 4096^2 gaussian:1", "u8 gray 8192^2 gaussian:1.2",
                "u16 RGB 4096^2 gaussian:3", "f64 3-D 256^3 gaussian:2",
                "f32 64x1024^2 stack 1x5x5", "f64 1-D 2^26 127 taps"]


def dry_run(*extra):
    r = subprocess.run([sys.executable, SCRIPT, "--dry-run"] + list(extra),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {}
    for line in r.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0] not in ("case", "---"):
            rows[cells[0]] = dict(shape=cells[1], dtype=cells[2], filter=cells[3],
                                  mode=cells[4], cls=cells[5], targets=cells[6])
    return rows


def by_name(name, quick=False):
    return next(c for c in G.cases(quick) if c.name == name)


# ncu's raw page as `ncu --csv --page raw` prints it, after the program's
# own lines: a header, a units row (microseconds here: the parser scales),
# a row a kernel
RAW = '''==PROF== Connected to process 4242 (/usr/bin/python3)
ncu-child: some output of the program
==PROF== Profiling "cvk_gen_tile": 0%....50%....100% - 9 passes
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__throughput.avg.pct_of_peak_sustained_elapsed","gpu__time_duration.sum","l1tex__throughput.avg.pct_of_peak_sustained_active","launch__registers_per_thread","lts__throughput.avg.pct_of_peak_sustained_elapsed","sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active","sm__throughput.avg.pct_of_peak_sustained_elapsed","sm__warps_active.avg.pct_of_peak_sustained_active","smsp__issue_active.avg.pct_of_peak_sustained_active"
"","","","","","","","","","","","%","usecond","%","register/thread","%","%","%","%","%"
"0","4242","python3","127.0.0.1","cvk_gen_tile","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0","90.00","3.00","40.00","64","50.00","20.00","45.00","30.00","25.00"
"1","4242","python3","127.0.0.1","cvk_fill_kernel","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0","30.00","1.00","20.00","32","10.00","n/a","15.00","50.00","45.00"
==PROF== Disconnected from process 4242
'''
# the same two kernels as the details page prints them (a row a metric, its
# unit beside it; a thousands separator)
DETAILS = '''"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1","python3","h","cvk_gen_tile","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","3.00"
"0","1","python3","h","cvk_gen_tile","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0","Command line profiler metrics","dram__throughput.avg.pct_of_peak_sustained_elapsed","%","90.00"
"1","1","python3","h","cvk_fill_kernel","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","1,000"
"1","1","python3","h","cvk_fill_kernel","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0","Command line profiler metrics","dram__throughput.avg.pct_of_peak_sustained_elapsed","%","30.00"
'''


class DryRun(unittest.TestCase):
    def test_every_case_listed_with_a_class(self):
        rows = dry_run()
        self.assertEqual(len(rows), len(G.cases(False)))
        for name, r in rows.items():
            self.assertIn(r["cls"], G.CLASS_WORDS, name)
        for name in ISSUE_25_NEW:
            self.assertIn(name, rows)

    def test_named_classes(self):
        rows = dry_run()
        for name, cls in EXPECTED.items():
            self.assertIn(name, rows)
            self.assertEqual(rows[name]["cls"], cls, name)
            self.assertEqual(G.target_class(by_name(name)), cls, name)

    def test_new_cases_shapes(self):
        rows = dry_run()
        self.assertEqual(rows["f32 64x1024^2 stack 1x5x5"]["shape"], "64x1024x1024")
        self.assertEqual(rows["f32 64x1024^2 stack 1x5x5"]["filter"], "dense 1x5x5")
        self.assertEqual(rows["u16 RGB 4096^2 gaussian:3"]["shape"], "4096x4096 x3")
        self.assertEqual(rows["u16 RGB 4096^2 gaussian:3"]["filter"], "separable 25x25")
        self.assertEqual(rows["f64 3-D 256^3 gaussian:2"]["dtype"], "float64")
        self.assertEqual(rows["f64 1-D 2^26 127 taps"]["shape"], str(1 << 26))
        self.assertEqual(rows["u8 gray 8192^2 gaussian:1.2"]["filter"], "separable 11x11")

    def test_targets_in_words(self):
        rows = dry_run()
        self.assertEqual(rows["f64 3-D 256^3 gaussian:2"]["targets"],
                         ">= 50% of copy; >= 3x CuPy; auto within 10% of best")
        # cuDNN only where it serves (float, zero border)
        self.assertIn(">= cuDNN", rows["f32 3-D 512^3 7x7x7 zero"]["targets"])
        self.assertNotIn(">= cuDNN", rows["f64 1-D 2^26 127 taps"]["targets"])

    def test_quick(self):
        rows = dry_run("--quick", "--only", "stack|127 taps|gaussian:1.2")
        self.assertEqual(set(rows), {"f32 8x256^2 stack 1x5x5", "f64 1-D 2^20 127 taps",
                                     "u8 gray 1024^2 gaussian:1.2"})
        self.assertEqual(rows["f32 8x256^2 stack 1x5x5"]["cls"], "dense-copy")


class Targets(unittest.TestCase):
    def test_separable_3d_has_two_targets(self):
        c = by_name("f64 3-D 256^3 gaussian:2")
        ts = G.evaluate_targets(c, dict(pct_copy=50.0, vs_cupy=2.9, auto_over_best=1.05))
        self.assertEqual([t["key"] for t in ts], ["pct_copy", "vs_cupy", "auto_over_best"])
        self.assertEqual([t["met"] for t in ts], [True, False, True])
        self.assertEqual(ts[1]["shown"], "2.90x CuPy")

    def test_auto_only_when_timed(self):
        c = by_name("u8 RGB 4096^2 gaussian:1")
        ts = G.evaluate_targets(c, dict(pct_copy=49.9, vs_cupy=9.0, auto_over_best=None))
        self.assertEqual([(t["key"], t["met"]) for t in ts], [("pct_copy", False)])
        ts = G.evaluate_targets(c, dict(pct_copy=60.0, auto_over_best=1.11))
        self.assertEqual([t["met"] for t in ts], [True, False])

    def test_other_with_cudnn(self):
        c = by_name("f32 3-D 512^3 7x7x7 zero")
        ts = G.evaluate_targets(c, dict(vs_cupy=1.5, vs_cudnn=0.95, auto_over_best=1.0))
        self.assertEqual([(t["key"], t["met"]) for t in ts],
                         [("vs_cupy", True), ("vs_cudnn", False), ("auto_over_best", True)])

    def test_dense_fma(self):
        c = by_name("f32 8192^2 dense 9x9 zero")
        ts = G.evaluate_targets(c, dict(pct_copy=99.0, pct_fma=59.0))
        self.assertEqual([(t["key"], t["met"]) for t in ts], [("pct_fma", False)])


class Ncu(unittest.TestCase):
    def test_raw_page(self):
        ks = G.parse_ncu_csv(RAW)
        self.assertEqual([k["Kernel Name"] for k in ks], ["cvk_gen_tile", "cvk_fill_kernel"])
        self.assertEqual(ks[0][G.NCU_TIME], 3000.0)
        self.assertIsNone(ks[1]["sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"])
        s = G.summarize_kernels(ks)
        self.assertEqual(s["kernels"], 2)
        self.assertAlmostEqual(s["ms"], 0.004)
        # weighted by time: (90 * 3000 + 30 * 1000) / 4000
        self.assertAlmostEqual(s["dram__throughput.avg.pct_of_peak_sustained_elapsed"], 75.0)
        # a kernel without the value: the others' average
        self.assertAlmostEqual(
            s["sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"], 20.0)
        self.assertEqual(s["launch__registers_per_thread"], 64)  # the longest kernel's
        self.assertEqual(G.limiter(s), "DRAM 75%")

    def test_details_page(self):
        ks = G.parse_ncu_csv(DETAILS)
        self.assertEqual(len(ks), 2)
        self.assertEqual([k[G.NCU_TIME] for k in ks], [3000.0, 1000.0])
        s = G.summarize_kernels(ks)
        self.assertAlmostEqual(s["dram__throughput.avg.pct_of_peak_sustained_elapsed"], 75.0)

    def test_limiters(self):
        base = {m: 10.0 for _, m in G.NCU_UNITS}
        base["sm__warps_active.avg.pct_of_peak_sustained_active"] = 25.0
        base["smsp__issue_active.avg.pct_of_peak_sustained_active"] = 40.0
        self.assertEqual(G.limiter(dict(base)), "latency (issue 40%, occupancy 25%)")
        s = dict(base, **{"l1tex__throughput.avg.pct_of_peak_sustained_active": 90.0,
                          "dram__throughput.avg.pct_of_peak_sustained_elapsed": 70.0})
        self.assertEqual(G.limiter(s), "L1/shared 90%")
        s = dict(base, **{"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": 72.0})
        self.assertEqual(G.limiter(s), "FMA pipe 72%")
        s = dict(base, **{"sm__throughput.avg.pct_of_peak_sustained_elapsed": 65.0})
        self.assertEqual(G.limiter(s), "SM 65%")
        self.assertEqual(G.limiter(None), "no kernels profiled")

    def tmpdir(self):
        d = tempfile.mkdtemp(prefix="generality_ncu_")
        self.addCleanup(shutil.rmtree, d, True)
        return d

    def fake_ncu(self, body):
        d = self.tmpdir()
        path = os.path.join(d, "ncu")
        with open(path, "w") as fh:
            fh.write("#!/bin/sh\n" + body)
        os.chmod(path, stat.S_IRWXU)
        return path

    def args(self, timeout=60):
        return argparse.Namespace(build="build", quick=True, ncu_timeout=timeout)

    def test_run_ncu_with_a_stand_in(self):
        raw = os.path.join(self.tmpdir(), "raw.csv")
        with open(raw, "w") as fh:
            fh.write(RAW)
        # it answers only when the child is asked for and profiled from
        # cudaProfilerStart on, as run_ncu must ask
        # (and by metric names where its --help lists --print-metric-name)
        ncu = self.fake_ncu('case "$*" in --help) echo "  --print-metric-name arg" ;; '
                            '*"--print-metric-name name"*"--profile-from-start off"*"--ncu-child '
                            'f32 8x256^2 stack 1x5x5 --quick"*) cat "%s" ;; '
                            '*) echo "==ERROR== bad: $*" ;; esac\n' % raw)
        s, msg = G.run_ncu(ncu, self.args(), by_name("f32 8x256^2 stack 1x5x5", quick=True))
        self.assertIsNotNone(s, msg)
        self.assertEqual(msg, "2 kernel(s), 0.004 ms under ncu")
        self.assertEqual(G.limiter(s), "DRAM 75%")

    def test_run_ncu_failures(self):
        c = by_name("f32 8x256^2 stack 1x5x5", quick=True)
        ncu = self.fake_ncu('echo "==ERROR== ERR_NVGPUCTRPERM - no permission"\nexit 1\n')
        s, msg = G.run_ncu(ncu, self.args(), c)
        self.assertIsNone(s)
        self.assertIn("ERR_NVGPUCTRPERM", msg)
        ncu = self.fake_ncu('[ "$1" = --help ] && exit 0\nsleep 30\n')
        s, msg = G.run_ncu(ncu, self.args(timeout=1), c)
        self.assertIsNone(s)
        self.assertEqual(msg, "ncu timed out after 1 s")
        self.assertIsNone(G.ncu_binary("no-such-ncu-here"))


if __name__ == "__main__":
    unittest.main()
