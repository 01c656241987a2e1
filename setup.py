"""Build script: the explicit list of Cython extensions of the package."""

import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("MONDRIAN_CYTHON_DEBUG", "0") == "1"

DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "nonecheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
}

MODULES = ["_tree", "_hnsp", "_gaussian", "_kernel", "_path", "_lifetime_path", "_density"]


def extension(name):
    return Extension(
        f"mondrian.{name}",
        [f"src/mondrian/{name}.pyx"],
        include_dirs=[numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_22_API_VERSION")],
        extra_compile_args=["-O3"] if os.name != "nt" else [],
    )


setup(
    ext_modules=cythonize(
        [extension(name) for name in MODULES],
        compiler_directives=DIRECTIVES,
        # Debug C files live apart, so switching builds never reuses the other one's output.
        build_dir="build/cython-debug" if DEBUG else None,
    ),
)
