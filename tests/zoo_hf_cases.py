"""Tiny randomly initialised Hugging Face models of every supported architecture, their inputs,
and how to read comparable outputs from transformers and from megazoo (shared by the zoo tests
and their rank functions)."""

from __future__ import annotations

import torch
import torch.distributed as dist

from megazoo.zoo.heads import choice_logits, span_logits

BASE_CASES = ("gpt2", "llama", "bert", "bert-base", "bert-megatron", "t5", "t5-gated")
ODD = "llama-odd"  # 6 query heads in 3 KV groups: tp=2 needs head padding
# fine-tuned BERTs (zoo/heads/): case -> (HF class, the Auto class that reloads an export)
TASKS = {"bert-seq": ("BertForSequenceClassification", "AutoModelForSequenceClassification"),
         "bert-token": ("BertForTokenClassification", "AutoModelForTokenClassification"),
         "bert-qa": ("BertForQuestionAnswering", "AutoModelForQuestionAnswering"),
         "bert-choice": ("BertForMultipleChoice", "AutoModelForMultipleChoice"),
         "bert-megatron-qa": ("MegatronBertForQuestionAnswering", "AutoModelForQuestionAnswering"),
         "bert-megatron-choice": ("MegatronBertForMultipleChoice", "AutoModelForMultipleChoice")}
CASES = BASE_CASES + tuple(TASKS)
DECODERS = ("gpt2", "llama")
CHOICES = 3  # options per question in the multiple-choice cases


def hf_model(name: str):
    import transformers as T

    torch.manual_seed({n: i for i, n in enumerate(BASE_CASES + (ODD,) + tuple(TASKS))}[name])
    if name in TASKS:
        megatron = name.startswith("bert-megatron")
        kw = dict(vocab_size=300, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                  max_position_embeddings=32)
        if name == "bert-seq":
            kw.update(num_labels=3)
        if name == "bert-token":  # named labels travel through import and export
            names = ["O", "B-X", "I-X", "B-Y", "I-Y"]
            kw.update(id2label=dict(enumerate(names)), label2id={n: i for i, n in enumerate(names)})
        config = T.MegatronBertConfig(**kw, layer_norm_eps=1e-5) if megatron else T.BertConfig(**kw)
        m = getattr(T, TASKS[name][0])(config)
    elif name == "gpt2":
        m = T.GPT2LMHeadModel(T.GPT2Config(vocab_size=300, n_positions=32, n_embd=64, n_layer=2, n_head=4))
    elif name == "llama":
        m = T.LlamaForCausalLM(T.LlamaConfig(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                             num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=64,
                                             rope_theta=1000.0, tie_word_embeddings=False))
    elif name == ODD:
        m = T.LlamaForCausalLM(T.LlamaConfig(vocab_size=300, hidden_size=48, intermediate_size=96, num_hidden_layers=2,
                                             num_attention_heads=6, num_key_value_heads=3, max_position_embeddings=64,
                                             tie_word_embeddings=True))
    elif name in ("bert", "bert-base"):
        c = T.BertConfig(vocab_size=300, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                         max_position_embeddings=32)
        m = T.BertForPreTraining(c) if name == "bert" else T.BertModel(c)
    elif name == "bert-megatron":  # Megatron's pre-LN BERT (HF MegatronBert)
        m = T.MegatronBertForPreTraining(T.MegatronBertConfig(
            vocab_size=300, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
            max_position_embeddings=32, layer_norm_eps=1e-5))
    else:
        gated = name == "t5-gated"
        m = T.T5ForConditionalGeneration(T.T5Config(
            vocab_size=300, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2, num_heads=4,
            relative_attention_num_buckets=8, relative_attention_max_distance=20, decoder_start_token_id=0,
            feed_forward_proj="gated-gelu" if gated else "relu", tie_word_embeddings=not gated))
    with torch.no_grad():  # norms start at 1 and biases at 0: perturb them, so a swapped one shows
        for p in m.parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    return m.eval()


def inputs(name: str) -> dict:
    """transformers' inputs; the multiple-choice cases have [2, CHOICES, 12] (mz_inputs flattens)."""
    g = torch.Generator().manual_seed(7)
    b = 2 * CHOICES if name.endswith("-choice") else 2
    ids = torch.randint(3, 300, (b, 12), generator=g)
    mask = torch.ones(b, 12, dtype=torch.long)
    mask[1, 9:] = 0
    out = {"input_ids": ids}
    if name.startswith("bert"):
        out.update(attention_mask=mask, token_type_ids=(torch.arange(12) >= 6).long().expand(b, 12).contiguous())
        if name.endswith("-choice"):
            out = {k: v.reshape(2, CHOICES, 12) for k, v in out.items()}
    elif name.startswith("t5"):
        out.update(attention_mask=mask, decoder_input_ids=torch.randint(3, 300, (2, 6), generator=g))
    return out


