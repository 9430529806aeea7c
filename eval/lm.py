"""The language-model interface the evaluation harness scores, with a megazoo and a transformers
implementation, so every suite can be run on both and compared.

A LanguageModel tokenises (`encode`, `decode`, `eot_id`), knows its context length (`max_length`)
and returns next-token log-probabilities for a right-padded batch (`logprobs`). Right padding
never changes the log-probabilities of real tokens in a causal model, which is what makes the
scores batch-invariant.
"""

from __future__ import annotations

from typing import Protocol, Sequence

import torch


class LanguageModel(Protocol):
    max_length: int
    eot_id: int

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def logprobs(self, input_ids: torch.Tensor) -> torch.Tensor:
        """[b, s] token ids -> [b, s, vocab] log-softmax of the next-token distribution (fp32+)."""
        ...


END_TOKENS = ("<|endoftext|>", "</s>")  # GPT-2's end of text (id 50256), T5/Llama-style end of sequence


def _named_end_token(tokenizer) -> int | None:
    """The id of a well-known end-of-text token in the vocabulary: a tokenizer folder saved without
    its special-token settings (GPT-2's vocab.json/merges.txt/tokenizer.json alone) has no eos_token
    but still has <|endoftext|>."""
    lookup = getattr(tokenizer, "convert_tokens_to_ids", None) or getattr(tokenizer, "token_to_id", None)
    if lookup is None:
        return None
    unk = getattr(tokenizer, "unk_token_id", None)
    for token in END_TOKENS:
        found = lookup(token)
        if isinstance(found, int) and found != unk:
            return found
    return None


class TokenizerAdapter:
    """encode/decode over a Hugging Face tokenizer or a megazoo tokenizer (no special tokens added)."""

    def __init__(self, tokenizer, eot_id: int | None = None):
        self.tok = tokenizer
        self.is_hf = hasattr(tokenizer, "convert_tokens_to_ids")
        if eot_id is None:
            eot_id = getattr(tokenizer, "eos_token_id", None)
            if eot_id is None:
                eot_id = getattr(tokenizer, "eod", None) or getattr(tokenizer, "eod_id", None)
            if eot_id is None:
                eot_id = _named_end_token(tokenizer)
        if eot_id is None:
            raise ValueError("the tokenizer has no end-of-text id (no eos token, no <|endoftext|> or </s> in its "
                             "vocabulary); pass eot_id explicitly")
        self.eot_id = int(eot_id)

    def encode(self, text: str) -> list[int]:
        if self.is_hf:
            return list(self.tok.encode(text, add_special_tokens=False))
        return list(self.tok.encode(text))

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        if self.is_hf:
            return self.tok.decode(list(ids), skip_special_tokens=skip_special_tokens)
        return self.tok.decode(list(ids))


class _Tokenized:
    """encode/decode through the model's TokenizerAdapter (`self.tok`)."""

    tok: TokenizerAdapter

    def encode(self, text: str) -> list[int]:
        return self.tok.encode(text)

    def decode(self, ids: Sequence[int]) -> str:
        return self.tok.decode(ids)


class MegazooLM(_Tokenized):
    """A megazoo decoder at any layout: one model (any tensor-parallel degree), or this rank's
    pipeline chunks (a list). Every rank of the layout runs the same scoring calls; with pipeline
    parallelism the last stage's log-probabilities are broadcast, so every rank gets the scores."""

    def __init__(self, model, tokenizer, max_length: int | None = None, eot_id: int | None = None,
                 source: str | None = None):
        self.chunks = [c.eval() for c in model] if isinstance(model, (list, tuple)) else [model.eval()]
        self.model = self.chunks[0]
        self.ctx = self.model.ctx
        self.tok = tokenizer if isinstance(tokenizer, TokenizerAdapter) else TokenizerAdapter(tokenizer, eot_id)
        self.eot_id = self.tok.eot_id
        self.max_length = max_length or self.model.cfg.seq_length
        self.source = source or "the model"  # the checkpoint, for messages
        param = next(self.model.parameters())
        self.device, self.dtype = param.device, param.dtype

    def check_ids(self, input_ids: torch.Tensor) -> None:
        """Refuse (ValueError) token ids past the model's vocabulary: a tokenizer that is not the
        checkpoint's would otherwise index past the embedding table (an IndexError deep in torch) or,
        inside its padding rows, score silently wrong."""
        vocab = self.model.cfg.vocab_size
        top = int(input_ids.max()) if input_ids.numel() else 0
        if top >= vocab or (input_ids.numel() and int(input_ids.min()) < 0):
            raise ValueError(f"{self.source}: the tokenizer gives token id {top}, but the model's vocabulary has "
                             f"{vocab} tokens; the tokenizer is not the one the checkpoint was trained with (or it "
                             f"was trained on synthetic data), so it cannot score this text")

    @torch.no_grad()
    def logprobs(self, input_ids: torch.Tensor) -> torch.Tensor:
        self.check_ids(input_ids)
        input_ids = input_ids.to(self.device)
        if self.ctx.pp == 1:
            return torch.log_softmax(self.model(input_ids=input_ids).float(), dim=-1)
        from megazoo.core.parallel.pipeline import broadcast_from_last_stage, forward_backward

        captured = []

        def keep_logprobs(logits, _mb):  # the last stage's "loss": stash the scores, backprop nothing
            captured.append(torch.log_softmax(logits.float(), dim=-1))
            return logits.new_zeros(())

        cfg = self.model.cfg
        forward_backward(self.chunks, [{"input_ids": input_ids, "labels": None}], self.ctx, keep_logprobs,
                         forward_only=True, hidden_size=cfg.hidden_size, dtype=self.dtype)
        shape = (*input_ids.shape, cfg.vocab_size)
        out = captured[0] if captured else torch.zeros(shape, dtype=torch.float32, device=self.device)
        return broadcast_from_last_stage(out, self.ctx)

    @torch.no_grad()
    def generate_greedy(self, ids: Sequence[int], max_new: int, until: Sequence[str] = ()) -> list[int]:
        """Greedy continuation with the KV cache, at any layout (every rank calls it): ends at the
        end-of-text token (not returned) or once the text holds a stop string. The context keeps
        its last max_length - max_new tokens, as lm-eval's own backends truncate it."""
        from megazoo.zoo.generate import generate

        self.check_ids(torch.tensor(list(ids), dtype=torch.long))
        ids = list(ids)[-max(1, self.max_length - max_new):]
        max_new = min(max_new, self.max_length - len(ids))
        model = self.chunks if self.ctx.pp > 1 else self.model
        new = generate(model, [ids], max_new, eos_token_id=self.eot_id, stop_strings=[s for s in until if s] or None,
                       tokenizer=self.tok)[0]
        return new[:-1] if new and new[-1] == self.eot_id else new


class HFCausalLM(_Tokenized):
    """A transformers causal LM, the reference the harness is checked against."""

    def __init__(self, model, tokenizer, max_length: int | None = None, eot_id: int | None = None):
        self.model = model.eval()
        self.tok = TokenizerAdapter(tokenizer, eot_id)
        self.eot_id = self.tok.eot_id
        self.max_length = max_length or getattr(model.config, "max_position_embeddings", None) or 2048
        self.device = next(model.parameters()).device

    @torch.no_grad()
    def logprobs(self, input_ids: torch.Tensor) -> torch.Tensor:
        logits = self.model(input_ids=input_ids.to(self.device)).logits
        return torch.log_softmax(logits.float(), dim=-1)
