"""Generation: greedy decoding matches transformers' generate (batched, left-padded, with and
without the KV cache) for GPT-2, Llama and T5; the logit filters match transformers' processors;
end tokens and stop strings end a sequence where they should."""

from __future__ import annotations

import pytest
import torch

from megazoo.zoo.generate import generate, process_logits
from megazoo.zoo.hf import import_hf
from tests.zoo_hf_cases import hf_model

PROMPTS = [[5, 17, 42, 99, 7, 3, 150], [11, 12], [200, 201, 202, 203]]


def hf_greedy(m, prompts, n, pad=0, **kw):
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    out = m.generate(input_ids=ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                     pad_token_id=pad, eos_token_id=None, **kw)
    return out[:, width:].tolist() if not m.config.is_encoder_decoder else out[:, 1:].tolist()


@pytest.fixture(scope="module")
def models():
    return {name: (m := hf_model(name), import_hf(m)) for name in ("gpt2", "llama", "t5")}


@pytest.mark.parametrize("name", ["gpt2", "llama", "t5"])
def test_greedy_matches_transformers_generate(name, models):
    hf, mz = models[name]
    want = hf_greedy(hf, PROMPTS, 10)
    assert generate(mz, PROMPTS, 10) == want
    assert generate(mz, PROMPTS, 10, use_cache=False) == want
    assert [generate(mz, [p], 10)[0] for p in PROMPTS] == want  # batching and padding change nothing


def test_filters_match_transformers_processors():
    from transformers.generation.logits_process import (RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper,
                                                        TopKLogitsWarper, TopPLogitsWarper)

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 50, generator=g) * 3
    seq = torch.randint(0, 50, (3, 6), generator=g)
    seen = torch.zeros(3, 50, dtype=torch.bool).scatter(1, seq, True)
    cases = [(dict(temperature=0.7), [TemperatureLogitsWarper(0.7)]),
             (dict(top_k=5), [TopKLogitsWarper(5)]),
             (dict(top_p=0.8), [TopPLogitsWarper(0.8)]),
             (dict(repetition_penalty=1.3), [RepetitionPenaltyLogitsProcessor(1.3)]),
             (dict(repetition_penalty=1.2, temperature=0.5, top_k=10, top_p=0.9),
              [RepetitionPenaltyLogitsProcessor(1.2), TemperatureLogitsWarper(0.5), TopKLogitsWarper(10), TopPLogitsWarper(0.9)])]
    for kw, procs in cases:
        want = logits.clone()
        for p in procs:
            want = p(seq, want)
        got = process_logits(logits, seen, **kw)
        assert torch.equal(torch.isinf(got), torch.isinf(want)), kw
        assert torch.allclose(got[~torch.isinf(got)], want[~torch.isinf(want)], atol=1e-6), kw


def test_sampling_is_seeded_and_stops(models):
    _, mz = models["llama"]
    a = generate(mz, PROMPTS, 12, do_sample=True, temperature=0.9, top_k=20, top_p=0.9, seed=3)
    assert a == generate(mz, PROMPTS, 12, do_sample=True, temperature=0.9, top_k=20, top_p=0.9, seed=3)
    assert a != generate(mz, PROMPTS, 12, do_sample=True, temperature=0.9, top_k=20, top_p=0.9, seed=4)
    greedy = generate(mz, PROMPTS, 12)
    eos = greedy[0][4]  # the fifth greedy token of the first prompt as an end token
    out = generate(mz, PROMPTS, 12, eos_token_id=[eos, 299])
    assert out[0] == greedy[0][: greedy[0].index(eos) + 1]
    for got, full in zip(out[1:], greedy[1:]):
        assert got == full[: full.index(eos) + 1] if eos in full else got == full
    # min_new_tokens holds the end token back, as transformers does
    hf, _ = models["llama"]
    want = hf.generate(torch.tensor([PROMPTS[0]]), max_new_tokens=12, min_new_tokens=8, do_sample=False,
                       eos_token_id=eos, pad_token_id=0)[0, len(PROMPTS[0]):].tolist()
    assert generate(mz, [PROMPTS[0]], 12, eos_token_id=eos, min_new_tokens=8) == [want]
    assert len(want) >= 8


