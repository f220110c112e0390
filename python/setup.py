"""Builds kiln's Python module against an installed kiln (headers and libkiln).

    KILN_PREFIX=/path/to/prefix pip install --no-build-isolation ./python

KILN_PREFIX: where kiln is installed (cmake --install build --prefix DIR; `make python` does all
of it); default /usr/local. Needs pybind11 and numpy (Debian: pybind11-dev, python3-numpy).
"""
import os

from setuptools import Extension, setup

try:
    import pybind11
    PYBIND11_INCLUDE = pybind11.get_include()
except ImportError:  # Debian's pybind11-dev: headers only, in /usr/include
    PYBIND11_INCLUDE = "/usr/include"

prefix = os.path.abspath(os.environ.get("KILN_PREFIX", "/usr/local"))
libdir = next((os.path.join(prefix, d) for d in ("lib", "lib64", "lib/x86_64-linux-gnu")
               if os.path.exists(os.path.join(prefix, d, "libkiln.so"))), os.path.join(prefix, "lib"))
if not os.path.exists(os.path.join(prefix, "include", "kiln", "session.h")):
    raise SystemExit(f"no kiln installed under {prefix} (include/kiln/session.h): set KILN_PREFIX")

setup(
    name="kiln",
    version="0.1.0",
    description="kiln: a deep-learning compiler and inference engine (ONNX Runtime-style API)",
    packages=["kiln"],
    ext_modules=[
        Extension(
            "kiln._kiln",
            ["src/module.cpp"],
            include_dirs=[PYBIND11_INCLUDE, os.path.join(prefix, "include")],
            library_dirs=[libdir],
            libraries=["kiln"],
            runtime_library_dirs=[libdir],
            extra_compile_args=["-std=c++20", "-O2", "-fvisibility=hidden"],
            language="c++",
        )
    ],
    install_requires=["numpy"],
    zip_safe=False,
)
