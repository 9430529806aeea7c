"""Task heads on BERT (zoo/heads/): every head at tp=2, tp=2 + sp and pp=2 (through the pipeline
runtime) gives one process's loss, logits, initial weights and gradients (fp32, 1e-5); the tp ranks
agree on the head's dropout; the losses are Hugging Face's; a model built with a head exports to a
folder transformers' Auto classes load with the same logits.

One 2-rank spawn runs every head at every layout, rebuilding the ParallelContext between them."""

from __future__ import annotations

import pytest
import torch

from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.parallel.gather import full_state
from megazoo.core.parallel.launch import spawn
from megazoo.core.parallel.pipeline import finalize_grads, forward_backward
from megazoo.zoo.bert.config import TINY, BertConfig
from megazoo.zoo.heads import choice_logits, head_count, head_loss
from megazoo.zoo.hf import build_model
from tests.train_cases import one_thread

TOL = 1e-5
SEED = 1234
KINDS = ("sequence", "token", "span", "choice")
POOLINGS = ("mean", "cls")  # bi-encoder sentence vectors (BertOutput.embedding), no parameters of their own
B, S, CHOICES, LABELS = 4, 16, 2, 3  # choice: B // CHOICES questions of CHOICES options each


def config(kind: str, **kw) -> BertConfig:
    if kind in POOLINGS:
        return TINY["bert-tiny"](pooling=kind, add_lm_head=False, add_binary_head=False, seq_length=S, **kw)
    # pre-LN (Megatron) and post-LN (HF) encoders both carry heads; the token head without a pooler
    layout = "bert-tiny-postln" if kind in ("sequence", "span") else "bert-tiny"
    kw = {"add_pooler": kind != "token", **kw}
    return TINY[layout](task_head=kind, num_labels=2 if kind == "span" else LABELS, add_lm_head=False,
                        add_binary_head=False, seq_length=S, **kw)


