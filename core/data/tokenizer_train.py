"""Train a tokenizer on text files (`megazoo tokenizer train`) and write a folder that both
transformers (`AutoTokenizer.from_pretrained(DIR)`) and megazoo (`data.tokenizer: DIR`) load.

    train_tokenizer("wordpiece", ["a.txt", "b.jsonl"], 8000, "out/tok", lowercase=True)

Kinds:
  wordpiece      BERT-style, Hugging Face `tokenizers` WordPiece trainer: [PAD] [UNK] [CLS] [SEP]
                 [MASK], BERT normaliser (lowercasing optional) and pre-tokenizer, [CLS] x [SEP]
                 post-processor. Writes tokenizer.json, vocab.txt, tokenizer_config.json (BertTokenizer).
  bpe            GPT-2-style byte-level BPE (`tokenizers` BPE trainer) with <|endoftext|> as end of
                 document and padding. Writes tokenizer.json, vocab.json, merges.txt (GPT2Tokenizer).
  sentencepiece  the `sentencepiece` library (unigram or bpe; byte fallback, no normalisation, so
                 decode(encode(text)) == text), <unk> <s> </s> <pad> at ids 0-3. Writes
                 tokenizer.model plus a tokenizer.json that encodes as the .model does: transformers
                 can only convert a .model itself with protobuf installed, which megazoo does not need.
                 (One difference remains, as for every converted SentencePiece model: a special token
                 written literally in the text, "</s>" or a --special-tokens one, is one token to
                 transformers, and the text after it gets no second dummy prefix.)
Every folder also gets megazoo_tokenizer.json: how it was trained (kind, sizes, inputs).

Inputs: .jsonl / .json files hold one JSON object per line with the text under `field`; any other
file is plain text, one text per non-empty line. The folder is written to a temporary sibling and
moved into place when complete; a non-empty existing folder is replaced only with overwrite=True
(the old one removed once the new one is complete).

Bounds: the trainers' cost grows with the longest "word" (a merge rescans the words that hold its
pair, and a word is at most a whole line when it has no spaces: one 5 MB line ran for hours), so
texts are cut into pieces of at most MAX_PIECE_CHARS characters before training, at a space where
there is one. Training then takes time linear in the input; `time_limit` stops it with a clear error
in any case. The vocabulary size is at most MAX_VOCAB.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from megazoo.core.data.errors import DataError
from megazoo.core.data.text import document_text, iter_raw_documents
from megazoo.core.fs import atomic_folder
from megazoo.core.verbosity import shows_progress

KINDS = ("wordpiece", "bpe", "sentencepiece")
SPM_MODEL_TYPES = ("unigram", "bpe")
BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
END_OF_TEXT = "<|endoftext|>"
SPM_CONTROLS = ("<unk>", "<s>", "</s>", "<pad>")  # ids 0-3, as train_sentencepiece assigns them
BYTES = 256  # byte-level BPE's alphabet, and SentencePiece's byte-fallback pieces
RECORD = "megazoo_tokenizer.json"
# 2**24: 64 times the largest vocabularies in use (262,144 tokens), every id exact as a float32, and
# far below the sizes at which the Rust trainers abort the process while allocating (1e11)
MAX_VOCAB = 1 << 24
# the longest piece of text a trainer sees at once: longer than any real word, and, at 4 bytes a
# character at most, inside SentencePiece's max_sentence_length (4192 bytes: longer lines are dropped)
MAX_PIECE_CHARS = 1000


def pieces(text: str, limit: int = MAX_PIECE_CHARS) -> Iterator[str]:
    """`text` in pieces of at most `limit` characters, cut after the last whitespace in reach (a
    text without any is cut every `limit` characters); joined they give `text` back. Linear time."""
    start, n = 0, len(text)
    while n - start > limit:
        end = start + limit
        cut = max(text.rfind(" ", start + 1, end), text.rfind("\n", start + 1, end), text.rfind("\t", start + 1, end))
        if cut > start:
            end = cut + 1  # the space stays with the piece before it
        yield text[start:end]
        start = end
    if start < n:
        yield text[start:]


def read_texts(path: str | os.PathLike, field: str = "text", key_flag: str = "--field") -> Iterator[str]:
    """The texts of one .txt (a text per non-empty line) or .jsonl file (obj[field] per line);
    a bad line fails as `file:line: problem`."""
    for doc in iter_raw_documents(str(path)):
        try:
            yield document_text(doc, field)
        except DataError as exc:  # its hint names preprocess's flag; point at this command's
            raise DataError(str(exc).replace("--json-key", key_flag)) from None


def special_tokens(kind: str, extra: Sequence[str] = ()) -> list[str]:
    """The kind's own special tokens, then `extra` ones (duplicates dropped, order kept)."""
    own = {"wordpiece": BERT_SPECIALS, "bpe": (END_OF_TEXT,), "sentencepiece": SPM_CONTROLS}[kind]
    return list(dict.fromkeys([*own, *extra]))


