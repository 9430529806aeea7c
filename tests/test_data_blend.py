"""data.path parsing, split strings, and blends whose shares track their weights."""

from __future__ import annotations

import numpy as np
import pytest

from megazoo.core.data import DataConfig, build_gpt_datasets
from megazoo.core.data.blend import BlendedDataset, build_blending_indices, parse_data_path, parse_split, split_ranges
from megazoo.core.data.errors import DataError
from tests.test_data_common import data_cache, gpt2, write_random_dataset  # noqa: F401


def test_parse_data_path_forms():
    assert parse_data_path(None) == ([], None)
    assert parse_data_path("data/web") == (["data/web"], None)
    prefixes, weights = parse_data_path("0.7 data/a 0.3 data/b")
    assert prefixes == ["data/a", "data/b"] and weights == pytest.approx([0.7, 0.3])
    assert parse_data_path([3, "a", 1, "b"])[1] == pytest.approx([0.75, 0.25])
    assert parse_data_path(["a", "b"]) == (["a", "b"], None)
    with pytest.raises(DataError, match="weights and prefixes alternating"):
        parse_data_path("0.5 a 0.5")
    with pytest.raises(DataError, match="weights and prefixes alternating"):
        parse_data_path("0.5 a b 0.5")
    with pytest.raises(DataError, match="not all zero"):
        parse_data_path("0 a 0 b")
    with pytest.raises(DataError, match="is a weight with no prefix"):
        parse_data_path("0.5")


def test_split_strings():
    assert parse_split("949,50,1") == pytest.approx([0.949, 0.05, 0.001])
    assert parse_split("98,2") == pytest.approx([0.98, 0.02, 0.0])
    assert split_ranges(1000, parse_split("949,50,1")) == [(0, 949), (949, 999), (999, 1000)]
    assert split_ranges(10, parse_split("1,0,0")) == [(0, 10), None, None]
    with pytest.raises(DataError, match="one to three non-negative weights"):
        parse_split("1,2,3,4")


def test_greedy_shares_within_one_percent_on_10000():
    for weights in ([0.5, 0.3, 0.2], [0.9, 0.07, 0.03], [0.25] * 4):
        index, within = build_blending_indices(weights, 10_000)
        shares = np.bincount(index, minlength=len(weights)) / 10_000
        assert np.all(np.abs(shares - weights) < 0.01), (shares, weights)
        # the greedy rule keeps every prefix on track too, to within one sample per dataset
        for n in (10, 100, 1234):
            counts = np.bincount(index[:n], minlength=len(weights))
            assert np.all(np.abs(counts - np.asarray(weights) * n) <= 1 + 1e-9)
        # each dataset's samples are taken in order 0, 1, 2, ...
        for d in range(len(weights)):
            np.testing.assert_array_equal(within[index == d], np.arange(np.count_nonzero(index == d)))


def test_blended_gpt_datasets(tmp_path, gpt2):
    for name, seed in (("a", 1), ("b", 2), ("c", 3)):
        write_random_dataset(tmp_path / name, 200, seed=seed, max_len=40, vocab=1000 * seed, min_len=5)
    path = f"0.5 {tmp_path / 'a'} 0.3 {tmp_path / 'b'} 0.2 {tmp_path / 'c'}"
    cfg = DataConfig(path=path, split="98,2,0", cache_dir=str(tmp_path / "cache"))
    splits = build_gpt_datasets(cfg, gpt2, seq_length=16, seed=4, num_samples=(10_000, 300, None))
    train = splits.train
    assert isinstance(train, BlendedDataset) and len(train) == 10_000 and splits.test is None
    ids = np.array([int(train[i]["dataset_id"]) for i in range(len(train))])
    shares = np.bincount(ids) / len(ids)
    assert np.all(np.abs(shares - [0.5, 0.3, 0.2]) < 0.01)
    # the tokens really come from the dataset named (vocabularies differ: a < 1000 <= some of b)
    maxima = [max(int(train[i]["tokens"].max()) for i in np.flatnonzero(ids == d)[:200]) for d in range(3)]
    assert maxima[0] < 1000 < maxima[2]
    # deterministic, and rebuilt identically from the cache
    again = build_gpt_datasets(cfg, gpt2, seq_length=16, seed=4, num_samples=(10_000, 300, None)).train
    for i in (0, 17, 9999):
        np.testing.assert_array_equal(train[i]["tokens"], again[i]["tokens"])
    # several prefixes without weights: weighted by their tokens
    unweighted = build_gpt_datasets(DataConfig(path=[str(tmp_path / "a"), str(tmp_path / "b")], split="1",
                                               cache_dir=str(tmp_path / "cache")), gpt2, 16, 4).train
    assert isinstance(unweighted, BlendedDataset) and len(unweighted) > 0


def test_blend_too_short_component():
    class Tiny:
        def __len__(self):
            return 3

    with pytest.raises(DataError, match="has 3 samples, the blend needs"):
        BlendedDataset([Tiny(), Tiny()], [0.5, 0.5], 100)