def mz_inputs(name: str) -> dict:
    """megazoo's inputs: multiple-choice options flattened into the batch, [2 * CHOICES, 12]."""
    return {k: v.reshape(-1, v.shape[-1]) for k, v in inputs(name).items()}


@torch.no_grad()
def hf_outputs(name: str, m) -> dict:
    out = m(**inputs(name))
    if name.endswith("-qa"):
        return {"start": out.start_logits, "end": out.end_logits}
    if name in TASKS:
        return {"logits": out.logits}
    if name in ("bert", "bert-megatron"):
        return {"logits": out.prediction_logits, "binary": out.seq_relationship_logits}
    if name == "bert-base":
        return {"hidden": out.last_hidden_state, "pooled": out.pooler_output}
    return {"logits": out.logits}


@torch.no_grad()
def mz_outputs(name: str, m, hidden_states=None) -> dict:
    x = mz_inputs(name)
    if name.startswith("bert"):
        out = m(x["input_ids"] if hidden_states is None else None, x["attention_mask"], x["token_type_ids"],
                hidden_states=hidden_states)
        if torch.is_tensor(out):
            return {"stage": out}
        if name.endswith("-qa"):
            start, end = span_logits(out.logits)
            return {"start": start, "end": end}
        if name.endswith("-choice"):
            return {"logits": choice_logits(out.logits, CHOICES)}
        if name in TASKS:
            return {"logits": out.logits}
        if name in ("bert", "bert-megatron"):
            return {"logits": out.lm_logits, "binary": out.binary_logits}
        return {"hidden": out.hidden, "pooled": out.pooled}
    if name.startswith("t5"):
        return {"logits": m(x["input_ids"], x["decoder_input_ids"], attention_mask=x["attention_mask"])}
    out = m(x["input_ids"] if hidden_states is None else None, hidden_states=hidden_states)
    return {"stage": out} if not getattr(m, "post_process", True) else {"logits": out}


def pipeline_outputs(name: str, stages) -> dict:
    """Run pipeline stages (built in one process) one after the other, passing hidden states."""
    hidden = None
    for stage in stages:
        out = mz_outputs(name, stage, hidden)
        hidden = out.get("stage")
    return out


def max_err(a: dict, b: dict) -> float:
    """Largest difference relative to max(1, |reference|)."""
    assert set(a) == set(b), (set(a), set(b))
    return max(((a[k] - b[k]).abs().max() / max(1.0, b[k].abs().max().item())).item() for k in b)


# ----------------------------------------------------------------------------------------- ranks
def tp_rank_cases(converted: dict) -> dict:
    """Rank function on 2 ranks: every case (arch, config, full state) loaded at tp=2 with and
    without sp, and at a real pp=2 for the decoders and BERT; returns the outputs and the full
    state gathered back from each layout (what an export writes). No transformers import here."""
    from megazoo.core.parallel.context import ParallelConfig, ParallelContext
    from megazoo.zoo.hf import build_model, gather_full_state, load_full_state

    torch.manual_seed(0)
    out, gathered = {}, {}
    for name, (arch, cfg, state) in converted.items():
        for sp in (False, True):
            ctx = ParallelContext.build(ParallelConfig(tp=2, sp=sp))
            model = load_full_state(build_model(arch, cfg, ctx), state, ctx).eval()
            out[(name, "tp2", sp)] = mz_outputs(name, model)
            if not sp:
                gathered[(name, "tp2")] = gather_full_state(model, ctx)
        if name in DECODERS or name.startswith("bert"):
            ctx = ParallelContext.build(ParallelConfig(pp=2))
            model = load_full_state(build_model(arch, cfg, ctx), state, ctx).eval()
            if ctx.pp_rank == 0:
                dist.send(mz_outputs(name, model)["stage"].contiguous(), dst=1)
            else:
                b, s = mz_inputs(name)["input_ids"].shape
                hidden = torch.empty(s, b, cfg.hidden_size)
                dist.recv(hidden, src=0)
                out[(name, "pp2", False)] = mz_outputs(name, model, hidden)
            gathered[(name, "pp2")] = gather_full_state(model, ctx)
    return out, gathered
