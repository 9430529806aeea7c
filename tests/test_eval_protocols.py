"""Evaluation protocols as the papers define them (issue 16, points 1-6): WikiText's overlapping
windows, LAMBADA few-shot and non-strict modes, per-question few-shot draws, lm-eval's acc_norm,
WiC's target word. The protocol, not a model, is under test: fake LMs and recorded requests."""

import json
import math
from pathlib import Path

import pytest
import torch
import yaml

from megazoo.eval.readers import read_lambada
from megazoo.eval.suites import lm_tasks, multiple_choice, run_task
from megazoo.eval.suites.fewshot import shot_indices
from megazoo.eval.suites.lm_tasks import lambada_fewshot_prompt, wikitext_requests

FIXTURES = Path(__file__).parent / "fixtures" / "eval"
WIKITEXT = FIXTURES / "wikitext" / "wiki.test.tokens"
LAMBADA = FIXTURES / "lambada" / "lambada_test.jsonl"
HELLASWAG = FIXTURES / "hellaswag" / "hellaswag_val.jsonl"


class CharLM:
    """A character-level LM with a uniform next-token distribution over `vocab` ids."""

    eot_id = 0

    def __init__(self, max_length: int = 64, vocab: int = 64):
        self.max_length, self.vocab = max_length, vocab

    def encode(self, text):
        return [1 + ord(c) % (self.vocab - 1) for c in text]

    def decode(self, ids):
        return "".join(chr(i) for i in ids)

    def logprobs(self, input_ids):
        return torch.log_softmax(torch.zeros(*input_ids.shape, self.vocab), dim=-1)


class PositionLM(CharLM):
    """Token i of a text is the id i, so a scored token names its own position."""

    def encode(self, text):
        return list(range(len(text)))


def record(monkeypatch, module, name="loglikelihood_tokens", value=-1.0):
    """Replace module.<name> by a scorer that keeps its requests and gives each token `value`."""
    seen = []

    def fake(lm, requests, batch_size=8, progress=False):
        seen.extend(requests)
        return [(value * (len(r[1]) if isinstance(r[1], list) else 1), True) for r in requests]

    monkeypatch.setattr(module, name, fake)
    return seen


# ---- 1. WikiText: Megatron's --overlapping-eval ------------------------------------------------------

def megatron_windows(num_tokens: int, seq_len: int, stride: int) -> list[tuple[int, list[int]]]:
    """(window start, positions of the targets it scores) for every window of Megatron-LM's
    tasks/zeroshot_gpt/datasets.py `_LMDataset`, written out from its definition:

    - total_targets = num_tokens - 1; num_sequences = max(ceil(max(total_targets - stride, 0) /
      stride) + 1, 1) (the first window is counted as if it scored `stride` targets);
    - window idx takes tokens[idx*stride : idx*stride + seq_len + 1] and right-pads them to
      seq_len + 1 with a pad mask of 0s; the loss mask is pad_mask[1:] (target j of the window
      is token start + 1 + j);
    - when stride != seq_len, every window but the first zeroes all but the last `stride` entries
      of that mask. Trailing windows can end up scoring nothing (all padding).
    """
    total_targets = num_tokens - 1
    num_sequences = max(math.ceil(max(total_targets - stride, 0) / stride) + 1, 1)
    out = []
    for idx in range(num_sequences):
        start = idx * stride
        real = max(0, min(start + seq_len + 1, num_tokens) - start)
        mask = ([1] * real + [0] * (seq_len + 1 - real))[1:]
        if stride != seq_len and idx != 0:
            mask = [0] * (seq_len - stride) + mask[-stride:]
        out.append((start, [start + 1 + j for j, m in enumerate(mask) if m]))
    return out


