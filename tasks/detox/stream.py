"""Sampling rows to a JSONL file, batched, resumable after a kill.

A row is a prompt (text) or None (unconditional: the sample starts from the end-of-document token).
Rows are cut into batches of `batch` consecutive rows; batch k draws from a generator seeded from
(seed, its first row index), so a row's text depends only on the seed, its index and the batch
size, never on where an earlier run stopped. Each batch is appended in one write, flushed and
synced; a restart keeps the complete batches at the head of the file (dropping a torn last line
and the rows of an unfinished batch) and generates from there: after any number of kills the file
holds every row exactly once with the same texts as an uninterrupted run. The settings a text
depends on are kept in FILE.meta.json; resuming with others is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass
class Sampling:
    max_new_tokens: int = 1000
    top_p: float = 0.9
    temperature: float = 1.0
    batch: int = 8
    seed: int = 0

    def check(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError(f"--max-new-tokens must be at least 1, got {self.max_new_tokens}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"--top-p must be in (0, 1], got {self.top_p}")
        if self.temperature <= 0:
            raise ValueError(f"--temperature must be > 0, got {self.temperature}")
        if self.batch < 1:
            raise ValueError(f"--batch must be at least 1, got {self.batch}")


def batch_seed(seed: int, first_row: int) -> int:
    """The generator seed of the batch starting at row `first_row`."""
    digest = hashlib.sha256(f"{seed}:{first_row}".encode()).digest()
    return int.from_bytes(digest[:7], "little")


def prompts_digest(prompts: list) -> str:
    return hashlib.sha256(json.dumps(prompts).encode()).hexdigest()[:16]


def meta_path(path) -> Path:
    return Path(str(path) + ".meta.json")


def stream_meta(sampling: Sampling, prompts: list, checkpoint: str) -> dict:
    """What the texts of a samples file depend on (kept in FILE.meta.json)."""
    return {"checkpoint": str(checkpoint), **asdict(sampling), "prompts": prompts_digest(prompts)}


def _old_meta(mpath: Path) -> dict | None:
    try:
        old = json.loads(mpath.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return old if isinstance(old, dict) else None


def resume_point(path, sampling: Sampling, prompts: list, checkpoint: str, overwrite: bool = False) -> int | None:
    """Rows already done in `path` (a multiple of the batch, or all of them); the file is cut there.
    Writes FILE.meta.json on a fresh start; refuses to resume under other settings, or a file this
    stage did not write. With `overwrite` such a file is not refused: None says that the rows are to
    be generated from 0 into a new file that replaces it only when complete (write_replacement)."""
    from megazoo.core.fs import write_json_atomic

    path = Path(path)
    meta = stream_meta(sampling, prompts, checkpoint)
    mpath = meta_path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path}: a folder; give a file name for the samples")
    if path.exists() and path.stat().st_size > 0:
        old = _old_meta(mpath) if mpath.is_file() else None
        if old is None:
            if overwrite:
                return None
            raise ValueError(f"{path}: exists and was not written by this stage (no readable {mpath.name} beside "
                             f"it); choose another output or pass --overwrite to replace it once the new samples "
                             f"are complete")
        changed = [k for k in meta if old.get(k) != meta[k]]
        if changed:
            if overwrite:
                return None
            k = changed[0]
            raise ValueError(f"{path}: written with {k}={old.get(k)!r}, now {meta[k]!r}; resume with the same settings "
                             f"or pass --overwrite to replace it once the new samples are complete")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(mpath, meta)
    if not path.exists():
        path.write_bytes(b"")
        return 0
    data = path.read_bytes()
    done, offset, ends = 0, 0, [0]
    while True:
        nl = data.find(b"\n", offset)
        if nl < 0:
            break  # a torn last line (killed mid-write) is dropped
        try:
            ok = json.loads(data[offset:nl]).get("id") == done
        except (ValueError, AttributeError):
            ok = False
        if not ok:
            break
        done, offset = done + 1, nl + 1
        ends.append(offset)
    keep = done if done >= len(prompts) else done - done % sampling.batch
    keep = min(keep, len(prompts))
    if ends[keep] != len(data):
        with open(path, "r+b") as f:  # only rows of this stage's own (its meta matched) are cut
            f.truncate(ends[keep])
    return keep


def write_replacement(path, meta: dict, write) -> None:
    """`write(scratch)` appends every row to a scratch file of this process's own, which then replaces
    `path` (the old samples are lost only once the new ones are complete), and FILE.meta.json follows."""
    from megazoo.core.fs import atomic_file, write_json_atomic

    with atomic_file(path, "wb") as f:
        f.flush()
        write(f.name)
    write_json_atomic(meta_path(path), meta)


def start_token(tok) -> int:
    """The token unconditional generation starts from: the end-of-document token, as Megatron's
    unconditional samples start from GPT-2's <|endoftext|>; else the tokenizer's bos or eos."""
    from megazoo.eval.lm import END_TOKENS

    unk = getattr(tok, "unk_token_id", None)
    for name in END_TOKENS:
        found = tok.convert_tokens_to_ids(name)
        if isinstance(found, int) and found != unk:
            return found
    for found in (tok.bos_token_id, tok.eos_token_id):
        if found is not None:
            return int(found)
    raise ValueError("the tokenizer has no end-of-document, bos or eos token to start unconditional samples from")


def generate_rows(model, tok, prompts: list, records: list[dict], sampling: Sampling, path=None, start: int = 0,
                  progress: bool = True, label: str = "samples") -> list[dict]:
    """Sample rows start.. of `prompts` (text or None) and append a record per row to `path` (None:
    write nothing, as on ranks other than 0); records[i] holds the row's other fields. Returns the
    new records (with "text" and "tokens")."""
    from megazoo.zoo.generate import generate

    begin = start_token(tok)
    eos = [t for t in {tok.eos_token_id, begin} if t is not None]
    out, t0, made = [], time.time(), 0
    total = len(prompts)
    for first in range(start - start % sampling.batch, total, sampling.batch):
        rows = range(first, min(first + sampling.batch, total))
        ids = []
        for i in rows:
            p = tok(prompts[i], add_special_tokens=False)["input_ids"] if prompts[i] else []
            ids.append(list(p) or [begin])
        new = generate(model, ids, sampling.max_new_tokens, do_sample=True, top_p=sampling.top_p,
                       temperature=sampling.temperature, eos_token_id=eos, pad_token_id=tok.pad_token_id,
                       seed=batch_seed(sampling.seed, first))
        batch = []
        for i, toks in zip(rows, new):
            toks = [t for t in toks if t not in eos]
            batch.append({"id": i, **records[i], "text": tok.decode(toks, skip_special_tokens=True),
                          "tokens": len(toks)})
            made += len(toks)
        if path is not None:
            with open(path, "a") as f:
                f.write("".join(json.dumps(r) + "\n" for r in batch))
                f.flush()
                os.fsync(f.fileno())
        out.extend(batch)
        if progress:
            rate = made / max(time.time() - t0, 1e-9)
            print(f"\r{label}: {rows[-1] + 1}/{total} ({rate:.1f} tokens/s)", end="", file=sys.stderr, flush=True)
    if progress and out:
        print(file=sys.stderr)
    return out


def read_numbered_records(path) -> list[tuple[int, dict]]:
    """(line number, record) of each generation of a generations file (JSON lines), with
    `file:line: problem` for a bad line (undecodable UTF-8 included)."""
    from megazoo.eval.readers.common import LineError, read_jsonl

    out = []
    for n, rec in read_jsonl(path, "generations, one {\"text\"} object a line", LineError):
        if not isinstance(rec.get("text"), str):
            raise LineError(path, n, "a generation needs a string `text`")
        out.append((n, rec))
    return out


def read_records(path) -> list[dict]:
    """The records of a generations file (JSON lines), with `file:line: problem` for a bad line."""
    return [rec for _, rec in read_numbered_records(path)]
