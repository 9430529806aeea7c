"""Megatron-compatible indexed dataset: the `.bin` / `.idx` pair.

Layout (little-endian, DESIGN.md section 5), byte-compatible with Megatron-LM's
`megatron.core.datasets.indexed_dataset`:

    .idx  magic b"MMIDIDX\\x00\\x00" (9 bytes) | uint64 version = 1 | uint8 dtype code
          | uint64 N sequences | uint64 D document-index entries
          | int32[N] sequence lengths | int64[N] byte offsets into .bin
          | int64[D] document indices (cumulative sequence counts, starting at 0)
    .bin  the tokens of every sequence back to back, no header.

A "sequence" is what one `add_document` call's `lengths` split a document into: the whole document,
or one sentence of it when preprocessing split sentences (BERT/T5 need them).

The writer goes to temporary names and renames on `finalize()`, so a crash or a bad input never
leaves a pair that looks complete; an older pair under the same prefix survives until then.
The reader memory-maps both files (zero-copy slices) and validates the header fully up front.
"""

from __future__ import annotations

import os
import shutil
import struct
from array import array
from pathlib import Path
from typing import Sequence

import numpy as np

from megazoo.core.data.errors import DataError

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
HEADER_SIZE = 9 + 8 + 1 + 8 + 8  # 34 bytes before the arrays

# Megatron's dtype codes; the writer only emits uint16 and int32 (token ids are never negative).
DTYPE_CODES: dict[int, type] = {
    1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32,
    5: np.int64, 6: np.float64, 7: np.float32, 8: np.uint16,
}
CODE_OF_DTYPE = {np.dtype(t): c for c, t in DTYPE_CODES.items()}

# Megatron picks uint16 below this vocabulary size and int32 at or above it.
UINT16_VOCAB_LIMIT = 65500


def best_dtype(vocab_size: int) -> np.dtype:
    """The token dtype Megatron's preprocess chooses for a vocabulary of this size."""
    return np.dtype(np.uint16) if vocab_size < UINT16_VOCAB_LIMIT else np.dtype(np.int32)


def bin_path(prefix: str | os.PathLike) -> str:
    return str(prefix) + ".bin"


def idx_path(prefix: str | os.PathLike) -> str:
    return str(prefix) + ".idx"


def exists(prefix: str | os.PathLike) -> bool:
    return os.path.isfile(bin_path(prefix)) and os.path.isfile(idx_path(prefix))


def encode_idx_header(dtype: np.dtype, sequence_count: int, document_count: int) -> bytes:
    """The 34 header bytes of an .idx file (document_count counts entries, leading 0 included)."""
    code = CODE_OF_DTYPE[np.dtype(dtype)]
    return MAGIC + struct.pack("<QBQQ", VERSION, code, sequence_count, document_count)


def _temp_name(path: str) -> str:
    # A distinct name per process so concurrent writers never share a temporary file.
    return f"{path}.partial-{os.getpid()}"


