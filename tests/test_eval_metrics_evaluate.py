"""The ``evaluate`` modules are generated from the metric table on demand, load from their folders
offline (no socket may connect) and give the same numbers as the plain functions they wrap; a new
table row is a new module."""
import json
import pathlib
import socket

import pytest

from megazoo.eval import metrics as m
from megazoo.eval.evaluate_modules import MODULES, module_path, module_script

HYPS = ["the cat sat on the mat today", "a quick brown fox jumps over the dog"]
REFS = ["the cat is on the mat today", "the quick brown fox jumped over the lazy dog"]
TOX = [[0.1, 0.6, None], [0.2, 0.3, 0.4], [0.9, 0.5, 0.5]]

# (module, compute() keyword arguments, the plain function's result)
CASES = [
    ("accuracy", dict(predictions=[1, 2, 3, 4], references=[1, 2, 0, 4]), {"accuracy": m.accuracy([1, 2, 3, 4], [1, 2, 0, 4])}),
    ("accuracy", dict(predictions=["A", "B"], references=["A", "C"]), {"accuracy": 0.5}),
    (
        "bioasq_factoid",
        dict(predictions=[["cftr", "x"], ["q", "gene x"]], references=[["CFTR"], ["Gene X", "GX"]]),
        m.bioasq_factoid_scores([["cftr", "x"], ["q", "gene x"]], [["CFTR"], ["Gene X", "GX"]]),
    ),
    ("bleu", dict(predictions=HYPS, references=REFS), {"bleu": m.bleu(HYPS, REFS)}),
    ("bleu", dict(predictions=HYPS, references=[[r, h] for r, h in zip(REFS, HYPS)]), {"bleu": m.bleu(HYPS, [[r, h] for r, h in zip(REFS, HYPS)])}),
    (
        "chemprot",
        dict(predictions=["CPR:3", "false", "CPR:4", "CPR:9"], references=["CPR:3", "CPR:4", "false", "CPR:9"]),
        m.chemprot_scores(["CPR:3", "false", "CPR:4", "CPR:9"], ["CPR:3", "CPR:4", "false", "CPR:9"]),
    ),
    (
        "dialogue_f1",
        dict(predictions=["The cat sat.", "x", "hello world"], references=["a cat is here", "no_passages_used", "hello"]),
        m.unigram_f1_scores(["The cat sat.", "x", "hello world"], ["a cat is here", "no_passages_used", "hello"]),
    ),
    (
        "diversity",
        dict(predictions=["a b c d e", "a b c d a b c d"], n=4),
        {"distinct_n": m.distinct_n(["a b c d e", "a b c d a b c d"], 4), "repeat_n": m.repeat_n(["a b c d e", "a b c d a b c d"], 4)},
    ),
    (
        "dpr_top_k",
        dict(predictions=[["Percy wrote.", "Mary Shelley wrote it."], ["Rome.", "Paris."]], references=[["mary shelley"], ["Lyon"]], ks=[1, 2]),
        m.retrieval_top_k_accuracy([["mary shelley"], ["Lyon"]], [["Percy wrote.", "Mary Shelley wrote it."], ["Rome.", "Paris."]], ks=[1, 2]),
    ),
    (
        "ner",
        dict(predictions=[["B-PER", "I-PER", "O", "B-LOC"], ["I", "B", "O"]], references=[["B-PER", "I-PER", "O", "O"], ["I", "I", "O"]]),
        m.ner_scores([["B-PER", "I-PER", "O", "B-LOC"], ["I", "B", "O"]], [["B-PER", "I-PER", "O", "O"], ["I", "I", "O"]]),
    ),
    ("perplexity", dict(nll=[3.5, 10.25], num_tokens=[2, 5]), {"perplexity": m.perplexity(13.75, 7)}),
    ("roc_auc", dict(predictions=[0.1, 0.4, 0.35, 0.8], references=[0, 0, 1, 1]), {"roc_auc": m.roc_auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1])}),
    ("rouge_l", dict(predictions=HYPS, references=REFS), m.rouge_l(HYPS, REFS)),
    (
        "squad",
        dict(predictions=["Paris", "in Paris, France"], references=[["paris"], ["Paris", "France"]]),
        m.squad_scores(["Paris", "in Paris, France"], [["paris"], ["Paris", "France"]]),
    ),
    (
        "squad",
        dict(predictions=["", "x"], references=[[], ["x"]], squad_v2=True),
        m.squad_scores(["", "x"], [[], ["x"]], squad_v2=True),
    ),
    (
        "toxicity",
        dict(predictions=TOX, references=[0.7, None, 0.2]),
        m.toxicity_scores(TOX, k=3, prompt_toxicity=[0.7, None, 0.2]),
    ),
    (
        "wikitext_perplexity",
        dict(nll=[30.0], num_tokenized_tokens=[11], num_original_tokens=[6]),
        m.adjusted_perplexity(30.0, 11, 6),
    ),
]

def _approx(value):
    if isinstance(value, dict):
        return {str(k): _approx(v) for k, v in value.items()}
    if isinstance(value, float):
        return pytest.approx(value, rel=1e-12, abs=1e-12)
    return value


def test_every_module_is_covered():
    assert sorted({name for name, _, _ in CASES}) == sorted(MODULES)
    with pytest.raises(ValueError, match="unknown megazoo evaluate module 'squad2'"):
        module_path("squad2")


def test_every_module_is_one_table_row_and_a_generated_script(tmp_path):
    from megazoo.eval.evaluate_modules.table import SPECS

    assert list(MODULES) == sorted(SPECS)
    for name in MODULES:
        folder = pathlib.Path(module_path(name, tmp_path))
        assert folder == tmp_path / name and sorted(p.name for p in folder.iterdir()) == [f"{name}.py"]
        code = [line for line in (folder / f"{name}.py").read_text().split('"""')[-1].splitlines() if line.strip()]
        assert len(code) == 3 and code[-1].strip() == f'metric = "{name}"', (name, code)
    # a stale script is rewritten; a current one is left as it is
    script = tmp_path / "squad" / "squad.py"
    script.write_text("broken")
    module_path("squad", tmp_path)
    assert script.read_text() == module_script("squad")
    before = script.stat().st_mtime_ns
    module_path("squad", tmp_path)
    assert script.stat().st_mtime_ns == before


def _offline(monkeypatch):
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(name, "1")

    def no_network(*args, **kwargs):
        raise OSError("network access attempted while offline")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)


def test_a_new_table_row_is_a_new_module(tmp_path, monkeypatch):
    evaluate = pytest.importorskip("evaluate")
    from megazoo.eval.evaluate_modules import table

    _offline(monkeypatch)
    row = table.Spec(compute=lambda predictions, references: {"share_equal": m.accuracy(predictions, references)},
                     inputs=({"predictions": "int64", "references": "int64"},), description="test row", usage="")
    monkeypatch.setitem(table.SPECS, "share_equal", row)
    module = evaluate.load(module_path("share_equal", tmp_path), keep_in_memory=True)
    assert module.name == "share_equal"
    assert module.compute(predictions=[1, 2, 3, 4], references=[1, 0, 3, 0]) == {"share_equal": 0.5}


def test_evaluate_load_offline_gives_plain_function_numbers(tmp_path, monkeypatch):
    evaluate = pytest.importorskip("evaluate")
    _offline(monkeypatch)
    for name, kwargs, expected in CASES:
        module = evaluate.load(module_path(name, tmp_path), keep_in_memory=True)
        assert module.name == name
        got = json.loads(json.dumps(module.compute(**kwargs)))  # tuples -> lists, keys -> str
        assert got == _approx(expected), name