@pytest.mark.parametrize("seq_len,stride", [(64, 32), (33, 32), (32, 32), (40, 7), (8, 1), (1, 1)])
def test_wikitext_windows_score_what_megatron_scores(seq_len, stride):
    for n in range(2, 160):
        tokens = list(range(n))  # token value = position
        ours = wikitext_requests(tokens, seq_len, stride)
        theirs = [(start, t) for start, t in megatron_windows(n, seq_len, stride) if t]
        # the same scored targets, window by window, from windows starting at the same token
        assert [cont for _, cont in ours] == [t for _, t in theirs], (n, seq_len, stride)
        assert [(ctx + cont)[0] for ctx, cont in ours] == [s for s, _ in theirs]
        # each window is its seq_len inputs plus the last target: tokens [start, start + seq_len]
        for (ctx, cont), (start, _) in zip(ours, theirs):
            assert ctx + cont == tokens[start: start + seq_len + 1]
        assert sorted(t for _, c in ours for t in c) == list(range(1, n))  # every target once


def test_wikitext_defaults_to_stride_32_and_records_it(monkeypatch):
    seen = record(monkeypatch, lm_tasks)
    lm = PositionLM(max_length=64)
    metrics = lm_tasks.evaluate_wikitext(lm, WIKITEXT)
    n = metrics["tokens"]
    assert metrics["stride"] == 32 and n > 200
    assert [cont for _, cont in seen] == [t for _, t in megatron_windows(n, 64, 32) if t]
    assert math.isclose(metrics["avg_loss"], 1.0)  # every target scored once (-1 each)
    # capped at the model's length, and an explicit stride is used as given
    assert lm_tasks.evaluate_wikitext(PositionLM(max_length=16), WIKITEXT)["stride"] == 16
    assert lm_tasks.evaluate_wikitext(lm, WIKITEXT, stride=8)["stride"] == 8


def test_leaderboard_passes_stride_and_writes_it(tmp_path, monkeypatch):
    import megazoo.eval.leaderboard as board

    monkeypatch.setattr(board, "_load_model", lambda entry: CharLM(max_length=48))
    (tmp_path / "unused").mkdir()  # the suite's folders must exist (checked before any model is loaded)
    suite = {"name": "s", "out": "board", "models": [{"name": "fake", "hf": "unused"}],
             "tasks": [{"name": "wikitext103_megatron", "path": str(WIKITEXT), "stride": 16}]}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    board.run_leaderboard(tmp_path / "suite.yaml", progress=False)
    saved = json.loads((tmp_path / "board" / "results.json").read_text())["results"]["fake"]["wikitext103_megatron"]
    assert saved["stride"] == 16
    assert math.isclose(saved["ppl"], 64.0, rel_tol=1e-6)  # uniform over 64 ids, each target once


# ---- 2. LAMBADA few-shot (GPT-3's fill-in-the-blank), WikiText refuses few-shot -----------------------

EXPECTED_2SHOT = (
    "He tossed her the keys and said the old truck was hers now. She smiled and climbed into the ___. -> truck"
    "\n\n"
    'The kettle whistled on the stove. "Tea or coffee?" asked Maria, reaching for the ___. -> kettle'
    "\n\n"
    "Every morning the baker opened his shop at six. The first customer was always the old fisherman, "
    "who bought one loaf from the ___. ->"
)


def test_lambada_two_shot_prompt_is_gpt3_fill_in_the_blank():
    docs = read_lambada(LAMBADA)
    assert lambada_fewshot_prompt(docs[:2], docs[2]) == EXPECTED_2SHOT


def test_lambada_fewshot_requests(monkeypatch):
    seen = record(monkeypatch, lm_tasks)
    lm = CharLM()
    docs = read_lambada(LAMBADA)
    metrics = lm_tasks.evaluate_lambada(lm, LAMBADA, num_fewshot=2, seed=7)
    assert metrics["num_fewshot"] == 2 and metrics["mode"] == "strict"
    for i, (ctx, cont) in enumerate(seen):
        others = shot_indices(3, 2, 7, i, exclude_question=True)
        assert sorted(others) == sorted({0, 1, 2} - {i})  # the same file: never the question itself
        prompt = lambada_fewshot_prompt([docs[j] for j in others], docs[i])
        assert ctx == lm.encode(prompt) and cont == lm.encode(" " + docs[i].target)


