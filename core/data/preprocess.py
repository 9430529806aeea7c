"""Text / JSONL -> Megatron .bin/.idx, with worker processes and a progress bar.

The main process reads records (cheap), hands chunks of them to a pool of workers which parse,
split sentences and tokenise (the expensive part), and writes the returned token arrays in input
order, so the output does not depend on the number of workers. Every error names the file and
line; on any error the partial output is removed and an older output under the prefix survives.
"""

from __future__ import annotations

import collections
import itertools
import multiprocessing as mp
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

import numpy as np

from megazoo.core.data.errors import DataError
from megazoo.core.data.indexed import IndexedDatasetWriter, best_dtype
from megazoo.core.data.text import RawDoc, document_text, iter_raw_documents, split_sentences
from megazoo.core.data.tokenizers import Tokenizer, build_tokenizer
from megazoo.core.verbosity import shows_progress

CHUNK_DOCS = 64          # records per task sent to a worker
CHUNK_BYTES = 1 << 20    # ... or fewer, once this many bytes of text are gathered


@dataclass
class PreprocessStats:
    output_prefix: str
    documents: int = 0
    sequences: int = 0
    tokens: int = 0
    skipped_empty: int = 0
    input_bytes: int = 0
    seconds: float = 0.0
    per_file_docs: dict[str, int] = field(default_factory=dict)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        return (f"wrote {self.output_prefix}.bin/.idx: {self.documents} documents, {self.sequences} "
                f"sequences, {self.tokens} tokens in {self.seconds:.2f} s "
                f"({self.tokens_per_s:,.0f} tokens/s, {self.input_bytes / max(self.seconds, 1e-9) / 1e6:.1f} MB/s)")


@dataclass
class _Job:
    tokenizer: Tokenizer
    json_key: str
    split_sentences: bool
    append_eod: bool
    dtype: np.dtype


# Each worker process keeps the job (with its tokenizer) in this module-level slot, set once by the
# pool initializer; a plain global would be the usual way, this avoids the `global` statement.
_WORKER: dict[str, _Job] = {}


def _init_worker(job: _Job) -> None:
    # One tokeniser thread per worker: the workers are the parallelism; more threads oversubscribe.
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    _WORKER["job"] = job


def _encode_chunk(docs: Sequence[RawDoc]) -> tuple:
    """Worker: records -> (flat tokens, sequence lengths, sequences per doc, skipped count, per-file docs)."""
    job = _WORKER["job"]
    tok = job.tokenizer
    texts, owners, doc_seq_counts, per_file = [], [], [], {}
    for d in docs:
        text = document_text(d, job.json_key)
        parts = split_sentences(text) if job.split_sentences else ([text] if text.strip() else [])
        owners.append((d, len(parts)))
        texts.extend(parts)
    encoded = tok.encode_batch(texts) if texts else []
    lengths: list[int] = []
    flat: list[list[int]] = []
    kept: list[RawDoc] = []
    skipped = 0
    pos = 0
    for d, n in owners:
        seqs = [s for s in encoded[pos:pos + n] if s]
        pos += n
        if not seqs:
            skipped += 1  # nothing to tokenise: Megatron drops such documents too
            continue
        if job.append_eod:
            seqs[-1] = seqs[-1] + [tok.eod]
        flat.extend(seqs)
        lengths.extend(len(s) for s in seqs)
        doc_seq_counts.append(len(seqs))
        kept.append(d)
        per_file[d.path] = per_file.get(d.path, 0) + 1
    # chain.from_iterable flattens in C; a generator expression here costs more than writing.
    tokens = np.fromiter(itertools.chain.from_iterable(flat), dtype=np.int64, count=sum(lengths))
    max_id = int(np.iinfo(job.dtype).max)
    if len(tokens) and int(tokens.max()) > max_id:
        _raise_too_large(tokens, lengths, doc_seq_counts, kept, max_id, job, tok)
    return tokens.astype(job.dtype), np.asarray(lengths, np.int32), np.asarray(doc_seq_counts, np.int64), skipped, per_file


def _raise_too_large(tokens, lengths, doc_seq_counts, docs, max_id, job, tok) -> None:
    """Name the first record whose ids overflow the dtype (the slow path, only on failure)."""
    doc_tokens = np.add.reduceat(np.asarray(lengths), np.concatenate([[0], np.cumsum(doc_seq_counts)[:-1]]))
    ends = np.cumsum(doc_tokens)
    first_bad = int(np.flatnonzero(tokens > max_id)[0])
    d = docs[int(np.searchsorted(ends, first_bad, side="right"))]
    raise DataError(f"{d.path}:{d.line}: token id {int(tokens[first_bad])} does not fit the token dtype "
                    f"{job.dtype}: the vocabulary ({tok.vocab_size}) is too large for it; "
                    f"use --dtype int32 (or auto)")


def _chunks(inputs: Sequence[str], fmt: str, text_mode: str) -> Iterator[tuple[list[RawDoc], int]]:
    """(records, their byte size) in input order, one file after the other."""
    buf: list[RawDoc] = []
    size = 0
    for path in inputs:
        for doc in iter_raw_documents(path, fmt, text_mode):
            buf.append(doc)
            size += len(doc.raw)
            if len(buf) >= CHUNK_DOCS or size >= CHUNK_BYTES:
                yield buf, size
                buf, size = [], 0
    if buf:
        yield buf, size


