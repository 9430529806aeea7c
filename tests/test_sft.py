"""Supervised decoder fine-tuning (task sft): the loss is the mean over response tokens, checked by
hand from the model's logits; tp2 x pp2 reproduces one process (fp32, 1e-5); train.init_from starts
from a pretraining checkpoint; chats, truncation and padding; one clear error per bad input."""

import json
from pathlib import Path

import pytest
import torch

from megazoo.core.data import build_tokenizer
from megazoo.core.data.sft import IGNORE, SFTDataError, cut, pad_batch, read_examples, split_files, tokenize
from megazoo.core.parallel.gather import full_state
from megazoo.core.parallel.launch import spawn
from megazoo.core.train import RunConfig, Trainer
from megazoo.core.train.errors import ConfigError
from tests.train_cases import one_thread, run_cases

FIXTURE = Path(__file__).parent / "fixtures" / "sft" / "pairs.jsonl"
TOL = 1e-5


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer("gpt2")


def sft(run_dir, data, *overrides: str) -> RunConfig:
    """sft-tiny shrunk: hidden 32, seq 32, 3 steps of 4 samples, quiet, no checkpoints."""
    base = [f"data.path={data}", "model.hidden_size=32", "model.seq_length=32", "train.epochs=0", "train.steps=3",
            "train.warmup_fraction=0", "train.eval_iters=1", "log.progress=false", "log.plot=false",
            "checkpoint.save=false", "checkpoint.resume=none", f"log.dir={run_dir}"]
    return RunConfig.load("sft-tiny", base + list(overrides))


def write_jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


# the loss, by hand ---------------------------------------------------------------------------------
PAIRS = [("Q: What is len?\nA:", " The number of items."),
         ("Q: Which module reads CSV files?\nA:", " csv"),
         ("Q: Sort?\nA:", " sorted() returns a new sorted list."),
         ("Q: How do I join strings with a comma between them?\nA:", " ', '.join(items)")]


def test_the_loss_is_the_mean_over_response_tokens(tmp_path, tok):
    data = tmp_path / "data"
    write_jsonl(data / "train.jsonl", [{"prompt": p, "response": r} for p, r in PAIRS])
    write_jsonl(data / "valid.jsonl", [{"prompt": "Q: max?\nA:", "response": " The largest item."}])
    # each row by hand: prompt + response + EOD, shifted; the loss falls on response and EOD only
    expected = {}
    for p, r in PAIRS:
        prompt, response = tok.encode(p), tok.encode(r) + [tok.eod]
        tokens = prompt + response
        expected[tuple(tokens[:-1])] = [IGNORE] * (len(prompt) - 1) + response
    with one_thread():
        t = Trainer(sft(tmp_path / "run", data))
        try:
            mbs = t.train_data.step(0)
            (model,) = t.chunks
            total, n, seen = 0.0, 0, 0
            with torch.no_grad():
                for mb in mbs:
                    s = mb["input_ids"].shape[1]
                    assert s % 8 == 0 and s <= 32
                    logp = torch.log_softmax(model(mb["input_ids"]).double(), dim=-1)
                    for row in range(mb["input_ids"].shape[0]):
                        key = next(k for k in expected if mb["input_ids"][row, : len(k)].tolist() == list(k))
                        labels = expected[key]
                        assert mb["labels"][row].tolist() == labels + [IGNORE] * (s - len(labels))
                        seen += 1
                        for pos, target in enumerate(labels):
                            if target != IGNORE:
                                total -= logp[row, pos, target].item()
                                n += 1
            got = t.train_step(mbs)["loss"]
        finally:
            t.close()
    assert seen == 4 and n == sum(len(tok.encode(r)) + 1 for _, r in PAIRS)
    assert abs(got - total / n) <= 1e-6, (got, total / n)


@pytest.mark.parametrize("name,case", [("gpt-tiny", "plain"), ("llama-tiny", "plain"), ("llama-tiny", "padding mask"),
                                       ("llama-tiny", "full recompute"), ("gpt-tiny", "prompt from 0")])