class CharTokenizer:
    """Token t is the letter chr(97 + t % 26)."""

    def decode(self, tokens, skip_special_tokens=False):
        return "".join(chr(97 + t % 26) for t in tokens)


def test_stop_strings(models):
    _, mz = models["gpt2"]
    tok = CharTokenizer()
    full = generate(mz, PROMPTS, 12)
    text = tok.decode(full[0])
    stop = text[5:7]  # ends the first sequence at its first occurrence
    out = generate(mz, PROMPTS, 12, stop_strings=[stop], tokenizer=tok)
    cut = text.index(stop) + len(stop)
    assert out[0] == full[0][:cut]
    assert all(stop not in tok.decode(o[:-1]) for o in out)
    with pytest.raises(ValueError, match="stop_strings need a tokenizer"):
        generate(mz, PROMPTS, 2, stop_strings=["x"])


def test_the_kv_cache_writes_new_positions_into_its_room_and_grows():
    """Each update appends in place (the past is not copied again: the layer's keys stay a view of
    the same buffer) until the room runs out; then it grows, and the values always equal a plain
    concatenation. select keeps batch rows."""
    from megazoo.core.nn.attention import KVCache

    g = torch.Generator().manual_seed(0)
    cache, ks, vs = KVCache(), [], []
    buffers = []
    for s in (5, 1, 1, 60, 1, 70):  # a prefill, decode steps, then blocks that outgrow the room
        k, v = torch.randn(2, 3, s, 4, generator=g), torch.randn(2, 3, s, 4, generator=g)
        ks.append(k)
        vs.append(v)
        got_k, got_v = cache.update(7, k, v)
        assert torch.equal(got_k, torch.cat(ks, 2)) and torch.equal(got_v, torch.cat(vs, 2))
        buffers.append(got_k.untyped_storage().data_ptr())
    assert cache.length() == 138
    assert len(set(buffers[:5])) == 1, "appended in place while the room (69 positions after the prefill) lasts"
    assert buffers[5] != buffers[4], "grown when the room ran out"
    cache.select(torch.tensor([1]))
    k, v = torch.randn(1, 3, 1, 4, generator=g), torch.randn(1, 3, 1, 4, generator=g)
    got_k, _ = cache.update(7, k, v)
    assert torch.equal(got_k, torch.cat([torch.cat(ks, 2)[1:], k], 2))


def test_long_greedy_generation_with_a_growing_cache_equals_no_cache(models):
    """90 new tokens (rotary positions: no position table to outgrow): the cache's room (twice the
    prompt, at least 64 more) runs out and grows mid-way."""
    _, mz = models["llama"]
    with torch.no_grad():
        cached = generate(mz, PROMPTS, 90, pad_token_id=0, eos_token_id=None, min_new_tokens=90)
        plain = generate(mz, PROMPTS, 90, pad_token_id=0, eos_token_id=None, min_new_tokens=90, use_cache=False)
    assert cached == plain


@pytest.mark.parametrize("name", ["llama", "gpt2"])
def test_several_new_positions_after_a_cached_past_see_only_their_past(name, models):
    """A prompt fed in two pieces through the cache (5 positions, then 4 at once) gives the logits
    of the whole prompt in one pass: the 4 new queries are the last 4 of 9 positions."""
    from megazoo.core.nn.attention import KVCache

    _, mz = models[name]
    ids = torch.tensor([PROMPTS[0] + [8, 9]])
    with torch.no_grad():
        whole = mz(ids)
        cache = KVCache()
        first = mz(ids[:, :5], cache=cache)
        rest = mz(ids[:, 5:], cache=cache)
    torch.testing.assert_close(torch.cat([first, rest], 1), whole, rtol=1e-5, atol=1e-5)
