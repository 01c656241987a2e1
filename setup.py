"""Build script: the explicit list of Cython extensions of the package."""

import multiprocessing
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
    # nonecheck stays off: Cython 3 rejects it in the nogil methods of the tree core.
    "nonecheck": False,
    "cdivision": True,
    "embedsignature": True,
}

# Compiled modules, by subpackage: the tree core, the forests' posteriors and path readers, the
# density's full-cell trees and path reader, the kernel features, ridge and SGD paths, and the
# lifetime-path engine.
MODULES = [
    "core._tree",
    "core._grow",
    "core._extend",
    "core._tree_state",
    "core._undo",
    "core._rebuild",
    "core._copy",
    "core._columns",
    "core._state_checks",
    "core._walk",
    "core._batch_walk",
    "core._group_walk",
    "core._online",
    "core._forget",
    "core._forget_bulk",
    "core._forget_call",
    "core._forget_store",
    "core._forget_commit",
    "forest._node_cache",
    "forest._hnsp",
    "forest._hnsp_cache",
    "forest._hnsp_one",
    "forest._dirichlet",
    "forest._gaussian",
    "forest._gaussian_predict",
    "forest._gaussian_online",
    "forest._path_readers",
    "density._full_cell_builder",
    "density._full_cell",
    "density._path_reader",
    "kernel._features",
    "kernel._ridge_inverse",
    "kernel._ridge_path",
    "kernel._sgd_path",
    "path._engine",
    "grid._cuts",
    "grid._search",
    "partition._products",
]


def extension(name):
    return Extension(
        f"mondrian.{name}",
        [f"src/mondrian/{name.replace('.', '/')}.pyx"],
        # "src": the core's C headers are included as "mondrian/core/<name>.h".
        include_dirs=[numpy.get_include(), "src"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_22_API_VERSION")],
        # No fused multiply-adds, whatever CFLAGS say (-march=native): the kernels' clones and
        # their portable references must round alike.
        extra_compile_args=["-O3", "-ffp-contract=off"] if os.name != "nt" else [],
    )


# Every core of the machine: Cython translates modules in worker processes (only where they
# fork: a spawned or forkserver worker would run this unguarded script again) and the compiler
# runs on threads, as `build_ext -j` would (pip builds without it; not with MSVC, which sets
# itself up lazily inside its first compile).
JOBS = os.cpu_count() or 1
FORKS = multiprocessing.get_start_method() == "fork"

setup(
    ext_modules=cythonize(
        [extension(name) for name in MODULES],
        compiler_directives=DIRECTIVES,
        # Debug C files live apart, so switching builds never reuses the other one's output.
        build_dir="build/cython-debug" if DEBUG else None,
        nthreads=JOBS if FORKS else 0,
    ),
    options={} if os.name == "nt" else {"build_ext": {"parallel": JOBS}},
)
