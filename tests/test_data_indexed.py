"""The .bin/.idx format: round trip, exact header bytes, validation errors, atomic writes, merge."""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest

from megazoo.core.data.errors import DataError
from megazoo.core.data.indexed import IndexedDataset, IndexedDatasetWriter, merge_datasets
from tests.test_data_common import write_random_dataset


def test_round_trip_and_zero_copy(tmp_path):
    for dtype in (np.uint16, np.int32):
        prefix = tmp_path / f"rt_{np.dtype(dtype).name}"
        vocab = 60000 if dtype == np.uint16 else 2**31 - 1
        docs = write_random_dataset(prefix, 50, seed=1, dtype=dtype, vocab=vocab, sentences=True)
        ds = IndexedDataset(prefix)
        assert ds.dtype == np.dtype(dtype)
        seqs = [s for d in docs for s in d]
        assert len(ds) == len(seqs) and ds.num_documents == len(docs)
        assert ds.num_tokens == sum(len(s) for s in seqs)
        for i, s in enumerate(seqs):
            np.testing.assert_array_equal(ds[i], s)
        for j, d in enumerate(docs):
            np.testing.assert_array_equal(ds.document(j), np.concatenate(d))
        np.testing.assert_array_equal(ds.get(3, 2, 4), seqs[3][2:6])
        # zero-copy: slices are read-only views into the memory-mapped file, not copies
        assert _backed_by_mmap(ds[0]) and _backed_by_mmap(ds.document(1))
        assert not ds[0].flags.writeable


def _backed_by_mmap(arr) -> bool:
    import mmap

    while arr is not None:
        if isinstance(arr, (np.memmap, mmap.mmap)):
            return True
        arr = getattr(arr, "base", None)
    return False


def test_idx_header_bytes_exactly(tmp_path):
    """The .idx bytes equal the layout of DESIGN.md section 5, written out by hand here."""
    prefix = tmp_path / "hdr"
    docs = [[np.array([5, 6, 7]), np.array([8])], [np.array([9, 10])]]
    with IndexedDatasetWriter(prefix, np.uint16) as w:
        for d in docs:
            w.add_document(np.concatenate(d), [len(s) for s in d])
    expected = b"MMIDIDX\x00\x00"                       # magic, 9 bytes
    expected += (1).to_bytes(8, "little")               # version
    expected += bytes([8])                              # dtype code 8 = uint16
    expected += (3).to_bytes(8, "little")               # N sequences
    expected += (3).to_bytes(8, "little")               # D document-index entries (0, 2, 3)
    for n in (3, 1, 2):
        expected += n.to_bytes(4, "little", signed=True)   # int32 lengths
    for off in (0, 6, 8):
        expected += off.to_bytes(8, "little", signed=True)  # int64 byte offsets (2 bytes/token)
    for d in (0, 2, 3):
        expected += d.to_bytes(8, "little", signed=True)    # int64 document indices
    assert (tmp_path / "hdr.idx").read_bytes() == expected
    assert (tmp_path / "hdr.bin").read_bytes() == struct.pack("<6H", 5, 6, 7, 8, 9, 10)
    # int32 data: dtype code 4 at byte 17, offsets in 4-byte steps
    with IndexedDatasetWriter(tmp_path / "hdr32", np.int32) as w:
        w.add_document([1, 2, 3])
        w.add_document([4])
    raw = (tmp_path / "hdr32.idx").read_bytes()
    assert raw[17] == 4
    assert struct.unpack("<2q", raw[34 + 8:34 + 8 + 16]) == (0, 12)


def _pair(tmp_path, name="bad"):
    prefix = tmp_path / name
    write_random_dataset(prefix, 10, seed=2)
    return prefix, tmp_path / f"{name}.bin", tmp_path / f"{name}.idx"


def test_truncated_bin(tmp_path):
    prefix, bin_, _ = _pair(tmp_path)
    data = bin_.read_bytes()
    bin_.write_bytes(data[:-6])
    with pytest.raises(DataError, match=r"bad\.bin: .*truncated"):
        IndexedDataset(prefix)


def test_bin_longer_than_index_says(tmp_path):
    prefix, bin_, _ = _pair(tmp_path)
    with open(bin_, "ab") as f:
        f.write(b"\x00\x00")
    with pytest.raises(DataError, match=r"bad\.bin: .*longer than its index says"):
        IndexedDataset(prefix)