class IndexedDatasetWriter:
    """Streams documents into `prefix.bin` / `prefix.idx`.

    Use as a context manager: leaving the block normally finalizes (rename into place), leaving it
    with an exception removes the temporary files and keeps whatever was on disk before.
    """

    def __init__(self, prefix: str | os.PathLike, dtype: np.dtype | type, vocab_size: int | None = None):
        self.prefix = str(prefix)
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.dtype(np.uint16), np.dtype(np.int32)):
            raise DataError(f"{self.prefix}: token dtype must be uint16 or int32, got {self.dtype}")
        self.max_id = int(np.iinfo(self.dtype).max)
        if vocab_size is not None and vocab_size - 1 > self.max_id:
            raise DataError(
                f"{bin_path(self.prefix)}: a vocabulary of {vocab_size} tokens does not fit the "
                f"token dtype {self.dtype} (largest id {self.max_id}); use int32 "
                f"(`--dtype int32`, or leave --dtype on auto)")
        Path(self.prefix).parent.mkdir(parents=True, exist_ok=True)
        self._bin_tmp = _temp_name(bin_path(self.prefix))
        self._idx_tmp = _temp_name(idx_path(self.prefix))
        self._bin = open(self._bin_tmp, "wb")
        # array('i'/'q') keeps millions of lengths compact without a Python int per entry.
        self._lengths = array("i")
        self._doc_index = array("q", [0])
        self.num_tokens = 0
        self._done = False

    # -- writing ------------------------------------------------------------------------------
    def add_document(self, tokens: np.ndarray | Sequence[int], lengths: Sequence[int] | None = None,
                     where: str = "") -> None:
        """Append one document; `lengths` splits it into sequences (default: one sequence)."""
        arr = self._checked(tokens, where)
        seq_lengths = [len(arr)] if lengths is None else list(lengths)
        if sum(seq_lengths) != len(arr):
            raise DataError(f"{where or self.prefix}: sequence lengths {seq_lengths} do not add up "
                            f"to the document's {len(arr)} tokens")
        self._bin.write(arr.tobytes(order="C"))
        self._lengths.extend(seq_lengths)
        self._doc_index.append(len(self._lengths))
        self.num_tokens += len(arr)

    def add_chunk(self, tokens: np.ndarray, seq_lengths: np.ndarray, docs_seq_counts: np.ndarray,
                  where: str = "") -> None:
        """Append many documents at once: flat tokens, per-sequence lengths, sequences per doc."""
        arr = self._checked(tokens, where)
        self._bin.write(arr.tobytes(order="C"))
        base = len(self._lengths)
        self._lengths.frombytes(np.ascontiguousarray(seq_lengths, dtype=np.int32).tobytes())
        ends = base + np.cumsum(np.asarray(docs_seq_counts, dtype=np.int64))
        self._doc_index.frombytes(ends.astype(np.int64).tobytes())
        self.num_tokens += len(arr)

    def add_index(self, prefix: str | os.PathLike) -> None:
        """Append a whole existing (validated) dataset: its .bin bytes and shifted index."""
        other = IndexedDataset(prefix)
        if other.dtype != self.dtype:
            raise DataError(f"{idx_path(prefix)}: token dtype {other.dtype} differs from the merged "
                            f"output's {self.dtype}; merge only datasets made with the same tokenizer")
        base = len(self._lengths)
        self._lengths.frombytes(np.ascontiguousarray(other.sequence_lengths).tobytes())
        self._doc_index.frombytes((other.document_indices[1:] + base).astype(np.int64).tobytes())
        self.num_tokens += other.num_tokens
        other.close()
        with open(bin_path(prefix), "rb") as src:
            shutil.copyfileobj(src, self._bin, 16 << 20)

    def _checked(self, tokens, where: str) -> np.ndarray:
        arr = np.asarray(tokens)
        if arr.dtype == self.dtype:
            return arr
        if arr.size:
            lo, hi = int(arr.min()), int(arr.max())
            if lo < 0 or hi > self.max_id:
                bad = hi if hi > self.max_id else lo
                raise DataError(
                    f"{where or bin_path(self.prefix)}: token id {bad} does not fit the token dtype "
                    f"{self.dtype} of {bin_path(self.prefix)}; the vocabulary is too large for it, "
                    f"use int32 (`--dtype int32`, or leave --dtype on auto)")
        return arr.astype(self.dtype)

    # -- finishing ----------------------------------------------------------------------------
    def finalize(self) -> None:
        """Write the index and move both files into place (the .idx last: it marks completion)."""
        if self._done:
            return
        self._bin.flush()
        os.fsync(self._bin.fileno())
        self._bin.close()
        lengths = np.frombuffer(self._lengths, dtype=np.int32)
        pointers = np.zeros(len(lengths), dtype=np.int64)
        if len(lengths) > 1:
            np.cumsum(lengths[:-1].astype(np.int64) * self.dtype.itemsize, out=pointers[1:])
        doc_index = np.frombuffer(self._doc_index, dtype=np.int64)
        with open(self._idx_tmp, "wb") as f:
            f.write(encode_idx_header(self.dtype, len(lengths), len(doc_index)))
            f.write(lengths.tobytes())
            f.write(pointers.tobytes())
            f.write(doc_index.tobytes())
            f.flush()
            os.fsync(f.fileno())
        os.replace(self._bin_tmp, bin_path(self.prefix))
        os.replace(self._idx_tmp, idx_path(self.prefix))
        self._done = True

    def abort(self) -> None:
        """Drop the temporary files; whatever was on disk under the prefix stays as it was."""
        if self._done:
            return
        self._bin.close()
        for path in (self._bin_tmp, self._idx_tmp):
            if os.path.exists(path):
                os.remove(path)
        self._done = True

    def __enter__(self) -> "IndexedDatasetWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.finalize()
        else:
            self.abort()


