"""The W1-W4 models in JAX (pure functions over parameter pytrees, optax optimizers), structurally
identical to `workloads.py`'s nabla models and `torch_workloads.py`'s PyTorch models: the same
layers, PyTorch's default initialisation ranges and the same optimizer hyperparameters
(PyTorch's AdamW decays every parameter by 0.01; optax's default is 1e-4, so it is set).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import optax


def _layer_init(key: jax.Array, weight_shape: tuple[int, ...]) -> dict:
    """PyTorch's Linear and Conv2d default: weight (out, in, ...) and bias (out,), both
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in * the kernel's size."""
    bound = 1.0 / math.sqrt(math.prod(weight_shape[1:]))
    kw, kb = jax.random.split(key)
    return {
        "weight": jax.random.uniform(kw, weight_shape, jnp.float32, -bound, bound),
        "bias": jax.random.uniform(kb, weight_shape[:1], jnp.float32, -bound, bound),
    }


def _linear_init(key: jax.Array, fan_in: int, fan_out: int) -> dict:
    return _layer_init(key, (fan_out, fan_in))


def _linear(p: dict, x: jax.Array) -> jax.Array:
    return x @ p["weight"].T + p["bias"]


def _conv(p: dict, x: jax.Array) -> jax.Array:
    """3x3 convolution, padding 1, NCHW / OIHW like PyTorch."""
    y = jax.lax.conv_general_dilated(
        x, p["weight"], (1, 1), ((1, 1), (1, 1)), dimension_numbers=("NCHW", "OIHW", "NCHW")
    )
    return y + p["bias"][None, :, None, None]


def _max_pool2(x: jax.Array) -> jax.Array:
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def _layer_norm_init(d: int) -> dict:
    return {"weight": jnp.ones((d,), jnp.float32), "bias": jnp.zeros((d,), jnp.float32)}


def _layer_norm(p: dict, x: jax.Array, eps: float = 1e-5) -> jax.Array:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * p["weight"] + p["bias"]


# -- W1 / W4: MLP 784-512-512-10 ----------------------------------------------------------------
def mlp_init(key: jax.Array, sizes: tuple[int, ...] = (784, 512, 512, 10)) -> list:
    keys = jax.random.split(key, len(sizes) - 1)
    return [_linear_init(k, a, b) for k, a, b in zip(keys, sizes[:-1], sizes[1:], strict=True)]


def mlp(params: list, x: jax.Array) -> jax.Array:
    for layer in params[:-1]:
        x = jax.nn.relu(_linear(layer, x))
    return _linear(params[-1], x)


# -- W2: CNN ------------------------------------------------------------------------------------
def cnn_init(key: jax.Array) -> dict:
    k1, k2, k3 = jax.random.split(key, 3)
    return {
        "conv1": _layer_init(k1, (32, 1, 3, 3)),
        "conv2": _layer_init(k2, (64, 32, 3, 3)),
        "fc": _linear_init(k3, 64 * 7 * 7, 10),
    }


def cnn(params: dict, x: jax.Array) -> jax.Array:
    x = _max_pool2(jax.nn.relu(_conv(params["conv1"], x)))
    x = _max_pool2(jax.nn.relu(_conv(params["conv2"], x)))
    return _linear(params["fc"], x.reshape(x.shape[0], -1))


# -- W3: pre-norm transformer LM ------------------------------------------------------------------
def char_lm_init(key: jax.Array, vocab: int = 256, d: int = 128, layers: int = 2, seq: int = 64) -> dict:
    keys = iter(jax.random.split(key, 4 + 4 * layers))
    blocks = []
    for _ in range(layers):
        # MultiheadAttention: in_proj xavier-uniform with a zero bias, out_proj a Linear with a zero bias
        bound = math.sqrt(6.0 / (d + 3 * d))
        in_w = jax.random.uniform(next(keys), (3 * d, d), jnp.float32, -bound, bound)
        out_w = _linear_init(next(keys), d, d)["weight"]
        blocks.append(
            {
                "in_proj": {"weight": in_w, "bias": jnp.zeros((3 * d,), jnp.float32)},
                "out_proj": {"weight": out_w, "bias": jnp.zeros((d,), jnp.float32)},
                "linear1": _linear_init(next(keys), d, 4 * d),
                "linear2": _linear_init(next(keys), 4 * d, d),
                "norm1": _layer_norm_init(d),
                "norm2": _layer_norm_init(d),
            }
        )
    return {
        "tok": jax.random.normal(next(keys), (vocab, d), jnp.float32),
        "pos": jax.random.normal(next(keys), (seq, d), jnp.float32),
        "layers": blocks,
        "norm": _layer_norm_init(d),
        "head": _linear_init(next(keys), d, vocab),
    }


def _self_attention(p: dict, x: jax.Array, heads: int) -> jax.Array:
    b, s, d = x.shape
    qkv = _linear(p["in_proj"], x).reshape(b, s, 3, heads, d // heads).transpose(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    causal = jnp.tril(jnp.ones((s, s), bool))
    scores = jnp.where(causal, q @ k.transpose(0, 1, 3, 2) / math.sqrt(d // heads), -jnp.inf)
    out = (jax.nn.softmax(scores, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(b, s, d)
    return _linear(p["out_proj"], out)


def char_lm(params: dict, idx: jax.Array, heads: int = 4) -> jax.Array:
    h = params["tok"][idx] + params["pos"][None, : idx.shape[1]]
    for blk in params["layers"]:  # norm_first=True, ReLU feed-forward, no dropout
        h = h + _self_attention(blk, _layer_norm(blk["norm1"], h), heads)
        h = h + _linear(blk["linear2"], jax.nn.relu(_linear(blk["linear1"], _layer_norm(blk["norm2"], h))))
    return _linear(params["head"], _layer_norm(params["norm"], h))


def cross_entropy(logits: jax.Array, labels: jax.Array) -> jax.Array:
    logits = logits.reshape(-1, logits.shape[-1])
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels.reshape(-1)).mean()


def jax_workload(name: str, key: jax.Array) -> tuple:
    """(apply(params, x), params, optax optimizer) for a workload."""
    if name in ("W1", "W4"):
        return mlp, mlp_init(key), optax.adam(1e-3)
    if name == "W2":
        return cnn, cnn_init(key), optax.sgd(0.01, momentum=0.9)
    if name == "W3":
        return char_lm, char_lm_init(key), optax.adamw(1e-3, weight_decay=0.01)
    raise ValueError(name)
