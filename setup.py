"""Build hook for the optional compiled join (src/receval/_native.c).

Everything else is declared in pyproject.toml. The extension is optional:
without a C compiler the install still succeeds and receval uses its NumPy
path, which gives the same numbers (tests check both bit for bit).

The module uses only Python's limited API of 3.11 (the stable ABI: buffers,
argument parsing, errors), so one wheel per platform, tagged ``cp311-abi3``,
serves Python 3.11 and every later version.
"""

import sys

from setuptools import Extension, setup

#: Python's limited API, version 3.11 (Py_buffer joined it in 3.11).
LIMITED_API = "0x030B0000"

setup(
    ext_modules=[
        Extension(
            "receval._native",
            sources=["src/receval/_native.c"],
            extra_compile_args=[] if sys.platform == "win32" else ["-O3"],
            define_macros=[("Py_LIMITED_API", LIMITED_API)],
            py_limited_api=True,
            optional=True,
        )
    ],
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
