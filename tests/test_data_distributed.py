"""nabla_nn.data.DistributedSampler (torch's padding / dropping and rank striding) and
get_worker_info (always None: loading is in-process)."""

from __future__ import annotations

import numpy as np
import pytest
from _oracle import needs_torch, torch

import nabla as nb
from nabla_nn.data import DataLoader, DistributedSampler, IterableDataset, TensorDataset, get_worker_info

CASES = [(10, 4, False), (10, 4, True), (3, 5, False), (3, 5, True), (8, 4, True), (1, 3, False), (0, 2, False)]


def _shares(n: int, replicas: int, drop_last: bool, shuffle: bool = False, epoch: int = 0) -> list[list[int]]:
    out = []
    for rank in range(replicas):
        s = DistributedSampler(range(n), replicas, rank, shuffle=shuffle, seed=7, drop_last=drop_last)
        s.set_epoch(epoch)
        out.append(list(s))
        assert len(s) == len(out[-1])
    return out


def test_unshuffled_shares_pad_and_stride():
    assert _shares(10, 4, False) == [[0, 4, 8], [1, 5, 9], [2, 6, 0], [3, 7, 1]]
    assert _shares(10, 4, True) == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert _shares(3, 5, False) == [[0], [1], [2], [0], [1]]  # padding longer than the data repeats it


def test_shuffled_shares_partition_one_permutation_per_epoch():
    shares = _shares(11, 3, False, shuffle=True, epoch=2)
    perm = np.random.default_rng(7 + 2).permutation(11).tolist()
    padded = perm + perm[:1]
    assert shares == [padded[r::3] for r in range(3)]
    assert sorted(sum(shares, [])) == sorted([*range(11), perm[0]])
    assert _shares(11, 3, False, shuffle=True, epoch=3) != shares  # set_epoch reshuffles


def test_defaults_are_one_replica_and_bad_arguments_are_named():
    s = DistributedSampler(range(5), shuffle=False)
    assert (s.num_replicas, s.rank, s.total_size, list(s)) == (1, 0, 5, [0, 1, 2, 3, 4])
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(5), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="num_replicas must be an integer >= 1, got num_replicas=0"):
        DistributedSampler(range(5), num_replicas=0)
    with pytest.raises(ValueError, match="shuffle should be a boolean"):
        DistributedSampler(range(5), shuffle="yes")


def test_a_dataloader_batches_one_replicas_share():
    data = TensorDataset(np.arange(10, dtype=np.float32))
    loader = DataLoader(data, batch_size=2, sampler=DistributedSampler(data, 2, 1, shuffle=False))
    assert [b[0].tolist() for b in loader] == [[1.0, 3.0], [5.0, 7.0], [9.0]]


def test_get_worker_info_is_none_even_inside_a_loader():
    seen = []

    class Stream(IterableDataset):
        def __iter__(self):
            seen.append(get_worker_info())
            yield from (np.float32(i) for i in range(3))

    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3)] == [[0.0, 1.0, 2.0]]
    assert seen == [None] and get_worker_info() is None
    assert isinstance(nb.tensor([1.0]), nb.Tensor)


@needs_torch
@pytest.mark.parametrize(("n", "replicas", "drop_last"), CASES)
def test_matches_torch_without_shuffle_and_in_sizes_with_it(n: int, replicas: int, drop_last: bool):
    torch_sampler = torch.utils.data.DistributedSampler
    for shuffle in (False, True):
        theirs = [torch_sampler(range(n), replicas, r, shuffle=shuffle, drop_last=drop_last) for r in range(replicas)]
        ours = _shares(n, replicas, drop_last, shuffle=shuffle)
        assert [len(t) for t in theirs] == [len(o) for o in ours]
        assert (theirs[0].num_samples, theirs[0].total_size) == (
            len(ours[0]),
            len(ours[0]) * replicas,
        )
        if not shuffle:
            assert [list(t) for t in theirs] == ours
    assert torch.utils.data.get_worker_info() is get_worker_info()
