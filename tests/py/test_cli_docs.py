"""test_cli_docs.py - docs/cli.md's tables of options (of `convolve INPUT
OUTPUT` and of `convolve bench`) and of named filters are the ones made from
the option tables (tools/cli_spec.c, tools/bench.c) and the library's table of
named filters by build/convolve_doc, and --help shows the same options and
filters. The man page and the bash completion script made from the same
tables at build time (build/convolve.1, build/convolve.bash) are current,
name every option and filter, render without groff warnings (when groff is
installed), and complete what they should in bash.

Each generated table lies in docs/cli.md between <!-- NAME:begin --> and
<!-- NAME:end -->; the test fails when one differs from what convolve_doc
writes. CONVOLVE_UPDATE_DOCS=1 rewrites them:
    CONVOLVE_UPDATE_DOCS=1 ctest -R cli_docs
Environment: CONVOLVE_DOC (the generator), CONVOLVE_CLI (the convolve
binary), CONVOLVE_BUILD_DIR; skipped (77) when the tools are not built.
"""
import difflib
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.normpath(os.path.join(HERE, "..", "..", "docs", "cli.md"))
REGEN = "CONVOLVE_UPDATE_DOCS=1 ctest -R cli_docs"
# marker name in docs/cli.md -> convolve_doc's argument
REGIONS = [("options", "markdown-options"), ("filters", "markdown-filters"),
           ("bench-options", "markdown-bench-options")]


def tool(env):
    p = os.environ.get(env)
    return p if p and os.access(p, os.X_OK) else None


