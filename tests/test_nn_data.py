"""nabla_nn.data: Dataset, TensorDataset, Subset, random_split, DataLoader, default_collate, samplers."""

from __future__ import annotations

import itertools
from collections import OrderedDict, namedtuple

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
from nabla_nn import data
from nabla_nn.data import (
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)

if torch is not None:
    import torch.utils.data as tud
else:
    tud = None


def _xy(n=10):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.int64) * 10
    return x, y


class Squares(Dataset):
    """A generic (non-TensorDataset) dataset: samples are (array, int, float) tuples."""

    def __init__(self, n=7):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return np.full(2, i, np.float32), i, float(i * i)


# -- datasets ---------------------------------------------------------------------------------------
def test_tensor_dataset_items_and_len():
    x, y = _xy()
    ds = TensorDataset(x, nb.tensor(y))
    assert len(ds) == 10
    xi, yi = ds[3]
    assert isinstance(xi, nb.Tensor) and xi.shape == (3,) and xi.dtype == nb.float32
    assert xi.numpy().tolist() == [9, 10, 11] and yi.shape == () and yi.item() == 30
    assert ds[-1][1].item() == 90
    with pytest.raises(IndexError):
        ds[10]
    assert [t.shape for t in ds.tensors] == [(10, 3), (10,)]


def test_tensor_dataset_keeps_the_dtype_of_tensors():
    ds = TensorDataset(nb.ones(4, 2, dtype=nb.bfloat16), nb.tensor(np.array([1, 2, 3, 4], np.int32)))
    xb, yb = next(iter(DataLoader(ds, batch_size=3)))
    assert xb.dtype == nb.bfloat16 and xb.shape == (3, 2) and yb.dtype == nb.int32
    assert xb.numpy().tolist() == [[1, 1]] * 3


def test_tensor_dataset_errors():
    with pytest.raises(ValueError, match="size mismatch.*\\[5, 4\\]"):
        TensorDataset(np.zeros((5, 2)), np.zeros(4))
    with pytest.raises(ValueError, match="at least one"):
        TensorDataset()
    with pytest.raises(ValueError, match="argument 1 is 0-d"):
        TensorDataset(np.zeros(3), np.zeros(()))
    with pytest.raises(TypeError, match="argument 0 must be a Tensor or a NumPy array, got list"):
        TensorDataset([1, 2, 3])


@needs_torch
def test_dataset_needs_only_getitem_like_torch():
    def run(base, loader):
        class OnlyItems(base):  # no __len__: PyTorch does not require one
            def __getitem__(self, i):
                return np.float32(i * 10)

        ds = OnlyItems()
        batches = [b.numpy().tolist() for b in loader(ds, batch_size=2, sampler=[3, 1, 2])]
        with pytest.raises(TypeError, match="has no len"):
            list(loader(ds, batch_size=2))  # without a sampler the order needs len()
        with pytest.raises(NotImplementedError, match="should implement __getitem__"):
            base()[0]
        return batches

    assert run(Dataset, DataLoader) == run(tud.Dataset, tud.DataLoader) == [[30.0, 10.0], [20.0]]


def test_subset_and_random_split():
    x, y = _xy(10)
    ds = TensorDataset(x, y)
    sub = Subset(ds, [7, 2, 5])
    assert len(sub) == 3 and sub[0][1].item() == 70 and sub[-1][1].item() == 50
    with pytest.raises(IndexError, match="\\[-10, 10\\)"):
        Subset(ds, [3, 10])
    batch = sub[[0, 2]]  # a list of positions: one batch, as PyTorch's Subset
    np.testing.assert_array_equal(batch[1].numpy(), [70, 50])

    parts = random_split(ds, [6, 3, 1], seed=4)
    assert [len(p) for p in parts] == [6, 3, 1]
    seen = np.concatenate([p.indices for p in parts])
    assert sorted(seen.tolist()) == list(range(10))  # a partition
    again = random_split(ds, [6, 3, 1], seed=4)
    assert all(np.array_equal(a.indices, b.indices) for a, b in zip(parts, again, strict=True))
    assert not np.array_equal(random_split(ds, [10], seed=5)[0].indices, np.arange(10))  # shuffled

    assert [len(p) for p in random_split(ds, [np.int64(8), np.int64(2)], seed=0)] == [8, 2]  # NumPy ints
    fractions = random_split(TensorDataset(np.arange(11)), [0.5, 0.3, 0.2], seed=0)
    assert [len(p) for p in fractions] == [6, 3, 2]  # floors 5,3,2 + remainder to the first
    with pytest.raises(ValueError, match="sum to 9, the dataset has 10"):
        random_split(ds, [5, 4])
    with pytest.raises(ValueError, match="non-negative ints"):
        random_split(ds, [12, -2])


