# The Python module kvfit (python/): setuptools drives CMake, which builds the library and the pybind11 module
# kvfit._kvfit (python/CMakeLists.txt) in build-python/ (kept between installs; ccache used when present), without
# the HTTP server or the tests. No network: pybind11, setuptools, CMake and the C++ dependencies are Debian packages.
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
os.makedirs(os.path.join(ROOT, "build-python"), exist_ok=True)


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        for line in f:
            if line.startswith("project(kvfit VERSION "):
                return line.split("VERSION ")[1].split()[0]
    raise RuntimeError("kvfit: no version in CMakeLists.txt")


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        # KVFIT_PYTHON_BUILD_DIR: an existing tree configured with KVFIT_BUILD_PYTHON=ON (the ctest of the module
        # reuses the test build's library); it is built, never reconfigured.
        given = os.environ.get("KVFIT_PYTHON_BUILD_DIR")
        build_dir = given or os.path.join(ROOT, "build-python", "cmake")
        args = [
            "cmake", "-S", ROOT, "-B", build_dir,
            "-DCMAKE_BUILD_TYPE=" + os.environ.get("KVFIT_PYTHON_BUILD_TYPE", "Release"),
            "-DKVFIT_BUILD_PYTHON=ON", "-DKVFIT_BUILD_TESTS=OFF", "-DKVFIT_WITH_SERVER=OFF", "-DKVFIT_INSTALL=OFF",
            "-DPYTHON_EXECUTABLE=" + sys.executable,
        ]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        if shutil.which("ccache"):
            args += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
        if os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            args = [a for a in args if a not in ("-G", "Ninja")]  # the generator of an existing tree stays
        if not given:
            subprocess.check_call(args)
        jobs = os.environ.get("KVFIT_PYTHON_JOBS", str(os.cpu_count() or 1))
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "kvfit_python", "-j", jobs])
        built = [f for f in os.listdir(os.path.join(build_dir, "python")) if f.startswith("_kvfit") and f.endswith(".so")]
        if len(built) != 1:
            raise RuntimeError("kvfit: expected one built module in %s/python, found %s" % (build_dir, built))
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(os.path.join(build_dir, "python", built[0]), dest)


setup(
    name="kvfit",
    version=project_version(),
    description="Does this LLM, at this context length, fit my GPUs? KV cache, state and weights under runtimes' rules",
    packages=["kvfit"],
    package_dir={"kvfit": "python/kvfit"},
    ext_modules=[CMakeExtension("kvfit._kvfit")],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": os.path.join("build-python", "setuptools")}, "egg_info": {"egg_base": "build-python"}},
    python_requires=">=3.9",
    zip_safe=False,
)