def test_wrong_magic(tmp_path):
    prefix, _, idx = _pair(tmp_path)
    raw = bytearray(idx.read_bytes())
    raw[:9] = b"NOTANIDX!"
    idx.write_bytes(bytes(raw))
    with pytest.raises(DataError, match=r"bad\.idx: wrong magic"):
        IndexedDataset(prefix)


def test_idx_counts_disagree(tmp_path):
    prefix, _, idx = _pair(tmp_path)
    raw = bytearray(idx.read_bytes())
    n = struct.unpack_from("<Q", raw, 18)[0]
    struct.pack_into("<Q", raw, 18, n + 5)  # claim more sequences than the file holds
    idx.write_bytes(bytes(raw))
    with pytest.raises(DataError, match=r"bad\.idx: .*header counts .* need"):
        IndexedDataset(prefix)


def test_idx_lengths_disagree_with_bin(tmp_path):
    prefix, _, idx = _pair(tmp_path)
    raw = bytearray(idx.read_bytes())
    struct.pack_into("<i", raw, 34, struct.unpack_from("<i", raw, 34)[0] + 1)  # first length + 1
    idx.write_bytes(bytes(raw))
    with pytest.raises(DataError, match=r"bad\.idx: byte offset of sequence 1"):
        IndexedDataset(prefix)


def test_other_header_errors(tmp_path):
    prefix, _, idx = _pair(tmp_path)
    good = idx.read_bytes()
    idx.write_bytes(good[:20])
    with pytest.raises(DataError, match=r"bad\.idx: 20 bytes, shorter than the 34-byte"):
        IndexedDataset(prefix)
    idx.write_bytes(good[:9] + struct.pack("<Q", 2) + good[17:])
    with pytest.raises(DataError, match=r"bad\.idx: index version 2"):
        IndexedDataset(prefix)
    idx.write_bytes(good[:17] + bytes([9]) + good[18:])
    with pytest.raises(DataError, match=r"bad\.idx: unknown dtype code 9"):
        IndexedDataset(prefix)
    raw = bytearray(good)
    struct.pack_into("<q", raw, len(raw) - 8, 3)  # last document index != sequence count
    idx.write_bytes(bytes(raw))
    with pytest.raises(DataError, match=r"bad\.idx: document indices must rise"):
        IndexedDataset(prefix)
    os.remove(idx)
    with pytest.raises(DataError, match=r"bad\.idx: no such file"):
        IndexedDataset(prefix)


def test_failed_write_leaves_old_files_and_no_partials(tmp_path):
    prefix, bin_, idx = _pair(tmp_path, "keep")
    before = (bin_.read_bytes(), idx.read_bytes())
    with pytest.raises(RuntimeError):
        with IndexedDatasetWriter(prefix, np.uint16) as w:
            w.add_document([1, 2, 3])
            raise RuntimeError("boom")
    assert (bin_.read_bytes(), idx.read_bytes()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.bin", "keep.idx"]


def test_token_too_large_for_dtype(tmp_path):
    with pytest.raises(DataError, match=r"small\.bin: a vocabulary of 70000 tokens does not fit .*uint16"):
        IndexedDatasetWriter(tmp_path / "small", np.uint16, vocab_size=70000)
    with pytest.raises(DataError, match=r"token id 70000 does not fit the token dtype uint16 of .*small\.bin"):
        with IndexedDatasetWriter(tmp_path / "small", np.uint16) as w:
            w.add_document(np.array([1, 70000], dtype=np.int64))
    assert list(tmp_path.iterdir()) == []


def test_merge(tmp_path):
    a = write_random_dataset(tmp_path / "a", 7, seed=3, sentences=True)
    b = write_random_dataset(tmp_path / "b", 5, seed=4, sentences=True)
    merged = merge_datasets([tmp_path / "a", tmp_path / "b"], tmp_path / "ab")
    docs = a + b
    assert merged.num_documents == len(docs)
    for j, d in enumerate(docs):
        np.testing.assert_array_equal(merged.document(j), np.concatenate(d))
    write_random_dataset(tmp_path / "c32", 3, dtype=np.int32)
    with pytest.raises(DataError, match=r"c32\.idx: token dtype int32 differs"):
        merge_datasets([tmp_path / "a", tmp_path / "c32"], tmp_path / "bad")
    assert not (tmp_path / "bad.bin").exists() and not (tmp_path / "bad.idx").exists()


def test_empty_dataset_reads(tmp_path):
    with IndexedDatasetWriter(tmp_path / "empty", np.uint16):
        pass
    ds = IndexedDataset(tmp_path / "empty")
    assert len(ds) == 0 and ds.num_documents == 0 and ds.num_tokens == 0