def test_the_head_runs_only_where_there_is_a_target(name, case):
    """Labels with ignored positions: the model's per-token loss and every gradient equal the full
    head's (logits everywhere, then the cross-entropy) to rounding; the head's product runs on the
    target rows only, and the last layer's MLP on the positions from the first target on (every
    earlier position still a key and value of its attention)."""
    from megazoo.core.parallel.context import ParallelContext
    from megazoo.zoo.gpt import TINY, GPTModel

    torch.manual_seed(0)
    cfg = TINY[name](**({"recompute": "full"} if case == "full recompute" else {}))  # no dropout by default
    model = GPTModel(cfg, ParallelContext.single()).initialize(0)
    ids = torch.randint(0, cfg.vocab_size, (3, 16))
    labels = torch.randint(0, cfg.vocab_size, (3, 16))
    labels[:, :9] = IGNORE  # a prompt's share
    labels[0, 9] = IGNORE  # prompts of different lengths: the last layer starts at the earliest target
    labels[2, 12:] = IGNORE  # padding
    first = 9
    if case == "prompt from 0":
        labels[1, 3] = ids[1, 4]  # a target early in one sequence: the last layer runs whole
        first = 3
    mask = None
    if case == "padding mask":
        mask = torch.ones(3, 16, dtype=torch.long)
        mask[2, 12:] = 0
    seen, last = [], []
    hook = model.head.register_forward_hook(lambda m, args, out: seen.append(args[0].shape[:-1].numel()))
    mlp = model.layers[str(cfg.num_layers - 1)].mlp.register_forward_hook(
        lambda m, args, out: last.append(tuple(args[0].shape[:2])))
    model.train()
    loss = model(ids, labels=labels, attention_mask=mask)
    hook.remove()
    mlp.remove()
    assert seen == [int((labels != IGNORE).sum())]  # 17 rows, not 48
    assert last == [(16 - first, 3)]
    grads = torch.autograd.grad(loss.sum(), list(model.parameters()))
    logits = model(ids, attention_mask=mask).float()
    ref = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                            ignore_index=IGNORE, reduction="none").view(labels.shape)
    ref_grads = torch.autograd.grad(ref.sum(), list(model.parameters()))
    assert (loss[labels == IGNORE] == 0).all()
    torch.testing.assert_close(loss, ref, rtol=1e-5, atol=1e-6)
    for (n, _), g, r in zip(model.named_parameters(), grads, ref_grads):
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-6, msg=n)


# layouts ---------------------------------------------------------------------------------------------
def _layout_cases(root: str) -> dict:
    return run_cases({"tp2 x pp2": sft(f"{root}/tp2-pp2", FIXTURE, "parallel.tp=2", "parallel.pp=2")})


def test_tp2_pp2_matches_one_process(tmp_path):
    ref = run_cases({"one": sft(tmp_path / "one", FIXTURE)})["one"]
    assert len(ref["losses"]) == 3
    for rank, per_rank in enumerate(spawn(_layout_cases, 4, str(tmp_path), timeout=300)):
        got = per_rank["tp2 x pp2"]
        for step, (a, b) in enumerate(zip(got["losses"], ref["losses"]), 1):
            assert abs(a - b) <= TOL * max(1.0, abs(b)), f"rank {rank}, step {step}: {a} vs {b}"
        assert abs(got["valid"] - ref["valid"]) <= TOL * max(1.0, abs(ref["valid"]))
        params = dict(got["params"])  # a pipeline stage holds part of the model
        if "head.weight" in params:
            params["embed.weight"] = params.pop("head.weight")
        for name, p in params.items():
            assert (p - ref["params"][name]).abs().max().item() <= TOL, f"rank {rank}: final {name}"


