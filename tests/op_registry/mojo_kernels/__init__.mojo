# A Mojo package of custom kernels for nabla's custom-op tests (tests/op_registry/custom.py).