def outside_env():
    """The environment for programs that are not ours (groff, bash): without
    the sanitizer runtime a sanitized build preloads for python3, which would
    report the programs' own bugs (troff frees with the wrong operator)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


def run(args):
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=60)
    if r.returncode != 0:
        raise AssertionError("%s: exit %d\n%s" % (" ".join(args), r.returncode, r.stderr))
    return r.stdout


def npy_float64(values):
    """A 1-D float64 .npy file (version 1.0) holding values."""
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (%d,), }" % len(values)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    return (b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode()
            + struct.pack("<%dd" % len(values), *values))


def option_names(markdown):
    """The long option names in the first column of Markdown option tables."""
    return re.findall(r"^\| (?:`-\w`, )?`--([\w-]+)", markdown, re.M)


class CliDocs(unittest.TestCase):
    def setUp(self):
        self.doc_tool, self.cli = tool("CONVOLVE_DOC"), tool("CONVOLVE_CLI")
        if not self.doc_tool or not self.cli:
            self.skipTest("convolve_doc or convolve is not built")

    def generated(self, what):
        return run([self.doc_tool, what])

    def test_doc_tables_are_current(self):
        with open(DOC) as f:
            doc = f.read()
        new, stale = doc, []
        for name, what in REGIONS:
            begin, end = "<!-- %s:begin -->" % name, "<!-- %s:end -->" % name
            self.assertIn(begin, doc, "docs/cli.md lacks " + begin)
            self.assertIn(end, doc, "docs/cli.md lacks " + end)
            head, rest = new.split(begin, 1)
            old_block, tail = rest.split(end, 1)
            block = self.generated(what)
            self.assertTrue(block.strip(), "convolve_doc %s wrote nothing" % what)
            if old_block.strip("\n") + "\n" != block:
                stale.append("".join(difflib.unified_diff(
                    (old_block.strip("\n") + "\n").splitlines(True), block.splitlines(True),
                    "docs/cli.md (%s)" % name, "convolve_doc %s" % what, n=0)))
            new = head + begin + "\n" + block + end + tail
        if not stale:
            return
        if os.environ.get("CONVOLVE_UPDATE_DOCS") == "1":
            with open(DOC, "w") as f:
                f.write(new)
            print("test_cli_docs: rewrote %d table(s) in %s" % (len(stale), DOC))
            return
        self.fail("docs/cli.md's tables are out of date; regenerate them with\n    %s\n"
                  "(from the build folder), check the change and commit it.\n%s"
                  % (REGEN, "".join(stale)))

    def test_help_shows_every_option(self):
        for what, args in (("markdown-options", ["--help"]),
                           ("markdown-bench-options", ["bench", "--help"])):
            names = option_names(self.generated(what))
            self.assertGreater(len(names), 5, what)
            help_text = run([self.cli] + args)
            shown = re.findall(r"^  (?:-\w, )?--([\w-]+)", help_text, re.M)
            self.assertEqual(shown, names, "convolve %s and convolve_doc %s list different "
                             "options" % (" ".join(args), what))

    def test_help_and_errors_list_every_named_filter(self):
        specs = re.findall(r"^\| `([\w:-]+)` \|", self.generated("markdown-filters"), re.M)
        self.assertIn("gaussian:SIGMA", specs)
        help_text = run([self.cli, "--help"])
        filter_lines = help_text.split("--filter SPEC", 1)[1].split("\n\n", 1)[0]
        self.assertEqual(filter_lines.split(), specs)
        # the library's message for an unknown filter lists the same specs
        with tempfile.TemporaryDirectory() as tmp:
            signal = os.path.join(tmp, "x.npy")
            with open(signal, "wb") as f:
                f.write(npy_float64([1.0, 2.0, 3.0]))
            r = subprocess.run([self.cli, signal, os.path.join(tmp, "y.npy"), "--filter",
                                "nope"], stderr=subprocess.PIPE, text=True, timeout=60)
        known = re.search(r"\(known: (.*)\)", r.stderr)
        self.assertIsNotNone(known, r.stderr)
        self.assertEqual(known.group(1).split(", "), specs)

    def built(self, name, what):
        """The build's copy of a generated file, checked to be current."""
        text = self.generated(what)
        build = os.environ.get("CONVOLVE_BUILD_DIR")
        path = os.path.join(build, name) if build else None
        if path and os.path.exists(path):
            with open(path) as f:
                self.assertEqual(f.read(), text, "%s is not what convolve_doc %s writes now"
                                 % (path, what))
        return text

    def test_man_page(self):
        man = self.built("convolve.1", "man")
        self.assertTrue(man.startswith('.\\" Made by convolve_doc'), man[:80])
        for what in ("markdown-options", "markdown-bench-options"):
            for name in option_names(self.generated(what)):
                self.assertIn("\\fB\\-\\-%s\\fR" % name.replace("-", "\\-"), man, name)
        for spec in re.findall(r"^\| `([\w-]+)", self.generated("markdown-filters"), re.M):
            self.assertIn("\\fB%s\\fR" % spec.replace("-", "\\-"), man, spec)
        for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "\"NAMED FILTERS\"",
                        "\"EXIT CODES\"", "EXAMPLES", "COMMANDS"):
            self.assertIn("\n.SH %s\n" % section, man)
        groff = shutil.which("groff")
        if groff:
            with tempfile.TemporaryDirectory() as tmp:
                page = os.path.join(tmp, "convolve.1")
                with open(page, "w") as f:
                    f.write(man)
                r = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z", page],
                                   stderr=subprocess.PIPE, text=True, timeout=60,
                                   env=outside_env())
                self.assertEqual((r.returncode, r.stderr), (0, ""), "groff warns")

    def complete(self, script, words):
        """What the completion function offers for words (the last is the one
        being completed), in an empty folder (no files to offer)."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "completion.bash")
            with open(path, "w") as f:
                f.write(script)
            quoted = " ".join("'%s'" % w for w in words)
            cmd = ('complete() { :; }; compopt() { :; }; source %s; COMP_WORDS=(%s); '
                   'COMP_CWORD=%d; _convolve; printf "%%s\\n" "${COMPREPLY[@]}"'
                   % (path, quoted, len(words) - 1))
            r = subprocess.run(["bash", "--norc", "-c", cmd], cwd=tmp, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=60,
                               env=outside_env())
            self.assertEqual(r.returncode, 0, r.stderr)
            return [w for w in r.stdout.split("\n") if w]

    def test_bash_completion(self):
        if not shutil.which("bash"):
            self.skipTest("no bash")
        script = self.built("convolve.bash", "bash-completion")
        c = lambda *w: self.complete(script, ["convolve"] + list(w))  # noqa: E731
        run_opts = option_names(self.generated("markdown-options"))
        bench_opts = option_names(self.generated("markdown-bench-options"))
        self.assertEqual(sorted(o for o in c("--") if o.startswith("--")),
                         sorted("--" + n for n in run_opts))
        self.assertEqual(sorted(o for o in c("bench", "--") if o.startswith("--")),
                         sorted("--" + n for n in bench_opts))
        self.assertEqual(c("--mo"), ["--mode"])
        self.assertEqual(c("x.npy", "--mode", ""), ["reflect", "constant", "nearest", "mirror",
                                                     "wrap"])
        self.assertEqual(c("x.npy", "--mode", "=", "ne"), ["nearest"])
        self.assertEqual(c("x.npy", "--filter", "ga"), ["gaussian:"])
        self.assertEqual(c("x.npy", "--output-dtype", "uint"), ["uint8", "uint16"])
        self.assertEqual(c("x.npy", "--cval", ""), [])
        self.assertIn("auto", c("x.npy", "--strategy", ""))
        self.assertIn("reference", c("x.npy", "--strategy", ""))
        self.assertEqual(c("be"), ["bench"])
        self.assertEqual(c("bench", "--sh"), ["--shape"])
        self.assertEqual(c("bench", "--dtype", "f"), ["float32", "float64"])
        self.assertEqual(c("bench", "--filter", ""), ["dense", "gaussian"])
        self.assertEqual(c("info", ""), [])


if __name__ == "__main__":
    result = unittest.main(verbosity=1, exit=False).result
    if result.skipped and not result.failures and not result.errors:
        sys.exit(77)
    sys.exit(0 if result.wasSuccessful() else 1)
