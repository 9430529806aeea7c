"""Model inputs of the three tasks, as BioBERT / BioMegatron build them.

NER: `[CLS] w1 w2 ... [SEP]`, each word tokenised on its own; the word's label sits on its first
sub-token and the other sub-tokens get -100 (ignored in the loss, never predicted); a sentence
longer than max_seq_length loses its last words (they are predicted O).

RE: `[CLS] sentence [SEP]` with the entity masks as written (@CHEMICAL$, @GENE$); the label is
classified from the pooled [CLS].

QA: SQuAD features (zoo/heads/qa.py encode_qa / decode_qa, shared with synthetic_qa).
"""

from __future__ import annotations

import torch

from megazoo.tasks.biomed.data import CHEMPROT_LABELS, NerSentence, Relation
from megazoo.zoo.heads import IGNORE
from megazoo.zoo.heads.encoded import Encoded, check_tokenizer, finish_rows, pad_rows


# NER ------------------------------------------------------------------------------------------
def encode_ner(sentences: list[NerSentence], tokenizer, labels: list[str], max_seq_length: int) -> Encoded:
    """Rows of `[CLS] sub-tokens [SEP]`, labels on first sub-tokens (ids into `labels`)."""
    check_tokenizer(tokenizer, "NER")
    index = {lab: i for i, lab in enumerate(labels)}
    vocab_words = sorted({w for s in sentences for w in s.tokens})
    pieces = dict(zip(vocab_words, tokenizer.encode_batch(vocab_words))) if vocab_words else {}
    ids, types, tags, words = [], [], [], []
    for s in sentences:
        row, tag, firsts = [tokenizer.cls], [IGNORE], []
        for word, label in zip(s.tokens, s.labels):
            sub = pieces[word] or [tokenizer.unk if tokenizer.unk is not None else tokenizer.pad]
            if len(row) + len(sub) > max_seq_length - 1:
                break
            if label not in index:
                raise ValueError(f"line {s.line}: label {label!r} is not one of task.labels {labels}")
            firsts.append(len(row))
            row += sub
            tag += [index[label]] + [IGNORE] * (len(sub) - 1)
        row.append(tokenizer.sep)
        tag.append(IGNORE)
        ids.append(row)
        types.append([0] * len(row))
        tags.append(tag)
        words.append(firsts)
    length = max((len(r) for r in ids), default=1)
    return finish_rows(ids, types, {"labels": pad_rows(tags, length, IGNORE)}, tokenizer, length, words=words)


def decode_ner(logits_rows: list[torch.Tensor], enc: Encoded, sentences: list[NerSentence],
               labels: list[str]) -> list[list[str]]:
    """Per sentence one predicted label per word: argmax at its first sub-token, O for cut words."""
    out = []
    for logits, firsts, s in zip(logits_rows, enc.words, sentences):
        pred = [labels[int(i)] for i in logits[firsts].argmax(-1)] if firsts else []
        out.append(pred + ["O"] * (len(s.tokens) - len(pred)))
    return out


# RE -------------------------------------------------------------------------------------------
def encode_re(relations: list[Relation], tokenizer, max_seq_length: int) -> Encoded:
    check_tokenizer(tokenizer, "relation extraction")
    texts = tokenizer.encode_batch([r.sentence for r in relations]) if relations else []
    ids = [[tokenizer.cls, *t[: max_seq_length - 2], tokenizer.sep] for t in texts]
    labels = torch.tensor([CHEMPROT_LABELS.index(r.label) for r in relations], dtype=torch.long)
    length = max((len(r) for r in ids), default=1)
    return finish_rows(ids, [[0] * len(r) for r in ids], {"labels": labels}, tokenizer, length)
