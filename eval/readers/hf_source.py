"""Hugging Face datasets as the input of a native-format reader.

Every reader of a release format also takes the same data in the form the ecosystem distributes:

    DIR                  a `save_to_disk` folder: state.json + *.arrow (one split), or dataset_dict.json
                         with one sub-folder per split
    FILE.parquet         parquet (the Hub's own copies: `CONFIG/SPLIT-00000-of-00001.parquet`)
    FILE.arrow           an Arrow stream file as `datasets` writes it (its cache, save_to_disk shards)
    DIR of the above     a Hub repository snapshot: files named or foldered by split
    hf:NAME[:CONFIG]     a Hub id (`hf:squad`, `hf:race:all`), loaded by `datasets` (network, or its cache)

and any of them may end in `@SPLIT` (`hf:squad@validation`) to pick a split; a reader with a split of its
own (RACE's dev/test) passes it instead. Rows are read in batches from memory-mapped Arrow (datasets'
tables) or streamed from parquet with pyarrow (datasets would first copy a parquet file into its
cache), so memory is bounded by one batch, not the data set.

Problems are one line each (`RowError`, a ReaderError, so the CLI boundary gives exit code 2):
`FILE: row N: problem`, `FILE: problem` (a missing column, with the schema expected; an empty split),
and for a Hub id that cannot be fetched, `hf:NAME: ...` with the fix (download, save_to_disk, pass the
folder). A package's reader subclasses RowError with its own error class, as json_stream's ItemError.
A reader whose checks live in its native code gets the rows through NumberedRows, which turns the
native `file:line` errors about a row into these `FILE: row N` ones.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from megazoo.eval.readers.common import MissingFile, ReaderError

HF_PREFIX = "hf:"
ROW_SUFFIXES = (".parquet", ".arrow")
JSON_SUFFIXES = (".json", ".jsonl")
# a package's split names -> the Hub's
SPLIT_NAMES = {"dev": "validation", "devel": "validation", "valid": "validation"}
KNOWN_SPLITS = ("train", "validation", "test")
BATCH = 1000  # rows per Arrow batch turned into Python objects
_SHARD = re.compile(r"-\d{5}-of-\d{5}$")
_TRUE = ("1", "on", "yes", "true")


class RowError(ReaderError):
    """A problem with an HF dataset input: `FILE: row N: problem` (row None: `FILE: problem`); `unit`
    is `line` for JSON-lines files. A package's subclass may also derive from its LineError class."""

    def __init__(self, path, row: int | None, problem: str, unit: str = "row"):
        # ReaderError's own __init__, not super(): see json_stream.ItemError
        ReaderError.__init__(self, path, row or 0, problem)
        self.row = row
        self.args = (f"{self.path}: {unit} {row}: {problem}" if row is not None else f"{self.path}: {problem}",)

    def __str__(self) -> str:
        return self.args[0]


@dataclass(frozen=True)
class Spec:
    """A parsed source: `text` as the user wrote it (for messages), a local `path` or a Hub `name`."""

    text: str
    path: Path | None
    name: str = ""
    config: str | None = None
    split: str | None = None


@dataclass
class Part:
    """One file (or split) of a source: rows in column batches, numbered from 1 within it."""

    label: str
    columns: list[str]
    batches: Callable[[list[str]], Iterator[dict[str, list]]]
    unit: str = "row"
    features: Callable[[], Any] | None = None  # the datasets.Features, built only when asked (label_names)


def parse_spec(path: str | os.PathLike) -> Spec:
    """The source `path` names (see the module doc); `@SPLIT` is split off a local path only when the
    path as written does not exist."""
    text = os.fspath(path)
    if text.startswith(HF_PREFIX):
        rest, _, split = text[len(HF_PREFIX):].partition("@")
        name, _, config = rest.partition(":")
        if not name:
            raise ValueError(f"{text!r}: no dataset name; write hf:NAME[:CONFIG][@SPLIT], e.g. hf:squad@validation")
        return Spec(text, None, name, config or None, split or None)
    local = Path(text)
    if not local.exists() and "@" in local.name:
        base, _, split = text.rpartition("@")
        if Path(base).exists():
            return Spec(text, Path(base), split=split or None)
    return Spec(text, local)


def _files(folder: Path, suffixes: Sequence[str]) -> Iterator[Path]:
    return (p for p in folder.rglob("*") if p.suffix in suffixes and p.is_file())


def is_save_to_disk(folder: Path) -> bool:
    return (folder / "dataset_dict.json").is_file() or (folder / "state.json").is_file()


def is_hf_source(path: str | os.PathLike) -> bool:
    """True for an `hf:` id, a parquet/arrow file, a save_to_disk folder or a folder holding parquet or
    arrow files (with an optional `@SPLIT`); native files (.json, .tsv, .txt, ...) are not."""
    if os.fspath(path).startswith(HF_PREFIX):
        return True
    local = parse_spec(path).path
    if local.is_file():
        return local.suffix in ROW_SUFFIXES
    return local.is_dir() and (is_save_to_disk(local) or any(_files(local, ROW_SUFFIXES)))


