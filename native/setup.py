"""The C extension of console-native; everything else is declared in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "console_native._json",
            sources=["src/console_native/_json.c"],
            extra_compile_args=["-O3", "-std=gnu11", "-Wall", "-Wextra"],
        )
    ]
)
