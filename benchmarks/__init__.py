"""ADBench-style benchmarks for EnzymePy: C kernels, peers (ADOL-C, PyTorch, JAX,
finite differences) and the harness that times them side by side in one run.

Run ``python -m benchmarks --help``.  Benchmarks print numbers; they are not timed tests.
"""
