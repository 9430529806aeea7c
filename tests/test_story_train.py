"""tasks/story training on the core trainer with tiny models: the generator's pairs (loss on the
next sentence only), the generator and ranker trained through `megazoo task story train`, the
generation loop (given keywords, antonyms, knowledge, the ranker) and the weak labels."""

from __future__ import annotations

import json

import pytest
import torch

from megazoo.cli import main
from megazoo.core.data import build_tokenizer
from megazoo.core.data.sft import IGNORE
from megazoo.core.train import Trainer
from megazoo.core.train.errors import ConfigError
from megazoo.tasks.story.builder import build
from megazoo.tasks.story.cli import STAGES
from megazoo.tasks.story.generate import write_generated
from megazoo.tasks.story.weak_labels import label_steps, ranker_steps
from tests.evaluation_shape import check_evaluation
from tests.test_race_finetune import make_tiny_bert
from tests.train_cases import one_thread

TINY_GPT = ["train.init_from=null", "train.trainable=all", "model.arch=gpt", "model.num_layers=2",
            "model.hidden_size=32", "model.num_heads=4", "model.vocab_size=50304", "model.seq_length=128",
            "data.tokenizer=gpt2", "train.micro_batch=4", "train.global_batch=4", "train.steps=2",
            "train.warmup_fraction=0", "train.eval_iters=1", "train.eval_interval=2", "log.progress=false",
            "log.plot=false", "checkpoint.resume=none", "task.valid_stories=2"]
KB = "bread\tIsA\tfood\nbeach\tHasA\tsand\nlate\tAntonym\tearly\nhappy\tAntonym\tunhappy\nbook\tUsedFor\treading\n"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("story")
    write_generated(root / "data", n=24, seed=2)
    (root / "kb.tsv").write_text(KB)
    return root


def test_generator_pairs_put_the_loss_on_the_next_sentence_only(data, tmp_path):
    tok = build_tokenizer("gpt2")
    cfg = STAGES["train"].load("story", [*TINY_GPT, f"data.path={data / 'data'}",
                                         f"task.knowledge={data / 'kb.tsv'}", "task.drop_keywords=0",
                                         "task.drop_knowledge=0", f"log.dir={tmp_path / 'r'}", "checkpoint.save=false"])
    with one_thread():
        t = Trainer(cfg)
        try:
            mb = t.train_data.step(0)[0]
        finally:
            t.close()
    for ids, labels in zip(mb["input_ids"], mb["labels"]):
        target = [x for x in labels.tolist() if x != IGNORE]
        assert target[-1] == tok.eod
        first = next(i for i, y in enumerate(labels.tolist()) if y != IGNORE)  # input i predicts label i
        prompt = tok.decode(ids[: first + 1].tolist())
        sentence = tok.decode(target[:-1])
        assert prompt.startswith("Story: ") and "\nKeywords: " in prompt and prompt.rstrip().endswith("Next:")
        assert sentence.startswith(" ") and sentence.strip()[-1] in ".!?"
        assert "[MALE]" in prompt or "[FEMALE]" in prompt  # names are delexicalised


def test_generator_trains_and_writes_stories(data, tmp_path):
    run = tmp_path / "gen"
    assert main(["task", "story", "train", "story", "--set", *TINY_GPT, f"data.path={data / 'data'}",
                 f"task.knowledge={data / 'kb.tsv'}", f"log.dir={run}"]) == 0
    assert (run / "checkpoints").is_dir()
    keywords = tmp_path / "k.jsonl"
    keywords.write_text('[["late"], ["bread"], [], ["happy", "beach"]]\n' * 24)
    stories = data / "data" / "stories.csv"
    out = tmp_path / "g.jsonl"
    args = ["task", "story", "sample", "--checkpoint", str(run), "--data", str(stories), "--limit", "2",
            "--keywords", str(keywords), "--knowledge", str(data / "kb.tsv"), "--max-new-tokens", "4"]
    assert main([*args, "--out", str(out)]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 2 and all(len(r["sentences"]) == 4 and len(r["display"]) == 5 for r in rows)
    assert rows[0]["keywords"] == [["late"], ["bread"], [], ["happy", "beach"]]
    assert rows[0]["knowledge"] == [["late is the opposite of early"], ["bread is a food"], [],
                                    ["happy is the opposite of unhappy", "beach has a sand"]]
    assert main([*args, "--antonyms", "--out", str(tmp_path / "a.jsonl")]) == 0
    ant = json.loads((tmp_path / "a.jsonl").read_text().splitlines()[0])
    assert ant["keywords"] == [["early"], ["bread"], [], ["unhappy", "beach"]]
    assert ant["original_keywords"] == rows[0]["keywords"]
    assert main(["task", "story", "evaluate", "--data", str(stories), "--generations", str(out), "--checkpoint",
                 str(run), "--limit", "2", "--out", str(tmp_path / "e.json")]) == 0  # the generations' two stories
    ppl = check_evaluation(tmp_path / "e.json", "story")["metrics"]["ppl"]
    assert 1 < ppl < 50304 * 2  # an untrained model is near uniform over the vocabulary
    # the leaderboard's evaluation: the same loop with the gold keywords, in memory
    from megazoo.tasks.story.leaderboard import EVALUATION

    got = EVALUATION.run(str(run), str(stories), {"limit": 2, "max_new_tokens": 4, "knowledge": str(data / "kb.tsv")})
    assert got["n"] == 2 and set(got) >= set(EVALUATION.metrics) and 0 <= got["control_rate"] <= 1
    # a generator given where the ranker belongs: one line naming the flag and the component it has
    from megazoo.eval.taskkit import NotTaskCheckpoint
    from megazoo.tasks.story.models import Ranker

    with pytest.raises(NotTaskCheckpoint, match=r"--ranker .*a story 'generator' checkpoint, this stage needs a "
                                                r"'ranker' one \(task.component: ranker\)"):
        Ranker(run)


def test_ranker_trains_on_weak_labels_and_orders_knowledge(tmp_path):
    from megazoo.tasks.story.models import Ranker
    from megazoo.tasks.story.weak_labels import write_jsonl

    init = make_tiny_bert(tmp_path / "bert")
    rows = [{"id": f"s{i}", "step": 1, "context": [f"[MALE] went to the {w}."],
             "candidates": [f"{w} is a place", "cake is a food", "dog is an animal"], "label": 0}
            for i, w in enumerate(["park", "beach", "zoo", "mall", "lake", "farm"])]
    write_jsonl(tmp_path / "r" / "ranker-train.jsonl", rows[:4])
    write_jsonl(tmp_path / "r" / "ranker-valid.jsonl", rows[4:])
    run = tmp_path / "ranker"
    assert main(["task", "story", "train", "story-ranker", "--set", f"train.init_from={init}",
                 f"data.path={tmp_path / 'r'}", "train.steps=2", "train.micro_batch=2", "train.global_batch=2",
                 "train.eval_interval=2", "task.max_seq_length=32", "log.progress=false", "log.plot=false",
                 "checkpoint.resume=none", f"log.dir={run}"]) == 0
    valid = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines() if "top1_agreement" in x]
    assert valid and valid[-1]["random_agreement"] == pytest.approx(1 / 3)
    assert valid[-1]["top1_agreement"] in (0.0, 0.5, 1.0)
    order = Ranker(run).order(["[MALE] went to the park."], rows[0]["candidates"])
    assert sorted(order) == sorted(rows[0]["candidates"])


