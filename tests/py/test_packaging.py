#!/usr/bin/env python3
"""test_packaging.py - what the README promises about building against convolve.

1. The C program in README.md compiles against include/ and the built shared
   library, and runs.
2. `cmake --install` into a temporary prefix, then, with no LD_LIBRARY_PATH
   (the environment of a user who just installed it): the installed
   `convolve` (and `convolve-mpi` where built) run; examples/ builds with
   find_package(convolve) (shared and static) and with the README's
   `cc app.c $(pkg-config --cflags --libs convolve) -o app`, and the example
   blurs the bundled photo.
3. The Python package (where built), installed by `cmake --install
   --component python` into a staging folder (DESTDIR), imports and filters.
Environment: CONVOLVE_BUILD_DIR (the build tree), CONVOLVE_DATA_DIR.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("CONVOLVE_BUILD_DIR", os.path.join(SRC, "build")))
DATA = os.environ.get("CONVOLVE_DATA_DIR", os.path.join(SRC, "data"))
failures = []


def sh(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} -> {r.returncode}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r.stdout


def user_env(**extra):
    """A user's environment: PATH and HOME, no LD_LIBRARY_PATH, no PYTHONPATH;
    a sanitised build's runtime settings (LD_PRELOAD, ASAN_OPTIONS) kept."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/"),
           "LC_ALL": "C"}
    for k in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    env.update(extra)
    return env


def cache_value(name):
    """A variable of the build tree's CMakeCache.txt, or None."""
    try:
        text = open(os.path.join(BUILD, "CMakeCache.txt")).read()
    except OSError:
        return None
    m = re.search(r"^%s:[A-Z]+=(.*)$" % re.escape(name), text, re.M)
    return m.group(1) if m else None


def step(name, fn):
    try:
        fn()
        print(f"  ok   {name}")
    except Exception as e:  # noqa: BLE001 - report every failure
        failures.append(name)
        print(f"  FAIL {name}: {e}")


def main():
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        print("test_packaging: SKIPPED: no C compiler")
        return 77
    tmp = tempfile.mkdtemp(prefix="convolve-pkg-")
    try:
        def readme_program():
            text = open(os.path.join(SRC, "README.md")).read()
            code = re.search(r"```c\n(.*?)```", text, re.S).group(1)
            src = os.path.join(tmp, "readme.c")
            open(src, "w").write(code)
            exe = os.path.join(tmp, "readme")
            sh([cc, "-std=c11", "-Wall", "-Werror", "-I", os.path.join(SRC, "include"), src,
                "-L", BUILD, "-lconvolve", f"-Wl,-rpath,{BUILD}", "-o", exe])
            out = sh([exe])
            assert "ran '" in out, out

        prefix = os.path.join(tmp, "prefix")

        def install():
            sh(["cmake", "--install", BUILD, "--prefix", prefix])
            assert os.path.exists(os.path.join(prefix, "include", "convolve.h"))

        def installed_program(name, args, needle):
            def run():
                exe = os.path.join(prefix, "bin", name)
                if not os.path.exists(exe):
                    raise RuntimeError(f"{exe} was not installed")
                out = sh([exe, *args], env=user_env())
                assert needle in out, out
            return run

        def find_package(static):
            def run():
                b = os.path.join(tmp, "ex-static" if static else "ex-shared")
                extra = []
                if static and os.environ.get("CONVOLVE_SANITIZED") == "1":
                    # a sanitised static library needs its runtime in the program
                    extra = ["-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined"]
                sh(["cmake", "-S", os.path.join(SRC, "examples"), "-B", b,
                    f"-DCMAKE_PREFIX_PATH={prefix}", f"-DEXAMPLE_STATIC={'ON' if static else 'OFF'}",
                    *extra])
                sh(["cmake", "--build", b])
                out_png = os.path.join(tmp, f"blur-{static}.png")
                sh([os.path.join(b, "blur"), os.path.join(DATA, "grace_hopper.jpg"), out_png, "1.5"],
                   env=user_env())
                assert os.path.getsize(out_png) > 1000
            return run

        def pkg_config():
            pc = shutil.which("pkg-config")
            if not pc:
                raise RuntimeError("pkg-config not found")
            env = dict(os.environ)
            libdir = [d for d in ("lib", "lib64", "lib/x86_64-linux-gnu")
                      if os.path.exists(os.path.join(prefix, d, "pkgconfig", "convolve.pc"))][0]
            env["PKG_CONFIG_PATH"] = os.path.join(prefix, libdir, "pkgconfig")
            # as the README has it: cc app.c $(pkg-config --cflags --libs convolve) -o app
            flags = sh([pc, "--cflags", "--libs", "convolve"], env=env).split()
            exe = os.path.join(tmp, "blur-pc")
            sh([cc, os.path.join(SRC, "examples", "blur.c"), *flags, "-o", exe])
            out_png = os.path.join(tmp, "blur-pc.png")
            sh([exe, os.path.join(DATA, "grace_hopper.jpg"), out_png], env=user_env())
            assert os.path.getsize(out_png) > 1000

        def python_package():
            site = cache_value("CONVOLVE_PYTHON_SITE")
            py = cache_value("Python3_EXECUTABLE") or cache_value("CONVOLVE_PYTHON")
            if not site or not py or not os.path.isdir(os.path.join(BUILD, "python", "convolve")):
                print("  (the Python package is not built: not checked)")
                return
            stage = os.path.join(tmp, "stage")
            sh(["cmake", "--install", BUILD, "--component", "python"],
               env=dict(os.environ, DESTDIR=stage))
            staged = stage + site
            code = ("import numpy as np, convolve, scipy.ndimage as ndi\n"
                    "x = np.arange(48.0).reshape(6, 8)\n"
                    "assert np.allclose(convolve.gaussian_filter(x, 1.0), ndi.gaussian_filter(x, 1.0))\n"
                    "print(convolve.__file__)\n")
            out = sh([py, "-c", code], env=user_env(PYTHONPATH=staged), cwd=tmp)
            assert out.startswith(staged), out

        step("README's C program compiles and runs", readme_program)
        step("cmake --install", install)
        step("installed convolve runs (no LD_LIBRARY_PATH)",
             installed_program("convolve", ["--version"], "convolve"))
        if os.path.exists(os.path.join(BUILD, "convolve-mpi")):
            step("installed convolve-mpi runs (no LD_LIBRARY_PATH)",
                 installed_program("convolve-mpi", ["--version"], "convolve-mpi"))
        step("find_package(convolve), shared library", find_package(False))
        step("find_package(convolve), static library", find_package(True))
        step("pkg-config --cflags --libs convolve, the program runs (no LD_LIBRARY_PATH)",
             pkg_config)
        step("the Python package installed by cmake --install --component python", python_package)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"test_packaging: {'FAILED: ' + ', '.join(failures) if failures else 'passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