# init_from ---------------------------------------------------------------------------------------
def test_init_from_starts_from_a_pretraining_checkpoint(tmp_path):
    pre = RunConfig.load("gpt-tiny", ["model.vocab_size=50304", "model.hidden_size=32", "model.seq_length=32",
                                      "train.steps=2", "train.global_batch=4", "train.micro_batch=2",
                                      "train.eval_iters=1", "log.progress=false", "log.plot=false",
                                      "checkpoint.resume=none", f"log.dir={tmp_path / 'pre'}"])
    with one_thread():
        t = Trainer(pre)
        try:
            t.fit()
            saved = full_state(t.chunks[0], t.ctx)
        finally:
            t.close()
        # the model section comes from the weights; sft-tiny's shape keys equal them after the overrides
        t = Trainer(sft(tmp_path / "sft", FIXTURE, f"train.init_from={tmp_path / 'pre' / 'checkpoints'}"))
        try:
            start = full_state(t.chunks[0], t.ctx)
            t.fit()
        finally:
            t.close()
    assert set(start) == set(saved)
    for name, p in saved.items():
        assert torch.equal(start[name], p), name


# chats, truncation, padding ----------------------------------------------------------------------------
def test_chat_loss_falls_on_every_assistant_turn(tmp_path, tok):
    chat = {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                         {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Sum of 2 and 2?"},
                         {"role": "assistant", "content": "4"}, {"role": "user", "content": "unanswered"}]}
    examples = read_examples(write_jsonl(tmp_path / "chat.jsonl", [chat]))
    (ids, labels), = tokenize(examples, tok, 64).items
    eod = tok.decode([tok.eod])
    assert tok.decode(labels[labels != IGNORE]) == f"Hello.{eod}4{eod}"
    context = tok.decode(torch.cat([ids[:1], ids[1:][labels[:-1] == IGNORE]]))
    assert context.startswith("<|system|>\nBe brief.\n<|user|>\nHi\n<|assistant|>\n")
    assert "unanswered" not in tok.decode(ids)  # turns after the last assistant carry no loss: dropped
    # a pair under template chat reads as one user/assistant exchange
    (pair,) = read_examples(write_jsonl(tmp_path / "pair.jsonl", [{"prompt": "Hi", "response": "Yo"}]), "chat")
    assert pair.segments == [("<|user|>\nHi\n<|assistant|>\n", False), ("Yo", True)]
    # an empty prompt: the response follows an EOD (the document start), so its first token is trained
    (ids, labels), = tokenize(read_examples(write_jsonl(tmp_path / "e.jsonl", [{"prompt": "", "response": "Yo"}])),
                              tok, 64).items
    assert ids[0] == tok.eod and labels.tolist() == tok.encode("Yo") + [tok.eod]


def test_truncation_keeps_the_response_and_drops_what_cannot_fit():
    tokens, target = list(range(10)), [False] * 6 + [True] * 4  # prompt 0..5, response 6..9
    ids, labels = cut(tokens, target, seq_length=6, truncate="left")  # 7 tokens kept: 3..9
    assert ids.tolist() == [3, 4, 5, 6, 7, 8] and labels.tolist() == [IGNORE, IGNORE, 6, 7, 8, 9]
    ids, labels = cut(tokens, target, seq_length=7, truncate="right")  # 8 tokens kept: 0..7
    assert ids.tolist() == list(range(7)) and labels.tolist() == [IGNORE] * 5 + [6, 7]
    assert cut(tokens, target, seq_length=3, truncate="left") is None  # the response needs 4 tokens after one
    assert cut(tokens, target, seq_length=5, truncate="right") is None  # no response token left
    batch = pad_batch([(torch.tensor([1, 2, 3]), torch.tensor([IGNORE, 3, 4])), (torch.tensor([5]), torch.tensor([6]))],
                      seq_length=32, pad_id=0)
    assert batch["input_ids"].tolist() == [[1, 2, 3] + [0] * 5, [5] + [0] * 7]
    assert batch["labels"].tolist() == [[IGNORE, 3, 4] + [IGNORE] * 5, [6] + [IGNORE] * 7]
    assert pad_batch([(torch.arange(30), torch.arange(30))], seq_length=30, pad_id=0)["input_ids"].shape == (1, 30)


