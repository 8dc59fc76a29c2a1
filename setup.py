"""Builds and installs the Python packages hixl and llm_datadist with the
project's CMake.

From the repository root, with Debian's interpreter and packages and no
downloads:

    /usr/bin/python3 -m pip install --no-build-isolation .

(add --break-system-packages where pip refuses to touch the system's
site-packages, or use --user, or a venv made with --system-site-packages).

The build configures the whole project with HIXL_STATIC=ON, so libhixl and
libhixl_llm_datadist are linked into the extensions and the installed
packages need no other file. Environment: CMAKE_BUILD_PARALLEL_LEVEL (jobs,
default 2), HIXL_CMAKE_ARGS (extra arguments for cmake's configure step).
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    match = re.search(r"project\(\s*hixl\s+VERSION\s+([0-9.]+)", text)
    if not match:
        raise RuntimeError("cannot find the project version in CMakeLists.txt")
    return match.group(1)


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    """One CMake configure and build for both extensions, then each copied
    where setuptools wants it."""

    def build_extension(self, ext):
        target = Path(self.get_ext_fullpath(ext.name)).resolve()
        build_dir = Path(self.build_temp).resolve() / "cmake"
        package, module = ext.name.split(".")
        configure = [
            "cmake",
            "-S",
            str(ROOT),
            "-B",
            str(build_dir),
            "-DCMAKE_BUILD_TYPE=Release",
            "-DHIXL_STATIC=ON",
            "-DHIXL_BUILD_PYTHON=ON",
            "-DHIXL_BUILD_TESTS=OFF",
            "-DHIXL_BUILD_TOOLS=OFF",
            "-DHIXL_BUILD_EXAMPLES=OFF",
            f"-DPython_EXECUTABLE={sys.executable}",
        ] + shlex.split(os.environ.get("HIXL_CMAKE_ARGS", ""))
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
        if not (build_dir / "CMakeCache.txt").exists():
            subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", module, "-j", jobs], check=True)

        built = sorted((build_dir / "python" / package).glob(module + "*.so"))
        if not built:
            raise RuntimeError(
                "CMake did not build the extension (see its warnings above: is pybind11-dev "
                "or python3-pybind11 installed, and python3-dev?)"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)


setup(
    name="hixl",
    version=project_version(),
    description="hixl (an open implementation of the HIXL one-sided transfer API) and llm_datadist "
    "(LLM-DataDist's KV-cache API on it), for Python",
    packages=["hixl", "llm_datadist", "llm_datadist.v2", "llm_datadist.utils"],
    package_dir={"hixl": "python/hixl", "llm_datadist": "python/llm_datadist"},
    package_data={"hixl": ["__init__.pyi", "py.typed"], "llm_datadist": ["_llm_datadist.pyi", "py.typed"]},
    ext_modules=[CMakeExtension("hixl._hixl"), CMakeExtension("llm_datadist._llm_datadist")],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.8",
    zip_safe=False,
)
