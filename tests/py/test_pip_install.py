#!/usr/bin/env python3
"""test_pip_install.py - the Python package installed the ways docs/python.md gives.

On a copy of the source tree as a fresh clone has it (git's tracked and
unignored files), CUDA off:

1. `pip install --no-build-isolation .` into a virtual environment made with
   the system's site packages (numpy and scipy from there): in a clean
   environment (no PYTHONPATH) `import convolve` comes from the environment's
   site-packages, reports the project's version (include/convolve.h, CMake's
   project version and the installed metadata agree) and filters as
   scipy.ndimage does; `pip uninstall -y convolve` removes it.
2. The system's python3: `pip install --prefix DIR` and `pip install --user`
   (HOME a temporary folder) install it where that interpreter finds it, and
   `pip uninstall` removes the user install.
3. `pip wheel --no-build-isolation .` makes one platform wheel holding the
   extension and every Python file of python/convolve, whose run path names
   no build folder.
4. `make install-python PYTHON=<the environment's python>` on a build folder
   configured for the system's python3 installs into the environment's
   site-packages (DESTDIR staging), not into the first interpreter's; make
   refuses a PYTHON that is not there and one that CMAKE_FLAGS contradicts.

Every step shares one CMake build folder (CONVOLVE_CMAKE_BUILD_DIR), so the
library is compiled once. Exits 77 (skipped) where pip, setuptools, wheel,
venv, git, make or cmake is missing, unless CONVOLVE_REQUIRE_PYTHON=1, and in
a sanitised build (the package built here is not the sanitised one; the plain
build runs this test).
Environment: CONVOLVE_BUILD_DIR is not used; the test builds its own.
"""
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REQUIRE = os.environ.get("CONVOLVE_REQUIRE_PYTHON") == "1"
failures = []


def skip(reason):
    if REQUIRE:
        print(f"test_pip_install: FAILED: {reason} (CONVOLVE_REQUIRE_PYTHON=1)")
        return 1
    print(f"test_pip_install: SKIPPED: {reason}")
    return 77


def sh(cmd, ok=True, **kw):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if ok and r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} -> {r.returncode}\n"
                           f"{r.stdout[-3000:]}{r.stderr[-3000:]}")
    return r