@needs_torch
def test_random_split_fraction_lengths_match_torch():
    for n, fracs in [(11, [0.5, 0.3, 0.2]), (7, [0.25, 0.25, 0.5]), (100, [0.9, 0.1]), (3, [0.3, 0.3, 0.4])]:
        ours = [len(p) for p in random_split(TensorDataset(np.arange(n)), fracs, seed=0)]
        ref = [len(p) for p in tud.random_split(range(n), fracs)]
        assert ours == ref, (n, fracs)


# -- DataLoader: TensorDataset fast path ------------------------------------------------------------
def test_batches_in_order_with_last_partial_batch():
    x, y = _xy(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert [b[0].shape for b in batches] == [(4, 3), (4, 3), (2, 3)]
    assert all(isinstance(b, list) and len(b) == 2 for b in batches)  # PyTorch gives a list too
    assert batches[0][0].dtype == nb.float32 and batches[0][1].dtype == nb.int64
    assert all(t.is_realized for b in batches for t in b)
    assert np.array_equal(np.concatenate([b[0].numpy() for b in batches]), x)
    assert np.concatenate([b[1].numpy() for b in batches]).tolist() == y.tolist()


def test_drop_last():
    x, y = _xy(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=4, drop_last=True)
    assert len(loader) == 2
    assert [b[1].numpy().tolist() for b in loader] == [[0, 10, 20, 30], [40, 50, 60, 70]]
    assert len(DataLoader(TensorDataset(x), batch_size=5, drop_last=True)) == 2
    assert len(DataLoader(TensorDataset(x), batch_size=11, drop_last=True)) == 0
    assert list(DataLoader(TensorDataset(x), batch_size=11, drop_last=True)) == []
    assert len(DataLoader(TensorDataset(x), batch_size=11)) == 1


def test_unshuffled_batches_are_copies_not_views_of_the_users_array():
    # torch's batches are stacked copies: a later write to the array must not change a batch
    x, _ = _xy(8)
    (xb,) = next(iter(DataLoader(TensorDataset(x), batch_size=4)))
    before = xb.numpy().copy()
    assert not np.shares_memory(xb.numpy(), x)
    x[:4] = -1.0
    assert np.array_equal(xb.numpy(), before)


def test_shuffle_covers_every_sample_and_changes_per_epoch():
    x, y = _xy(50)
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True, seed=123)
    epochs = []
    for _ in range(3):
        order = np.concatenate([yb.numpy() for _, yb in loader]) // 10
        assert sorted(order.tolist()) == list(range(50))  # every sample exactly once
        epochs.append(order)
    assert not np.array_equal(epochs[0], epochs[1]) and not np.array_equal(epochs[1], epochs[2])
    assert not np.array_equal(epochs[0], np.arange(50))
    for xb, yb in loader:  # rows stay paired across the tensors
        assert np.array_equal(xb.numpy(), x[yb.numpy() // 10])


def test_shuffle_is_reproducible_for_a_seed():
    x, y = _xy(30)

    def orders(seed):
        loader = DataLoader(TensorDataset(x, y), batch_size=7, shuffle=True, seed=seed)
        return [np.concatenate([yb.numpy() for _, yb in loader]).tolist() for _ in range(2)]

    assert orders(5) == orders(5)
    assert orders(5) != orders(6)
    expected = np.random.default_rng(5).permutation(30) * 10  # documented: numpy's default_rng(seed)
    assert orders(5)[0] == expected.tolist()


def test_shuffle_with_drop_last_drops_a_random_remainder():
    x, y = _xy(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=3, shuffle=True, drop_last=True, seed=0)
    batches = [yb.numpy() for _, yb in loader]
    assert [len(b) for b in batches] == [3, 3, 3]
    assert len(set(np.concatenate(batches).tolist())) == 9


def test_subset_of_tensor_dataset_uses_its_indices():
    x, y = _xy(10)
    inner = Subset(TensorDataset(x, y), [9, 8, 7, 6, 5])
    outer = Subset(inner, [4, 0, 2])  # -> rows 5, 9, 7
    batches = [yb.numpy().tolist() for _, yb in DataLoader(outer, batch_size=2)]
    assert batches == [[50, 90], [70]]
    train, val = random_split(TensorDataset(x, y), [0.7, 0.3], seed=1)
    got = sorted(np.concatenate([yb.numpy() for _, yb in DataLoader(train, batch_size=4, shuffle=True, seed=0)]))
    assert got == sorted((np.asarray(train.indices) * 10).tolist())


# -- DataLoader: generic path and collation ---------------------------------------------------------
def test_generic_dataset_is_collated_like_pytorch():
    loader = DataLoader(Squares(7), batch_size=3)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    arrays, ints, floats = batches[0]
    assert arrays.shape == (3, 2) and arrays.dtype == nb.float32
    assert ints.dtype == nb.int64 and ints.numpy().tolist() == [0, 1, 2]
    assert floats.dtype == nb.float64 and floats.numpy().tolist() == [0.0, 1.0, 4.0]  # PyTorch: float64
    assert batches[-1][1].numpy().tolist() == [6]


def test_default_collate_containers():
    point = namedtuple("Point", "x y")
    out = default_collate(
        [{"a": np.ones(2), "name": "p", "pt": point(1, 2.5)}, {"a": np.zeros(2), "name": "q", "pt": point(3, 4.5)}]
    )
    assert set(out) == {"a", "name", "pt"} and out["name"] == ["p", "q"]
    assert out["a"].shape == (2, 2) and out["a"].dtype == nb.float64
    assert isinstance(out["pt"], point) and out["pt"].x.numpy().tolist() == [1, 3]
    flags = default_collate([True, False])
    assert flags.dtype == nb.bool_ and flags.numpy().tolist() == [True, False]
    scalars = default_collate([np.float32(1.5), np.float32(2.0)])
    assert scalars.dtype == nb.float32 and scalars.shape == (2,)
    stacked = default_collate([nb.ones(2, 2), nb.zeros(2, 2)])
    assert stacked.shape == (2, 2, 2) and stacked.numpy()[0].tolist() == [[1, 1], [1, 1]]
    nested = default_collate([[np.ones(1), 1], [np.ones(1), 2]])
    assert isinstance(nested, list) and nested[1].numpy().tolist() == [1, 2]


def test_default_collate_errors():
    with pytest.raises(RuntimeError, match="equal size, but got \\[2\\] at entry 0 and \\[3\\] at entry 1"):
        default_collate([np.ones(2), np.ones(3)])
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([(1, 2), (1,)])
    with pytest.raises(TypeError, match="found object"):
        default_collate([object()])
    with pytest.raises(ValueError, match="empty batch"):
        default_collate([])


@needs_torch
def test_default_collate_matches_torch():
    samples = [(np.full(2, i, np.float32), i, float(i) / 2, {"k": np.int32(i)}) for i in range(4)]
    ours = default_collate(samples)
    ref = tud.default_collate(samples)
    assert isinstance(ref, list) and isinstance(ours, list) and len(ours) == len(ref)
    for a, b in zip(ours[:3], ref[:3], strict=True):
        assert np.array_equal(a.numpy(), b.numpy()) and str(a.numpy().dtype) == str(b.numpy().dtype)
    assert np.array_equal(ours[3]["k"].numpy(), ref[3]["k"].numpy())


def test_default_collate_python_number_dtypes_follow_the_whole_batch():
    # As torch.tensor infers: an int label batch with a float in it must not be truncated
    # (it was [1, 2]); a float first asks for float64.
    cases = [([1, 2.5], "float32"), ([2.5, 1], "float64"), ([True, 2], "int64"), ([True, False], "bool")]
    cases.append(([True, 2.5], "float32"))
    for batch, dtype in cases:
        got = default_collate(batch)
        assert got.dtype.name == dtype, batch
        np.testing.assert_array_equal(got.numpy(), np.asarray(batch, dtype=dtype))


def test_default_collate_promotes_tensor_and_array_samples_as_torch():
    # An int sample beside a float one is not truncated (2.5 was stacked as 2); int32 and
    # float32 arrays give float32, as torch's promotion (NumPy's would give float64).
    got = default_collate([nb.tensor([1]), nb.tensor([2.5])])
    assert got.dtype == nb.float32
    np.testing.assert_array_equal(got.numpy(), [[1.0], [2.5]])
    assert default_collate([np.array([1], np.int32), np.array([2.5], np.float32)]).dtype == nb.float32
    assert default_collate([nb.tensor([1]), nb.tensor([2])]).dtype == nb.int64


@needs_torch
def test_default_collate_python_number_dtypes_match_torch():
    for batch in ([1, 2.5], [2.5, 1], [True, 2], [True, False], [True, 2.5], [3, 4]):
        assert f"torch.{default_collate(batch).dtype.name}" == str(tud.default_collate(batch).dtype), batch


def test_custom_collate_fn_and_unbatched_mode():
    loader = DataLoader(Squares(5), batch_size=2, collate_fn=lambda batch: [s[1] for s in batch])
    assert list(loader) == [[0, 1], [2, 3], [4]]
    x, y = _xy(4)
    tds = DataLoader(TensorDataset(x, y), batch_size=3, collate_fn=lambda b: len(b))
    assert list(tds) == [3, 1]  # a collate_fn turns the fast path off
    single = DataLoader(Squares(3), batch_size=None)
    items = list(single)
    assert len(single) == 3 and len(items) == 3
    arr, i, f = items[2]
    assert isinstance(arr, nb.Tensor) and arr.shape == (2,) and i == 2 and f == 4.0


def test_shuffled_generic_dataset_visits_every_sample():
    loader = DataLoader(Squares(9), batch_size=4, shuffle=True, seed=1)
    ints = np.concatenate([b[1].numpy() for b in loader])
    assert sorted(ints.tolist()) == list(range(9)) and ints.tolist() != list(range(9))


def test_loader_argument_errors():
    ds = TensorDataset(np.zeros(3))
    for bad in (0, -1, 2.0, True):
        with pytest.raises(
            ValueError, match=f"batch_size should be a positive integer value, but got batch_size={bad!r}"
        ):
            DataLoader(ds, batch_size=bad)
    with pytest.raises(ValueError, match="mutually exclusive with drop_last"):
        DataLoader(ds, batch_size=None, drop_last=True)
    with pytest.raises(TypeError, match="shuffle must be a bool"):
        DataLoader(ds, shuffle="yes")
    with pytest.raises(TypeError, match=r"must define __getitem__ \(and __len__\) or be an IterableDataset"):
        DataLoader(iter([1, 2]))
    assert "batch_size=1" in repr(DataLoader(ds))


def test_module_exports():
    assert set(data.__all__) == {
        "BatchSampler",
        "ChainDataset",
        "ConcatDataset",
        "DataLoader",
        "Dataset",
        "DistributedSampler",
        "IterableDataset",
        "RandomSampler",
        "Sampler",
        "SequentialSampler",
        "Subset",
        "SubsetRandomSampler",
        "TensorDataset",
        "WeightedRandomSampler",
        "default_collate",
        "get_worker_info",
        "random_split",
    }
    if torch is not None:  # torch.utils.data has every one of these names
        assert all(hasattr(torch.utils.data, name) for name in data.__all__)


def test_samplers_orders_lengths_and_generators():
    assert list(data.SequentialSampler(range(4))) == [0, 1, 2, 3] and len(data.SequentialSampler(range(4))) == 4
    rs = data.RandomSampler(range(5), generator=np.random.default_rng(0))
    first, second = list(rs), list(rs)
    assert sorted(first) == sorted(second) == [0, 1, 2, 3, 4] and first != second  # a new order each epoch
    # more samples than the dataset without replacement: whole permutations, then part of one
    many = list(data.RandomSampler(range(3), num_samples=7, generator=np.random.default_rng(1)))
    assert len(many) == 7 and sorted(many[:3]) == sorted(many[3:6]) == [0, 1, 2]
    drawn = list(data.RandomSampler(range(3), replacement=True, num_samples=50))
    assert len(drawn) == 50 and set(drawn) <= {0, 1, 2}
    assert sorted(data.SubsetRandomSampler([5, 7, 9])) == [5, 7, 9] and len(data.SubsetRandomSampler([5, 7])) == 2
    assert list(data.WeightedRandomSampler(nb.tensor([0.0, 1.0, 0.0]), 4)) == [1, 1, 1, 1]
    no_repeat = list(data.WeightedRandomSampler([0.0, 5.0, 1.0, 0.0], 4, replacement=False))
    assert sorted(no_repeat) == [0, 1, 2, 3] and set(no_repeat[2:]) == {0, 3}  # zero weights come last
    counts = np.bincount(list(data.WeightedRandomSampler([1.0, 3.0], 4000, generator=np.random.default_rng(2))))
    assert 0.7 < counts[1] / 4000 < 0.8
    bs = data.BatchSampler(data.SequentialSampler(range(5)), batch_size=2, drop_last=False)
    assert list(bs) == [[0, 1], [2, 3], [4]] and len(bs) == 3
    assert (
        list(data.BatchSampler(range(5), 2, True)) == [[0, 1], [2, 3]]
        and len(data.BatchSampler(range(5), 2, True)) == 2
    )
    # nabla's global seed repeats an unseeded sampler's and an unseeded shuffling loader's orders, as torch's
    ds = TensorDataset(np.arange(20))
    orders = []
    for _ in range(2):
        nb.manual_seed(3)
        loader = DataLoader(ds, batch_size=20, shuffle=True)
        orders.append((list(data.RandomSampler(range(20))), next(iter(loader))[0].tolist()))
    assert orders[0] == orders[1] and orders[0][0] != list(range(20))
    # a nabla.Generator: each epoch draws from it, so reseeding it repeats the orders
    epochs = [list(data.RandomSampler(range(9), generator=nb.Generator().manual_seed(4))) for _ in range(2)]
    g = nb.Generator().manual_seed(4)
    loader = DataLoader(ds, batch_size=20, shuffle=True, generator=g)
    assert epochs[0] == epochs[1] and next(iter(loader))[0].tolist() != next(iter(loader))[0].tolist()
    # samplers feed a DataLoader
    loader = DataLoader(ds, batch_sampler=data.BatchSampler(data.SubsetRandomSampler([1, 3, 5]), 2, False))
    assert len(loader) == 2 and sorted(sum((b[0].tolist() for b in loader), [])) == [1, 3, 5]


def test_sampler_argument_errors_match_torch():
    cases = [
        (TypeError, "replacement should be a boolean value, but got replacement=1", "RandomSampler(range(3), replacement=1)"),
        (ValueError, "num_samples should be a positive integer value, but got num_samples=0", "RandomSampler(range(3), num_samples=0)"),
        (ValueError, "num_samples should be a positive integer value, but got num_samples=0", "WeightedRandomSampler([1.0], 0)"),
        (ValueError, "replacement should be a boolean value, but got replacement=1", "WeightedRandomSampler([1.0], 1, replacement=1)"),
        (ValueError, r"weights should be a 1d sequence but given weights have shape \(1, 2\)", "WeightedRandomSampler([[1.0, 2.0]], 2)"),
        (ValueError, "batch_size should be a positive integer value, but got batch_size=0", "BatchSampler(range(3), 0, False)"),
        (ValueError, "drop_last should be a boolean value, but got drop_last=1", "BatchSampler(range(3), 2, 1)"),
    ]  # fmt: skip
    for error, message, expr in cases:
        with pytest.raises(error, match=message):
            eval(expr, vars(data))
        if torch is not None:
            with pytest.raises(error, match=message):
                eval(expr, vars(torch.utils.data))
    with pytest.raises(RuntimeError, match="non-negative"):
        data.WeightedRandomSampler([-1.0, 1.0], 2)
    with pytest.raises(RuntimeError, match="num_samples=3 indices without replacement from 2 weights"):
        data.WeightedRandomSampler([1.0, 1.0], 3, replacement=False)


def test_sampler_batch_sampler_generator_and_worker_settings():
    ds = TensorDataset(np.arange(10), np.arange(10) * 10)
    # a sampler gives each epoch's order; batches and drop_last apply to it
    loader = DataLoader(ds, batch_size=3, sampler=[9, 7, 5, 3, 1], drop_last=True, num_workers=4, pin_memory=True)
    assert len(loader) == 1 and [b[0].numpy().tolist() for b in loader] == [[9, 7, 5]]
    # a batch sampler gives the batches themselves, for any dataset
    batches = [[0, 1], [8], [2, 5, 4]]
    got = [b[1].numpy().tolist() for b in DataLoader(ds, batch_sampler=batches)]
    assert got == [[0, 10], [80], [20, 50, 40]]
    assert len(DataLoader(Squares(6), batch_sampler=batches)) == 3
    assert [b[2].numpy().tolist() for b in DataLoader(Squares(9), batch_sampler=batches)] == [[0, 1], [64], [4, 25, 16]]
    # a NumPy generator shuffles like the same seed does
    a = [b[0].numpy().tolist() for b in DataLoader(ds, batch_size=4, shuffle=True, generator=np.random.default_rng(3))]
    b = [b[0].numpy().tolist() for b in DataLoader(ds, batch_size=4, shuffle=True, seed=3)]
    assert a == b and sorted(sum(a, [])) == list(range(10))
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(ds, sampler=[0], shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(ds, batch_size=2, batch_sampler=batches)
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        DataLoader(ds, generator=object())


@needs_torch
def test_batch_sampler_matches_torch():
    ds = TensorDataset(np.arange(6, dtype=np.float32))
    sampler = tud.BatchSampler(tud.SequentialSampler(range(6)), batch_size=4, drop_last=False)
    ours = [b[0].numpy().tolist() for b in DataLoader(ds, batch_sampler=sampler)]
    ref = [b[0].numpy().tolist() for b in tud.DataLoader(tud.TensorDataset(torch.arange(6.0)), batch_sampler=sampler)]
    assert ours == ref


class _Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return ((np.float32(i), i % 3) for i in range(self.n))


def test_iterable_and_concat_datasets():
    got = [b[1].numpy().tolist() for b in DataLoader(_Stream(7), batch_size=3)]
    assert got == [[0, 1, 2], [0, 1, 2], [0]]
    assert len(list(DataLoader(_Stream(7), batch_size=3, drop_last=True))) == 2
    with pytest.raises(ValueError, match="IterableDataset"):
        DataLoader(_Stream(3), shuffle=True)
    with pytest.raises(TypeError):
        len(DataLoader(_Stream(3), batch_size=2))  # a stream without a length, as in torch
    both = TensorDataset(np.arange(3)) + TensorDataset(np.arange(10, 14))
    assert isinstance(both, ConcatDataset) and len(both) == 7
    assert [int(both[i][0]) for i in (0, 2, 3, 6, -1, -7)] == [0, 2, 10, 13, 13, 0]
    with pytest.raises(IndexError, match="out of range for 7"):
        both[7]
    assert [b[0].numpy().tolist() for b in DataLoader(both, batch_size=4)] == [[0, 1, 2, 10], [11, 12, 13]]
    # streams are Datasets (as torch's) and chain with + (ChainDataset); a ConcatDataset refuses them
    chained = _Stream(2) + _Stream(3)
    assert isinstance(_Stream(1), data.Dataset) and isinstance(chained, data.ChainDataset)
    assert [b[1].tolist() for b in DataLoader(chained, batch_size=2)] == [[0, 1], [0, 1], [2]]
    with pytest.raises(TypeError, match="ConcatDataset does not support IterableDataset"):
        ConcatDataset([TensorDataset(np.arange(2)), _Stream(2)])
    with pytest.raises(TypeError, match="ChainDataset only supports IterableDataset, got TensorDataset at position 1"):
        list(data.ChainDataset([_Stream(1), TensorDataset(np.arange(2))]))


@needs_torch
def test_iterable_and_concat_datasets_match_torch():
    class TorchStream(tud.IterableDataset):
        def __iter__(self):
            return ((np.float32(i), i % 3) for i in range(7))

    ours = [[t.numpy().tolist() for t in b] for b in DataLoader(_Stream(7), batch_size=3)]
    ref = [[t.numpy().tolist() for t in b] for b in tud.DataLoader(TorchStream(), batch_size=3)]
    assert ours == ref
    parts = [np.arange(3), np.arange(5, 9)]
    ref_concat = tud.ConcatDataset([tud.TensorDataset(torch.tensor(p)) for p in parts])
    ours_concat = ConcatDataset([TensorDataset(p) for p in parts])
    assert [int(ours_concat[i][0]) for i in range(-7, 7)] == [int(ref_concat[i][0]) for i in range(-7, 7)]


@needs_torch
def test_sampler_without_len_is_read_lazily_like_torch():
    class NoLen:
        def __iter__(self):
            return iter([9, 0, 4])

    def run(loader, ds):
        out = [[b[1].numpy().tolist() for b in loader(ds, batch_size=2, sampler=s)] for s in (NoLen(), iter([3, 1, 2]))]
        out.append([b[1].numpy().tolist() for b in loader(ds, batch_size=2, sampler=NoLen(), drop_last=True)])
        out.append([b[1].item() for b in loader(ds, batch_size=None, sampler=NoLen())])
        with pytest.raises(TypeError):
            len(loader(ds, batch_size=2, sampler=NoLen()))
        return out

    x, y = _xy()
    ours = run(DataLoader, TensorDataset(x, y))
    assert ours == run(tud.DataLoader, tud.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)))
    assert ours[0] == [[90, 0], [40]]


def test_endless_sampler_yields_batches_without_reading_it_all():
    def endless():
        for n, i in enumerate(itertools.cycle([4, 2])):
            assert n < 100, "the sampler was read far past the first batch"
            yield i

    first = next(iter(DataLoader(Squares(5), batch_size=3, sampler=endless())))
    assert first[1].numpy().tolist() == [4, 2, 4]


@needs_torch
def test_shuffle_none_means_false_like_torch():
    x, y = _xy(6)
    ours = [b[1].numpy().tolist() for b in DataLoader(TensorDataset(x, y), batch_size=4, shuffle=None)]
    ref_ds = tud.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    assert ours == [b[1].numpy().tolist() for b in tud.DataLoader(ref_ds, batch_size=4, shuffle=None)]


@needs_torch
def test_unbatched_samples_are_converted_like_torchs_default_convert():
    point = namedtuple("point", "a b")

    class Samples:
        def __len__(self):
            return 1

        def __getitem__(self, i):
            return {"t": (np.float64(1.5), np.arange(2), "s", np.array(["x"])), "n": point(np.int32(3), [1])}

    def describe(value):
        if isinstance(value, dict):
            return {k: describe(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return (type(value).__name__, [describe(v) for v in value])
        if isinstance(value, nb.Tensor | torch.Tensor):
            return ("tensor", str(value.dtype).split(".")[-1].lower(), tuple(value.shape))
        return type(value).__name__

    ours = describe(next(iter(DataLoader(Samples(), batch_size=None))))
    assert ours == describe(next(iter(tud.DataLoader(Samples(), batch_size=None))))
    assert ours["t"][0] == "list"  # a plain tuple comes back as a list, as torch's default_convert


def test_generator_arguments_and_mapping_types():
    ds = TensorDataset(np.arange(10))
    a = random_split(ds, [0.8, 0.2], generator=np.random.default_rng(3))
    b = random_split(ds, [0.8, 0.2], seed=3)
    assert list(a[0].indices) == list(b[0].indices)
    with pytest.raises(TypeError, match="random_split: pass seed= or generator=, not both"):
        random_split(ds, [5, 5], seed=1, generator=np.random.default_rng(1))
    with pytest.raises(
        TypeError,
        match="DataLoader: generator must be a nabla.Generator, numpy.random.Generator or torch.Generator, got int",
    ):
        data.DataLoader(ds, generator=3)
    if torch is not None:  # a torch.Generator's seed seeds ours: the same split each time
        first = random_split(ds, [0.5, 0.5], generator=torch.Generator().manual_seed(42))
        again = random_split(ds, [0.5, 0.5], generator=torch.Generator().manual_seed(42))
        assert list(first[0].indices) == list(again[0].indices)
    batch = default_collate([OrderedDict(x=1.0, y=2), OrderedDict(x=3.0, y=4)])
    assert type(batch) is OrderedDict and list(batch) == ["x", "y"]


# -- subclasses, sampler indices, Subset.indices: torch's semantics ---------------------------------
class _Scaled(TensorDataset):
    def __getitem__(self, i):
        x, y = super().__getitem__(i)
        return x * 100, y


class _Shifted(Subset):
    def __getitem__(self, i):
        x, y = super().__getitem__(i)
        return x + 1000, y


def test_a_subclass_getitem_is_called_by_the_dataloader():
    x, y = np.arange(6, dtype=np.float32), np.arange(6)
    got = [xb.numpy().tolist() for xb, _ in DataLoader(_Scaled(x, y), batch_size=3)]
    assert got == [[0.0, 100.0, 200.0], [300.0, 400.0, 500.0]]
    got = [xb.numpy().tolist() for xb, _ in DataLoader(_Shifted(TensorDataset(x, y), [0, 1, 2]), batch_size=3)]
    assert got == [[1000.0, 1001.0, 1002.0]]
    # a plain Subset over a subclass, and a subclass anywhere in a Subset chain
    got = sorted(v for xb, _ in DataLoader(Subset(_Scaled(x, y), [1, 5]), batch_size=2) for v in xb.numpy().tolist())
    assert got == [100.0, 500.0]
    chain = Subset(_Shifted(TensorDataset(x, y), [5, 4, 3]), [2, 0])
    assert [xb.numpy().tolist() for xb, _ in DataLoader(chain, batch_size=2)] == [[1003.0, 1005.0]]
    # shuffled and with a sampler too
    got = sorted(v for xb, _ in DataLoader(_Scaled(x, y), batch_size=4, shuffle=True, seed=0) for v in xb.numpy())
    assert got == [0.0, 100.0, 200.0, 300.0, 400.0, 500.0]
    got = [xb.numpy().tolist() for xb, _ in DataLoader(_Scaled(x, y), batch_size=2, sampler=[5, 0])]
    assert got == [[500.0, 0.0]]


@needs_torch
def test_a_subclass_getitem_is_called_by_torchs_dataloader_too():
    class TScaled(tud.TensorDataset):
        def __getitem__(self, i):
            x, y = super().__getitem__(i)
            return x * 100, y

    t = torch.arange(6, dtype=torch.float32)
    assert [b[0].tolist() for b in tud.DataLoader(TScaled(t, t), batch_size=3)][0] == [0.0, 100.0, 200.0]


class _Keyed(Dataset):
    """Samples by string key, or a batch of them by a list of keys."""

    def __getitem__(self, key):
        if isinstance(key, list):
            return [self[k] for k in key]
        return {"a": 1.0, "b": 2.0}[key]


def test_sampler_indices_reach_the_dataset_unchanged():
    assert [b.tolist() for b in DataLoader(_Keyed(), batch_size=2, sampler=["b", "a"])] == [[2.0, 1.0]]
    assert list(DataLoader(_Keyed(), batch_size=None, sampler=["a"])) == [1.0]
    # a BatchSampler as the sampler with batch_size=None: each list of indices reaches __getitem__ as it is
    x, y = _xy(6)
    batches = list(DataLoader(TensorDataset(x, y), batch_size=None, sampler=data.BatchSampler(range(6), 4, False)))
    assert [b[1].numpy().tolist() for b in batches] == [[0, 10, 20, 30], [40, 50]]
    # a batch_sampler's lists too, through a generic dataset
    assert [b.tolist() for b in DataLoader(_Keyed(), batch_sampler=[["a", "b"], ["b"]])] == [[1.0, 2.0], [2.0]]


def test_float_sampler_indices_are_not_truncated():
    x, y = _xy(6)
    with pytest.raises(IndexError):
        list(DataLoader(TensorDataset(x, y), batch_size=2, sampler=[0.0, 1.7]))
    with pytest.raises(TypeError, match="list indices must be integers"):  # Subset.indices is a list, as torch's
        list(DataLoader(Subset(TensorDataset(x, y), [0, 1, 2]), batch_size=None, sampler=[1.5]))


@needs_torch
def test_torch_passes_sampler_indices_unchanged():
    batches = list(tud.DataLoader(torch.arange(6), batch_size=None, sampler=tud.BatchSampler(range(6), 4, False)))
    assert [b.tolist() for b in batches] == [[0, 1, 2, 3], [4, 5]]
    with pytest.raises(IndexError):
        list(tud.DataLoader(tud.TensorDataset(torch.arange(6)), batch_size=2, sampler=[0.0, 1.7]))


def test_subset_and_random_split_indices_are_lists():
    x, y = _xy(10)
    s = Subset(TensorDataset(x, y), np.array([3, 1]))
    assert s.indices == [3, 1] and type(s.indices[0]) is int
    assert Subset(TensorDataset(x, y), (4, 2)).indices == [4, 2]
    parts = random_split(TensorDataset(x, y), [6, 4], seed=0)
    assert all(type(p.indices) is list for p in parts)
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    with pytest.raises(TypeError, match="Subset: indices must be ints"):
        Subset(TensorDataset(x, y), [1.5])


def test_random_sampler_of_an_empty_dataset_and_truthy_shuffle():
    with pytest.raises(
        ValueError, match="RandomSampler: num_samples should be a positive integer value, but got num_samples=0"
    ):
        data.RandomSampler([])
    x, y = _xy(6)
    got = sorted(v for _, yb in DataLoader(TensorDataset(x, y), batch_size=4, shuffle=1, seed=0) for v in yb.numpy())
    assert got == [0, 10, 20, 30, 40, 50]
    assert DataLoader(TensorDataset(x, y), shuffle=1).shuffle is True


@needs_torch
def test_torch_random_sampler_of_an_empty_dataset():
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        tud.RandomSampler([])
    assert len(list(tud.DataLoader(torch.arange(6), batch_size=4, shuffle=1))) == 2
