"""setup.py - pip's build of the Python package (pyproject.toml; docs/python.md).

    pip install --no-build-isolation .        # or --user, --prefix DIR; pip wheel ...

build_ext configures the CMake project for the interpreter running pip
(-DCONVOLVE_PYTHON=sys.executable), builds its target convolve_python (the
static library and the extension _core, as `make python` does), installs that
component into a staging folder (cmake --install --component python, DESTDIR)
and takes the extension from there; build_py takes python/convolve/*.py. The
version is include/convolve.h's CONVOLVE_VERSION_STRING.

Environment:
  CONVOLVE_CMAKE_ARGS       more CMake options, split as a shell splits them,
                            e.g. "-DCONVOLVE_WITH_CUDA=OFF -DCONVOLVE_TIFF=OFF"
  CONVOLVE_CUDA             ON or OFF: the same as -DCONVOLVE_WITH_CUDA (default:
                            CMake's, the CUDA backend when nvcc is found)
  CONVOLVE_CMAKE_BUILD_DIR  the CMake build folder (default: the source tree's
                            build-pip/temp.*/cmake, kept: a second build
                            only rebuilds what changed)
  CMAKE_BUILD_PARALLEL_LEVEL  parallel compile jobs (default: every CPU)
"""
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def project_version():
    with open(os.path.join(HERE, "include", "convolve.h")) as f:
        m = re.search(r'#define\s+CONVOLVE_VERSION_STRING\s+"([^"]+)"', f.read())
    if not m:
        sys.exit("setup.py: no CONVOLVE_VERSION_STRING in include/convolve.h")
    return m.group(1)


class CMakeBuild(build_ext):
    """The extension, built by CMake instead of from sources listed here."""

    def build_extension(self, ext):
        cmake = shutil.which("cmake")
        if not cmake:
            sys.exit("convolve: building the package needs CMake 3.18 or later (Debian: cmake)")
        user_args = shlex.split(os.environ.get("CONVOLVE_CMAKE_ARGS", ""))
        named = [a for a in user_args if re.match(r"(-D)?CONVOLVE_PYTHON[:=]", a)]
        if named:
            sys.exit(f"convolve: CONVOLVE_CMAKE_ARGS names an interpreter ({' '.join(named)}); "
                     f"the package is built for the one running pip ({sys.executable}): "
                     "run pip with that interpreter instead")
        cuda = os.environ.get("CONVOLVE_CUDA", "")
        if cuda not in ("", "ON", "OFF"):
            sys.exit(f"convolve: CONVOLVE_CUDA={cuda}: give ON or OFF")

        build_dir = os.path.abspath(os.environ.get("CONVOLVE_CMAKE_BUILD_DIR")
                                    or os.path.join(self.build_temp, "cmake"))
        args = ["-DCMAKE_BUILD_TYPE=Release", f"-DCONVOLVE_PYTHON={sys.executable}",
                "-DCONVOLVE_WITH_PYTHON=ON"]
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            args.append("-DCONVOLVE_BUILD_TESTS=OFF")   # a new folder: the package only
        if cuda:
            args.append(f"-DCONVOLVE_WITH_CUDA={cuda}")
        self.spawn([cmake, "-S", HERE, "-B", build_dir, *args, *user_args])
        jobs = []
        if not os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL"):
            jobs = ["-j", str(self.parallel or os.cpu_count() or 1)]
        self.spawn([cmake, "--build", build_dir, "--target", "convolve_python", *jobs])

        # cmake --install gives the module its installed run path (the build
        # tree's is dropped; cuFFT's folder is kept where CUDA is built)
        stage = os.path.join(os.path.abspath(self.build_temp), "stage")
        shutil.rmtree(stage, ignore_errors=True)
        print(f"cmake --install {build_dir} --component python  (DESTDIR={stage})")
        subprocess.run([cmake, "--install", build_dir, "--component", "python"],
                       env=dict(os.environ, DESTDIR=stage), check=True)
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = glob.glob(os.path.join(stage, "**", "convolve", "_core" + suffix), recursive=True)
        if len(built) != 1:
            found = glob.glob(os.path.join(stage, "**", "_core*"), recursive=True)
            sys.exit(f"convolve: cmake --install staged {found or 'no extension'}, "
                     f"not one _core{suffix} for {sys.executable}")
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(built[0], dest)


setup(
    version=project_version(),
    # setuptools' own build folders apart from make's build/
    options={"build": {"build_base": "build-pip"}},
    ext_modules=[Extension("convolve._core", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
)
