"""PyTorch and JAX versions of the kernels (CPU, float64, one thread), written the way
a user of each would: vectorised array code, Python/`lax` loops over time steps.
``python -m benchmarks.peers TOOL KERNEL inputs.bin grad_out.bin`` times the primal and
the gradient on the inputs a C kernel dumped and prints one JSON line."""
