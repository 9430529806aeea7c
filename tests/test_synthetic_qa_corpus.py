"""synthetic_qa's sampled corpus and the paragraph-conditioned question generator (issue 40, point 3):
the prompt file's two layouts and one-line refusals of other formats (a SQuAD file, a CSV, JSON
lines without "title"); the cut at the last full sentence, the word limits and the dedup rules with
their counts; the corpus stage end to end on a tiny decoder (its SQuAD file read by the answers
stage as it is, a paragraph of the source dropped); the question generator's paragraph prompt with
the answer marked, the sentence prompt unchanged, the layout recorded by the data stage and a
mismatch refused by the sample stage."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from megazoo.cli import main as megazoo
from megazoo.tasks.synthetic_qa.corpus import Prompt, PromptFileError, read_prompts
from megazoo.tasks.synthetic_qa.corpus_filter import REASONS, SourceIndex, cut, select, words
from megazoo.tasks.synthetic_qa.squad import read_squad, write_squad

WORDS = ("river stone cloud garden window market letter bridge forest engine castle valley harbor island mountain "
         "village station library teacher farmer soldier doctor painter sailor winter summer morning evening silver "
         "golden").split()


def make_sentence_decoder(path: Path) -> Path:
    """A 1-layer GPT-2 (the real GPT-2 tokenizer) that writes sentences of WORDS: its final norm has
    weight 0, so every position's output is the norm's bias b, and the tied embedding rows of the 30
    words (and of ".") point along b, so only they are likely (about 1 word in 7 is a full stop)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

    from megazoo.core.data.tokenizers import _gpt2_dir

    path.mkdir()
    for name in ("vocab.json", "merges.txt"):
        shutil.copy(_gpt2_dir() / name, path / name)
    tok = GPT2TokenizerFast.from_pretrained(str(path))
    ids = [tok(" " + w)["input_ids"] for w in WORDS]
    assert all(len(i) == 1 for i in ids)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, n_positions=256, vocab_size=50257))
    with torch.no_grad():
        b = torch.randn(32)
        b /= b.norm()
        model.transformer.ln_f.weight.zero_()
        model.transformer.ln_f.bias.copy_(b)
        for (i,) in ids:
            model.transformer.wte.weight[i] = 14 * b
        model.transformer.wte.weight[tok(".")["input_ids"][0]] = 15.5 * b
    model.save_pretrained(path)
    return path


def make_answers_checkpoint(root: Path) -> Path:
    """A tiny BERT answer extractor (kind answers) trained one step: enough for the answers stage to run."""
    from megazoo.core.checkpoint import save_full_model_state
    from megazoo.tasks.synthetic_qa.builder import DEV
    from megazoo.zoo.bert import BertModel
    from megazoo.zoo.bert.config import original_bert
    from megazoo.zoo.hf import gather_full_state

    cfg = original_bert(num_layers=1, hidden_size=32, num_heads=4, vocab_size=30522, seq_length=64,
                        add_lm_head=True, add_binary_head=True)
    save_full_model_state(root / "bert", gather_full_state(BertModel(cfg).initialize(5)),
                          {"arch": "bert", "model": cfg.to_dict()})
    dev = read_squad(DEV)
    write_squad(root / "train.json", dev.paragraphs[:2], [q for q in dev.questions if q.paragraph < 2])
    assert megazoo(["task", "synthetic_qa", "train", "synthetic_qa-answers", "--set",
                    f"train.init_from={root / 'bert'}", f"data.path={root / 'train.json'}",
                    f"task.valid_file={root / 'train.json'}", "task.max_seq_length=32", "task.doc_stride=8",
                    "task.max_query_length=12", "train.steps=1", "train.micro_batch=2", "train.global_batch=2",
                    "train.eval_interval=1", "log.progress=false", "log.plot=false", "checkpoint.resume=none",
                    f"log.dir={root / 'answers'}"]) == 0
    return root / "answers"


