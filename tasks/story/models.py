"""The trained components at generation time: a decoder that completes prompts (generator, keyword
predictor) and the ranker that orders knowledge sentences."""

from __future__ import annotations

import re

import torch

END = re.compile(r"(?<=[.!?])\s")


class Decoder:
    """A decoder checkpoint (training run, iter_*, import-hf or HF folder) that completes prompts
    greedily, one line each."""

    def __init__(self, checkpoint, max_new_tokens: int = 32, batch: int = 16):
        from megazoo.eval.taskkit import load_decoder

        self.model, self.tok = load_decoder(checkpoint)
        self.max_new_tokens, self.batch = max_new_tokens, batch

    def complete(self, prompts: list[str]) -> list[str]:
        from megazoo.zoo.generate import generate

        eos = self.tok.eos_token_id
        out = []
        for i in range(0, len(prompts), self.batch):
            ids = [self.tok(p)["input_ids"] for p in prompts[i:i + self.batch]]
            gen = generate(self.model, ids, self.max_new_tokens, eos_token_id=eos,
                           pad_token_id=self.tok.pad_token_id or eos, stop_strings=["\n"], tokenizer=self.tok)
            out += [self.tok.decode(g, skip_special_tokens=True).split("\n")[0].strip() for g in gen]
        return out


def first_sentence(text: str) -> str:
    """The text up to its first sentence end (a generator may run on into a second sentence)."""
    return END.split(text.strip(), maxsplit=1)[0].strip() if text.strip() else ""


class Ranker:
    """A ranker training checkpoint (task.component: ranker) that orders knowledge sentences."""

    def __init__(self, checkpoint):
        from megazoo.eval.taskkit import NotTaskCheckpoint, open_task_model

        try:
            loaded = open_task_model(checkpoint, "story", "ranker", kind_key="component", default_kind="generator")
        except NotTaskCheckpoint as e:
            raise NotTaskCheckpoint(f"--ranker {checkpoint}: {e}; train a ranker with `megazoo task story train "
                                    f"story-ranker`") from None
        self.builder, self.ctx, self.chunks, self.tok = loaded.builder, loaded.ctx, loaded.chunks, loaded.tokenizer

    @torch.no_grad()
    def order(self, context: list[str], candidates: list[str]) -> list[str]:
        """The candidates best first (a single candidate or none: as given)."""
        from megazoo.tasks.story.ranker_builder import encode_steps

        if len(candidates) < 2:
            return list(candidates)
        inputs = encode_steps([{"context": context, "candidates": candidates}], self.tok,
                              self.builder.settings.max_seq_length)
        scores = self.builder.choice_scores(self.chunks, self.ctx, inputs)[0]
        return [candidates[i] for i in scores.argsort(descending=True).tolist()]
