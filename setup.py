"""Build of the optional C extension; everything else is in setup.cfg.

`precision_shell.compare.metrics._passes` computes the float32 metrics in one sweep per pass
(compare/metrics/compiled.py). It is optional: without a C compiler the install still succeeds
and the numpy passes run, with the same printed cells.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "precision_shell.compare.metrics._passes",
            ["precision_shell/compare/metrics/_passes.c"],
            # IEEE arithmetic in the written order: no fused multiply-add, no fast-math.
            # No FP exception is ever read, which lets the compiler vectorize the selects.
            extra_compile_args=["-O3", "-ffp-contract=off", "-fno-trapping-math"],
            optional=True,
        )
    ]
)
