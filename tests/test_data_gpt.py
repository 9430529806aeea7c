"""GPT samples: no token lost or duplicated, determinism, epochs, caching, splits, DP sampling."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from megazoo.core.data import DataConfig, DistributedBatchSampler, build_gpt_datasets, micro_batches
from megazoo.core.data.errors import DataError
from megazoo.core.data.gpt import GPTDataset
from megazoo.core.data.indexed import IndexedDataset
from tests.test_data_common import data_cache, gpt2, write_random_dataset  # noqa: F401


@pytest.fixture()
def dataset(tmp_path):
    docs = write_random_dataset(tmp_path / "d", 80, seed=11, max_len=70, vocab=50000)
    return IndexedDataset(tmp_path / "d"), [d[0] for d in docs]


def test_one_epoch_loses_and_duplicates_no_token(dataset, tmp_path):
    ds, docs = dataset
    seq = 48
    gpt = GPTDataset(ds, np.arange(len(docs)), None, seq, seed=3, cache_dir=tmp_path / "cache")
    total = sum(len(d) for d in docs)
    assert len(gpt) == (total - 1) // seq
    # Inputs (tokens[:-1]) of the samples in sample-index order tile the epoch's token stream.
    order = np.argsort(np.asarray(gpt.shuffle_index))
    stream = np.concatenate([gpt[int(i)]["tokens"][:-1] for i in order])
    expected = np.concatenate([docs[d] for d in gpt.document_index])
    np.testing.assert_array_equal(stream, expected[:len(stream)])
    assert total - len(stream) < seq + 1  # only the tail that cannot fill a sample is left
    # Every document's tokens occur exactly as often as in the data, counted (shuffled order too).
    seen = Counter(np.concatenate([gpt[i]["tokens"][:-1] for i in range(len(gpt))]).tolist())
    left = Counter(expected[len(stream):].tolist())
    assert seen + left == Counter(np.concatenate(docs).tolist())
    for i in range(len(gpt)):
        item = gpt[i]
        assert item["tokens"].dtype == np.int64 and item["tokens"].shape == (seq + 1,)
        assert item["tokens"][-1] == gpt[i]["tokens"][-1]


def test_same_seed_same_order_other_seed_differs(dataset, tmp_path):
    ds, docs = dataset
    a = GPTDataset(ds, np.arange(len(docs)), 500, 32, seed=7, cache_dir=tmp_path / "a")
    b = GPTDataset(ds, np.arange(len(docs)), 500, 32, seed=7, cache_dir=None)
    c = GPTDataset(ds, np.arange(len(docs)), 500, 32, seed=8, cache_dir=None)
    first = np.stack([a[i]["tokens"] for i in range(50)])
    np.testing.assert_array_equal(first, np.stack([b[i]["tokens"] for i in range(50)]))
    assert not np.array_equal(first, np.stack([c[i]["tokens"] for i in range(50)]))


def test_several_epochs_and_separate_final_epoch(dataset):
    ds, docs = dataset
    n = len(docs)
    per_epoch = (sum(len(d) for d in docs) - 1) // 40
    # 2.1 epochs: the third epoch is used for 10% of an epoch, so it is shuffled apart
    gpt = GPTDataset(ds, np.arange(n), int(per_epoch * 2.1), 40, seed=1)
    assert len(gpt) >= int(per_epoch * 2.1)
    assert len(gpt.document_index) == 3 * n
    first_two, last = gpt.document_index[:2 * n], gpt.document_index[2 * n:]
    assert sorted(last.tolist()) == list(range(n))              # the last epoch is complete on its own
    assert sorted(first_two.tolist()) == sorted(list(range(n)) * 2)
    sans_final = ((2 * sum(len(d) for d in docs)) - 1) // 40
    head = np.asarray(gpt.shuffle_index[:sans_final])
    assert head.max() < sans_final                           # first samples come from the first two epochs
    # 1.9 epochs: one global shuffle over both epochs
    gpt2_ = GPTDataset(ds, np.arange(n), int(per_epoch * 1.9), 40, seed=1)
    assert len(gpt2_.document_index) == 2 * n
    assert np.asarray(gpt2_.shuffle_index[:per_epoch]).max() >= per_epoch


def test_cache_is_reused_and_keyed_by_description(dataset, tmp_path):
    ds, docs = dataset
    cache = tmp_path / "cache"
    GPTDataset(ds, np.arange(len(docs)), 300, 32, seed=5, cache_dir=cache)
    files = sorted(p.name for p in cache.iterdir())
    assert len(files) == 4 and any(f.endswith("description.txt") for f in files)
    again = GPTDataset(ds, np.arange(len(docs)), 300, 32, seed=5, cache_dir=cache)
    assert isinstance(again.sample_index, np.memmap)  # loaded, not rebuilt
    assert sorted(p.name for p in cache.iterdir()) == files
    GPTDataset(ds, np.arange(len(docs)), 300, 32, seed=6, cache_dir=cache)  # another seed: new entry
    assert len(list(cache.iterdir())) == 8


def test_split_949_50_1_and_errors(tmp_path, gpt2):
    write_random_dataset(tmp_path / "d", 1000, seed=2, max_len=30, vocab=50000, min_len=20)
    cfg = DataConfig(path=str(tmp_path / "d"), split="949,50,1", cache_dir=str(tmp_path / "c"))
    splits = build_gpt_datasets(cfg, gpt2, seq_length=16, seed=0)
    seqs = [set(int(i) for i in s.document_index) for s in splits]
    assert [min(s) for s in seqs] == [0, 949, 999] and [max(s) for s in seqs] == [948, 998, 999]
    only_train = build_gpt_datasets({"path": str(tmp_path / "d"), "split": "1,0,0",
                                     "cache_dir": str(tmp_path / "c")}, gpt2, 16, 0)
    assert only_train.valid is None and only_train.test is None
    with pytest.raises(DataError, match="data.split `9,x`"):
        build_gpt_datasets(DataConfig(path=str(tmp_path / "d"), split="9,x"), gpt2, 16, 0)
    with pytest.raises(DataError, match=r"nope\.idx: no such file"):
        build_gpt_datasets(DataConfig(path=str(tmp_path / "nope")), gpt2, 16, 0)
    with pytest.raises(DataError, match="train split is too small"):
        build_gpt_datasets(DataConfig(path=str(tmp_path / "d"), cache_dir=str(tmp_path / "c")), gpt2, 100000, 0)


def test_data_tokens_beyond_tokenizer_vocab(tmp_path, gpt2):
    write_random_dataset(tmp_path / "big", 20, seed=1, vocab=60000)
    with pytest.raises(DataError, match=r"big\.bin: holds token id .* but the tokenizer gpt2 has 50257"):
        build_gpt_datasets(DataConfig(path=str(tmp_path / "big")), gpt2, 16, 0)


def test_embedded_corpus_when_path_unset(gpt2, data_cache):
    splits = build_gpt_datasets(None, gpt2, seq_length=64, seed=1, num_samples=(200, 20, None))
    assert len(splits.train) >= 200 and len(splits.valid) >= 20
    text = gpt2.decode(splits.train[0]["tokens"])
    assert sum(c.isalpha() for c in text) > 0.6 * len(text)  # prose, not token soup


def test_dp_ranks_disjoint_cover_and_resume(dataset):
    ds, docs = dataset
    gpt = GPTDataset(ds, np.arange(len(docs)), None, 16, seed=0)
    total, mb, dp = len(gpt), 3, 4
    per_rank = [list(DistributedBatchSampler(total, 0, mb, r, dp)) for r in range(dp)]
    flat = [i for batches in per_rank for b in batches for i in b]
    assert len(flat) == len(set(flat))                               # disjoint
    assert sorted(flat) == list(range((total // (mb * dp)) * mb * dp))  # all full steps covered
    # step k of all ranks together is the contiguous range [k*mb*dp, (k+1)*mb*dp)
    assert sorted(i for r in range(dp) for i in per_rank[r][2]) == list(range(2 * mb * dp, 3 * mb * dp))
    # resuming at consumed samples continues exactly where the full run was
    resumed = list(DistributedBatchSampler(total, 5 * mb * dp, mb, 1, dp))
    assert resumed == per_rank[1][5:]
    # the batches themselves: resumed micro-batches equal the uninterrupted run's
    full = list(micro_batches(gpt, mb, 2, dp))
    again = list(micro_batches(gpt, mb, 2, dp, consumed_samples=7 * mb * dp))
    np.testing.assert_array_equal(full[7]["tokens"], again[0]["tokens"])
    assert full[0]["tokens"].shape == (mb, 17)
    torch_batch = next(micro_batches(gpt, mb, 0, dp, as_torch=True))
    assert str(torch_batch["tokens"].dtype) == "torch.int64"


def test_sampler_edges():
    assert len(DistributedBatchSampler(10, 0, 2, 0, 2)) == 2
    # a last partial step is split the same way: rank 0 gets [8, 9], rank 1 nothing more
    assert list(DistributedBatchSampler(10, 0, 2, 0, 2, drop_last=False)) == [[0, 1], [4, 5], [8, 9]]
    assert list(DistributedBatchSampler(10, 0, 2, 1, 2, drop_last=False)) == [[2, 3], [6, 7]]
    looped = DistributedBatchSampler(5, 4, 2, 0, 1, loop=True)
    it = iter(looped)
    assert [next(it) for _ in range(3)] == [[4, 0], [1, 2], [3, 4]]
    with pytest.raises(DataError, match="dp_rank 2 outside 0..1"):
        DistributedBatchSampler(10, 0, 2, 2, 2)
    with pytest.raises(DataError, match="consumed_samples 11 outside 0..10"):
        DistributedBatchSampler(10, 11, 2, 0, 2)