def test_weak_label_is_the_candidate_closest_to_the_gold_sentence(data):
    from megazoo.tasks.story.data import read_rocstories
    from megazoo.tasks.story.delex import delexicalise
    from megazoo.tasks.story.keywords import story_keywords
    from megazoo.tasks.story.knowledge import KnowledgeBase
    from megazoo.tasks.story.wordnet_kb import build_wordnet_kb

    stories = [delexicalise(s) for s in read_rocstories(data / "data" / "stories.csv")][:2]
    vocab = {w for s in stories for ws in story_keywords(s.sentences) for w in ws}
    steps = ranker_steps(stories, KnowledgeBase(build_wordnet_kb(vocab)), candidates=3, seed=0)
    assert len(steps) == 8 and all(len(s["candidates"]) == 3 for s in steps)

    def embed(texts):  # a bag of letters: the label is the candidate sharing most letters with the gold
        v = torch.tensor([[t.lower().count(c) for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts], dtype=torch.float)
        return (v / v.norm(dim=1, keepdim=True)).numpy()

    labelled = label_steps(steps, embed)
    for s, row in zip(steps, labelled):
        sims = (embed(row["candidates"]) @ embed([s["gold"]])[0]).tolist()
        assert row["label"] == max(range(3), key=lambda j: sims[j])


def test_task_keys_are_checked():
    with pytest.raises(ConfigError, match="task.component must be one of generator, keywords, ranker"):
        build({"component": "ranking"}, {"arch": "gpt"})
    with pytest.raises(ConfigError, match="did you mean `task.knowledge`"):
        build({"knowledg": "x"}, {"arch": "gpt"})
    with pytest.raises(ConfigError, match="ranker is a BERT scorer"):
        build({"component": "ranker"}, {"arch": "gpt"})


def test_antonym_swap_share_changes_keywords_and_sentence_alike():
    from megazoo.tasks.story.inputs import generator_pairs, swap_in_sentence
    from megazoo.tasks.story.data import Story

    opposite = {"happy": "unhappy", "late": "early"}.get
    assert swap_in_sentence("Happy, she was late again.", ["happy", "late", "again"], opposite) == \
        ("Unhappy, she was early again.", ["unhappy", "early", "again"])
    assert swap_in_sentence("He was lately tired.", ["late"], opposite) == ("He was lately tired.", ["late"])
    story = Story("s1", "t", ["Tom woke up.", "He was late for work.", "He felt happy at noon.", "He ate.", "He slept."])
    plain = generator_pairs([story], None, drop_keywords=0, drop_knowledge=0, seed=3, antonym=opposite)
    swapped = generator_pairs([story], None, drop_keywords=0, drop_knowledge=0, seed=3, swap_antonyms=1.0,
                              antonym=opposite)
    assert len(plain) == len(swapped) == 4
    changed = [(p, s) for p, s in zip(plain, swapped) if p != s]
    assert changed, "a sentence with a keyword that has an antonym must be swapped"
    for (p_prompt, p_resp), (s_prompt, s_resp) in changed:
        words = [w for w in ("late", "happy") if w in p_resp]
        for w in words:
            assert opposite(w) in s_resp and opposite(w) in s_prompt.split("Keywords: ")[1]
    with pytest.raises(ConfigError, match="task.drop_keywords, task.drop_knowledge and task.swap_antonyms must be "
                                          "shares that sum to at most 1, got 0.5, 0.3 and 0.3"):
        build({"drop_keywords": 0.5, "drop_knowledge": 0.3, "swap_antonyms": 0.3}, {"arch": "gpt"})