def clean_env(**extra):
    """A user's environment: no PYTHONPATH, no LD_LIBRARY_PATH, no make
    variables of a calling make (ctest under make -j), nothing of CTest's."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/"),
           "LC_ALL": "C.UTF-8"}
    env.update(extra)
    return env


def project_version():
    h = open(os.path.join(SRC, "include", "convolve.h")).read()
    ver = re.search(r'#define\s+CONVOLVE_VERSION_STRING\s+"([^"]+)"', h).group(1)
    cm = open(os.path.join(SRC, "CMakeLists.txt")).read()
    cmake_ver = re.search(r"project\(\s*convolve\s+VERSION\s+(\S+)", cm).group(1)
    assert ver == cmake_ver, f"convolve.h says {ver}, CMakeLists.txt {cmake_ver}"
    return ver


def copy_tree(dest):
    """The files a fresh clone of this working tree has."""
    r = subprocess.run(["git", "-C", SRC, "ls-files", "-z", "-c", "-o", "--exclude-standard"],
                       capture_output=True, text=True)
    if r.returncode == 0:
        for rel in filter(None, r.stdout.split("\0")):
            src = os.path.join(SRC, rel)
            if os.path.isfile(src):
                os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
                shutil.copy2(src, os.path.join(dest, rel), follow_symlinks=False)
    else:  # not a git checkout: everything but build folders
        shutil.copytree(SRC, dest, symlinks=True,
                        ignore=shutil.ignore_patterns(".git", "build", "build-*", "__pycache__"))


def check_code(expect_dir, version, metadata=True):
    """Python that imports convolve, checks where from and its version (and
    the installed metadata's), and compares one filter with scipy.ndimage."""
    meta = ('from importlib.metadata import version\n'
            f'assert version("convolve") == {version!r}, version("convolve")\n') if metadata else ""
    return f"""
import os, numpy as np, scipy.ndimage as ndi, convolve
here = os.path.realpath(convolve.__file__)
assert here.startswith(os.path.realpath({expect_dir!r}) + os.sep), here
assert convolve.__version__ == {version!r}, convolve.__version__
{meta}x = np.random.default_rng(1).random((37, 52)).astype(np.float32)
for mode in ("reflect", "nearest", "mirror", "wrap", "constant"):
    np.testing.assert_allclose(convolve.gaussian_filter(x, 1.7, mode=mode),
                               ndi.gaussian_filter(x, 1.7, mode=mode), rtol=2e-6, atol=2e-6)
print("imported", here, convolve.__version__)
"""


def step(name, fn):
    t = time.monotonic()
    try:
        fn()
        print(f"  ok   {name} ({time.monotonic() - t:.1f} s)")
    except Exception as e:  # noqa: BLE001 - report every failure
        failures.append(name)
        print(f"  FAIL {name} ({time.monotonic() - t:.1f} s): {e}")


def main():
    if os.environ.get("CONVOLVE_SANITIZED") == "1":
        print("test_pip_install: SKIPPED: a sanitised build (this test builds a package of its own; "
              "the plain build runs it)")
        return 77
    for mod in ("pip", "setuptools", "wheel", "venv", "numpy", "scipy"):
        if importlib.util.find_spec(mod) is None:
            return skip(f"{sys.executable} has no {mod} (Debian: python3-{mod})")
    for tool in ("git", "make", "cmake"):
        if not shutil.which(tool):
            return skip(f"no {tool}")
    version = project_version()
    t0 = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="convolve-pip-")
    try:
        clone = os.path.join(tmp, "src")
        copy_tree(clone)
        cmake_dir = os.path.join(tmp, "cmake")
        home = os.path.join(tmp, "home")
        os.makedirs(home)
        venv = os.path.join(tmp, "venv")
        r = sh([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv],
               ok=False)
        if r.returncode != 0:
            return skip(f"python3 -m venv fails (Debian: python3-venv): {r.stderr.strip()[-300:]}")
        vpy = os.path.join(venv, "bin", "python3")
        vsite = sh([vpy, "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"]
                   ).stdout.strip()
        jobs = str(min(4, os.cpu_count() or 2))
        # CUDA off and no optimisation: the build takes a third of a Release
        # build's time, and this tests the packaging, not the library
        pip_env = clean_env(CONVOLVE_CUDA="OFF", CONVOLVE_CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Debug",
                            CONVOLVE_CMAKE_BUILD_DIR=cmake_dir, CMAKE_BUILD_PARALLEL_LEVEL=jobs,
                            PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
                            PIP_NO_CACHE_DIR="1")

        def pip(py, *args, env=pip_env):
            return sh([py, "-m", "pip", *args], cwd=clone, env=env)

        def cache(name):
            text = open(os.path.join(cmake_dir, "CMakeCache.txt")).read()
            m = re.search(r"^%s:[A-Z]+=(.*)$" % re.escape(name), text, re.M)
            return m.group(1) if m else None

        def venv_install():
            pip(vpy, "install", "--no-build-isolation", ".")
            # the variables reached CMake, after setup.py's own options
            got = {k: cache(k) for k in ("CONVOLVE_WITH_CUDA", "CMAKE_BUILD_TYPE",
                                         "CONVOLVE_BUILD_TESTS", "CONVOLVE_PYTHON")}
            assert got == {"CONVOLVE_WITH_CUDA": "OFF", "CMAKE_BUILD_TYPE": "Debug",
                           "CONVOLVE_BUILD_TESTS": "OFF", "CONVOLVE_PYTHON": vpy}, got
            out = sh([vpy, "-c", check_code(vsite, version)], env=clean_env(), cwd=tmp).stdout
            print("      " + out.strip())
            pip(vpy, "uninstall", "-y", "convolve")
            r = sh([vpy, "-c", "import convolve"], ok=False, env=clean_env(), cwd=tmp)
            assert r.returncode != 0 and "No module named 'convolve'" in r.stderr, r.stderr
            assert not os.path.exists(os.path.join(vsite, "convolve")), os.listdir(vsite)

        def prefix_install():
            prefix = os.path.join(tmp, "prefix")
            pip(sys.executable, "install", "--no-build-isolation", "--prefix", prefix, ".")
            found = glob.glob(os.path.join(prefix, "**", "convolve", "__init__.py"), recursive=True)
            assert len(found) == 1, found
            site = os.path.dirname(os.path.dirname(found[0]))
            sh([sys.executable, "-c", check_code(site, version)],
               env=clean_env(PYTHONPATH=site), cwd=tmp)

        def user_install():
            # Debian's python3 is externally managed (PEP 668): --user needs
            # --break-system-packages there, as any package does
            env = dict(pip_env, HOME=home, PIP_BREAK_SYSTEM_PACKAGES="1")
            pip(sys.executable, "install", "--no-build-isolation", "--user", ".", env=env)
            usite = sh([sys.executable, "-c", "import site; print(site.getusersitepackages())"],
                       env=clean_env(HOME=home)).stdout.strip()
            assert usite.startswith(home), usite
            sh([sys.executable, "-c", check_code(usite, version)], env=clean_env(HOME=home), cwd=tmp)
            pip(sys.executable, "uninstall", "-y", "convolve", env=env)
            assert not os.path.exists(os.path.join(usite, "convolve")), os.listdir(usite)

        def wheel():
            wheels = os.path.join(tmp, "wheels")
            pip(sys.executable, "wheel", "--no-build-isolation", "--no-deps", "-w", wheels, ".")
            names = os.listdir(wheels)
            assert len(names) == 1 and names[0].startswith(f"convolve-{version}-") \
                and names[0].endswith(".whl") and "linux" in names[0], names
            inside = zipfile.ZipFile(os.path.join(wheels, names[0])).namelist()
            py = sorted(os.path.basename(p)
                        for p in glob.glob(os.path.join(SRC, "python", "convolve", "*.py")))
            missing = [p for p in py if f"convolve/{p}" not in inside]
            assert not missing, f"not in the wheel: {missing}; it has {inside}"
            ext = [p for p in inside if re.fullmatch(r"convolve/_core\..*\.so", p)]
            assert len(ext) == 1, inside
            so = os.path.join(tmp, "whl_core.so")
            with zipfile.ZipFile(os.path.join(wheels, names[0])) as z, open(so, "wb") as f:
                f.write(z.read(ext[0]))
            if shutil.which("readelf"):
                dyn = sh(["readelf", "-d", so]).stdout
                assert tmp not in dyn, f"the wheel's extension names a build folder:\n{dyn}"
            print(f"      {names[0]}: {len(inside)} files")

        def make_install_python():
            # a build folder configured for the system's python3, as `make
            # build` configures one; then make install-python for another
            sh(["cmake", "-S", clone, "-B", cmake_dir, f"-DCONVOLVE_PYTHON={sys.executable}",
                "-DCONVOLVE_WITH_CUDA=OFF", "-DCONVOLVE_BUILD_TESTS=OFF",
                "-DCMAKE_BUILD_TYPE=Debug"], env=clean_env())
            first = sysconfig.get_path("platlib")
            assert cache("CONVOLVE_PYTHON_SITE") == first, cache("CONVOLVE_PYTHON_SITE")
            stage = os.path.join(tmp, "stage")
            sh(["make", "-C", clone, "install-python", f"BUILD={cmake_dir}", f"PYTHON={vpy}",
                "CUDA=OFF", "CMAKE_FLAGS=-DCMAKE_BUILD_TYPE=Debug", f"JOBS={jobs}"],
               env=clean_env(DESTDIR=stage))
            staged = stage + vsite
            assert os.path.exists(os.path.join(staged, "convolve", "__init__.py")), \
                f"not installed into {vsite}; the stage has " + \
                str([os.path.relpath(p, stage) for p in
                     glob.glob(os.path.join(stage, "**", "__init__.py"), recursive=True)])
            assert not os.path.exists(stage + os.path.join(first, "convolve")), \
                f"also installed into {first}"
            sh([vpy, "-c", check_code(staged, version, metadata=False)],
               env=clean_env(PYTHONPATH=staged), cwd=tmp)

        def make_refuses():
            for args, needle in (([f"PYTHON={tmp}/no/python3"], "not found"),
                                 ([f"PYTHON={vpy}", f"CMAKE_FLAGS=-DCONVOLVE_PYTHON={sys.executable}"],
                                  "CMAKE_FLAGS")):
                r = sh(["make", "-n", "-C", clone, "install-python", f"BUILD={cmake_dir}", *args],
                       ok=False, env=clean_env())
                assert r.returncode != 0 and needle in r.stderr, \
                    f"make {' '.join(args)}: {r.returncode}\n{r.stdout[-800:]}{r.stderr[-800:]}"
                print(f"      make {' '.join(args)}: {r.stderr.strip().splitlines()[-1]}")

        step("pip install --no-build-isolation . into a venv; import, compare with scipy; "
             "pip uninstall", venv_install)
        step("pip install --prefix DIR (system python3)", prefix_install)
        step("pip install --user, pip uninstall (system python3)", user_install)
        step("pip wheel: the extension and every Python file", wheel)
        step("make install-python PYTHON=another interpreter installs for it", make_install_python)
        step("make install-python refuses a missing PYTHON and a contradicting CMAKE_FLAGS",
             make_refuses)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"test_pip_install: {'FAILED: ' + ', '.join(failures) if failures else 'passed'}"
          f" ({time.monotonic() - t0:.0f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