def test_wikitext_refuses_fewshot(capsys):
    with pytest.raises(ValueError, match="wikitext103_megatron: few-shot evaluation is not defined"):
        run_task(CharLM(), "wikitext103_megatron", WIKITEXT, num_fewshot=1)
    from megazoo.cli import main

    # the command line says so in one line, before loading any model
    assert main(["eval", "task", "wikitext103_megatron", "--data", str(WIKITEXT), "--hf", "no-such-dir",
                 "--num-fewshot", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(
        "megazoo eval task: error: wikitext103_megatron: few-shot evaluation is not defined")


# ---- 3. Non-strict LAMBADA ----------------------------------------------------------------------------

def test_lambada_nonstrict_scores_only_the_last_token(monkeypatch):
    seen = record(monkeypatch, lm_tasks)
    lm = CharLM()
    docs = read_lambada(LAMBADA)
    strict = lm_tasks.evaluate_lambada(lm, LAMBADA)
    assert strict["mode"] == "strict"  # today's default, named in the results
    assert [cont for _, cont in seen] == [lm.encode(" " + d.target) for d in docs]
    seen.clear()
    loose = lm_tasks.evaluate_lambada(lm, LAMBADA, mode="nonstrict")
    assert loose["mode"] == "nonstrict"
    # Megatron without --strict-lambada: the whole text tokenised, its last token the target
    assert seen == [(lm.encode(d.text)[:-1], lm.encode(d.text)[-1:]) for d in docs]
    assert math.isclose(loose["ppl"], math.e)  # -1 per scored token, one token per question
    with pytest.raises(ValueError, match="lambada: mode must be one of strict, nonstrict"):
        run_task(lm, "lambada", LAMBADA, lambada_mode="loose")


# ---- 4. Per-question few-shot draws; the MT-NLG preset ----------------------------------------------

def test_shots_are_drawn_per_question_and_reproducibly():
    a = [shot_indices(100, 5, seed=1234, question=i, exclude_question=False) for i in range(2)]
    assert a[0] != a[1]  # two questions, same seed: different shots
    assert a == [shot_indices(100, 5, 1234, i, False) for i in range(2)]  # same question: same shots
    # pinned: a change of seeding (e.g. to hash(), which varies per process) would show here
    assert a[0] == PINNED_SHOTS
    assert shot_indices(100, 5, seed=1, question=0, exclude_question=False) != a[0]
    for i in range(6):  # from the same split, the question itself is never a shot
        assert sorted(shot_indices(6, 5, 3, i, exclude_question=True)) == [j for j in range(6) if j != i]
    with pytest.raises(ValueError, match="only 5 other examples"):
        shot_indices(6, 6, 3, 0, exclude_question=True)


PINNED_SHOTS = [67, 49, 21, 58, 91]  # seed 1234, question 0 of 100: the same under any PYTHONHASHSEED


def test_multiple_choice_shots_differ_per_question(monkeypatch):
    seen = record(monkeypatch, multiple_choice, "loglikelihood")
    run_task(CharLM(), "hellaswag", HELLASWAG, num_fewshot=1, fewshot_path=HELLASWAG)
    questions = multiple_choice.load_questions("hellaswag", HELLASWAG)
    # 2 questions x 4 endings; from the same file each question's one shot is the other question
    solved = [multiple_choice.fewshot_prefix([q]) for q in questions]
    assert all(c.startswith(solved[1]) for c, _ in seen[:4])
    assert all(c.startswith(solved[0]) for c, _ in seen[4:])


def test_mt_nlg_preset_is_a_valid_suite():
    from megazoo.eval.leaderboard import load_suite
    from megazoo.eval.suites.runner import check_task_options

    path = Path(multiple_choice.__file__).parent / "presets" / "mt-nlg.yaml"
    assert "arXiv:2201.11990" in path.read_text()  # the source note
    suite = load_suite(path)
    shots = {t["name"]: t["num_fewshot"] for t in suite["tasks"]}
    assert shots == {"lambada": 15, "boolq": 32, "race_gpt3": 10, "piqa": 50, "hellaswag": 20, "winogrande": 50,
                     "anli": 50, "wic": 32}
    for t in suite["tasks"]:
        check_task_options(t["name"], t["num_fewshot"], t.get("stride"), t.get("lambada_mode"))
        assert t["name"] == "lambada" or "fewshot_path" in t


# ---- 5. acc_norm: lm-eval's per-character normalisation; HellaSwag's headline ------------------------

def test_acc_norm_divides_by_the_choice_without_its_space(monkeypatch):
    q = multiple_choice.Question(["ctx"] * 2, [" ab", " abcd"], gold=1)
    monkeypatch.setattr(multiple_choice, "loglikelihood", lambda lm, reqs, *a, **k: [(-2.1, False), (-4.0, False)])
    out = multiple_choice.evaluate_multiple_choice(CharLM(), [q])
    # per character of "ab" / "abcd": -1.05 < -1.0, so choice 1; dividing by " ab" / " abcd" picks 0
    assert out["acc"] == 0.0 and out["acc_norm"] == 1.0


def test_acc_norm_equals_lm_eval_on_hellaswag(tmp_path, monkeypatch):
    import random

    from lm_eval.api.task import ConfigurableTask
    from lm_eval.tasks.hellaswag.utils import process_docs

    cfg = {"task": "hellaswag_fixture", "dataset_path": "json", "output_type": "multiple_choice",
           "dataset_kwargs": {"data_files": {"validation": str(HELLASWAG)}, "cache_dir": str(tmp_path)},
           "validation_split": "validation", "process_docs": process_docs, "doc_to_text": "{{query}}",
           "doc_to_target": "{{label}}", "doc_to_choice": "choices",
           "metric_list": [{"metric": "acc"}, {"metric": "acc_norm"}]}
    task = ConfigurableTask(config=cfg)  # lm-eval's own hellaswag task on the fixture
    docs = list(task.validation_docs())
    questions = multiple_choice.load_questions("hellaswag", HELLASWAG)
    assert [task.doc_to_text(d) for d in docs] == [q.contexts[0] for q in questions]
    rng = random.Random(0)
    old_rule_differs = 0
    for _ in range(200):
        # log-likelihoods near-proportional to the choices' lengths: per-character ties are close,
        # so dividing by one character more or less changes the pick
        lls = [[-2.0 * rng.uniform(0.97, 1.03) * len(x) for x in q.continuations] for q in questions]
        flat = [(v, False) for row in lls for v in row]
        monkeypatch.setattr(multiple_choice, "loglikelihood", lambda lm, reqs, *a, **k: flat)
        ours = multiple_choice.evaluate_multiple_choice(CharLM(), questions)
        theirs = [task.process_results(d, [(v, False) for v in row]) for d, row in zip(docs, lls)]
        assert ours["acc"] == sum(t["acc"] for t in theirs) / len(docs)
        assert ours["acc_norm"] == sum(t["acc_norm"] for t in theirs) / len(docs)
        for q, row in zip(questions, lls):  # the old rule divided by " " + choice
            old = max(range(4), key=lambda i: row[i] / len(q.continuations[i]))
            new = max(range(4), key=lambda i: row[i] / (len(q.continuations[i]) - 1))
            old_rule_differs += old != new
    assert old_rule_differs > 0  # the check can tell the two definitions apart


def test_hellaswag_headline_is_acc_norm():
    from megazoo.eval.leaderboard import headline

    assert headline("hellaswag", {"acc": 0.3, "acc_norm": 0.4}) == ("acc_norm", 0.4)


# ---- 6. WiC: the target as written in sentence 1 ---------------------------------------------------------

def test_wic_prompt_quotes_the_word_as_written(tmp_path):
    from megazoo.eval.readers import read_wic

    data = tmp_path / "dev.data.txt"
    data.write_text("carry\tV\t1-2\tSound carries well over water .\tYou must carry your camping gear .\n")
    (tmp_path / "dev.gold.txt").write_text("F\n")
    jsonl = tmp_path / "val.jsonl"  # SuperGLUE's copy of the same example, with character spans
    jsonl.write_text(json.dumps({"word": "carry", "sentence1": "Sound carries well over water .",
                                 "sentence2": "You must carry your camping gear .", "start1": 6, "end1": 13,
                                 "start2": 9, "end2": 14, "label": False, "idx": 0}) + "\n")
    for path in (data, jsonl):
        (example,) = read_wic(path)
        assert (example.word, example.word1, example.index1, example.index2) == ("carry", "carries", 1, 2)
        (question,) = multiple_choice.load_questions("wic", path)
        assert "Is the word 'carries' used in the same way" in question.contexts[0]
        assert question.gold == 0
