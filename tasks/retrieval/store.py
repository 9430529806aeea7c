"""The passage store: a psgs_w100.tsv collection turned, in one streaming pass, into flat files that any
rank reads by row without loading the collection (21M passages, 13 GB of text, stay on disk).

    build_store("psgs_w100.tsv", "runs/store")     # once: `megazoo task retrieval store`
    store = open_store("runs/store")               # a store folder, or a .tsv (read into memory)
    store[i] -> Passage(id, text, title); store.rows(a, b) -> [Passage]; store.ids (int64, row -> id)
    store.row_of(ids) -> rows; store.fingerprint (what an index built from it records)

STORE/ holds
    store.json          {"format", "version", "count", "source", "source_bytes", "fingerprint", ...}
    ids.i8              the passage id of each row, little-endian int64
    text.bin, title.bin every passage's text and title, UTF-8, one after another
    text.end, title.end the end offset of each row's text / title in its .bin (int64; row i spans
                        end[i-1]..end[i])
The small arrays are memory-mapped (8 bytes a passage each); text and titles are read with pread, so
they sit in the page cache, not in a rank's resident memory. The fingerprint is a BLAKE2 digest of
the passages (passage_digest): an index or a vectors folder records it, and a store that differs is refused.
Building memory: one buffer of rows (BUFFER_ROWS) and, at the end, the sorted ids for the duplicate
check (8 bytes a passage: 168 MB at 21M passages).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from megazoo.core.verbosity import shows_progress

FORMAT = "megazoo-passage-store"
BUFFER_ROWS = 65536
FILES = ("ids.i8", "text.bin", "title.bin", "text.end", "title.end")


class StoreError(ValueError):
    """A store folder that cannot serve (missing files, sizes that disagree, another store's index)."""


def is_store(path) -> bool:
    return Path(path).is_dir() and (Path(path) / "store.json").is_file()


def passage_digest():
    """The fingerprint's hash: fed `id<TAB>text<TAB>title<LF>` per passage in row order (UTF-8), so a
    store folder and the same .tsv read into memory have one fingerprint."""
    return hashlib.blake2b(digest_size=16)


class _Writer:
    """Appends passages to the store's files, hashing them (passage_digest)."""

    def __init__(self, folder: Path):
        self.files = {name: open(folder / name, "wb") for name in FILES}
        self.hash = passage_digest()
        self.count, self.ends = 0, {"text": 0, "title": 0}
        self._clear()

    def _clear(self) -> None:
        self.buf = {"ids": [], "text": [], "title": [], "text.end": [], "title.end": []}

    def add(self, pid: int, text: str, title: str) -> int:
        self.buf["ids"].append(pid)
        self.hash.update(b"%d\t" % pid)
        for kind, value, end in (("text", text, b"\t"), ("title", title, b"\n")):
            data = value.encode("utf-8")
            self.hash.update(data)
            self.hash.update(end)
            self.ends[kind] += len(data)
            self.buf[kind].append(data)
            self.buf[f"{kind}.end"].append(self.ends[kind])
        self.count += 1
        if len(self.buf["ids"]) >= BUFFER_ROWS:
            self.flush()
        return len(text) + len(title)

    def _write(self, name: str, data: bytes) -> None:
        self.files[name].write(data)

    def flush(self) -> None:
        if not self.buf["ids"]:
            return
        self._write("ids.i8", np.asarray(self.buf["ids"], dtype="<i8").tobytes())
        for kind in ("text", "title"):
            self._write(f"{kind}.bin", b"".join(self.buf[kind]))
            self._write(f"{kind}.end", np.asarray(self.buf[f"{kind}.end"], dtype="<i8").tobytes())
        self._clear()

    def close(self) -> str:
        self.flush()
        for f in self.files.values():
            f.close()
        return self.hash.hexdigest()


def build_store(passages, out, overwrite: bool = False, progress: bool = True) -> dict:
    """Stream a psgs_w100.tsv-layout file (.gz too, or wiki_dpr's columns as a Hugging Face dataset) into
    a store folder at `out`, written to a scratch folder that replaces `out` only when complete; returns
    its store.json."""
    from tqdm import tqdm

    from megazoo.core.fs import atomic_folder, write_json_atomic
    from megazoo.tasks.retrieval.data import RetrievalFormatError, iter_passages

    from megazoo.eval.readers.hf_source import is_hf_source

    hf = is_hf_source(passages)  # wiki_dpr's columns as parquet/arrow/save_to_disk (data_hf.py)
    passages = passages if hf else Path(passages)
    if not hf and not passages.is_file():
        raise FileNotFoundError(f"{passages}: no such file (expected a psgs_w100.tsv passage file)")
    size = 0 if hf else passages.stat().st_size
    gz = not hf and passages.open("rb").read(2) == b"\x1f\x8b"
    with atomic_folder(out, overwrite) as tmp:
        w = _Writer(tmp)
        try:
            # the bar counts characters against the file's bytes: an estimate (UTF-8, quoting), ETA included
            with tqdm(total=None if gz or hf else size, unit="B", unit_scale=True, desc="store", disable=not shows_progress(progress),
                      mininterval=1.0) as bar:
                for p in iter_passages(passages):
                    bar.update(w.add(p.id, p.text, p.title) + 12)
        finally:
            fingerprint = w.close()
        if w.count == 0:
            raise RetrievalFormatError(passages, 1, "no passages after the header")
        ids = np.fromfile(tmp / "ids.i8", dtype="<i8")
        increasing = bool(np.all(ids[1:] > ids[:-1]))
        if not increasing:
            s = np.sort(ids)
            dup = np.flatnonzero(s[1:] == s[:-1])
            if len(dup):
                row = int(np.flatnonzero(ids == s[dup[0]])[1])
                raise RetrievalFormatError(passages, row + 2, f"passage id {int(s[dup[0]])} appears twice")
            del s
        del ids
        meta = {"format": FORMAT, "version": 1, "count": w.count, "source": Path(str(passages)).name,
                "source_bytes": size,
                "fingerprint": fingerprint, "ids_increasing": increasing,
                "text_bytes": w.ends["text"], "title_bytes": w.ends["title"]}
        write_json_atomic(tmp / "store.json", meta)
    return meta


class PassageStore:
    """A store folder opened read-only: rows by memory map and pread, nothing loaded up front."""

    def __init__(self, folder):
        from megazoo.tasks.retrieval.data import Passage

        self.Passage = Passage
        self.folder = folder = Path(folder)
        if not is_store(folder):
            raise StoreError(f"{folder}: not a passage store (no store.json); build one with `megazoo task retrieval "
                             f"store --passages psgs_w100.tsv --out {folder}`")
        from megazoo.tasks.retrieval.vectors import read_json_object

        self.meta = read_json_object(folder / "store.json", "a store", "build the store again", StoreError)
        if self.meta.get("format") != FORMAT:
            raise StoreError(f"{folder / 'store.json'}: not a {FORMAT} file; build the store again")
        n = int(self.meta["count"])
        want = {"ids.i8": 8 * n, "text.end": 8 * n, "title.end": 8 * n, "text.bin": self.meta["text_bytes"],
                "title.bin": self.meta["title_bytes"]}
        for name, size in want.items():
            have = (folder / name).stat().st_size if (folder / name).is_file() else None
            if have != size:
                raise StoreError(f"{folder / name}: {'missing' if have is None else f'{have} bytes'}, but store.json "
                                 f"says {size}; the store is damaged or unfinished: build it again")
        self.ids = np.memmap(folder / "ids.i8", dtype="<i8", mode="r", shape=(n,)) if n else np.zeros(0, "<i8")
        self._ends = {k: np.memmap(folder / f"{k}.end", dtype="<i8", mode="r", shape=(n,)) for k in ("text", "title")}
        self._fds = {k: os.open(folder / f"{k}.bin", os.O_RDONLY) for k in ("text", "title")}
        self._order = None

    @property
    def fingerprint(self) -> str:
        return self.meta["fingerprint"]

    @property
    def source(self) -> str:
        return str(self.folder)

    def __len__(self) -> int:
        return int(self.meta["count"])

    def _span(self, kind: str, a: int, b: int) -> list[str]:
        ends = self._ends[kind]
        lo = int(ends[a - 1]) if a else 0
        data = os.pread(self._fds[kind], int(ends[b - 1]) - lo, lo) if b > a else b""
        cuts = np.asarray(ends[a:b], dtype=np.int64) - lo
        out, prev = [], 0
        for c in cuts.tolist():
            out.append(data[prev:c].decode("utf-8"))
            prev = c
        return out

    def rows(self, a: int, b: int) -> list:
        """Passages of rows a..b-1 (two reads)."""
        a, b = max(0, a), min(len(self), b)
        texts, titles = self._span("text", a, b), self._span("title", a, b)
        return [self.Passage(int(i), t, h) for i, t, h in zip(self.ids[a:b].tolist(), texts, titles)]

    def __getitem__(self, i: int):
        i = int(i)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"row {i} outside the store's {len(self)} passages")
        return self.rows(i, i + 1)[0]

    def __iter__(self):
        for a in range(0, len(self), BUFFER_ROWS):
            yield from self.rows(a, a + BUFFER_ROWS)

    def row_of(self, ids) -> np.ndarray:
        """The rows of the given passage ids (-1 for an id the store lacks)."""
        ids = np.asarray(ids, dtype=np.int64)
        if self.meta.get("ids_increasing"):
            order, keys = None, self.ids
        else:
            if self._order is None:  # 8 bytes a passage, made on first use
                self._order = np.argsort(self.ids, kind="stable")
            order, keys = self._order, self.ids[self._order]
        pos = np.clip(np.searchsorted(keys, ids), 0, max(0, len(self) - 1))
        found = (len(self) > 0) & (np.asarray(keys[pos]) == ids) if len(self) else np.zeros(len(ids), bool)
        rows = pos if order is None else order[pos]
        return np.where(found, rows, -1)

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds = {}

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class MemoryStore:
    """A small collection read from a .tsv into memory, with PassageStore's interface."""

    def __init__(self, path):
        from megazoo.tasks.retrieval.data import read_passages

        self.path = path
        self.passages = read_passages(path)
        self.ids = np.array([p.id for p in self.passages], dtype=np.int64)
        h = passage_digest()
        for p in self.passages:
            h.update(f"{p.id}\t{p.text}\t{p.title}\n".encode("utf-8"))
        self.fingerprint = h.hexdigest()
        self._row = {int(pid): r for r, pid in enumerate(self.ids)}

    @property
    def source(self) -> str:
        return str(self.path)

    def __len__(self) -> int:
        return len(self.passages)

    def __getitem__(self, i: int):
        return self.passages[int(i)]

    def __iter__(self):
        return iter(self.passages)

    def rows(self, a: int, b: int) -> list:
        return self.passages[a:b]

    def row_of(self, ids) -> np.ndarray:
        ids = np.asarray(ids)
        return np.array([self._row.get(int(i), -1) for i in ids.ravel()], dtype=np.int64).reshape(ids.shape)


def open_store(path):
    """A store folder (memory-mapped), or a psgs_w100.tsv file or a Hugging Face dataset of wiki_dpr's
    columns (read into memory: small collections)."""
    from megazoo.eval.readers.hf_source import is_hf_source

    if is_hf_source(path):  # wiki_dpr's columns: read into memory like a .tsv (build a store for large ones)
        return MemoryStore(path)
    path = Path(path)
    if path.is_dir():
        return PassageStore(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder (a passage store, or a psgs_w100.tsv file)")
    return MemoryStore(path)