# ---- the prompt file ------------------------------------------------------------------------------------
def test_prompt_file_layouts(tmp_path):
    text = tmp_path / "p.txt"
    text.write_text("Python (programming language)\n\nThe river rose in the spring.\n'Quoted opening?'\n")
    assert read_prompts(text) == [Prompt("Python (programming language)", "", 1),
                                  Prompt("", "The river rose in the spring.", 3), Prompt("", "'Quoted opening?'", 4)]
    assert [p.text() for p in read_prompts(text)] == ["Python (programming language)\n\n",
                                                      "The river rose in the spring.", "'Quoted opening?'"]
    lines = tmp_path / "p.jsonl"
    lines.write_text(json.dumps({"title": "Rivers"}) + "\n"
                     + json.dumps({"title": "Rivers", "opening": "A river flows."}) + "\n"
                     + json.dumps({"title": "Stones", "text": "Stones are hard. They last."}) + "\n")
    got = read_prompts(lines)
    assert [(p.title, p.opening) for p in got] == [("Rivers", ""), ("Rivers", "A river flows."),
                                                   ("Stones", "Stones are hard.")]
    assert got[1].text() == "Rivers\n\nA river flows."


SQUAD_ONE_LINE = json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": []}]})


@pytest.mark.parametrize("name, text, where, problem", [
    ("squad.json", json.dumps(json.loads(SQUAD_ONE_LINE), indent=1), 1, "not a JSON object on one line"),
    ("squad1.json", SQUAD_ONE_LINE, 1, 'a SQuAD file (it has "data") without "title"'),
    ("titles.csv", "title,text\nRivers,A river flows.\n", 1, "a CSV file (by its name)"),
    ("titles.txt", "title,opening\nRivers,A river flows.\n", 1, "'title,opening' looks like a CSV header"),
    ("rows.txt", "Rivers\nStones\tStones are hard.\n", 2, "a tab: a TSV row"),
    ("p.jsonl", '{"title": "Rivers"}\n\n{"opening": "A river flows."}\n', 3, "an object with keys ['opening'] "
                                                                             'without "title"'),
    ("p2.jsonl", '{"title": 3}\n', 1, '"title" must be a string, got int'),
    ("mixed.txt", 'Rivers\n{"title": "Stones"}\n', 2, "a JSON line in a text prompt file"),
    ("blank.txt", "\n\n", 1, "the file holds no prompts"),
])
def test_a_prompt_file_of_another_format_is_one_line(tmp_path, capsys, name, text, where, problem):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(PromptFileError, match="a prompt file is a text file with one title or opening"):
        read_prompts(path)
    (tmp_path / "model").mkdir()  # never opened: the prompt file is read first
    assert megazoo(["task", "synthetic_qa", "corpus", "--model", str(tmp_path / "model"), "--prompts", str(path),
                    "--out", str(tmp_path / "corpus.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{path}:{where}: {problem}" in err, err
    assert 'or JSON lines {"title": str' in err and err.count("\n") == 0 and "Traceback" not in err
    assert not (tmp_path / "corpus.json").exists()


def test_word_limits_are_checked_together(tmp_path, capsys):
    path = tmp_path / "p.txt"
    path.write_text("Rivers\n")
    (tmp_path / "model").mkdir()
    assert megazoo(["task", "synthetic_qa", "corpus", "--model", str(tmp_path / "model"), "--prompts", str(path),
                    "--out", str(tmp_path / "c.json"), "--min-words", "50", "--max-words", "40"]) == 2
    assert "--min-words 50 is above --max-words 40" in capsys.readouterr().err


# ---- the cut, the limits and the dedup -----------------------------------------------------------------
def test_cut_keeps_whole_sentences():
    assert cut("One two three. Four five six. Seven eight", 100) == ("One two three. Four five six.", False)
    assert cut("  It ends \"here!\"  and then", 100) == ("It ends \"here!\"", False)
    # abbreviations and decimals do not end a sentence
    assert cut("See e.g. the U.S. rules in version 3.8 of it. Then more", 100) == (
        "See e.g. the U.S. rules in version 3.8 of it.", False)
    assert cut("Mr. Smith and Dr. Who etc. went on", 100) == ("", False)
    assert cut("no sentence end at all", 100) == ("", False)
    # the word limit cuts first, then the cut goes back to the last full sentence
    assert cut("aa bb cc. dd ee ff. gg hh ii.", 5) == ("aa bb cc.", True)
    assert cut("aa bb cc. dd ee ff.", 6) == ("aa bb cc. dd ee ff.", False)
    assert cut("Written by J. Smith in May.", 100) == ("Written by J. Smith in May.", False)  # an initial


def _sentence(i: int, n: int = 20) -> str:
    return " ".join(f"w{i}x{k}" for k in range(n)) + "."


def test_select_counts_every_drop_once(tmp_path):
    long_ = " ".join(_sentence(i, 10) for i in range(5))  # 50 words, 5 sentences
    samples = ["", "   ", "no end here", "Too short.", long_, _sentence(7), _sentence(7).upper(), _sentence(8)]
    kept, counts = select(samples, min_words=5, max_words=30)
    assert [i for i, _ in kept] == [4, 5, 7]
    assert kept[0][1] == " ".join(_sentence(i, 10) for i in range(3))  # cut to 30 words, at a sentence end
    assert counts == {"sampled": 8, "empty": 2, "unfinished": 1, "too_short": 1, "source_overlap": 0,
                      "duplicate": 1, "near_duplicate": 0, "cut_at_max_words": 1, "kept": 3}
    assert counts["sampled"] == counts["kept"] + sum(counts[r] for r in REASONS)


def test_near_duplicates_and_the_source_ngram_rule(tmp_path):
    base = [f"word{k}" for k in range(60)]
    one_changed = base[:30] + ["other"] + base[31:]  # 5-gram Jaccard 51/61: about 0.84
    half_changed = base[:30] + [f"new{k}" for k in range(30)]
    samples = [" ".join(ws) + "." for ws in (base, one_changed, half_changed)]
    kept, counts = select(samples, 5, 100, near_duplicate=0.8)
    assert [i for i, _ in kept] == [0, 2] and counts["near_duplicate"] == 1
    kept, counts = select(samples, 5, 100, near_duplicate=0.9)
    assert [i for i, _ in kept] == [0, 1, 2] and counts["near_duplicate"] == 0
    # the source: 13 shared words drop a sample, 12 do not; punctuation and case do not matter
    src = tmp_path / "source.txt"
    # a hard-wrapped text: its 13-grams run across the line ends
    src.write_text("Alpha beta gamma delta epsilon zeta eta\ntheta iota kappa lambda mu nu xi omicron.\n")
    index = SourceIndex(13)
    assert index.add_file(src) == "text"
    filler = "one two three four five six seven eight nine ten"
    thirteen = f"{filler} ALPHA, beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu."
    twelve = f"{filler} alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu."
    assert index.hits(words(thirteen)) and not index.hits(words(twelve))
    kept, counts = select([thirteen, twelve], 5, 100, index)
    assert [i for i, _ in kept] == [1] and counts["source_overlap"] == 1
    squad = tmp_path / "source.json"
    write_squad(squad, [("t", "Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu.")], [])
    other = SourceIndex(13)
    assert other.add_file(squad) == "squad" and other.hits(words(thirteen)) and other.texts == 1


def test_a_continuation_that_starts_a_new_line_is_continued(monkeypatch):
    """sample_paragraphs: the paragraph is the first line that is not empty; each comes back to its prompt."""
    import megazoo.zoo.generate as zoo_generate
    from megazoo.tasks.synthetic_qa.corpus import ROUNDS, sample_paragraphs

    from tests.char_tokenizer import CharTokenizer as Tok

    def fake_generate(model, prompts, max_new_tokens, **kw):
        out = []
        for p in prompts:
            text = "".join(map(chr, p))
            if text.startswith("never"):  # always a line end first: empty after ROUNDS tries
                out.append([ord("\n")])
            elif text.startswith("late") and text.count("\n") < 2:  # two line ends, then its text
                out.append([ord("\n")])
            elif text.startswith("eos"):  # the end token alone: empty at once
                out.append([0])
            else:
                out.append([ord(c) for c in f" {text.split()[0]} text.\nmore"])
        calls.append(len(prompts))
        return out

    calls = []
    monkeypatch.setattr(zoo_generate, "generate", fake_generate)
    got = sample_paragraphs(None, Tok(), ["at once", "late one", "never", "eos"], per_prompt=1, batch=8)
    assert got == [[" at text."], [" late text."], [""], [""]]
    assert calls == [4, 2, 2] and ROUNDS == 3  # late and never continued twice; eos not


# ---- the corpus stage end to end ----------------------------------------------------------------------
def test_corpus_stage_writes_squad_the_answers_stage_reads(tmp_path):
    decoder = make_sentence_decoder(tmp_path / "dec")
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps(r) + "\n" for r in (
        {"title": "Rivers", "opening": "The river rose."}, {"title": "Stones"},
        {"title": "Towns", "text": "The village grew. It had a market."})))
    out = tmp_path / "corpus.json"
    common = ["--model", str(decoder), "--prompts", str(prompts), "--per-prompt", "2", "--min-words", "5",
              "--max-words", "25", "--max-new-tokens", "48", "--seed", "3"]
    assert megazoo(["task", "synthetic_qa", "corpus", *common, "--out", str(out)]) == 0
    f = read_squad(out)  # the SQuAD reader's checks
    raw = json.loads(out.read_text())
    assert raw["version"] == "1.1" and all(set(a) == {"title", "paragraphs"} for a in raw["data"])
    assert all(p["qas"] == [] for a in raw["data"] for p in a["paragraphs"])
    counts = json.loads((tmp_path / "corpus.counts.json").read_text())
    assert counts["sampled"] == 6 and counts["kept"] == len(f.paragraphs) >= 3
    assert counts["sampled"] == counts["kept"] + sum(counts[r] for r in REASONS)
    assert counts["settings"]["top_p"] == 0.9 and counts["settings"]["per_prompt"] == 2
    assert {t for t, _ in f.paragraphs} <= {"Rivers", "Stones", "Towns"}
    for _, context in f.paragraphs:  # the word limits and the cut at a full sentence
        assert 5 <= len(context.split()) <= 25 and context.endswith(".")
        assert set(words(context)) <= set(WORDS)
    # the same run with one kept paragraph as the source: that paragraph is dropped, nothing else changes
    (tmp_path / "source.txt").write_text(f.paragraphs[0][1] + "\n")
    again = tmp_path / "again.json"
    assert megazoo(["task", "synthetic_qa", "corpus", *common, "--out", str(again), "--source",
                    str(tmp_path / "source.txt"), "--ngram", "5"]) == 0
    c2 = json.loads((tmp_path / "again.counts.json").read_text())
    assert c2["source_overlap"] >= 1 and c2["kept"] == counts["kept"] - c2["source_overlap"]
    assert f.paragraphs[0][1] not in {c for _, c in read_squad(again).paragraphs}
    # the answers stage reads the corpus as it is
    answers = make_answers_checkpoint(tmp_path / "qa")
    cands = tmp_path / "answers.json"
    assert megazoo(["task", "synthetic_qa", "answers", "--data", str(out), "--checkpoint", str(answers),
                    "--out", str(cands), "--top", "1"]) == 0
    got = read_squad(cands)
    assert got.paragraphs == f.paragraphs and got.questions
    assert all(q.context[q.answers[0][1]:].startswith(q.answers[0][0]) for q in got.questions)


# ---- the question generator's input ----------------------------------------------------------------------
CONTEXT = "First sentence here is long enough to stand alone in the prompt. Pdb sets SIGINT. Last one."


def test_the_paragraph_prompt_marks_the_answer():
    from megazoo.tasks.synthetic_qa.prompts import ANSWER_CLOSE, ANSWER_OPEN, qg_input_prompt, qg_prompt
    from megazoo.tasks.synthetic_qa.questions import prompts_of
    from megazoo.tasks.synthetic_qa.squad import Question

    start = CONTEXT.index("SIGINT")
    prompt = qg_input_prompt("paragraph", CONTEXT, start, "SIGINT")
    assert prompt == ("Context: First sentence here is long enough to stand alone in the prompt. Pdb sets "
                      "<answer>SIGINT</answer>. Last one.\nAnswer: SIGINT\nQuestion:")
    marked = prompt.split("\n")[0][len("Context: "):]
    assert marked.replace(ANSWER_OPEN, "").replace(ANSWER_CLOSE, "") == CONTEXT  # the whole paragraph
    # the same words elsewhere are not marked: the span at answer_start is
    twice = "SIGINT is a signal. Pdb sets SIGINT."
    assert qg_input_prompt("paragraph", twice, twice.rindex("SIGINT"), "SIGINT").startswith(
        "Context: SIGINT is a signal. Pdb sets <answer>SIGINT</answer>.")
    # the sentence option is the earlier prompt, unchanged
    sentence = qg_input_prompt("sentence", CONTEXT, start, "SIGINT")
    assert sentence == qg_prompt(CONTEXT, start, "SIGINT") == (
        "Context: First sentence here is long enough to stand alone in the prompt. Pdb sets SIGINT.\n"
        "Answer: SIGINT\nQuestion:")
    q = Question("a", "", CONTEXT, [("SIGINT", start)])
    assert prompts_of([q]) == [prompt] and prompts_of([q], "sentence") == [sentence]
    with pytest.raises(ValueError, match="--qg-input must be one of paragraph, sentence"):
        qg_input_prompt("document", CONTEXT, start, "SIGINT")


def test_data_stage_records_its_qg_input(tmp_path):
    from megazoo.tasks.synthetic_qa.generate import HANDWRITTEN
    from megazoo.tasks.synthetic_qa.prompts import qg_input_prompt

    hand = read_squad(HANDWRITTEN).questions
    for layout in ("paragraph", "sentence"):
        argv = ["task", "synthetic_qa", "data", str(tmp_path / layout), "--text-paragraphs", "2"]
        assert megazoo(argv + ([] if layout == "paragraph" else ["--qg-input", layout])) == 0  # paragraph: default
        pairs = [json.loads(x) for x in (tmp_path / layout / "qg.jsonl").read_text().splitlines()]
        assert {p["qg_input"] for p in pairs} == {layout}
        assert [p["prompt"] for p in pairs] == [qg_input_prompt(layout, q.context, q.answers[0][1], q.answers[0][0])
                                                for q in hand]
        assert all(("<answer>" in p["prompt"]) == (layout == "paragraph") for p in pairs)


def test_a_prompt_longer_than_the_positions_keeps_its_end(monkeypatch):
    """A paragraph prompt can outgrow a generator's positions: its start is cut, its answer line kept."""
    import types

    import megazoo.zoo.generate as zoo_generate
    from megazoo.tasks.synthetic_qa.questions import prompt_room, prompts_cut, sample_questions

    from tests.char_tokenizer import CharTokenizer as Tok

    seen = []

    def fake_generate(model, prompts, max_new_tokens, **kw):
        seen.extend("".join(map(chr, p)) for p in prompts)
        return [[ord("?")] for _ in prompts]

    monkeypatch.setattr(zoo_generate, "generate", fake_generate)
    model = types.SimpleNamespace(cfg=types.SimpleNamespace(seq_length=50))
    prompts = ["Context: " + "long paragraph " * 5 + "\nAnswer: x\nQuestion:", "Context: short\nAnswer: y\nQuestion:"]
    assert prompt_room(model, 8) == 42 and prompt_room(None, 8) is None
    assert prompts_cut(Tok(), model, prompts, 8) == 1
    sample_questions(model, Tok(), prompts, samples=1, max_new_tokens=8)
    assert sorted(seen, key=len) == [prompts[1], prompts[0][-42:]] and seen[-1].endswith("\nAnswer: x\nQuestion:")


def _qg_run(root: Path, pairs: list[dict]) -> Path:
    """A question generator's run folder as the trainer leaves it: config.yaml naming its pairs."""
    (root / "checkpoints").mkdir(parents=True)
    (root / "qg.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    (root / "config.yaml").write_text(f"name: synthetic_qa-qg\ndata:\n  path: {root / 'qg.jsonl'}\n")
    return root


def test_sample_refuses_a_generator_trained_on_the_other_layout(tmp_path, capsys):
    from megazoo.tasks.synthetic_qa.builder import DEV
    from megazoo.tasks.synthetic_qa.questions import recorded_qg_input

    sentence = _qg_run(tmp_path / "s", [{"prompt": "Context: x\nAnswer: x\nQuestion:", "response": " Q?",
                                         "qg_input": "sentence"}])
    marked = _qg_run(tmp_path / "m", [{"prompt": "Context: <answer>x</answer>\nAnswer: x\nQuestion:",
                                       "response": " Q?"}])
    unknown = _qg_run(tmp_path / "u", [{"prompt": "Context: x\nAnswer: x\nQuestion:", "response": " Q?"}])
    assert recorded_qg_input(sentence)[0] == "sentence"
    assert recorded_qg_input(sentence / "checkpoints")[0] == "sentence"  # found from checkpoints/ too
    assert recorded_qg_input(marked)[0] == "paragraph"  # an older file without the key: the marker says it
    assert recorded_qg_input(unknown)[0] is None and recorded_qg_input(tmp_path)[0] is None
    assert megazoo(["task", "synthetic_qa", "sample", "--data", str(DEV), "--checkpoint", str(sentence),
                    "--out", str(tmp_path / "q.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert ("--qg-input paragraph: the question generator" in err and "was trained on sentence prompts" in err
            and "sample with --qg-input sentence" in err and err.count("\n") == 0)
    assert megazoo(["task", "synthetic_qa", "sample", "--data", str(DEV), "--checkpoint", str(marked),
                    "--out", str(tmp_path / "q.json"), "--qg-input", "sentence"]) == 2
    assert "was trained on paragraph prompts" in capsys.readouterr().err
    assert not (tmp_path / "q.json").exists()