def merge_datasets(prefixes: Sequence[str | os.PathLike], output_prefix: str | os.PathLike) -> "IndexedDataset":
    """Concatenate several .bin/.idx pairs (same dtype) into one, documents in the given order."""
    if not prefixes:
        raise DataError("merge: no input prefixes given")
    first = IndexedDataset(prefixes[0])
    dtype = first.dtype
    first.close()
    out = str(output_prefix)
    if any(os.path.abspath(str(p)) == os.path.abspath(out) for p in prefixes):
        raise DataError(f"{out}: the merge output prefix is also one of its inputs; pick a new prefix")
    with IndexedDatasetWriter(out, dtype) as writer:
        for prefix in prefixes:
            writer.add_index(prefix)
    return IndexedDataset(out)


class IndexedDataset:
    """Read-only view of a `.bin` / `.idx` pair over numpy memory maps.

    `ds[i]` is sequence i (a zero-copy view), `ds.get(i, offset, length)` part of it,
    `ds.document(j)` all sequences of document j (contiguous on disk, so also a view).
    """

    def __init__(self, prefix: str | os.PathLike):
        self.prefix = str(prefix)
        self.idx_file, self.bin_file = idx_path(self.prefix), bin_path(self.prefix)
        for path in (self.idx_file, self.bin_file):
            if not os.path.isfile(path):
                raise DataError(f"{path}: no such file; a dataset prefix P needs both P.bin and "
                                f"P.idx (make them with `megazoo preprocess`)")
        self._read_index()
        self._map_bin()

    def _read_index(self) -> None:
        path = self.idx_file
        size = os.path.getsize(path)
        if size < HEADER_SIZE:
            raise DataError(f"{path}: {size} bytes, shorter than the {HEADER_SIZE}-byte .idx header "
                            f"(truncated or not an index file); rebuild it with `megazoo preprocess`")
        with open(path, "rb") as f:
            header = f.read(HEADER_SIZE)
        if header[:9] != MAGIC:
            raise DataError(f"{path}: wrong magic {header[:9]!r}, expected {MAGIC!r}: not a Megatron "
                            f"indexed dataset index; rebuild it with `megazoo preprocess`")
        version, code, n_seq, n_doc = struct.unpack("<QBQQ", header[9:])
        if version != VERSION:
            raise DataError(f"{path}: index version {version}, only version {VERSION} is supported")
        if code not in DTYPE_CODES:
            raise DataError(f"{path}: unknown dtype code {code} (valid: {sorted(DTYPE_CODES)})")
        self.dtype = np.dtype(DTYPE_CODES[code])
        expected = HEADER_SIZE + n_seq * (4 + 8) + n_doc * 8
        # Megatron's multimodal variant appends one int8 mode per sequence; accept and ignore it.
        if size not in (expected, expected + n_seq):
            raise DataError(f"{path}: {size} bytes, but its header counts ({n_seq} sequences, {n_doc} "
                            f"document-index entries) need {expected}: truncated or corrupt index")
        if n_doc < 1:
            raise DataError(f"{path}: no document index entries (needs at least the leading 0)")
        self._idx_map = np.memmap(path, dtype=np.uint8, mode="r")
        buf = self._idx_map
        off = HEADER_SIZE
        self.sequence_lengths = np.frombuffer(buf, dtype=np.int32, count=n_seq, offset=off)
        off += 4 * n_seq
        self.sequence_pointers = np.frombuffer(buf, dtype=np.int64, count=n_seq, offset=off)
        off += 8 * n_seq
        self.document_indices = np.frombuffer(buf, dtype=np.int64, count=n_doc, offset=off)
        self._check_index_arrays()

    def _check_index_arrays(self) -> None:
        path, lengths, docs = self.idx_file, self.sequence_lengths, self.document_indices
        n_seq = len(lengths)
        if n_seq and int(lengths.min()) < 0:
            raise DataError(f"{path}: negative sequence length at sequence {int(np.argmin(lengths))}")
        if docs[0] != 0 or docs[-1] != n_seq or (len(docs) > 1 and np.any(np.diff(docs) < 0)):
            raise DataError(f"{path}: document indices must rise from 0 to the sequence count "
                            f"{n_seq}, found {int(docs[0])} .. {int(docs[-1])}: corrupt index")
        item = self.dtype.itemsize
        if n_seq:
            expected = np.zeros(n_seq, dtype=np.int64)
            np.cumsum(lengths[:-1].astype(np.int64) * item, out=expected[1:])
            bad = np.flatnonzero(expected != self.sequence_pointers)
            if bad.size:
                i = int(bad[0])
                raise DataError(f"{path}: byte offset of sequence {i} is {int(self.sequence_pointers[i])}"
                                f", but the lengths before it give {int(expected[i])}: corrupt index")
        self.num_tokens = int(lengths.sum(dtype=np.int64))

    def _map_bin(self) -> None:
        size = os.path.getsize(self.bin_file)
        need = self.num_tokens * self.dtype.itemsize
        if size != need:
            what = "truncated" if size < need else "longer than its index says"
            raise DataError(f"{self.bin_file}: {size} bytes, but {self.idx_file} describes "
                            f"{self.num_tokens} tokens of {self.dtype} ({need} bytes): the .bin is "
                            f"{what}, or the pair is mismatched; rebuild it with `megazoo preprocess`")
        if size == 0:  # numpy cannot map an empty file
            self._bin_map = np.zeros(0, dtype=self.dtype)
        else:
            # A plain ndarray view of the map: slicing it skips np.memmap's per-slice bookkeeping
            # (4x faster per document), while every slice still points into the mapped file.
            self._bin_map = np.memmap(self.bin_file, dtype=self.dtype, mode="r").view(np.ndarray)

    # -- access -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.sequence_lengths)

    @property
    def num_documents(self) -> int:
        return len(self.document_indices) - 1

    @property
    def tokens(self) -> np.ndarray:
        """Every token of the dataset as one flat read-only memmap."""
        return self._bin_map

    def _start(self, i: int) -> int:
        return int(self.sequence_pointers[i]) // self.dtype.itemsize

    def __getitem__(self, i: int) -> np.ndarray:
        if not -len(self) <= i < len(self):
            raise IndexError(f"sequence {i} out of range for {self.prefix} ({len(self)} sequences)")
        i = i % len(self)
        start = self._start(i)
        return self._bin_map[start:start + int(self.sequence_lengths[i])]

    def get(self, i: int, offset: int = 0, length: int | None = None) -> np.ndarray:
        """Tokens `offset : offset + length` of sequence i (to its end when length is None)."""
        n = int(self.sequence_lengths[i])
        stop = n if length is None else min(n, offset + length)
        start = self._start(i)
        return self._bin_map[start + offset:start + stop]

    def document(self, j: int) -> np.ndarray:
        first, last = self.document_indices[j:j + 2].tolist()
        if first == last:
            return self._bin_map[0:0]
        # sequences of a document are contiguous: from the first's offset to the last's end
        start = int(self.sequence_pointers[first]) // self.dtype.itemsize
        stop = int(self.sequence_pointers[last - 1]) // self.dtype.itemsize + int(self.sequence_lengths[last - 1])
        return self._bin_map[start:stop]

    def document_sequences(self, j: int) -> range:
        """Indices of the sequences (sentences) of document j."""
        return range(int(self.document_indices[j]), int(self.document_indices[j + 1]))

    def close(self) -> None:
        # Drop references so the maps close (matters on Windows and for replacing files).
        for name in ("_bin_map", "_idx_map", "sequence_lengths", "sequence_pointers", "document_indices"):
            self.__dict__.pop(name, None)

    def __repr__(self) -> str:
        return (f"IndexedDataset({self.prefix!r}, dtype={self.dtype}, sequences={len(self)}, "
                f"documents={self.num_documents}, tokens={self.num_tokens})")