def micro_batches(kind: str) -> list[dict]:
    """Two micro-batches of B // 2 rows: padding, segments and ignored labels in each."""
    g = torch.Generator().manual_seed(11)
    ids = torch.randint(3, 300, (B, S), generator=g)
    mask = torch.ones(B, S, dtype=torch.long)
    mask[1, 11:] = 0
    mask[3, 6:] = 0
    types = (torch.arange(S) >= S // 2).long().expand(B, S).contiguous()
    if kind == "token":
        labels = torch.randint(0, LABELS, (B, S), generator=g).masked_fill(mask == 0, -100)
    elif kind == "sequence":
        labels = torch.tensor([0, 2, -100, 1])
    else:  # the pipeline hands `labels` to the last stage: BertModel ignores them without an LM head
        labels = torch.tensor([1, 0])  # choice: one question per micro-batch
    out = []
    for m in range(2):
        rows = slice(m * B // 2, (m + 1) * B // 2)
        mb = {"input_ids": ids[rows], "attention_mask": mask[rows], "token_type_ids": types[rows]}
        mb["labels"] = labels[m:m + 1] if kind == "choice" else labels[rows]
        if kind == "span":  # an in-range span, one past the sequence (ignored, as HF), one -100 (ignored)
            mb["start_positions"] = torch.tensor([[3, S + 5], [0, -100]][m])
            mb["end_positions"] = torch.tensor([[5, 7], [S - 1, 4]][m])
        out.append(mb)
    return out


def run(kind: str, ctx: ParallelContext, **kw) -> dict:
    """forward_backward over the micro-batches at ctx's layout: the loss, this rank's full logits
    (last stage), full parameters and gradients of its stage."""
    model = build_model("bert", config(kind, **kw), ctx).initialize(SEED)
    mbs = micro_batches(kind if kind not in POOLINGS else "sequence")
    total = sum(head_count(kind, mb) for mb in mbs) if kind not in POOLINGS else len(mbs)
    logits = []

    def loss_fn(out, mb):
        if kind in POOLINGS:  # a contrastive-style score: every row against every other
            logits.append(out.embedding.detach())
            e = torch.nn.functional.normalize(out.embedding, dim=-1)
            return (e @ e.t() / 0.5).logsumexp(-1).sum() / total
        logits.append(out.logits.detach())
        return head_loss(kind, out.logits, mb)[0] / total

    loss = forward_backward([model], mbs, ctx, loss_fn, hidden_size=model.cfg.hidden_size)
    finalize_grads([model], ctx)
    return {"loss": loss.item(), "logits": torch.cat(logits) if logits else None,
            "params": full_state(model, ctx), "grads": full_state(model, ctx, grads=True)}


def rank_cases() -> dict:
    torch.manual_seed(0)
    out = {}
    for kind in POOLINGS:
        for layout, pc in (("tp2+sp", ParallelConfig(tp=2, sp=True)), ("pp2", ParallelConfig(pp=2))):
            out[(kind, layout)] = run(kind, ParallelContext.build(pc))
    for kind in KINDS:
        for layout, pc in (("tp2", ParallelConfig(tp=2)), ("tp2+sp", ParallelConfig(tp=2, sp=True)),
                           ("pp2", ParallelConfig(pp=2))):
            out[(kind, layout)] = run(kind, ParallelContext.build(pc))
        # head dropout (and the encoder's) on: the tp ranks must still agree on the logits
        out[(kind, "tp2+sp dropout")] = run(kind, ParallelContext.build(ParallelConfig(tp=2, sp=True)),
                                            dropout=0.3)["logits"]
    return out


@pytest.fixture(scope="module")
def layouts():
    with one_thread():
        refs = {kind: run(kind, ParallelContext.single()) for kind in KINDS + POOLINGS}
        refs.update({(kind, "dropout"): run(kind, ParallelContext.single(), dropout=0.3)["logits"] for kind in KINDS})
    return refs, spawn(rank_cases, 2, timeout=300)


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and (a - b).abs().max().item() <= TOL * max(1.0, b.abs().max().item())


@pytest.mark.parametrize("kind", KINDS)
def test_heads_match_one_process_at_tp2_sp_and_pp2(kind, layouts):
    refs, results = layouts
    ref = refs[kind]
    assert ref["loss"] > 0 and ref["grads"]["task_head.classifier.weight"].abs().sum() > 0
    failures = []
    for layout in ("tp2", "tp2+sp", "pp2"):
        per_rank = [r[(kind, layout)] for r in results]
        last = per_rank[-1]  # pp2: the last stage has the loss and logits; tp2: every rank has them
        if abs(last["loss"] - ref["loss"]) > TOL * max(1.0, abs(ref["loss"])):
            failures.append(f"{layout}: loss {last['loss']} vs {ref['loss']}")
        for rank, r in enumerate(per_rank if layout != "pp2" else per_rank[-1:]):
            if not close(r["logits"], ref["logits"]):
                failures.append(f"{layout} rank {rank}: logits differ")
        for what in ("params", "grads"):  # pp2: each stage holds its own parameters
            got = {k: v for r in per_rank for k, v in r[what].items()}
            if got.keys() != ref[what].keys():
                failures.append(f"{layout}: {what} {sorted(got.keys() ^ ref[what].keys())} differ in name")
                continue
            failures += [f"{layout}: {what} of {k} differ" for k in ref[what] if not close(got[k], ref[what][k])]
    assert not failures, "\n".join(failures[:20])


@pytest.mark.parametrize("kind", POOLINGS)
def test_sentence_vectors_match_one_process_at_tp2_sp_and_pp2(kind, layouts):
    from megazoo.zoo.pooling import pool

    refs, results = layouts
    ref = refs[kind]
    for layout in ("tp2+sp", "pp2"):
        per_rank = [r[(kind, layout)] for r in results]
        assert close(per_rank[-1]["logits"], ref["logits"]), layout
        got = {k: v for r in per_rank for k, v in r["grads"].items()}
        assert all(close(got[k], ref["grads"][k]) for k in ref["grads"]), layout
    # the vector is the pooling of the last hidden states: mean skips padding, cls takes position 0
    model = build_model("bert", config(kind), ParallelContext.single()).initialize(SEED).eval()
    mb = micro_batches("sequence")[0]
    out = model(input_ids=mb["input_ids"], attention_mask=mb["attention_mask"], token_type_ids=mb["token_type_ids"])
    assert torch.allclose(out.embedding, pool(out.hidden, mb["attention_mask"], kind))
    assert kind == "cls" or not torch.allclose(out.embedding, out.hidden.float().mean(1))  # padding excluded


@pytest.mark.parametrize("kind", KINDS)
def test_tp_ranks_agree_on_head_dropout(kind, layouts):
    refs, results = layouts
    a, b = (r[(kind, "tp2+sp dropout")] for r in results)
    assert torch.equal(a, b)
    assert not close(refs[(kind, "dropout")], refs[kind]["logits"])  # dropout was on


def test_logit_shapes_and_choice_view():
    with torch.no_grad(), one_thread():
        for kind, shape in (("sequence", (2, LABELS)), ("token", (2, S, LABELS)), ("span", (2, S, 2)),
                            ("choice", (2,))):
            model = build_model("bert", config(kind)).initialize(SEED).eval()
            mb = micro_batches(kind)[0]
            out = model(mb["input_ids"], mb["attention_mask"], mb["token_type_ids"], labels=mb["labels"])
            assert tuple(out.logits.shape) == shape, kind
            assert out.lm_logits is None and out.lm_loss is None
    assert choice_logits(torch.arange(6.0), 3).tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="groups of 4"):
        choice_logits(torch.arange(6.0), 4)


@pytest.mark.parametrize("kind", ["sequence", "choice"])
def test_a_pooled_head_runs_the_last_layer_on_cls_only(kind):
    """sequence/choice heads read the pooled [CLS]: the last layer computes position 0 alone (its
    MLP and output projection on one row, not S), with the same logits and gradients as the whole
    last layer; heads that read every position keep it whole."""
    with one_thread():
        grads = {}
        for cls_only in (True, False):
            model = build_model("bert", config(kind)).initialize(SEED)
            assert model.cls_only
            model.cls_only = cls_only
            rows = []
            last = model.layers[str(model.cfg.num_layers - 1)].mlp
            hook = last.register_forward_hook(lambda m, args, out: rows.append(args[0].shape[0]))
            mb = micro_batches(kind)[0]
            out = model(mb["input_ids"], mb["attention_mask"], mb["token_type_ids"])
            hook.remove()
            assert rows == [1 if cls_only else S]
            out.logits.float().pow(2).sum().backward()
            grads[cls_only] = (out.logits.detach(), {n: p.grad.clone() for n, p in model.named_parameters()
                                                     if p.grad is not None})
    (la, ga), (lb, gb) = grads[True], grads[False]
    assert close(la, lb)
    assert ga.keys() == gb.keys()
    for n in ga:
        assert close(ga[n], gb[n]), n
    assert not build_model("bert", config("token")).cls_only
    assert not build_model("bert", config("span")).cls_only


def test_losses_are_huggingfaces():
    """head_loss / head_count equals the loss transformers computes for the same logits."""
    from megazoo.zoo.hf import import_hf
    from tests.zoo_hf_cases import CHOICES as C
    from tests.zoo_hf_cases import hf_model, inputs, mz_inputs

    tags = torch.randint(0, 5, (2, 12), generator=torch.Generator().manual_seed(3))
    cases = {"bert-seq": ("sequence", {"labels": torch.tensor([2, 0])}),
             "bert-token": ("token", {"labels": tags.index_fill(1, torch.tensor([0, 11]), -100)}),
             # the second answer lies outside the 12 tokens: ignored (HF clamps it to 12 and skips it)
             "bert-qa": ("span", {"start_positions": torch.tensor([3, 40]), "end_positions": torch.tensor([5, 50])}),
             "bert-choice": ("choice", {"labels": torch.tensor([1, C - 1])})}
    for name, (kind, labels) in cases.items():
        hf = hf_model(name)
        with torch.no_grad():
            want = hf(**inputs(name), **labels).loss
            x = mz_inputs(name)
            logits = import_hf(hf)(x["input_ids"], x["attention_mask"], x["token_type_ids"]).logits
        loss, count = head_loss(kind, logits, {**x, **labels})
        assert (loss / count).item() == pytest.approx(want.item(), rel=1e-5, abs=1e-6), name
    regression = head_loss("sequence", torch.tensor([[1.0], [2.0], [5.0]]), {"labels": torch.tensor([0.5, 2.0, -100])})
    assert [t.item() for t in regression] == [0.25, 2.0]


@pytest.mark.parametrize("kind", ["sequence", "token"])
def test_a_model_built_with_a_head_exports(kind, tmp_path):
    """A head trained on an encoder that kept its pooler (as after starting from a base model):
    the Auto class loads the export with the same logits; HF's token classifier has no pooler."""
    import transformers as T

    from megazoo.zoo.hf import export_hf

    cfg = config(kind, add_pooler=True, label_names=[f"c{i}" for i in range(LABELS)])
    with one_thread():
        model = build_model("bert", cfg).initialize(SEED).eval()
        mb = micro_batches(kind)[0]
        with torch.no_grad():
            mine = model(mb["input_ids"], mb["attention_mask"], mb["token_type_ids"]).logits
        folder = export_hf(tmp_path / "hf", "bert", cfg, full_state(model, model.ctx))
    auto = T.AutoModelForSequenceClassification if kind == "sequence" else T.AutoModelForTokenClassification
    hf = auto.from_pretrained(folder).eval()
    assert hf.config.id2label == {i: f"c{i}" for i in range(LABELS)}
    with torch.no_grad():
        theirs = hf(input_ids=mb["input_ids"], attention_mask=mb["attention_mask"],
                    token_type_ids=mb["token_type_ids"]).logits
    assert close(theirs, mine)


def test_config_checks_and_old_configs():
    with pytest.raises(ValueError, match="task_head must be one of none, sequence, token, span, choice"):
        BertConfig(task_head="ner")
    with pytest.raises(ValueError, match="set add_pooler=true"):
        BertConfig(task_head="choice", add_pooler=False, add_binary_head=False)
    with pytest.raises(ValueError, match="num_labels must be 2"):
        BertConfig(task_head="span", num_labels=3)
    with pytest.raises(ValueError, match="label_names has 2 names but num_labels=3"):
        BertConfig(task_head="token", num_labels=3, label_names=["a", "b"])
    cfg = TINY["bert-tiny"](task_head="token", num_labels=3, label_names=("O", "B", "I"))
    assert BertConfig.from_dict(cfg.to_dict()) == cfg
    new_keys = ("task_head", "num_labels", "label_names")
    old = {k: v for k, v in TINY["bert-tiny"]().to_dict().items() if k not in new_keys}
    assert BertConfig.from_dict(old).task_head == "none"