def test_dropped_examples_are_counted(tmp_path, tok, capsys):
    rows = [{"prompt": "Q:", "response": " word " * 40}] + [{"prompt": f"Q{i}:", "response": " yes"} for i in range(5)]
    data = write_jsonl(tmp_path / "d" / "train.jsonl", rows)
    write_jsonl(tmp_path / "d" / "valid.jsonl", rows[1:2])
    builder = sft(tmp_path / "run", data.parent).validate()
    train, valid = builder.data_sources({"path": str(data.parent)}, tok, 0, None)
    assert len(train) == 5 and len(valid) == 1
    assert f"dropped 1 of 6 train examples (first {data}:1)" in capsys.readouterr().out
    # one file: a seeded share is held out, at least one example
    train, valid = split_files(FIXTURE, "plain", 0.05, seed=3)
    assert (len(train), len(valid)) == (15, 1) and split_files(FIXTURE, "plain", 0.05, seed=3)[1] == valid


# bad input -------------------------------------------------------------------------------------------
GOOD = {"prompt": "Q:", "response": " A"}


@pytest.mark.parametrize("line, message", [
    ("{not json", r":2: not valid JSON .*expected one JSON object per line: \{\"prompt\": str, \"response\": str\}"),
    ({"prompt": "Q:"}, r":2: has \"prompt\" but missing key \"response\"; expected one JSON object per line: "
                       r"\{\"prompt\": str, \"response\": str\}"),
    ({"prompt": "Q:", "response": "  "}, r":2: empty \"response\": nothing to train on"),
    ({"prompt": "Q:", "response": 3}, r":2: \"response\" must be a string, got int"),
    ({"messages": [{"role": "user", "content": "hi"}]}, r":2: the \"messages\" list has no assistant turn"),
    ({"messages": [{"role": "bot", "content": "hi"}]}, r":2: messages\[0\]: unknown role 'bot'"),
    ([1, 2], r":2: expected a JSON object, got list"),
])
def test_bad_lines_name_file_line_and_problem(tmp_path, line, message):
    path = write_jsonl(tmp_path / "bad.jsonl", [GOOD, line])
    with pytest.raises(SFTDataError, match=f"^{str(path)}{message}"):
        read_examples(path)


def test_bad_files_and_configs(tmp_path, tok):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n \n")
    with pytest.raises(SFTDataError, match=f"^{empty}:1: the file is empty; expected one JSON object per line"):
        read_examples(empty)
    write_jsonl(tmp_path / "folder" / "train.jsonl", [GOOD])
    with pytest.raises(ValueError, match="needs train.jsonl and valid.jsonl; missing valid.jsonl"):
        split_files(tmp_path / "folder", "plain", 0.05, 0)
    with pytest.raises(ValueError, match="1 example; holding out a validation example needs at least 2"):
        split_files(tmp_path / "folder" / "train.jsonl", "plain", 0.05, 0)
    builder = sft(tmp_path / "run", FIXTURE).validate()
    with pytest.raises(ConfigError, match=r"task sft needs data.path: a JSONL file of \{prompt, response\} pairs"):
        builder.data_sources({"path": None}, tok, 0, None)
    with pytest.raises(ConfigError, match="task sft fine-tunes decoders: model.arch='bert' is not one of gpt, llama"):
        sft(tmp_path / "run", FIXTURE, "model.arch=bert").validate()
    with pytest.raises(ConfigError, match="unknown key `task.truncat` for task sft; did you mean `task.truncate`"):
        sft(tmp_path / "run", FIXTURE, "task.truncat=left").validate()
    with pytest.raises(ConfigError, match="task.truncate must be left or right, got 'middle'"):
        sft(tmp_path / "run", FIXTURE, "task.truncate=middle").validate()
