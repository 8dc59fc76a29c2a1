"""Builds and installs the hixl Python package with the project's CMake.

From this directory (python/), with Debian's interpreter and packages and no
downloads:

    /usr/bin/python3 -m pip install --no-build-isolation .

(add --break-system-packages where pip refuses to touch the system's
site-packages, or use --user, or a venv made with --system-site-packages).

The build configures the whole project (the parent directory) with
HIXL_STATIC=ON, so libhixl is linked into the extension and the installed
package needs no other file. Environment: CMAKE_BUILD_PARALLEL_LEVEL (jobs,
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


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
    def build_extension(self, ext):
        target = Path(self.get_ext_fullpath(ext.name)).resolve()
        build_dir = Path(self.build_temp).resolve() / "cmake"
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
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "_hixl", "-j", jobs], check=True)

        built = sorted((build_dir / "python" / "hixl").glob("_hixl*.so"))
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
    description="Python binding of hixl, an open implementation of the HIXL one-sided transfer API",
    packages=["hixl"],
    package_dir={"hixl": str(Path("hixl"))},
    package_data={"hixl": ["__init__.pyi", "py.typed"]},
    ext_modules=[CMakeExtension("hixl._hixl")],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.8",
    zip_safe=False,
)
