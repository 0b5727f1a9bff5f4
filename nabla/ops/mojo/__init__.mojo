# nabla's own Mojo kernels (the package nabla/ops/mojo_kernels.py builds and hands to MAX).
# Each is registered for ops.custom under a "nabla_" name; the Python lowering that calls it
# keeps a graph-ops form for where these do not apply (GPU, padding, other dtypes).
