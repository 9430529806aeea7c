"""The embedded default corpus: real English prose that every Python installation carries.

Documents, in a fixed order: every topic of `pydoc_data.topics` (the language reference as plain
text, sorted by topic name), then the module docstring of every standard-library module (read
from the source with `ast`, never imported, sorted by dotted name; plus the compiled-in modules'
docstrings). Each is cleaned: reST roles and inline markup stripped, headings' underlines,
directives, doctest sessions and grammar/code blocks dropped, whitespace collapsed; paragraphs are
joined by one newline. `members=True` adds long class/function docstrings (about 3x more text).

Optional larger corpora sit behind the same interface when their package is installed:
`documents("gensim-lee")` reads the Lee news corpus from gensim's wheel test data (not imported).

`corpus_prefix(tokenizer)` writes the corpus tokenised to a .bin/.idx under the cache directory
once (keyed by Python version, corpus options and the tokenizer's fingerprint) and returns the
prefix: what the trainer uses when `data.path` is unset.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import inspect
import io
import os
import re
import sys
import sysconfig
import tokenize
from pathlib import Path

from megazoo.core.data.errors import DataError

CORPUS_VERSION = 2  # bump when cleaning changes, so cached .bin files are rebuilt
NAMES = ("stdlib", "gensim-lee")
_SKIP_DIRS = {"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__",
              "lib2to3", "ensurepip", "turtledemo", "__phello__"}
MIN_DOC_CHARS = 200

# ---- cleaning --------------------------------------------------------------------------------
_ROLE = re.compile(r":(?:[a-z]+:)*[a-z]+:`~?!?([^`<]*?)(?:\s*<[^>]*>)?`")   # :func:`x`, :ref:`t <l>`
_LITERAL = re.compile(r"``([^`]+)``")
_INTERPRETED = re.compile(r"`([^`]+)`_{0,2}")
_EMPHASIS = re.compile(r"(?<![\w*])\*{1,2}([^*\s][^*]*?)\*{1,2}(?![\w*])")
_UNDERLINE = re.compile(r"^\s*([=\-~^*#+\"'`.:_])\1{2,}\s*$")
_CODE_CHARS = set("=(){}[]<>#@%|\\;")


def clean_text(text: str) -> str:
    """reST/plain-text docs -> prose paragraphs, one per line."""
    text = text.replace("\t", "    ").replace("\u00a0", " ")
    blocks, current = [], []
    for line in text.splitlines():
        if _UNDERLINE.match(line) or line.lstrip().startswith(".. "):
            if current:
                blocks.append(current)
            current = []
            continue
        if line.strip():
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    kept: list[str] = []
    literal_next = False
    for block in blocks:
        if literal_next or _is_code(block):
            literal_next = block[-1].rstrip().endswith("::")
            continue
        literal_next = block[-1].rstrip().endswith("::")
        para = " ".join(line.strip().lstrip("*-\u2022 ").strip() if re.match(r"\s*[*\-\u2022]\s", line)
                        else line.strip() for line in block)
        para = _strip_markup(para)
        if literal_next:
            para = para[:-1] if para.endswith("::") else para
        para = " ".join(para.split())
        if len(para.split()) >= 3:
            kept.append(para)
    return "\n".join(kept)


def _strip_markup(s: str) -> str:
    s = _ROLE.sub(r"\1", s)
    s = _LITERAL.sub(r"\1", s)
    s = _INTERPRETED.sub(r"\1", s)
    return _EMPHASIS.sub(r"\1", s)


def _is_code(block: list[str]) -> bool:
    """Doctest sessions, grammar productions, tables and code examples (not prose)."""
    if any(line.lstrip().startswith((">>>", "... ", "$ ")) for line in block):
        return True
    if sum(line.lstrip().startswith(("+-", "+=", "|")) for line in block) * 2 >= len(block):
        return True  # a grid table: its cells are fragments, not sentences
    text = "\n".join(block)
    if "::=" in text:
        return True
    # Symbols outside quoted spans: code is dense in them, prose (even about code) is not.
    bare = re.sub(r'"[^"\n]*"|``[^`]*``|`[^`]*`', "", text)
    chars = [c for c in bare if not c.isspace()]
    if not chars:
        return True
    symbols = sum(c in _CODE_CHARS for c in chars) / len(chars)
    indented = all(line.startswith("    ") or line.startswith("   ") for line in block)
    sentence = re.search(r"[a-z][.!?](\s|$)", bare) is not None
    return symbols > 0.08 or (indented and not sentence)


# ---- sources ---------------------------------------------------------------------------------

def _stdlib_modules() -> list[tuple[str, Path]]:
    root = Path(sysconfig.get_paths()["stdlib"])
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith(("config-", "lib-", ".")))
        for name in sorted(filenames):
            if not name.endswith(".py") or name.startswith(("test_", "_test")):
                continue
            parts = list(rel.parts) + ([] if name == "__init__.py" else [name[:-3]])
            if parts and "-" not in "".join(parts):
                found.append((".".join(parts), Path(dirpath, name)))
    return sorted(found)


def _leading_docstring(source: str) -> str:
    """The module docstring, read from the first tokens only (parsing whole files is 10x slower)."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENCODING):
                continue
            if tok.type == tokenize.STRING:
                value = ast.literal_eval(tok.string)
                return inspect.cleandoc(value) if isinstance(value, str) else ""
            return ""
    except (tokenize.TokenError, SyntaxError, ValueError):
        return ""
    return ""


