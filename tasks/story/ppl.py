"""Perplexity of the gold stories under the generator: sentences 2-5, each given the sentences
before it in the generator's uncontrolled prompt (no keywords, no knowledge), the tokens of the
sentence and its end-of-document token scored; exp(summed NLL / scored tokens)."""

from __future__ import annotations

import torch

from megazoo.eval.metrics.perplexity import perplexity
from megazoo.tasks.story.inputs import generator_prompt


@torch.no_grad()
def story_perplexity(model, tok, stories) -> float:
    eod = tok.eos_token_id
    nll, count = 0.0, 0
    for story in stories:
        for t in range(1, len(story.sentences)):
            prompt = tok(generator_prompt(story.sentences[:t], [], []))["input_ids"]
            target = tok(" " + story.sentences[t])["input_ids"] + ([eod] if eod is not None else [])
            ids = torch.tensor([prompt + target])
            logp = torch.log_softmax(model(input_ids=ids[:, :-1]).float(), -1)[0]
            picked = logp[len(prompt) - 1:].gather(-1, ids[0, len(prompt):, None])
            nll -= float(picked.sum())
            count += len(target)
    return perplexity(nll, count)