def resolve_dtype(dtype: str | None, tokenizer: Tokenizer, where: str) -> np.dtype:
    """auto: uint16 below 65,500 tokens, else int32 (Megatron's rule); an explicit dtype is checked."""
    if dtype in (None, "auto"):
        return best_dtype(tokenizer.vocab_size)
    if dtype not in ("uint16", "int32"):
        raise DataError(f"--dtype {dtype}: choose auto, uint16 or int32")
    chosen = np.dtype(dtype)
    if tokenizer.vocab_size - 1 > np.iinfo(chosen).max:
        raise DataError(f"{where}: the vocabulary of {tokenizer.name} has {tokenizer.vocab_size} tokens, "
                        f"too many for the token dtype {dtype} (largest id {np.iinfo(chosen).max}); "
                        f"use --dtype int32 (or auto)")
    return chosen


def preprocess(inputs: Sequence[str], tokenizer: Tokenizer | str, output_prefix: str, workers: int = 1,
               append_eod: bool = False, split_sentences_: bool = False, json_key: str = "text",
               dtype: str | None = "auto", fmt: str = "auto", text_mode: str = "line",
               progress: bool | None = None) -> PreprocessStats:
    """Tokenise `inputs` into `output_prefix`.bin/.idx; returns counts and timing.

    `tokenizer` is a Tokenizer or a spec string for build_tokenizer. `progress=None` shows the bar
    only on a terminal.
    """
    if not inputs:
        raise DataError("preprocess: no input files given")
    for path in inputs:
        if not os.path.isfile(path):
            raise DataError(f"{path}: no such input file")
        if os.path.getsize(path) == 0:  # caught here, before any work; blank-only files at the end
            raise DataError(f"{path}: empty input: the file is empty; nothing was written to {output_prefix}.bin/.idx")
    tok = build_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
    if append_eod and tok.eod is None:
        raise DataError(f"--append-eod: tokenizer {tok.name} has no end-of-document token")
    out_dtype = resolve_dtype(dtype, tok, output_prefix + ".bin")
    job = _Job(tok, json_key, split_sentences_, append_eod, out_dtype)
    stats = PreprocessStats(output_prefix, per_file_docs={p: 0 for p in inputs})
    total_bytes = sum(os.path.getsize(p) for p in inputs)
    start = time.perf_counter()
    from tqdm import tqdm

    bar = tqdm(total=total_bytes, unit="B", unit_scale=True, desc=f"preprocess -> {os.path.basename(output_prefix)}",
               disable=not shows_progress(sys.stderr.isatty() if progress is None else progress), file=sys.stderr)
    pool = None
    try:
        with IndexedDatasetWriter(output_prefix, out_dtype) as writer:
            chunks = _chunks(inputs, fmt, text_mode)
            if workers > 1:
                # not "fork": a process that already runs threads (torch's, the tokenizer's, tqdm's
                # monitor) can fork a worker that deadlocks on a lock held at the fork; the fork server
                # starts workers from a clean process
                ctx = mp.get_context("forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn")
                pool = ctx.Pool(workers, initializer=_init_worker, initargs=(job,))
                results: Iterable = _in_order(pool, chunks, window=2 * workers + 2)
            else:
                _init_worker(job)
                results = ((_encode_chunk(docs), size) for docs, size in chunks)
            for (tokens, lengths, doc_counts, skipped, per_file), size in results:
                bar.update(size)
                if len(doc_counts):
                    writer.add_chunk(tokens, lengths, doc_counts, where=output_prefix + ".bin")
                stats.documents += len(doc_counts)
                stats.sequences += len(lengths)
                stats.tokens += len(tokens)
                stats.skipped_empty += skipped
                for path, n in per_file.items():
                    stats.per_file_docs[path] = stats.per_file_docs.get(path, 0) + n
                elapsed = time.perf_counter() - start
                bar.set_postfix(docs=stats.documents, tok_per_s=f"{stats.tokens / max(elapsed, 1e-9):,.0f}", refresh=False)
            empty = [p for p, n in stats.per_file_docs.items() if n == 0]
            if empty:
                raise DataError(f"{empty[0]}: empty input: no document with any text "
                                f"({'every record is blank' if os.path.getsize(empty[0]) else 'the file is empty'})"
                                f"; nothing was written to {output_prefix}.bin/.idx")
    finally:
        bar.close()
        if pool is not None:
            pool.terminate()
            pool.join()
    stats.input_bytes = total_bytes
    stats.seconds = time.perf_counter() - start
    return stats


def _in_order(pool, chunks: Iterator[tuple[list[RawDoc], int]], window: int) -> Iterator[tuple[tuple, int]]:
    """Results of the chunks in input order, with at most `window` chunks in flight.

    Pool.imap would read the whole input into its task queue ahead of the workers (no
    back-pressure), which for a large corpus means holding it all in memory; this keeps a few
    chunks per worker queued. The first failing chunk in input order raises (its file:line).
    """
    pending: collections.deque = collections.deque()
    for docs, size in chunks:
        pending.append((pool.apply_async(_encode_chunk, (docs,)), size))
        if len(pending) >= window:
            result, n = pending.popleft()
            yield result.get(), n
    while pending:
        result, n = pending.popleft()
        yield result.get(), n


def merge(prefixes: Sequence[str], output_prefix: str) -> PreprocessStats:
    """Merge several outputs into one (documents in the given order)."""
    from megazoo.core.data.indexed import merge_datasets

    start = time.perf_counter()
    ds = merge_datasets(prefixes, output_prefix)
    stats = PreprocessStats(output_prefix, documents=ds.num_documents, sequences=len(ds), tokens=ds.num_tokens,
                            input_bytes=os.path.getsize(ds.bin_file))
    stats.seconds = time.perf_counter() - start
    return stats