def hub_split(split: str | None) -> str | None:
    """A package's split name as the Hub names it (dev -> validation)."""
    return SPLIT_NAMES.get(split, split) if split else None


# ---- opening ---------------------------------------------------------------------------------

def _dataset_part(label: str, ds) -> Part:
    """A `datasets.Dataset` (memory-mapped Arrow) as a Part."""
    def batches(columns):
        yield from ds.select_columns(columns).iter(batch_size=BATCH)
    return Part(label, list(ds.column_names), batches, features=lambda: ds.features)


def _parquet_part(file: Path) -> Part:
    import pyarrow.parquet as pq

    try:
        reader = pq.ParquetFile(file, memory_map=True)
        names = list(reader.schema_arrow.names)
    except Exception as exc:  # arrow raises many types; the file is what matters to the user
        raise RowError(file, None, f"not readable as parquet ({_first_line(exc)})") from None

    def batches(columns):
        for batch in reader.iter_batches(batch_size=BATCH, columns=columns):
            yield batch.to_pydict()

    def features():  # from the schema's `huggingface` metadata, where datasets wrote the file
        import datasets

        return datasets.Features.from_arrow_schema(reader.schema_arrow)
    return Part(str(file), names, batches, features=features)


def _arrow_part(file: Path) -> Part:
    import datasets

    try:
        ds = datasets.Dataset.from_file(str(file))  # memory-mapped, no copy
    except Exception as exc:
        raise RowError(file, None, f"not readable as an Arrow stream file ({_first_line(exc)})") from None
    return _dataset_part(str(file), ds)


def _json_part(file: Path) -> Part:
    import datasets

    try:
        ds = datasets.load_dataset("json", data_files=str(file), split="train")
    except Exception as exc:
        raise RowError(file, None, f"not readable as json ({_first_line(exc):.200})", "line") from None
    part = _dataset_part(str(file), ds)
    part.unit = "line"
    return part


def _file_part(file: Path) -> Part:
    if file.suffix == ".parquet":
        return _parquet_part(file)
    return _arrow_part(file) if file.suffix == ".arrow" else _json_part(file)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _choose(label: str, have: Sequence[str], split: str | None) -> str:
    """The split to read among `have`: the one asked for, or the only one."""
    if split is not None:
        if split not in have:
            raise RowError(label, None, f"has no split {split!r} (it has {', '.join(have) or 'none'})")
        return split
    if len(have) == 1:
        return have[0]
    raise RowError(label, None, f"holds the splits {', '.join(have)}; name one: {label}@{have[0]} (or --split "
                                f"where the command has one)")