def check_request(kind: str, inputs: Sequence[str], vocab_size: int, out: str | os.PathLike,
                  specials: Sequence[str] = (), lowercase: bool = False, model_type: str = "unigram",
                  overwrite: bool = False) -> None:
    """Everything that can be wrong before training starts, as one DataError line each."""
    if kind not in KINDS:
        raise DataError(f"unknown tokenizer kind {kind!r}; choose one of {', '.join(KINDS)}")
    if kind == "sentencepiece" and model_type not in SPM_MODEL_TYPES:
        raise DataError(f"unknown SentencePiece model type {model_type!r}; choose one of {', '.join(SPM_MODEL_TYPES)}")
    if not inputs:
        raise DataError("no input files given")
    missing = [str(p) for p in inputs if not Path(p).is_file()]
    if missing:
        raise DataError(f"missing input files: {', '.join(missing)}")
    target = Path(out)
    if target.exists() and not target.is_dir():
        raise DataError(f"--out {target} is a file, not a folder; choose a folder")
    if target.exists() and any(target.iterdir()) and not overwrite:
        raise DataError(f"--out {target} exists and is not empty; choose another folder or pass --overwrite to "
                        f"replace it")
    if not 1 <= vocab_size <= MAX_VOCAB:
        raise DataError(f"--vocab-size {vocab_size}: must be between 1 and {MAX_VOCAB:,} (2**24)")
    n = len(special_tokens(kind, specials))
    if vocab_size < n:
        raise DataError(f"--vocab-size {vocab_size} is smaller than the {n} special tokens "
                        f"({' '.join(special_tokens(kind, specials))})")
    if kind in ("bpe", "sentencepiece") and vocab_size <= BYTES + n:
        what = "byte-level BPE" if kind == "bpe" else "SentencePiece with byte fallback"
        raise DataError(f"--vocab-size {vocab_size} is too small: {what} needs more than {BYTES} byte symbols "
                        f"+ {n} special tokens = {BYTES + n}")
    if lowercase and kind == "sentencepiece":
        raise DataError("--lowercase is for wordpiece and bpe; SentencePiece keeps text as it is "
                        "(lowercase the input files first)")