def _module_docstring(path: Path, members: bool) -> str:
    try:
        source = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return ""
    if not members:
        return _leading_docstring(source)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ""
    parts = [ast.get_docstring(tree) or ""]
    if members:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                doc = ast.get_docstring(node) or ""
                if len(doc) >= 400:
                    parts.append(doc)
    return "\n\n".join(p for p in parts if p)


def stdlib_documents(members: bool = False) -> list[str]:
    """The default corpus as a list of cleaned document strings, in a fixed order."""
    return list(_stdlib_documents(members))


@functools.lru_cache(maxsize=2)
def _stdlib_documents(members: bool) -> tuple[str, ...]:
    import pydoc_data.topics

    raw: list[str] = [pydoc_data.topics.topics[k] for k in sorted(pydoc_data.topics.topics)]
    raw += [_module_docstring(path, members) for _, path in _stdlib_modules()]
    # Compiled-in modules (sys, time, ...) have no source; their docstrings come with the binary.
    for name in sorted(sys.builtin_module_names):
        if not name.startswith("_"):
            raw.append(getattr(__import__(name), "__doc__", None) or "")
    docs = [clean_text(text) for text in raw]
    return tuple(d for d in docs if len(d) >= MIN_DOC_CHARS)


def gensim_lee_documents() -> list[str]:
    """The Lee background news corpus (one article per line) from gensim's wheel test data."""
    spec = importlib.util.find_spec("gensim")
    if spec is None or not spec.submodule_search_locations:
        raise DataError("corpus `gensim-lee` needs the gensim package installed (`pip install gensim`); "
                        "the default corpus `stdlib` needs nothing")
    path = Path(list(spec.submodule_search_locations)[0], "test", "test_data", "lee_background.cor")
    if not path.is_file():
        raise DataError(f"{path}: not found in the installed gensim (its test data was stripped)")
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return [" ".join(line.split()) for line in lines if len(line.strip()) >= MIN_DOC_CHARS]


def documents(name: str = "stdlib", members: bool = False) -> list[str]:
    """Documents of a named corpus: `stdlib` (always there) or `gensim-lee` (if gensim is installed)."""
    if name == "stdlib":
        return stdlib_documents(members)
    if name == "gensim-lee":
        return gensim_lee_documents()
    raise DataError(f"unknown corpus `{name}`; choose one of {', '.join(NAMES)}")


# ---- tokenised on disk -----------------------------------------------------------------------

def corpus_prefix(tokenizer, name: str = "stdlib", split_sentences: bool = False,
                  cache_dir: str | os.PathLike | None = None, members: bool = False) -> str:
    """Tokenise the corpus to `<cache>/corpus/<name>-<key>.bin/.idx` once; return the prefix.

    GPT wants whole documents ending in EOD; BERT/T5 want one sequence per sentence and no EOD
    (split_sentences=True), as `megazoo preprocess` would make them.
    """
    from megazoo.core.data.indexed import IndexedDatasetWriter, best_dtype, exists
    from megazoo.core.data.text import split_sentences as splitter
    from megazoo.core.fs import cache_root

    root = Path(cache_dir) if cache_dir else cache_root() / "corpus"
    key = hashlib.sha1(repr((CORPUS_VERSION, name, members, split_sentences, sys.version,
                             tokenizer.fingerprint())).encode()).hexdigest()[:16]
    prefix = str(root / f"{name}-{'sent' if split_sentences else 'doc'}-{key}")
    if exists(prefix):
        return prefix
    docs = documents(name, members)
    append_eod = not split_sentences
    if append_eod and tokenizer.eod is None:
        raise DataError(f"tokenizer {tokenizer.name} has no end-of-document token for the corpus")
    with IndexedDatasetWriter(prefix, best_dtype(tokenizer.vocab_size)) as writer:
        for doc in docs:
            parts = splitter(doc) if split_sentences else [doc]
            seqs = [s for s in tokenizer.encode_batch(parts) if s]
            if not seqs:
                continue
            if append_eod:
                seqs[-1] = seqs[-1] + [tokenizer.eod]
            writer.add_document([t for s in seqs for t in s], [len(s) for s in seqs])
    return prefix


def corpus_tokenizer(vocab_size: int = 4096, name: str = "stdlib", model_type: str = "bpe",
                     cache_dir: str | os.PathLike | None = None, extra_ids: int = 0):
    """A small SentencePiece vocabulary trained on the corpus (cached): for tiny models on CPU,
    where GPT-2's 50,257-row embedding would dominate the parameters. Training takes about a
    second and is deterministic (one thread)."""
    from megazoo.core.data.tokenizers import sentencepiece_tokenizer, train_sentencepiece
    from megazoo.core.fs import cache_root

    root = Path(cache_dir) if cache_dir else cache_root() / "tokenizers"
    key = hashlib.sha1(repr((CORPUS_VERSION, name, vocab_size, model_type, sys.version)).encode()).hexdigest()[:12]
    model = root / f"{name}-spm{vocab_size}-{key}.model"
    if not model.is_file():
        tmp = root / f".{model.stem}.{os.getpid()}"
        train_sentencepiece(documents(name), tmp, vocab_size, model_type=model_type)
        os.replace(f"{tmp}.vocab", model.with_suffix(".vocab"))
        os.replace(f"{tmp}.model", model)  # last: its presence marks a complete model
    return sentencepiece_tokenizer(str(model), extra_ids)
