"""Language-modelling tasks: LAMBADA (strict or non-strict last-word accuracy, zero- or few-shot)
and wikitext103_megatron (Megatron's WikiText-103 adjusted perplexity over overlapping windows)."""

from __future__ import annotations

import math

from megazoo.eval.lm import LanguageModel
from megazoo.eval.metrics.perplexity import adjusted_perplexity, original_token_count, plan_windows
from megazoo.eval.readers import LambadaExample, read_lambada, read_wikitext, wikitext_detokenize
from megazoo.eval.readers.common import read_text
from megazoo.eval.scoring import loglikelihood_tokens, split_request
from megazoo.eval.suites.fewshot import draw_shots, same_split
from megazoo.eval.task_names import WIKITEXT

LAMBADA_MODES = ("strict", "nonstrict")
WIKITEXT_STRIDE = 32  # Megatron-LM tasks/main.py: --overlapping-eval defaults to 32


def lambada_fewshot_prompt(shots: list[LambadaExample], query: LambadaExample) -> str:
    """GPT-3's fill-in-the-blank LAMBADA prompt (Brown et al. 2020, section 3.1.2), which MT-NLG's
    one- and few-shot LAMBADA rows use. Every solved example is its context, " ___. -> " and its
    last word; examples are separated by a blank line; the query ends at the arrow:

        {context 1} ___. -> {word 1}\\n\\n{context 2} ___. -> {word 2}\\n\\n{query context} ___. ->

    and the scored continuation is " " + the query's word. (The paper's figure prints the arrow
    as "→"; this harness writes it in ASCII, "->".)
    """
    solved = "".join(f"{s.context} ___. -> {s.target}\n\n" for s in shots)
    return f"{solved}{query.context} ___. ->"


def _lambada_request(lm: LanguageModel, doc: LambadaExample, shots: list[LambadaExample] | None,
                     mode: str) -> tuple[list[int], list[int]]:
    prompt = lambada_fewshot_prompt(shots, doc) if shots else doc.context
    if mode == "strict":
        # the whole last word: context and " " + word tokenised apart (lm-eval's split)
        return split_request(lm, prompt, " " + doc.target)
    # non-strict (Megatron without --strict-lambada): tokenise the whole text, score its last token
    text = doc.text if not shots else f"{prompt} {doc.target}"
    tokens = lm.encode(text)
    return tokens[:-1] or [lm.eot_id], tokens[-1:]


def evaluate_lambada(lm: LanguageModel, path, batch_size: int = 8, limit: int | None = None,
                     progress: bool = False, mode: str = "strict", num_fewshot: int = 0, fewshot_path=None,
                     seed: int = 1234) -> dict:
    """LAMBADA accuracy and the perplexity of the scored tokens.

    mode "strict" (Megatron's --strict-lambada, the default here): correct only when every token of
    the last word is the greedy prediction. "nonstrict" (Megatron's default): only the final BPE
    token of the text is scored. With num_fewshot > 0 each question gets its own k examples in
    GPT-3's fill-in-the-blank format, drawn from `fewshot_path` or, without one, from the same
    file minus the question (LAMBADA has no training split; GPT-3 drew from its dev set).
    """
    if mode not in LAMBADA_MODES:
        raise ValueError(f"lambada mode must be one of {', '.join(LAMBADA_MODES)}, got {mode!r}")
    docs = read_lambada(path)[:limit]
    shots: list = [None] * len(docs)
    if num_fewshot:
        exclude = same_split(path, fewshot_path)
        pool = read_lambada(path if fewshot_path is None else fewshot_path)
        shots = draw_shots(pool, num_fewshot, len(docs), seed, exclude)
    requests = [_lambada_request(lm, d, s, mode) for d, s in zip(docs, shots)]
    scores = loglikelihood_tokens(lm, requests, batch_size, progress)
    n_tokens = sum(len(cont) for _, cont in requests)
    total_ll = sum(s for s, _ in scores)
    return {"acc": sum(g for _, g in scores) / max(1, len(docs)), "n": len(docs),
            "ppl": math.exp(-total_ll / max(1, n_tokens)), "mode": mode, "num_fewshot": num_fewshot}


def wikitext_requests(tokens: list[int], seq_length: int, stride: int) -> list[tuple[list[int], list[int]]]:
    """(context ids, scored ids) per window of Megatron's overlapping evaluation.

    The rule (Megatron-LM tasks/zeroshot_gpt/datasets.py, _LMDataset): window i covers tokens
    [i*stride, i*stride + seq_length] (seq_length inputs, their next tokens the targets); the first
    window scores all its targets, every later one only its last `stride` target positions. The
    tail window is cut at the end of the text, as Megatron pads it and masks the padding out.
    Megatron makes ceil((T - stride) / stride) + 1 windows for T = len(tokens) - 1 targets; the
    last of them can be all padding (they score nothing), and plan_windows leaves those out, so
    the set of scored targets is the same: each of targets 1 .. T exactly once.
    """
    windows = plan_windows(len(tokens), seq_length, stride)
    return [(tokens[w.begin: w.score_begin], tokens[w.score_begin: w.end]) for w in windows]


def evaluate_wikitext(lm: LanguageModel, path, stride: int | None = None, batch_size: int = 8,
                      progress: bool = False) -> dict:
    """Megatron's WikiText-103 evaluation: the detokenised test file as one token stream scored in
    windows of the model's length advancing by `stride` (default 32, Megatron's --overlapping-eval;
    capped at the model's length); the adjusted perplexity renormalises the loss by the original
    word-level token count. The stride used is in the results."""
    stride = min(WIKITEXT_STRIDE if stride is None else int(stride), lm.max_length)
    if stride < 1:
        raise ValueError(f"{WIKITEXT} stride must be a positive number of tokens, got {stride}")
    read_wikitext(path)  # validates the format (UTF-8, headings, non-empty) with file/line errors
    raw = read_text(path, "WikiText-103 raw tokens")
    tokens = lm.encode(wikitext_detokenize(raw))
    requests = wikitext_requests(tokens, lm.max_length, stride)
    total = -sum(s for s, _ in loglikelihood_tokens(lm, requests, batch_size, progress))
    return {**adjusted_perplexity(total, len(tokens), original_token_count(raw)), "tokens": len(tokens),
            "stride": stride}
