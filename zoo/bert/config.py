"""BERT configuration: Megatron's pre-LN BERT and the original post-LN layout (Hugging Face BERT)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from megazoo.core.nn.config import TransformerConfig
from megazoo.core.parallel.embedding import padded_vocab_size

# fine-tuning heads on the last stage (zoo/heads/); "none": the encoder with its pretraining heads
TASK_HEADS = ("none", "sequence", "token", "span", "choice")


@dataclass
class BertConfig(TransformerConfig):
    vocab_size: int = 256
    seq_length: int = 64  # learned positions (max_position_embeddings)
    num_tokentypes: int = 2  # 0: no token-type (segment) embedding
    make_vocab_size_divisible_by: int = 128
    add_lm_head: bool = True  # masked-LM head (dense + act + norm, output tied to the word embeddings)
    add_pooler: bool = True  # tanh dense on the first token
    add_binary_head: bool = False  # next-sentence / sentence-order logits on the pooled output
    activation: str = "gelu_exact"  # BERT's "gelu" is the exact erf form
    causal: bool = False
    pooling: str = "none"  # none | mean | cls: BertOutput.embedding, a sentence vector (bi-encoders, zoo/pooling.py)
    task_head: str = "none"  # none | sequence | token | span | choice (zoo/heads/)
    num_labels: int = 2  # classes of a sequence/token head (1: regression); span: 2; choice: unused (1 logit)
    label_names: list[str] = field(default_factory=list)  # optional class names in id order (HF id2label)
    # pretraining data (core/data/bert.py): Megatron's whole-word n-gram masking, or "token"
    masking: str = "whole_word"  # whole_word | token
    max_ngram: int = 3  # whole_word: n-grams of 1..max_ngram words, P(n) proportional to 1/n

    def __post_init__(self):
        super().__post_init__()
        if self.causal:
            raise ValueError("BERT is bidirectional: causal must be false")
        if self.position != "learned":
            raise ValueError(f"BERT uses learned absolute positions, got position={self.position!r}")
        if self.add_binary_head and not self.add_pooler:
            raise ValueError("add_binary_head needs add_pooler (the binary head reads the pooled output)")
        self._check_task_head()
        if self.masking not in ("whole_word", "token") or self.max_ngram < 1:
            raise ValueError(f"masking must be whole_word or token and max_ngram at least 1, got masking="
                             f"{self.masking!r}, max_ngram={self.max_ngram}")

    def _check_task_head(self) -> None:
        if self.pooling not in ("none", "mean", "cls"):
            raise ValueError(f"pooling must be none, mean or cls, got {self.pooling!r}")
        if self.task_head not in TASK_HEADS:
            raise ValueError(f"task_head must be one of {', '.join(TASK_HEADS)}, got {self.task_head!r}")
        if self.task_head in ("sequence", "choice") and not self.add_pooler:
            raise ValueError(f"task_head={self.task_head!r} reads the pooled [CLS] output: set add_pooler=true")
        if self.task_head == "span" and self.num_labels != 2:
            raise ValueError(f"task_head='span' has 2 outputs (start, end): num_labels must be 2, "
                             f"got {self.num_labels}")
        if self.num_labels < 1:
            raise ValueError(f"num_labels must be at least 1, got {self.num_labels}")
        self.label_names = [str(n) for n in self.label_names]  # a tuple from YAML/JSON compares equal after this
        if self.label_names and self.task_head in ("sequence", "token") and len(self.label_names) != self.num_labels:
            raise ValueError(f"label_names has {len(self.label_names)} names but num_labels={self.num_labels}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "BertConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown BERT config keys {unknown}; valid keys: {sorted(known)}")
        return cls(**d)

    def padded_vocab(self, tp: int = 1) -> int:
        return padded_vocab_size(self.vocab_size, tp, self.make_vocab_size_divisible_by)


def megatron_bert(**kw) -> BertConfig:
    """Megatron-LM's BERT: pre-LN layers with a final LayerNorm, no embedding LayerNorm."""
    return BertConfig(**{**dict(post_norm=False, norm_eps=1e-5), **kw})


def original_bert(**kw) -> BertConfig:
    """The original BERT (and Hugging Face's): post-LN layers, LayerNorm on the embeddings."""
    return BertConfig(**{**dict(post_norm=True, norm_eps=1e-12), **kw})


TINY = {
    "bert-tiny": lambda **kw: megatron_bert(**{**dict(num_layers=2, hidden_size=64, num_heads=4, vocab_size=300,
                                                      seq_length=32, add_binary_head=True), **kw}),
    "bert-tiny-postln": lambda **kw: original_bert(**{**dict(num_layers=2, hidden_size=64, num_heads=4, vocab_size=300,
                                                             seq_length=32, add_binary_head=True), **kw}),
}