def _disk_parts(folder: Path, split: str | None) -> list[Part]:
    import datasets

    if (folder / "dataset_dict.json").is_file():  # a DatasetDict: load the chosen split's folder only
        try:
            have = list(json.loads((folder / "dataset_dict.json").read_text(encoding="utf-8"))["splits"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise RowError(folder / "dataset_dict.json", None, f"not a save_to_disk split list ({exc})") from None
        folder = folder / _choose(str(folder), have, split)
    try:
        state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
        if not state.get("_data_files"):  # datasets saves an empty selection with no shard at all
            return [Part(str(folder), [], lambda columns: iter(()))]
        ds = datasets.load_from_disk(str(folder))  # memory-mapped Arrow, not read into RAM
    except Exception as exc:  # arrow, json and OS errors: name the folder
        raise RowError(folder, None, f"not readable as a save_to_disk folder ({_first_line(exc)})") from None
    return [_dataset_part(str(folder), ds)]


def _split_of(file: Path, root: Path, names: Sequence[str]) -> str | None:
    """The split a file of a Hub snapshot belongs to: its folder's name, or its name's first or last
    dash-separated word (train-00000-of-00001.parquet, squad-validation.arrow)."""
    stem = _SHARD.sub("", file.stem)
    words = stem.split("-")
    for name in names:
        if name in file.relative_to(root).parent.parts or name in (stem, words[0], words[-1]):
            return name
    return None


def _folder_parts(folder: Path, split: str | None, json_ok: bool, prefer_config: str | None) -> list[Part]:
    suffixes = ROW_SUFFIXES + (JSON_SUFFIXES if json_ok else ())
    files = sorted(_files(folder, suffixes), key=str)
    names = list(dict.fromkeys(([split] if split else []) + list(KNOWN_SPLITS)))
    by_split: dict[str | None, list[Path]] = {}
    for f in files:
        by_split.setdefault(_split_of(f, folder, names), []).append(f)
    have = [s for s in names if s in by_split]
    if split is None and len(have) <= 1:
        chosen = files
    else:
        chosen = by_split[_choose(str(folder), have, split)]
    # a snapshot with several configs (race: all/, high/, middle/) would count rows twice
    configs = sorted({f.relative_to(folder).parts[0] for f in chosen if len(f.relative_to(folder).parts) > 1}
                     - set(names))
    if len(configs) > 1:
        if prefer_config in configs:
            chosen = [f for f in chosen if f.relative_to(folder).parts[0] == prefer_config]
        else:
            raise RowError(folder, None, f"holds the configs {', '.join(configs)}; pass one config's folder")
    if not chosen:
        raise MissingFile(f"{folder}: no parquet/arrow files{f' for split {split!r}' if split else ''}")
    return [_file_part(f) for f in chosen]


def _offline() -> bool:
    return any(os.environ.get(k, "").lower() in _TRUE for k in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def _hub_parts(spec: Spec, split: str | None) -> list[Part]:
    import datasets

    call = f"datasets.load_dataset({spec.name!r}{f', {spec.config!r}' if spec.config else ''})"
    fix = (f"on a machine with network run `python -c \"import datasets; {call}.save_to_disk('DIR')\"` and "
           f"pass the folder DIR (or DIR/SPLIT)")
    try:
        loaded = datasets.load_dataset(spec.name, spec.config, split=split)
    except (ConnectionError, OSError) as exc:
        why = "the machine is offline (HF_HUB_OFFLINE=1)" if _offline() else f"no network ({_first_line(exc):.120})"
        raise RowError(spec.text, None, f"not in the local Hugging Face cache and {why}; {fix}") from None
    except Exception as exc:  # unknown name, config or split: datasets' own words
        raise RowError(spec.text, None, f"could not be loaded ({_first_line(exc):.200}); {fix}") from None
    if isinstance(loaded, datasets.DatasetDict):
        name = _choose(spec.text, list(loaded), split)
        return [_dataset_part(f"{spec.text}@{name}" if "@" not in spec.text else spec.text, loaded[name])]
    return [_dataset_part(spec.text, loaded)]


def open_parts(path: str | os.PathLike, split: str | None = None, json_ok: bool = False,
               prefer_config: str | None = None) -> list[Part]:
    """The parts of one split of a source (see the module doc). `split` is a package's split name
    (dev -> validation); `json_ok` also takes JSON(-lines) files (RACE's HF layout); `prefer_config`
    is read alone when a snapshot folder holds several configs."""
    spec = parse_spec(path)
    split = hub_split(spec.split or split)  # the source's own @SPLIT wins over a command's default split
    if spec.path is None:
        return _hub_parts(spec, split)
    local = spec.path
    if not local.exists():
        raise MissingFile(f"{local}: no such file or folder (expected a Hugging Face dataset: a save_to_disk "
                          f"folder, parquet or arrow files, or hf:NAME)")
    if local.is_dir():
        return _disk_parts(local, split) if is_save_to_disk(local) else _folder_parts(local, split, json_ok,
                                                                                      prefer_config)
    return [_file_part(local)]


def dataset_name(path: str | os.PathLike) -> str:
    """The data set's name where the source records it (a Hub id, a save_to_disk folder's info);
    "" when unknown. Tells squad_v2 from squad when no question happens to be unanswerable."""
    spec = parse_spec(path)
    if spec.path is None:
        return spec.name
    for info in (spec.path / "dataset_info.json", *spec.path.glob("*/dataset_info.json")):
        if info.is_file():
            try:
                meta = json.loads(info.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return ""
            return str(meta.get("dataset_name") or meta.get("builder_name") or "")
    return ""


# ---- rows ------------------------------------------------------------------------------------

def iter_rows(path: str | os.PathLike, columns: Sequence[str], schema: str, *, split: str | None = None,
              optional: Sequence[str] = (), error: type[RowError] = RowError, json_ok: bool = False,
              prefer_config: str | None = None) -> Iterator[tuple[str, int, dict[str, Any], str]]:
    """(part label, row number from 1, row, unit) for every row of one split of a source, reading only
    `columns` (required) and those of `optional` the data has. A missing column, an unreadable file
    or no rows at all raise `error` naming the file; `schema` (e.g. "the Hugging Face `squad` schema:
    id, title, context, question, answers") is quoted in the message."""
    try:
        parts = open_parts(path, split, json_ok, prefer_config)
    except RowError as exc:
        if isinstance(exc, error):
            raise
        raise error(exc.path, exc.row, exc.problem) from None
    total = 0
    for part in parts:
        missing = [c for c in columns if c not in part.columns]
        if missing and part.columns:  # a part without columns is an empty split (no rows below)
            raise error(part.label, None, f"has no column {missing[0]!r} (expected {schema}; it has "
                                          f"{', '.join(part.columns)})")
        wanted = list(columns) + [c for c in optional if c in part.columns and c not in columns]
        number = 0
        for batch in part.batches(wanted):
            values = [batch[c] for c in wanted]
            for row in zip(*values):
                number += 1
                yield part.label, number, dict(zip(wanted, row)), part.unit
        total += number
    if not total:
        raise error(parse_spec(path).text, None, f"holds no rows{f' in split {split!r}' if split else ''} "
                                                 f"(expected {schema})")


def column_names(path: str | os.PathLike, split: str | None = None, error: type[RowError] = RowError) -> list[str]:
    """The columns of a source's (first) part, without reading rows: lets a reader of several schemas
    (WoW, WoI, Reddit comments) choose before it reads."""
    try:
        parts = open_parts(path, split)
    except RowError as exc:
        raise exc if isinstance(exc, error) else error(exc.path, exc.row, exc.problem) from None
    return list(parts[0].columns) if parts else []


def label_names(path: str | os.PathLike, column: str, split: str | None = None) -> list[str] | None:
    """The names of a ClassLabel column (or a list of ClassLabel, as NER tags) as the source declares
    them (datasets' features, kept in a parquet file's metadata); None when the column is not one."""
    for part in open_parts(path, split):
        feature = part.features().get(column) if part.features else None
        while feature is not None and not hasattr(feature, "names") and hasattr(feature, "feature"):
            feature = feature.feature  # List / Sequence of ...
        if feature is not None and hasattr(feature, "names"):
            return list(feature.names)
    return None


class NumberedRows:
    """The rows of a source for a native reader: (number, row) pairs numbered from 1 across its parts,
    which the reader checks with its own rules and errors (`file:line: problem`, LineError, or
    `file: item N: problem`, ItemError, the number standing for the line or item). Inside
    `native_errors(...)` such an error about number N becomes `error` naming N's part and its row
    (`FILE: row N: problem`), so one set of checks serves the native file and the HF dataset:

        rows = NumberedRows(path, COLUMNS, SCHEMA, error=SbicRowError)
        with rows.native_errors(SbicFormatError):
            return native_reader(rows.text, iter(rows))
    """

    def __init__(self, path: str | os.PathLike, columns: Sequence[str], schema: str, *,
                 error: type[RowError] = RowError, **options):
        self.text = parse_spec(path).text  # what the native reader names in its messages
        self.error = error
        self._rows = iter_rows(path, columns, schema, error=error, **options)
        self._starts: list[tuple[int, str, str]] = []  # (first number, part label, unit), one per part

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        number = 0
        for label, n, row, unit in self._rows:
            number += 1
            if n == 1:
                self._starts.append((number, label, unit))
            yield number, row

    def error_for(self, exc: ReaderError) -> RowError:
        """The RowError for a native reader's error about a row number (its `item`, else its `line`)."""
        if isinstance(exc, RowError):
            return exc
        number = getattr(exc, "item", None) or getattr(exc, "line", 0)
        for first, label, unit in reversed(self._starts):
            if number >= first:
                return self.error(label, number - first + 1, exc.problem, unit)
        return self.error(self.text, None, exc.problem)

    @contextmanager
    def native_errors(self, *types: type[Exception]):
        """Turn the native reader's errors of `types` (with `line` or `item`, and `problem`) into
        RowErrors; a RowError (a missing column, no rows) passes as it is."""
        try:
            yield self
        except types as exc:
            if isinstance(exc, RowError):
                raise
            raise self.error_for(exc) from None


# ---- shared column shapes ----------------------------------------------------------------------

def answer_pairs(value: Any, label: str, row: int, error: type[RowError] = RowError,
                 unit: str = "row") -> list[tuple[str, int]]:
    """(text, answer_start) pairs of the `answers` column of a SQuAD-schema dataset (squad, squad_v2,
    BioASQ copies): the Hub's {text: [...], answer_start: [...]}, or a list of {text, answer_start}."""
    if isinstance(value, dict) and "text" in value and "answer_start" in value:
        texts, starts = value["text"], value["answer_start"]
        if not isinstance(texts, list) or not isinstance(starts, list) or len(texts) != len(starts):
            raise error(label, row, "answers must hold lists text and answer_start of one length", unit)
        pairs = list(zip(texts, starts))
    elif isinstance(value, list) and all(isinstance(a, dict) for a in value):
        pairs = [(a.get("text"), a.get("answer_start")) for a in value]
    else:
        raise error(label, row, f"answers must be {{text: [...], answer_start: [...]}}, got {value!r:.60}", unit)
    for text, start in pairs:
        if not isinstance(text, str) or not isinstance(start, int) or isinstance(start, bool):
            raise error(label, row, f"an answer needs a text string and an integer answer_start, got "
                                    f"{text!r:.40} at {start!r}", unit)
    return pairs
