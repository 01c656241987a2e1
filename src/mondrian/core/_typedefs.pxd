# C types shared by every compiled module of the package.
from libc.stdint cimport int64_t, uint64_t  # noqa: F401  (re-exported)

ctypedef double float64_t
ctypedef Py_ssize_t intp_t
