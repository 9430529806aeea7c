"""Reading and writing shards: the unit of work of every stage (one task per shard, locally or on a
Dask worker) and of resuming (a shard whose done marker exists is not processed again).

Input shards are JSONL (`.jsonl`, `.json`, one object per line with the text under `text_key`),
plain text (`.txt`: one document per line) or parquet (`.parquet`: a column `text_key`). Every
document gets an `id` (`SHARD:LINE` when the input has none), so the report can say which documents
a stage removed and why. Output shards are always JSONL with the same relative name (`.jsonl`);
two inputs that would get the same output name (`a.jsonl` and `a.txt`) are refused before anything
is written, so no shard overwrites another (and default ids stay unique). Each output shard is
written atomically and followed by its done marker, so a killed run never leaves a shard that looks
finished but is not.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

from megazoo.core.fs import atomic_file, write_json_atomic
from megazoo.curate.errors import CurateError

SHARD_SUFFIXES = (".jsonl", ".json", ".txt", ".parquet")
DONE_DIR = "_done"
REMOVED_DIR = "_removed"


SETTINGS_FILE = "_settings.json"  # a stage folder's settings, written first (pipeline.py)
STAGE_FILE = "_stage.json"  # a stage folder's counts, written last: the stage finished


def list_shards(folder) -> list[str]:
    """The shards below `folder` as sorted relative paths (the order defines "first" for dedup)."""
    root = Path(folder)
    if not root.is_dir():
        raise CurateError(f"{folder}: no such input folder (give a folder of .jsonl/.txt/.parquet shards)")
    if (root / SETTINGS_FILE).is_file() and not (root / STAGE_FILE).is_file():
        raise CurateError(f"{folder}: a curate stage folder whose stage has not finished (no {STAGE_FILE}); "
                          "rerun that stage to finish it before reading its output")
    found = sorted(str(p.relative_to(root)) for p in root.rglob("*")
                   if p.is_file() and p.suffix in SHARD_SUFFIXES
                   and not any(part.startswith("_") for part in p.relative_to(root).parts))
    if not found:
        raise CurateError(f"{folder}: no shards (.jsonl, .json, .txt or .parquet files) in this folder or below it")
    named: dict[str, str] = {}
    for rel in found:
        out = output_name(rel)
        if out in named:
            raise CurateError(f"{root / named[out]} and {root / rel} would both be written as {out} (every output "
                              "shard is JSONL); rename one of them (e.g. a-2.txt) so no documents are lost")
        named[out] = rel
    return found


def output_name(rel: str) -> str:
    """An output shard's relative name: the input's with the suffix `.jsonl`."""
    return str(Path(rel).with_suffix(".jsonl"))


def text_lines(path) -> list[str]:
    """The lines of a UTF-8 text file (universal newlines, as open() reads them); an undecodable
    byte is `FILE:LINE: not valid UTF-8`."""
    from megazoo.core.fs import read_utf8

    text = read_utf8(path, lambda p, line, problem: CurateError(f"{p}:{line}: {problem}"))
    if text.startswith("\ufeff"):
        text = text[1:]  # a byte-order mark is not part of the first document
    return io.StringIO(text, newline=None).readlines()


def count_documents(folder, rel: str) -> int:
    """How many documents `read_shard` finds in a shard (its non-blank lines, or parquet rows),
    counted from the file itself: the check of every count a report gives."""
    path = Path(folder) / rel
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            return pq.read_metadata(path).num_rows
        except Exception as err:  # noqa: BLE001 - pyarrow's errors are many; all mean "not a parquet file"
            raise CurateError(f"{path}: not a readable parquet file ({err})") from None
    return sum(1 for line in text_lines(path) if line.strip())


def _default_id(rel: str, line: int) -> str:
    return f"{Path(rel).with_suffix('').as_posix()}:{line}"


def read_shard(folder, rel: str, text_key: str = "text") -> list[dict]:
    """The documents of one shard, each a dict with `id` and `text_key` (other fields are kept)."""
    path = Path(folder) / rel
    if path.suffix == ".parquet":
        return _read_parquet(path, rel, text_key)
    docs = []
    lines = text_lines(path)
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if path.suffix == ".txt":
            docs.append({"id": _default_id(rel, number), text_key: line.rstrip("\n")})
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as err:
            raise CurateError(f"{path}:{number}: not a JSON object ({err.msg}); a .jsonl shard holds one "
                              f"JSON object per line (rename plain text to .txt)") from None
        if not isinstance(doc, dict):
            raise CurateError(f"{path}:{number}: a JSON {type(doc).__name__}, expected an object with `{text_key}`")
        if not isinstance(doc.get(text_key), str):
            have = ", ".join(sorted(doc)) or "none"
            raise CurateError(f"{path}:{number}: no string `{text_key}` key (keys: {have}); "
                              f"set `text_key` in the recipe or --text-key")
        doc.setdefault("id", _default_id(rel, number))
        doc["id"] = str(doc["id"])
        docs.append(doc)
    return docs


def _read_parquet(path: Path, rel: str, text_key: str) -> list[dict]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as err:  # noqa: BLE001 - pyarrow's errors are many; all mean "not a parquet file"
        raise CurateError(f"{path}: not a readable parquet file ({err})") from None
    if text_key not in table.column_names:
        raise CurateError(f"{path}: no `{text_key}` column (columns: {', '.join(table.column_names)}); "
                          f"set `text_key` in the recipe or --text-key")
    docs = []
    for row, doc in enumerate(table.to_pylist(), 1):
        if not isinstance(doc.get(text_key), str):
            raise CurateError(f"{path}: row {row}: `{text_key}` is not a string")
        doc.setdefault("id", None)
        doc["id"] = str(doc["id"]) if doc["id"] is not None else _default_id(rel, row)
        docs.append(doc)
    return docs


def write_jsonl(path, rows) -> None:
    """Write rows as JSON lines, atomically (the file appears complete or not at all)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path, "w") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def done_path(out_dir, rel: str) -> Path:
    return Path(out_dir) / DONE_DIR / (output_name(rel) + ".done")


def removed_path(out_dir, rel: str) -> Path:
    return Path(out_dir) / REMOVED_DIR / output_name(rel)


def read_done(out_dir, rel: str) -> dict | None:
    """The stats a finished shard left in its done marker; None if the shard is not finished."""
    path = done_path(out_dir, rel)
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None  # a marker that cannot be read counts as not done


def finish_shard(out_dir, rel: str, kept: list[dict], removed: list[dict], stats: dict) -> dict:
    """Write a shard's survivors, its removed records and then its done marker (in that order)."""
    write_jsonl(Path(out_dir) / output_name(rel), kept)
    write_jsonl(removed_path(out_dir, rel), removed)
    marker = done_path(out_dir, rel)
    marker.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(marker, stats)
    return stats


def words(text: str) -> int:
    """The token count the report uses: whitespace-separated words (no tokenizer needed)."""
    return len(text.split())


def iter_output(folder, text_key: str = "text"):
    """Every document of a stage's output folder, in shard order."""
    for rel in list_shards(folder):
        yield from read_shard(folder, rel, text_key)


def same_folder(a, b) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)
