#!/usr/bin/env python3
"""test_closed_folder.py - the CLI's tests in a folder closed to other users.

As root, the cases about unreadable files run the CLI as user nobody (root
reads any file). Where nobody cannot run it - the clone lies under a folder
of mode 0700, as a home directory or `mktemp -d` is - those cases must skip
with the reason (test_cli_batch) or keep their documented row
(test_errors_table), not fail. This runs both with CONVOLVE_CLI a copy of
the CLI in such a folder, and checks that they pass and say why.
Not as root: skipped (exit 77), nobody is not involved there.
Environment: as cli_support's (CONVOLVE_CLI, CONVOLVE_BUILD_DIR, ...).
"""
import os
import shutil
import subprocess
import sys
import tempfile

import cli_support

HERE = os.path.dirname(os.path.abspath(__file__))
NOBODY = 65534  # uid and gid of user nobody


def main():
    if os.geteuid() != 0:
        print("skipped: not running as root (only root runs the CLI as user nobody)")
        return cli_support.SKIP
    closed = tempfile.mkdtemp(prefix="convolve_closed_")
    failures = []
    try:
        os.chmod(closed, 0o700)
        cli = os.path.join(closed, "convolve")
        shutil.copy2(cli_support.CLI, cli)
        env = dict(os.environ, CONVOLVE_CLI=cli)
        env.pop("CONVOLVE_UPDATE_DOCS", None)  # never rewrite docs/errors.md from here
        try:  # the case at hand: nobody cannot run it
            r = subprocess.run([cli, "--version"], user=NOBODY,
                               group=NOBODY, extra_groups=[],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            failures.append("user nobody runs a program in a folder of mode 0700 (exit %d)"
                            % r.returncode)
        except PermissionError as e:
            print("user nobody cannot run %s: %s" % (cli, e))
        for script, args, needle in (
                ("test_cli_batch.py", ["Unreadable"], "cannot run %s" % cli),
                ("test_errors_table.py", [], "keeps its documented row")):
            r = subprocess.run([sys.executable, os.path.join(HERE, script)] + args, env=env,
                               cwd=closed, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, timeout=600)
            print("---- %s %s: exit %d\n%s" % (script, " ".join(args), r.returncode,
                                              r.stdout[-3000:]))
            if r.returncode != 0:
                failures.append("%s exits %d" % (script, r.returncode))
            elif needle not in r.stdout:
                failures.append("%s does not say why (no %r)" % (script, needle))
    finally:
        shutil.rmtree(closed, ignore_errors=True)
    print("test_closed_folder: %s" % ("FAILED: " + "; ".join(failures) if failures else "passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
