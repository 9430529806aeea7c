"""The evaluation texts decontamination compares against, read from the harness's own data files.

`--tasks` (or `tasks:` in a recipe) takes any of:
- a leaderboard suite YAML (eval/suites/presets/mt-nlg.yaml's shape: `tasks: [{name, path}, ...]`,
  paths relative to the YAML file): every listed task's file, named by the suite;
- a JSONL/JSON file (LAMBADA's `{"text"}`, HellaSwag, PIQA, BoolQ, ANLI, WinoGrande, the task
  packages' splits ...): every string value of every object;
- a RACE folder (`*.txt` files of one JSON object each) or any folder: every file below it;
- a plain-text file (.txt/.tsv not holding JSON: WiC, HANS): every line;
- `NAME=PATH` to name a benchmark (otherwise it is the file's stem, or the folder's name);
- `generated`: the LAMBADA and HellaSwag files the harness generates from its embedded corpus
  (eval/corpus_tasks.py), for demos and tests.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from megazoo.curate.errors import CurateError

_TOKEN = re.compile(r"\w+", re.UNICODE)


def tokens(text: str) -> list[str]:
    """The n-gram unit: lowercased word characters, punctuation dropped (GPT-3's normalisation)."""
    return [t.lower() for t in _TOKEN.findall(text)]


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from _strings(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from _strings(value)


def _file_texts(path: Path) -> list[str]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except Exception as err:  # noqa: BLE001 - pyarrow's errors are many; all mean "not a parquet file"
            raise CurateError(f"{path}: not a readable parquet file ({err})") from None
        return [s for row in table.to_pylist() for s in _strings(row)]
    from megazoo.curate.shards import text_lines

    lines = "".join(text_lines(path)).splitlines()  # an undecodable byte: FILE:LINE: not valid UTF-8
    texts = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if path.suffix in (".jsonl", ".json") or line.lstrip().startswith(("{", "[")):
            try:
                texts += list(_strings(json.loads(line)))
                continue
            except json.JSONDecodeError as err:
                if path.suffix in (".jsonl", ".json"):
                    raise CurateError(f"{path}:{number}: not JSON ({err.msg}); an evaluation .jsonl file "
                                      f"holds one JSON object per line") from None
        texts += line.split("\t")
    return texts


def _suite(path: Path) -> list[tuple[str, Path]]:
    import yaml

    try:
        from megazoo.curate.shards import text_lines

        suite = yaml.safe_load("".join(text_lines(path))) or {}
    except yaml.YAMLError as err:
        from megazoo.core.train.user_errors import yaml_message

        raise CurateError(yaml_message(path, err)) from None
    entries = suite.get("tasks") if isinstance(suite, dict) else None
    if not isinstance(entries, list):
        raise CurateError(f"{path}: a suite YAML needs `tasks: [{{name, path}}, ...]`")
    out = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or "path" not in entry:
            raise CurateError(f"{path}: tasks[{i}]: needs `path` (and `name`)")
        out.append((str(entry.get("name", Path(entry["path"]).stem)), path.parent / entry["path"]))
    return out


def _generated() -> list[tuple[str, Path]]:
    from megazoo.eval.corpus_tasks import corpus_task_files

    folder = Path(tempfile.mkdtemp(prefix="megazoo-curate-eval-"))
    return [(name, p) for name, p in corpus_task_files(folder).items()]


def resolve(specs: list[str]) -> list[tuple[str, Path]]:
    """(benchmark name, file or folder) for each --tasks word."""
    out = []
    for spec in specs:
        name, sep, rest = str(spec).partition("=")
        if sep and not os.path.exists(spec):
            name, path = name, Path(rest)
        else:
            name, path = "", Path(spec)
        if str(spec) == "generated":
            out += _generated()
            continue
        if not path.exists():
            raise CurateError(f"--tasks {spec}: no such file or folder (give evaluation files, RACE folders, "
                              f"a suite YAML, NAME=PATH or `generated`)")
        if path.suffix in (".yaml", ".yml"):
            out += [(n, p) for n, p in _suite(path)]
        else:
            out.append((name or (path.name if path.is_dir() else path.stem), path))
    return out


def benchmark_texts(specs: list[str]) -> dict[str, list[str]]:
    """benchmark name -> its texts."""
    texts: dict[str, list[str]] = {}
    for name, path in resolve(specs):
        if not path.exists():
            raise CurateError(f"{path}: evaluation file of `{name}` not found")
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for file in files:
            texts.setdefault(name, []).extend(_file_texts(file))
    return texts


def ngram_index(texts: dict[str, list[str]], n: int = 13) -> dict[int, str]:
    """Hash of every word n-gram of the evaluation texts -> the benchmark it comes from (first wins).
    Texts shorter than n words contribute their whole text as one n-gram-length key only if they
    reach n words; shorter ones cannot be matched at 13 words and are skipped."""
    index: dict[int, str] = {}
    for name in sorted(texts):
        for text in texts[name]:
            words = tokens(text)
            for i in range(len(words) - n + 1):
                index.setdefault(gram_hash(words[i:i + n]), name)
    return index


def gram_hash(words: list[str]) -> int:
    import hashlib

    return int.from_bytes(hashlib.blake2b(" ".join(words).encode("utf-8"), digest_size=8).digest(), "little")
