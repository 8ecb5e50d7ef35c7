"""`pip install ./python` from a checkout also builds the compiled bindings nadyn._core.

The module is built by the repository's own CMake build (the target nadyn_python, into the
checkout's build/ directory, offline: cmake, g++ and Debian's -dev packages), which places it
in nadyn/, where the package data picks it up; the wheel is then platform-specific. Without
a checkout around this directory, or with NADYN_PIP_NO_CORE=1, the package is pure Python
(nadyn.open, nadyn.plot; nadyn.has_core is False). Everything else is in pyproject.toml.
"""

import os
import pathlib
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent


def core_built() -> bool:
    return any((HERE / "nadyn").glob("_core*.so"))


def build_core() -> None:
    if os.environ.get("NADYN_PIP_NO_CORE") or not (REPO / "CMakeLists.txt").is_file():
        return
    if not shutil.which("cmake"):
        print("nadyn: cmake not found; installing the pure-Python package only")
        return
    build = REPO / "build"
    subprocess.run(["cmake", "-S", str(REPO), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                    "-DNADYN_PYTHON=ON"], check=True)
    subprocess.run(["cmake", "--build", str(build), "-j2", "--target", "nadyn_python"], check=True)


class build_with_core(build_py):
    def run(self):
        build_core()
        super().run()


class MaybeBinaryDistribution(Distribution):
    def has_ext_modules(self):
        return core_built()


setup(cmdclass={"build_py": build_with_core}, distclass=MaybeBinaryDistribution)