def train_tokenizer(kind: str, inputs: Sequence[str | os.PathLike], vocab_size: int, out: str | os.PathLike, *,
                    lowercase: bool = False, min_frequency: int = 2, specials: Sequence[str] = (),
                    model_type: str = "unigram", field: str = "text", progress: bool = True,
                    overwrite: bool = False, time_limit: float | None = None) -> Path:
    """Train on `inputs` and write the folder `out` (see the module doc). min_frequency: the
    fewest occurrences a merge/word needs (wordpiece, bpe; SentencePiece has no such knob).
    time_limit: seconds the reading and training may take (None: no limit), else a DataError."""
    inputs = [str(p) for p in inputs]
    check_request(kind, inputs, vocab_size, out, specials, lowercase, model_type, overwrite)
    tokens = special_tokens(kind, specials)
    target = Path(out)
    # the scratch folder is removed on any failure, the time limit included; an existing folder is
    # replaced only once the new one is complete
    with atomic_folder(target, overwrite=overwrite) as tmp:
        texts = (t for path in inputs for t in read_texts(path, field))
        first = next((t for t in texts if t.strip()), None)  # the blank texts before it teach nothing
        if first is None:  # refused, not a vocabulary of the special tokens alone
            raise DataError(f"{', '.join(inputs)}: no text to learn from (the input is empty or blank); "
                            f"nothing was written to {target}")
        texts = (p for t in itertools.chain([first], texts) for p in pieces(t))
        if kind == "sentencepiece":
            config = _sentencepiece(texts, tmp, vocab_size, tokens, model_type, progress, time_limit)
        else:
            build = _wordpiece if kind == "wordpiece" else _bpe
            config = build(texts, tmp, vocab_size, tokens, lowercase, min_frequency, progress, time_limit)
        (tmp / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
        record = {"kind": kind, "vocab_size": vocab_size, "trained_vocab_size": _trained_size(tmp),
                  "special_tokens": tokens, "lowercase": lowercase, "min_frequency": min_frequency,
                  "inputs": inputs, "field": field}
        if kind == "sentencepiece":
            record["model_type"] = model_type
        (tmp / RECORD).write_text(json.dumps(record, indent=2) + "\n")
    message = shortfall(target)
    if message:
        warnings.warn(VocabularyShortfall(message), stacklevel=2)
    return target


class VocabularyShortfall(UserWarning):
    """The trained vocabulary is smaller than the --vocab-size asked for (the message says why)."""


def _trained_size(folder: Path) -> int:
    """Tokens in the trained tokenizer.json (specials included), as transformers counts them."""
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(folder / "tokenizer.json")).get_vocab_size(with_added_tokens=True)


def shortfall(folder: str | os.PathLike) -> str | None:
    """Why a trained folder's vocabulary is smaller than asked, or None when it has the asked size.
    The wordpiece and bpe trainers stop early, without a word, once no piece or merge occurs at least
    min_frequency times (SentencePiece refuses instead: hard_vocab_limit)."""
    record = json.loads((Path(folder) / RECORD).read_text())
    asked, got = record["vocab_size"], record.get("trained_vocab_size", record["vocab_size"])
    if got >= asked:
        return None
    mf = record.get("min_frequency", 2)
    unit = "merges" if record.get("kind") == "bpe" else "word pieces"
    why = (f"the input holds no more {unit} that occur at least --min-frequency {mf} times" if mf > 1 else
           f"the input holds no more {unit} to learn (every word is a single token already)")
    lower = ", lower --min-frequency" if mf > 1 else ""
    return (f"{folder}: the vocabulary has {got:,} tokens, not the {asked:,} asked for (--vocab-size): {why}; "
            f"give more text{lower}, or train with model.vocab_size={got} (the size it has)")


def within_time(work, time_limit: float | None, what: str):
    """work() in a thread, waited for at most `time_limit` seconds (the Rust and C++ trainers release
    the GIL; none of them can be interrupted): on time, its result; late, a DataError, and the
    thread runs on in the background, writing nothing (its caller saves only after it returns).
    An error inside work() is raised here."""
    if time_limit is None:
        return work()
    box: dict = {}

    def body():
        try:
            box["result"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = exc

    thread = threading.Thread(target=body, name="megazoo-tokenizer-train", daemon=True)
    start = time.monotonic()
    thread.start()
    thread.join(time_limit)
    if thread.is_alive():
        raise DataError(f"{what} took longer than the time limit of {time_limit:g} s (after "
                        f"{time.monotonic() - start:.0f} s); nothing was written. Give a smaller input, or raise "
                        f"--time-limit")
    if "error" in box:
        raise box["error"]
    return box.get("result")


def _train(tokenizer, texts: Iterable[str], trainer, time_limit: float | None = None) -> None:
    def work():
        try:
            tokenizer.train_from_iterator(texts, trainer)
        except (DataError, KeyboardInterrupt):
            raise
        except BaseException as exc:  # the Rust trainer raises plain Exceptions, and panics as BaseException
            raise DataError(f"tokenizer training failed: {type(exc).__name__}: {exc}") from None

    within_time(work, time_limit, "tokenizer training")


def _wordpiece(texts, folder: Path, vocab_size: int, specials: list[str], lowercase: bool, min_frequency: int,
               progress: bool, time_limit: float | None = None) -> dict:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    _train(tok, texts, trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                                 special_tokens=specials, show_progress=progress), time_limit)
    tok.post_processor = processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")),
                                                   ("[CLS]", tok.token_to_id("[CLS]")))
    tok.save(str(folder / "tokenizer.json"))
    tok.model.save(str(folder))  # vocab.txt: what `bert-wordpiece:DIR/vocab.txt` and older tools read
    return {"tokenizer_class": "BertTokenizer", "do_lower_case": lowercase, "unk_token": "[UNK]",
            "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]"}


