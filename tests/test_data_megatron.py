"""Cross-implementation checks against megatron-core (a test-only dependency).

Files megazoo writes are read by Megatron's IndexedDataset and the other way round; the same
documents written by both builders are byte-identical; GPT sample indices and samples, and blend
assignments, equal Megatron's for the same seed.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from megazoo.core.data.blend import build_blending_indices
from megazoo.core.data.gpt import GPTDataset, build_gpt_indices
from megazoo.core.data.indexed import IndexedDataset
from megazoo.core.data.preprocess import preprocess
from tests.test_data_common import SAMPLE_TEXTS, bert, data_cache, write_jsonl, write_random_dataset  # noqa: F401

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # megatron warns that Apex / Transformer Engine are absent
    try:
        from megatron.core.datasets import helpers as mhelpers
        from megatron.core.datasets import indexed_dataset as mindexed
        from megatron.core.datasets.gpt_dataset import GPTDataset as MGPTDataset
        from megatron.core.datasets.gpt_dataset import GPTDatasetConfig
        from megatron.core.datasets.utils import Split
    except ImportError as exc:  # pragma: no cover - CI installs it
        pytest.skip(f"megatron-core is not installed ({exc}); `pip install megatron-core==0.16.1 --no-deps`",
                    allow_module_level=True)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def test_megatron_reads_megazoo_files(tmp_path, bert):
    src = write_jsonl(tmp_path / "in.jsonl", SAMPLE_TEXTS)
    preprocess([str(src)], bert, str(tmp_path / "mz"), split_sentences_=True, progress=False)
    ours = IndexedDataset(tmp_path / "mz")
    theirs = mindexed.IndexedDataset(str(tmp_path / "mz"))
    assert theirs.index.dtype == np.uint16
    assert len(theirs) == len(ours) > ours.num_documents  # sentences, several per document
    np.testing.assert_array_equal(theirs.document_indices, ours.document_indices)
    np.testing.assert_array_equal(theirs.sequence_lengths, ours.sequence_lengths)
    for i in range(len(ours)):
        np.testing.assert_array_equal(theirs[i], ours[i])
    np.testing.assert_array_equal(theirs.get(2, offset=1, length=2), ours.get(2, 1, 2))


@pytest.mark.parametrize("dtype", [np.uint16, np.int32])
def test_megazoo_reads_megatron_files_and_bytes_match(tmp_path, dtype):
    import torch

    rng = np.random.RandomState(5)
    docs = [[rng.randint(0, 30000, size=rng.randint(1, 40)) for _ in range(rng.randint(1, 4))] for _ in range(40)]
    builder = mindexed.IndexedDatasetBuilder(str(tmp_path / "mg.bin"), dtype=dtype)
    for d in docs:
        for s in d:
            builder.add_item(torch.from_numpy(s.astype(np.int64)))
        builder.end_document()
    builder.finalize(str(tmp_path / "mg.idx"))
    ours = IndexedDataset(tmp_path / "mg")
    assert ours.dtype == np.dtype(dtype) and ours.num_documents == len(docs)
    for j, d in enumerate(docs):
        for k, seq in zip(ours.document_sequences(j), d):
            np.testing.assert_array_equal(ours[k], seq)
    # the same documents through megazoo's writer give the same bytes
    from megazoo.core.data.indexed import IndexedDatasetWriter

    with IndexedDatasetWriter(tmp_path / "mz", dtype) as w:
        for d in docs:
            w.add_document(np.concatenate(d), [len(s) for s in d])
    for ext in (".bin", ".idx"):
        assert (tmp_path / f"mz{ext}").read_bytes() == (tmp_path / f"mg{ext}").read_bytes()


def _megatron_indices(sizes, docs, seq, num_samples, seed):
    tokens = int(sizes[docs].sum())
    epochs = 1 if num_samples is None else -(-(num_samples * seq + 1) // tokens)
    separate, sans = False, 0
    if epochs > 1:
        sans = ((epochs - 1) * tokens - 1) // seq
        separate = num_samples - sans < int(0.8 * ((tokens - 1) // seq))
    from megatron.core.datasets.gpt_dataset import _build_document_index, _build_shuffle_index

    rng = np.random.RandomState(seed)
    doc_index = _build_document_index(docs, epochs, rng, separate)
    sample_index = mhelpers.build_sample_idx(sizes, doc_index, seq, epochs, tokens, True, True)
    total = sample_index.shape[0] - 1
    shuffle_index = _build_shuffle_index(sans if separate else total, total, rng)
    return doc_index, sample_index, shuffle_index


def test_gpt_indices_equal_megatrons():
    rng = np.random.RandomState(0)
    checked = 0
    for trial in range(60):
        n = rng.randint(1, 30)
        sizes = rng.randint(0, 40, size=n).astype(np.int32)
        sizes[rng.randint(n)] += 10  # some empty documents, never all
        seq = int(rng.randint(2, 25))
        tokens = int(sizes.sum())
        if tokens - 1 < seq:
            continue
        num_samples = None if trial % 3 == 0 else int(rng.randint(1, 4 * tokens // seq + 2))
        docs = np.arange(n)
        ours = build_gpt_indices(sizes, docs, seq, num_samples, seed=trial)
        theirs = _megatron_indices(sizes, docs, seq, num_samples, seed=trial)
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(a, b)
        checked += 1
    assert checked > 40


class _Tok:
    """The few tokenizer attributes Megatron's GPTDataset reads."""

    vocab_size, eod, pad = 1000, 999, 999
    special_tokens_dict: dict = {}
    unique_identifiers = {"class": "_Tok"}


@pytest.mark.parametrize("num_samples", [None, 700, 1900])  # one epoch; 2 epochs apart; 3 together
def test_gpt_samples_equal_megatron_gptdataset(tmp_path, num_samples):
    write_random_dataset(tmp_path / "d", 60, seed=9, max_len=50)
    seq, seed = 32, 1234
    config = GPTDatasetConfig(random_seed=seed, sequence_length=seq, blend=([str(tmp_path / "d")], None),
                              split="949,50,1", tokenizer=_Tok(), reset_position_ids=False,
                              reset_attention_mask=False, eod_mask_loss=False,
                              path_to_cache=str(tmp_path / "mcache"), mmap_bin_files=True)
    docs = np.arange(0, 57)
    theirs = MGPTDataset(mindexed.IndexedDataset(str(tmp_path / "d")), str(tmp_path / "d"), docs,
                         num_samples, Split.train, config)
    ours = GPTDataset(IndexedDataset(tmp_path / "d"), docs, num_samples, seq, seed, cache_dir=tmp_path / "c")
    assert len(ours) == len(theirs)
    for i in range(len(ours)):
        t = theirs[i]
        expected = np.concatenate([t["tokens"].numpy(), t["labels"].numpy()[-1:]])
        np.testing.assert_array_equal(ours[i]["tokens"], expected)


def test_blending_equals_megatron():
    for weights, size in (([0.5, 0.3, 0.2], 5000), ([0.9, 0.1], 777), ([1 / 3] * 3, 1000)):
        ds_index = np.zeros(size, dtype=np.int16)
        sample_index = np.zeros(size, dtype=np.int64)
        mhelpers.build_blending_indices(ds_index, sample_index, np.asarray(weights, dtype=np.float64),
                                        len(weights), size, False)
        ours = build_blending_indices(weights, size)
        np.testing.assert_array_equal(ours[0], ds_index)
        np.testing.assert_array_equal(ours[1], sample_index)
