"""Build hook for the optional compiled join (src/receval/_native.c).

Everything else is declared in pyproject.toml. The extension is optional:
without a C compiler the install still succeeds and receval uses its NumPy
path, which gives the same numbers (tests check both bit for bit).
"""

import sys

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "receval._native",
            sources=["src/receval/_native.c"],
            extra_compile_args=[] if sys.platform == "win32" else ["-O3"],
            optional=True,
        )
    ]
)