def _bpe(texts, folder: Path, vocab_size: int, specials: list[str], lowercase: bool, min_frequency: int,
         progress: bool, time_limit: float | None = None) -> dict:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    if lowercase:
        tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    # every byte in the alphabet: no text is ever out of vocabulary, as GPT-2
    _train(tok, texts, trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=specials,
                                           initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                           show_progress=progress), time_limit)
    tok.save(str(folder / "tokenizer.json"))
    tok.model.save(str(folder))  # vocab.json + merges.txt, GPT-2's own file pair
    # GPT-2's one special token ends documents and serves as BOS, EOS, UNK and padding
    return {"tokenizer_class": "GPT2Tokenizer", "add_prefix_space": False, "bos_token": END_OF_TEXT,
            "eos_token": END_OF_TEXT, "unk_token": END_OF_TEXT, "pad_token": END_OF_TEXT}


def _sentencepiece(texts, folder: Path, vocab_size: int, specials: list[str], model_type: str, progress: bool,
                   time_limit: float | None = None) -> dict:
    from tqdm import tqdm

    from megazoo.core.data.tokenizers import train_sentencepiece

    user = [t for t in specials if t not in SPM_CONTROLS]
    # SentencePiece trains silently; the bar shows the reading, which is most of a small run
    bar = tqdm(texts, unit=" texts", desc="reading", file=sys.stderr, disable=not shows_progress(progress))
    # trained under a scratch name inside the scratch folder: a late thread that finishes after the
    # time limit writes there only, into a folder already removed or about to be
    spm = within_time(lambda: train_sentencepiece(bar, folder / "tokenizer", vocab_size, model_type=model_type,
                                                  user_defined_symbols=user), time_limit, "SentencePiece training")
    bar.close()
    _spm_to_tokenizers(spm.sp, model_type, user).save(str(folder / "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
              "unk_token": "<unk>", "pad_token": "<pad>"}
    for role in ("cls", "sep", "mask"):  # BERT-style roles when the user asked for such pieces
        piece = next((t for t in user if t in (f"<{role}>", f"[{role.upper()}]")), None)
        if piece:
            config[f"{role}_token"] = piece
    return config


def _spm_to_tokenizers(sp, model_type: str, user: list[str]):
    """A `tokenizers.Tokenizer` that encodes as the trained SentencePiece model (identity
    normalisation, dummy prefix, whitespace as ▁, byte fallback), built from its pieces and scores."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

    pieces = [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]
    if model_type == "unigram":
        model = models.Unigram(pieces, unk_id=sp.unk_id(), byte_fallback=True)
    else:
        vocab = {piece: i for i, (piece, _) in enumerate(pieces)}
        normal = {piece: (score, i) for i, (piece, score) in enumerate(pieces)
                  if not (sp.is_control(i) or sp.is_unknown(i) or sp.is_byte(i)) and piece not in user}
        # SentencePiece BPE applies the merge that makes the highest-scoring piece first
        ranked = sorted((-normal[p][0], normal[p][1], p[:k], p[k:]) for p in normal for k in range(1, len(p))
                        if p[:k] in normal and p[k:] in normal)
        # ignore_merges: a whole chunk that is a piece (a user symbol) is emitted as it is
        model = models.BPE(vocab, [(a, b) for *_, a, b in ranked], unk_token=sp.id_to_piece(sp.unk_id()),
                           fuse_unk=True, byte_fallback=True, ignore_merges=bool(user))
    tok = Tokenizer(model)
    # normalised as one string, as SentencePiece does: one dummy prefix at the very start
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    if user:  # user symbols are whole pieces wherever they occur, never merged with neighbours
        pattern = "|".join(re.escape(t) for t in sorted(user, key=len, reverse=True))
        tok.pre_tokenizer = pre_tokenizers.Split(Regex(pattern), behavior="isolated")
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    controls = [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if sp.is_control(i) or sp.is_unknown(i)]
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in controls])
    return tok
