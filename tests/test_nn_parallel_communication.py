"""nabla_nn.parallel communication: sharded models communicate exactly what the parallelism needs.

Megatron MLP blocks and transformer layers, context parallelism (ring attention), data x tensor
parallelism, data-parallel steps, data- and vocabulary-parallel embeddings, a vocabulary-parallel
language model head and cross entropy over split classes or positions. Collectives are counted on
the recorded trace before it is evaluated (`count_collectives`). Shared meshes, models and the
training loop live in `test_nn_parallel.py`.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_nn_parallel import (
    DP,
    DP3,
    MEGATRON,
    MEGATRON_LAYER,
    MESH,
    RNG,
    TP,
    adam,
    assert_same_state,
    classification,
    mlp,
    sequences,
    train,
    transformer_layer,
)

import nabla as nb
import nabla_nn as nn
import nabla_nn.functional as F
from nabla import DeviceMesh, P
from nabla_nn.parallel import colwise, count_collectives, shard_batch, shard_module


# -- communication: exactly what the parallelism needs ---------------------------------------------
def megatron_block(mesh: DeviceMesh) -> nn.Module:
    return shard_module(mlp_block(), mesh, MEGATRON)


def mlp_block() -> nn.Module:
    return nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 8))


def leaf(shape: tuple, mesh: DeviceMesh, spec) -> nb.Tensor:
    x = nb.shard(nb.tensor(RNG.standard_normal(shape).astype(np.float32)), mesh, spec)
    return x.requires_grad_(True)


def test_megatron_mlp_block_communicates_one_all_reduce_each_way():
    """Megatron's MLP: column-parallel Linear -> GELU -> row-parallel Linear. Forward needs one
    all-reduce (g: the row-parallel partial sums), backward one for the input gradient (f:
    each device's column slice contributes a partial dL/dx). Weight gradients need none: each
    device's gradient is exactly its shard's."""
    block = megatron_block(TP)
    x = leaf((4, 8), TP, P())  # replicated, as the output of a previous block or a LayerNorm
    y = block(x)
    assert count_collectives(y) == {"all_reduce": 1}
    assert y.sharding.is_replicated and not y.sharding.partial
    loss = (y * nb.shard(nb.tensor(RNG.standard_normal((4, 8)).astype(np.float32)), TP, P())).sum()
    loss.backward()
    grads = [p.grad for p in block.parameters()]
    assert count_collectives(loss, x.grad, *grads) == {"all_reduce": 1}  # the forward's
    # dL/dx stays a partial sum until something needs it (nothing reduces it twice) ...
    assert x.grad.sharding.partial == frozenset({"tp"})
    # ... and costs exactly one all-reduce in x's layout
    assert count_collectives(loss, nb.reshard(x.grad, P()), *grads) == {"all_reduce": 2}
    for p in list(block.parameters())[:3]:
        assert p.grad.sharding == p.sharding, "weight gradients live where the weight shards live"


def test_megatron_transformer_layer_keeps_heads_sharded_and_reduces_twice():
    layer = shard_module(transformer_layer(), TP, MEGATRON_LAYER)
    y = layer(nb.tensor(sequences(1)[0][0]))
    # one all-reduce after attention and one after the MLP; q, k and v are cut from the packed
    # projection by windows, so attention runs on each device's heads instead of on every head
    assert count_collectives(y) == {"all_reduce": 2, "window": 3}


def test_context_parallel_transformer_layer_passes_key_blocks_round_a_ring():
    # The sequence split over sp (context parallelism): projections, norms and the MLP are per
    # token, and attention runs as a ring, so the layer communicates only ppermutes of key and
    # value blocks (3 passes each over 4 devices), forward and backward, causal or not.
    mesh = DeviceMesh("cp", (4,), ("sp",))
    nb.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)
    x = np.random.default_rng(0).standard_normal((2, 8, 16)).astype(np.float32)
    mask = nn.Transformer.generate_square_subsequent_mask(8)
    for kwargs in ({}, {"src_mask": mask, "is_causal": True}):
        xs = nb.shard(nb.tensor(x), mesh, P(None, "sp", None))
        y = layer(xs, **kwargs)
        assert count_collectives(y) == {"ppermute": 6} and y.sharding.dim_axes[1] == ("sp",)
        np.testing.assert_allclose(y.numpy(), layer(nb.tensor(x), **kwargs).numpy(), rtol=1e-4, atol=1e-5)
        layer.zero_grad()
        (y**2).sum().backward()
        grads = {n: p.grad for n, p in layer.named_parameters()}
        # the backward passes the blocks' gradients back round the ring; the weight gradients are
        # partial sums over sp, reduced where they are used (the optimizer's update)
        assert count_collectives(*grads.values()) == {"ppermute": 12}
        layer.zero_grad()
        (layer(nb.tensor(x), **kwargs) ** 2).sum().backward()
        for n, p in layer.named_parameters():
            np.testing.assert_allclose(grads[n].numpy(), p.grad.numpy(), rtol=1e-3, atol=1e-4, err_msg=n)


def test_context_parallel_layer_with_dropout_trains_without_gathering():
    # Dropout in training (attention weights and residual branches): the ring draws each
    # block's mask where it is used, so the layer still communicates only the ring's ppermutes.
    mesh = DeviceMesh("cp", (4,), ("sp",))
    nb.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.2, batch_first=True)
    x = np.random.default_rng(0).standard_normal((2, 8, 16)).astype(np.float32)
    xs = nb.shard(nb.tensor(x), mesh, P(None, "sp", None))
    y = layer(xs, is_causal=True, src_mask=nn.Transformer.generate_square_subsequent_mask(8))
    assert count_collectives(y) == {"ppermute": 6}
    (y**2).sum().backward()
    grads = [p.grad for p in layer.parameters()]
    assert count_collectives(*grads) == {"ppermute": 12}
    assert all(np.isfinite(g.numpy()).all() for g in grads)
    layer.eval()  # no dropout: the sharded layer equals the unsharded one again
    np.testing.assert_allclose(layer(xs).numpy(), layer(nb.tensor(x)).numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_over_positions_split_along_the_sequence_does_not_gather(reduction):
    # (N, C, L) logits with N over dp and L over sp (a context-parallel LM's loss, classes on
    # dim 1): the targets are matched against a class index, so only the reduction communicates.
    mesh = DeviceMesh("dpsp", (2, 2), ("dp", "sp"))
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((4, 5, 8)).astype(np.float32), rng.integers(0, 5, (4, 8))
    t[0, 3] = -100  # ignored
    xs = nb.shard(nb.tensor(x), mesh, P("dp", None, "sp"))
    ts = nb.shard(nb.tensor(t), mesh, P("dp", "sp"))
    loss = F.cross_entropy(xs, ts, reduction=reduction, label_smoothing=0.1)
    assert "all_gather" not in count_collectives(loss)
    want = F.cross_entropy(nb.tensor(x), nb.tensor(t), reduction=reduction, label_smoothing=0.1)
    np.testing.assert_allclose(loss.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    g = nb.grad(lambda v: F.cross_entropy(v, ts, reduction="sum"))(xs)
    ref = nb.grad(lambda v: F.cross_entropy(v, nb.tensor(t), reduction="sum"))(nb.tensor(x))
    np.testing.assert_allclose(g.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)


def test_two_megatron_blocks_communicate_two_all_reduces_per_block():
    blocks = [megatron_block(TP), megatron_block(TP)]
    x = leaf((4, 8), TP, P())
    h = blocks[0](x)
    y = blocks[1](h)
    assert count_collectives(y) == {"all_reduce": 2}
    y.sum().backward()
    grads = [p.grad for b in blocks for p in b.parameters()]
    assert count_collectives(y, *grads) == {"all_reduce": 3}  # + block 2's input gradient
    assert count_collectives(y, nb.reshard(x.grad, P()), *grads) == {"all_reduce": 4}


def test_data_x_tensor_parallel_megatron_block_communicates_only_tensor_parallel_all_reduces():
    block = megatron_block(MESH)
    x = leaf((4, 8), MESH, P("dp", None))
    y = block(x)
    assert count_collectives(y) == {"all_reduce": 1}
    loss = (y * nb.shard(nb.tensor(RNG.standard_normal((4, 8)).astype(np.float32)), MESH, P("dp", None))).sum()
    loss.backward()
    grads = [p.grad for p in block.parameters()]
    assert count_collectives(loss, nb.reshard(x.grad, P("dp", None)), *grads) == {"all_reduce": 2}
    for p in block.parameters():  # each all-reduced over "dp" by the optimizer
        assert "dp" in p.grad.sharding.partial


def test_data_parallel_step_communicates_only_the_loss_and_gradients():
    model = shard_module(mlp(), DP)
    (x, y), *_ = classification(1)
    x, y = shard_batch((x, y), DP)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    grads = [p.grad for p in model.parameters()]
    # the mean's numerator and global denominator (a partial numerator cannot pass through a
    # division by a computed count, which might be 0); the loss is then whole, read as it is
    assert count_collectives(loss, *grads) == {"all_reduce": 2} and loss.sharding.partial == frozenset()
    assert all(g.sharding.partial == frozenset({"dp"}) for g in grads)  # one all-reduce each, in opt.step()


def test_data_parallel_transformer_layer_communicates_only_gradients():
    model = shard_module(transformer_layer(), DP)
    (x, y), *_ = sequences(1)
    x, y = shard_batch((x, y), DP)
    loss = F.mse_loss(model(x), y)
    loss.backward()
    grads = [p.grad for p in model.parameters()]
    assert count_collectives(loss, *grads) == {}
    assert all(g.sharding.partial == frozenset({"dp"}) for g in grads)


def embedding_model() -> nn.Module:
    nb.manual_seed(0)
    return nn.Sequential(nn.Embedding(10, 8), nn.Linear(8, 3))


def tokens(steps: int) -> list:
    return [(RNG.integers(0, 10, (6, 5)), RNG.standard_normal((6, 5, 3)).astype(np.float32)) for _ in range(steps)]


@pytest.mark.parametrize("mesh", [DP, DP3], ids=["even", "uneven"])
def test_data_parallel_embedding_gradient_is_a_local_scatter_reduced_once(mesh):
    batches = tokens(4)
    reference, ref_losses = train(embedding_model, adam, F.mse_loss, batches)
    model, losses = train(embedding_model, adam, F.mse_loss, batches, mesh, None, "dp")
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, atol=1e-6)
    assert_same_state(model, reference)
    # One step's communication: no gather of the batch-sharded indices or cotangent rows.
    model = shard_module(embedding_model(), mesh)
    x, y = shard_batch(batches[0], mesh)
    loss = F.mse_loss(model(x), y)
    loss.backward()
    grads = [p.grad for p in model.parameters()]
    assert count_collectives(loss, *grads) == {}
    assert all(g.sharding.partial == frozenset({"dp"}) for g in grads)
    table = model[0].weight.grad
    assert count_collectives(nb.reshard(table, P())) == {"all_reduce": 1}  # what opt.step() adds
    reference = embedding_model()
    F.mse_loss(reference(nb.tensor(batches[0][0])), nb.tensor(batches[0][1])).backward()
    np.testing.assert_allclose(table.numpy(), reference[0].weight.grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mesh", [TP, DeviceMesh("tp4", (4,), ("tp",))], ids=["even", "uneven"])
def test_vocabulary_parallel_embedding_reduces_its_rows_not_the_table(mesh):
    batches = tokens(4)
    plan = {"0": {"weight": P("tp", None)}}  # the vocabulary split over "tp" (10 rows over 4: 3 3 2 2)
    reference, ref_losses = train(embedding_model, adam, F.mse_loss, batches)
    model, losses = train(embedding_model, adam, F.mse_loss, batches, mesh, plan, None)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, atol=1e-6)
    assert_same_state(model, reference)
    # Megatron's VocabParallelEmbedding: each device looks up the tokens in its rows, zeros for
    # the others; the (batch, seq, dim) rows are summed once, where the table used to be gathered
    model = shard_module(embedding_model(), mesh, plan)
    rows = model[0](nb.tensor(batches[0][0]))
    assert rows.sharding.partial == frozenset({"tp"}) and count_collectives(rows) == {}
    out = model(nb.tensor(batches[0][0]))
    assert count_collectives(out) == {"all_reduce": 1}
    F.mse_loss(out, nb.tensor(batches[0][1])).backward()
    table = model[0].weight.grad  # each device scatters the rows it holds into its piece
    assert table.sharding.dim_axes == (("tp",), ()) and count_collectives(table) == {"all_reduce": 1}  # forward's


def language_model_head() -> nn.Module:
    nb.manual_seed(0)
    return nn.Sequential(nn.Embedding(10, 8), nn.Linear(8, 10))


def next_tokens(steps: int) -> list:
    return [(RNG.integers(0, 10, (6, 5)), RNG.integers(0, 10, (6, 5))) for _ in range(steps)]


def lm_loss(logits: nb.Tensor, targets: nb.Tensor) -> nb.Tensor:
    return F.cross_entropy(nb.reshape(logits, (-1, 10)), nb.reshape(targets, (-1,)), label_smoothing=0.1)


@pytest.mark.parametrize("mesh", [TP, MESH], ids=["tensor parallel", "data x tensor parallel"])
def test_vocabulary_parallel_language_model_head_never_gathers_the_vocabulary(mesh):
    # Megatron: the embedding and the output projection split the vocabulary, and the loss is
    # computed from per-device maxima and sums over each device's classes (all-reduced as
    # vectors of the tokens), so no device ever holds a whole (tokens, vocabulary) array
    plan = {"0": {"weight": P("tp", None)}, "1": colwise("tp")}
    axis = "dp" if "dp" in mesh.axis_names else None
    batches = next_tokens(4)
    reference, ref_losses = train(language_model_head, adam, lm_loss, batches)
    model, losses = train(language_model_head, adam, lm_loss, batches, mesh, plan, axis)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, atol=1e-6)
    assert_same_state(model, reference)
    model = shard_module(language_model_head(), mesh, plan)
    x, y = (nb.tensor(a) for a in batches[0])
    if axis:
        x, y = shard_batch((x, y), mesh, axis)
    logits = model(x)
    assert logits.sharding.dim_axes[-1] == ("tp",)
    loss = lm_loss(logits, y)
    loss.backward()
    counts = count_collectives(loss, *[p.grad for p in model.parameters()])
    assert "all_gather" not in counts and "all_to_all" not in counts, counts


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"weight": True}, {"ignore_index": 3}, {"label_smoothing": 0.2, "reduction": "sum"}, {"reduction": "none"}],
)
def test_cross_entropy_over_split_classes_matches_the_whole_rows(kwargs):
    logits, targets = RNG.standard_normal((6, 9)).astype(np.float32), RNG.integers(0, 9, 6)
    kw = {k: (nb.tensor(RNG.random(9).astype(np.float32)) if k == "weight" else v) for k, v in kwargs.items()}
    x = nb.shard(nb.tensor(logits), DeviceMesh("tp4", (4,), ("tp",)), P(None, "tp"))  # 9 classes: 3 2 2 2
    loss = F.cross_entropy(x, nb.tensor(targets), **kw)
    assert "all_gather" not in count_collectives(loss)
    want = F.cross_entropy(nb.tensor(logits), nb.tensor(targets), **kw)
    np.testing.assert_allclose(loss.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    grad = nb.grad(lambda t: F.cross_entropy(t, nb.tensor(targets), **kw).sum())
    np.testing.assert_allclose(grad(x).numpy(), grad(nb.tensor(logits)).numpy(), rtol=1e-5, atol=1e-6)


def test_count_collectives_ignores_realized_tensors():
    x = shard_batch(RNG.standard_normal((4, 8)).astype(np.float32), DP)
    total = nb.sum(x * x)
    assert count_collectives(nb.reshard(total, P())) == {"all_reduce": 1}
    assert count_collectives(total) == {}
    assert count_collectives(x, None) == {}
