"""MSDP prompt selection as Megatron-LM's (issue 40): the prompts of 5 hand-made dialogues equal those of
a straight port of Megatron's tasks/msdp selection code (below; DPR's tokenizer and encoder replaced by
a deterministic bag-of-words encoder, used by both), for every data type; the copy-ratio filter by hand;
word tokenisation offline; the command with a bi-encoder checkpoint's query tower records its choices;
a checkpoint that is not a bi-encoder is one clear line."""

from __future__ import annotations

import functools
import json
import zlib

import numpy as np
import pytest
import torch
from nltk.tokenize import word_tokenize as nltk_word_tokenize

from megazoo.eval.metrics.dialogue import word_tokenized
from megazoo.tasks.dialogue import response_selection, selection
from megazoo.tasks.dialogue.data import read_tsv

# ---- hand-made data ---------------------------------------------------------------------------
FACTS = {
    "Jazz": ["Jazz is a music genre that originated in New Orleans in the late nineteenth century.",
             "Jazz musicians often improvise solos over a repeating chord progression called the changes.",
             "Jazz (born in African American communities) spread to Chicago and New York in the 1920s.",
             "It is said that jazz shaped almost every later style of popular music in America."],
    "Volcano": ["Volcano eruptions can throw ash more than thirty kilometres into the upper atmosphere.",
                "The Volcano Mauna Loa in Hawaii is the largest active volcano on Earth by volume."],
    "Penguin": ["Penguin colonies in Antarctica can hold more than a million breeding birds at once.",
                "The Emperor Penguin is the tallest and heaviest of all living penguin species today.",
                "This Penguin fact is about swimming speeds that reach about ten kilometres per hour."],
    "Coffee": ["Coffee plants are native to tropical Africa and are now grown in over seventy countries.",
               "Coffee beans are actually the roasted seeds of the small red coffee cherry fruit.",
               "Coffee was first roasted and brewed in Yemen in the fifteenth century, and from there the drink "
               "spread to Egypt, Persia and Turkey."],
    "Chess": ["Chess is played on a board of sixty four squares arranged in an eight by eight grid.",
              "Chess players call the first moves the opening and the final phase of a game the endgame."],
    "Glacier": ["Glacier ice forms when snow piles up over many years and slowly compacts into dense ice.",
                "Glacier retreat since 1850 has changed water supplies for people in many mountain regions."],
    "Violin": ["Violin strings were once made of gut but most players now use synthetic or steel strings.",
               "Violin makers in Cremona such as Stradivari built instruments that still sell for millions."],
    "Honey": ["Honey bees make honey from flower nectar and store it in wax combs inside the hive.",
              "Honey found in ancient Egyptian tombs was still edible after thousands of years."],
}


def train_lines() -> list[str]:
    """Per fact (contexts differ, so no two similarities tie: Megatron's torch.topk orders ties its own
    way): two responses that copy it (kept by the copy filter when long enough), one verbatim
    copy (too much copied) and one paraphrase (too little); plus a sample without knowledge."""
    out = []
    for topic, facts in FACTS.items():
        for j, k in enumerate(facts):
            low = topic.lower()
            out += [f"{topic}\tI have been reading about {low} lately. [SEP] Oh nice, what got you into it? [SEP] "
                    f"What is the most surprising thing about {low}, number {j}?\t{k}\tSure! {k}",
                    f"{topic}\tDo you know anything about {low}, fact {j}?\t{k}\tOh, I read that {k}",
                    f"{topic}\tHi! [SEP] Hello there. [SEP] Tell me thing {j} about {low}.\t{k}\t{k}",
                    f"{topic}\tWhat do people say about {low}, part {j}?\t{k}\tI think {low} is great, honestly."]
        out.append(f"{topic}\tThanks, that was fun! [SEP] It was!\tno_passages_used\tBye for now!")
    return out


# 5 hand-made dialogues: two seen topics, two unseen; the last shares the fourth's topic and last turn
TEST = [
    "Jazz\tI just got back from a concert in New Orleans. [SEP] That sounds fun! What kind of music? [SEP] "
    "Mostly jazz, where did it come from?\t" + FACTS["Jazz"][0] + "\tJazz grew up in New Orleans over a century ago.",
    "Volcano\tMy geography class covered volcanoes today. [SEP] Did you learn about the big ones?\t"
    + FACTS["Volcano"][1] + "\tYes, Mauna Loa in Hawaii is the biggest active one.",
    "Kite\tWe flew a kite at the beach yesterday and it went really high.\tKite flying began in China over two "
    "thousand years ago.\tKites were first flown in China, a very long time ago!",
    "Lighthouse\tThe old lighthouse near us is a museum now. [SEP] Can you still climb it? [SEP] Yes, how do they "
    "work?\tLighthouse lamps were once fuelled by whale oil.\tThey used big lamps, once burning whale oil.",
    "Lighthouse\tI love walking along the coast at night. [SEP] Yes, how do they work?\tLighthouse lenses focus "
    "light into a beam.\tA special lens focuses the light into a beam.",
]
KNOWLEDGE_OUT = ["Jazz began in New Orleans, didn't it?", "Mauna Loa is big.", "Kites come from China.",
                 "Lighthouse lamps <|endoftext|> burned oil.", "Lenses make beams."]


@functools.lru_cache(maxsize=None)
def word_vector(word: str, dim: int = 16) -> np.ndarray:
    return np.random.RandomState(zlib.crc32(word.encode())).standard_normal(dim).astype(np.float32)


def bag_vector(text: str, dim: int = 16) -> np.ndarray:
    """Deterministic stand-in for DPR: the sum of one fixed random vector per lower-cased word."""
    vec = np.zeros(dim, dtype=np.float32)
    for word in text.lower().split():
        vec += word_vector(word, dim)
    return vec


def embed(texts) -> np.ndarray:
    return np.stack([bag_vector(t) for t in texts])


def encoder(text: str) -> torch.Tensor:
    """The port's `encoder(input_ids=tokenizer.encode(text)).pooler_output`: [1, dim]."""
    return torch.from_numpy(bag_vector(text))[None]


# ---- a straight port of Megatron-LM tasks/msdp selection (164204cd), DPR replaced by `encoder` ----------
# nltk's word_tokenize is called with preserve_line=True: the Punkt model is not available offline.
def tokenize(text):
    return nltk_word_tokenize(text, preserve_line=True)


def port_get_database(test_lines, train, data_type):
    test_topics = {line.strip().split("\t")[0]: True for line in test_lines}
    by_topic, dialogs_by_topic, examples = {}, {}, []
    for line in train:
        topic, context, knowledge, _ = line.strip().split("\t")
        turns = context.split(" [SEP] ")[-3:]
        if knowledge == "no_passages_used":
            continue
        if data_type != "wow_seen" and ("(" in knowledge or ")" in knowledge):
            continue
        if data_type != "wow_seen" and topic not in knowledge:
            continue
        inst = "( " + turns[-1] + " ) " + topic + " => " + knowledge
        dialog = "( " + topic + " ) " if data_type != "wow_seen" else ""
        for i, turn in enumerate(turns):
            dialog += (" " if i != 0 else "") + turn
        if topic in test_topics:
            by_topic.setdefault(topic, []).append(inst)
            dialogs_by_topic.setdefault(topic, []).append(dialog)
        else:
            if len(knowledge.split()) > 20:
                continue
            if knowledge.startswith("It") or knowledge.startswith("it") or knowledge.startswith("This") or \
                    knowledge.startswith("this"):
                continue
        examples.append((topic, dialog, inst))
    return by_topic, dialogs_by_topic, examples


def port_select_by_similarity(query, dialogs, prompts, topk):
    query_emb = encoder(query)[0]
    embs = torch.cat([encoder(d) for d in dialogs], dim=0)
    _, indices = torch.topk(embs.matmul(query_emb), k=topk)
    return [prompts[i] for i in indices.tolist()[::-1]]


def port_knowledge_prompt_file(test_lines, train, data_type):
    by_topic, dialogs_by_topic, examples = port_get_database(test_lines, train, data_type)
    dialog_embs = torch.cat([encoder(e[1]) for e in examples], dim=0)
    out = []
    for line in test_lines:
        topic, context = line.strip().split("\t")[:2]
        turns = context.split(" [SEP] ")[-3:]
        query = "( " + topic + " ) " if data_type != "seen" else ""
        for i, turn in enumerate(turns):
            query += (" " if i != 0 else "") + turn
        if topic not in by_topic:
            _, indices = torch.sort(dialog_embs.matmul(encoder(query)[0]))
            chosen, topics = [], {}
            for index in indices.tolist():
                if examples[index][0] not in topics:
                    topics[examples[index][0]] = True
                    chosen.append(examples[index][2])
                    if len(chosen) == 10:
                        break
            out.append({topic + " " + turns[-1]: chosen[::-1]})
        else:
            n = min(len(by_topic[topic]), 10)
            out.append({topic + " " + turns[-1]: port_select_by_similarity(query, dialogs_by_topic[topic],
                                                                           by_topic[topic], n)})
    return [json.dumps(x) for x in out]


def port_knowledge_inputs(test_lines, prompt_file):
    prompts = {}
    for line in prompt_file:
        d = json.loads(line.strip())
        key = list(d.keys())[0]
        if key not in prompts:
            prompts[key] = "".join(x.strip() + " \n" for x in d[key])
    out = []
    for line in test_lines:
        topic, context = line.strip().split("\t")[:2]
        last_turn = context.split(" [SEP] ")[-1]
        out.append(prompts[topic + " " + last_turn] + "( " + last_turn + " ) " + topic + " =>")
    return out


def port_response_prompt_file(train, seed):
    state = np.random.get_state()
    np.random.seed(seed)
    lines = []
    for line in train:
        topic, context, knowledge, response = line.strip().split("\t")
        turns = context.split(" [SEP] ")[-3:]
        if knowledge == "no_passages_used":
            continue
        k_tokens = tokenize(knowledge)
        k_dict = {t: True for t in k_tokens}
        r_tokens = tokenize(response)
        overlap = acc = 0
        for token in r_tokens:
            if token in k_dict:
                acc += 1
            else:
                if acc >= 10:
                    overlap += acc
                acc = 0
        if acc >= 10:
            overlap += acc
        if overlap > len(r_tokens) * 0.9 or overlap < len(r_tokens) * 0.6:
            continue
        if overlap < len(k_tokens) * 0.8:
            continue
        lines.append("Topic: " + topic + ". " + "User says: " + " ".join(tokenize(turns[-1])) + " "
                     + "We know that: " + " ".join(tokenize(knowledge)) + " " + "System replies: "
                     + " ".join(tokenize(response)))
    np.random.shuffle(lines)
    np.random.set_state(state)
    return [lines[i] + "\n" for i in range(20)]


def port_response_inputs(test_lines, generated, prompt_file, n_example=20):
    prompt = "".join(x.strip() + " \n" for x in prompt_file[:n_example])
    out = []
    for line, knowledge in zip(test_lines, generated):  # prepare_input_for_response_generation, then prompt.py
        topic, context = line.strip().split("\t")[:2]
        knowledge = knowledge.strip()
        if "<|endoftext|>" in knowledge:
            knowledge = knowledge.replace("<|endoftext|>", "")
        last_turn = " ".join(tokenize(context.split(" [SEP] ")[-1])).strip()
        knowledge = " ".join(tokenize(knowledge)).strip()
        out.append(prompt + "Topic: " + topic + ". " + "User says: " + last_turn + " " + "We know that: "
                   + knowledge + " " + "System replies:")
    return out


# ---- the checks ---------------------------------------------------------------------------------
@pytest.fixture()
def files(tmp_path):
    (tmp_path / "train.tsv").write_text("\n".join(train_lines()) + "\n")
    (tmp_path / "test.tsv").write_text("\n".join(TEST) + "\n")
    return read_tsv(tmp_path / "test.tsv"), read_tsv(tmp_path / "train.tsv")


@pytest.mark.parametrize("data_type", selection.DATA_TYPES)
def test_knowledge_prompts_equal_megatrons(files, data_type):
    test, pool = files
    config = selection.SelectionConfig(data_type=data_type)
    prompts, chosen = selection.knowledge_prompts(test, pool, embed, config)
    want = port_knowledge_inputs(TEST, port_knowledge_prompt_file(TEST, train_lines(), data_type))
    assert prompts == want
    # the records name the pool samples whose example lines make up the prompt
    for prompt, idx in zip(prompts, chosen):
        assert prompt.split(" \n")[:-1] == [selection.instance(pool[i]) for i in idx]
    seen = [pool[i].topic for i in chosen[1]]
    assert seen == ["Volcano"] * 8  # a seen topic: its own 8 samples only, no top-up to 10
    unseen = [pool[i].topic for i in chosen[2]]
    assert len(set(unseen)) == len(unseen) == len(FACTS)  # unseen: one per topic, all 8 topics (fewer than 10)
    assert chosen[4] == chosen[3]  # the same `topic last-turn` key shares the first sample's examples


def test_response_prompts_equal_megatrons(files):
    test, pool = files
    fixed = response_selection.response_examples(pool, 20, 1234)
    prompts = response_selection.response_prompts(test, KNOWLEDGE_OUT, [pool[i] for i in fixed])
    assert prompts == port_response_inputs(TEST, KNOWLEDGE_OUT, port_response_prompt_file(train_lines(), 1234))
    assert "did n't it ?" in prompts[0].splitlines()[-1] and "<|endoftext|>" not in prompts[3]
    other = response_selection.response_examples(pool, 20, 7)
    assert sorted(other) != other and other != fixed  # the seed draws them


def test_unseen_order_nearest_walks_from_the_most_similar(files):
    test, pool = files
    far = selection.knowledge_prompts(test, pool, embed, selection.SelectionConfig())[1][2]
    near = selection.knowledge_prompts(test, pool, embed, selection.SelectionConfig(unseen_order="nearest"))[1][2]
    q = embed([selection.query_text(test[2])])[0]
    sims = {i: float(embed([" ".join(pool[i].turns[-3:])])[0] @ q) for i in far + near}
    assert sims[near[-1]] > sims[far[-1]] and sims[near[-1]] == max(sims.values())  # the nearest sits last
    assert sims[far[-1]] == min(sims.values())  # Megatron's ascending sort: the least similar sits last


def test_copy_ratio_by_hand():
    k = "a b c d e f g h i j k l".split()  # 12 knowledge tokens
    assert response_selection.copied_tokens(k, "x a b c d e f g h i j y".split()) == 10  # one run of 10
    assert response_selection.copied_tokens(k, "a b c d e f g h i x j k".split()) == 0  # runs of 9 and 2
    assert response_selection.copied_tokens(k, "x y a b c d e f g h i j k l".split()) == 12  # run at the end
    # 12 of 14 response tokens (86%, within 60-90%), 12 of 12 knowledge tokens: kept
    kn = "Honey found in ancient Egyptian tombs was still edible after thousands of years."
    assert response_selection.copies_knowledge(kn, "Oh, " + kn)
    assert not response_selection.copies_knowledge(kn, kn)  # 100% of the response copied: too much
    assert not response_selection.copies_knowledge(kn, "Honey keeps for thousands of years.")  # no run of 10


def test_word_tokenize_offline_as_treebank():
    assert word_tokenized("I don't know. It's \"hot\", isn't it?") == \
        "I do n't know. It 's `` hot '' , is n't it ?"  # only the last full stop is split off (no Punkt)
    assert word_tokenized("Mr. Smith cannot go.") == "Mr. Smith can not go ."


# ---- the command: a bi-encoder checkpoint's query tower, the choices recorded, bad encoders ----------
def save_encoder(root, task: dict | None, towers: bool = True):
    """A tiny BERT training checkpoint; with `task` a retriever's (two towers: query.*, context.*)."""
    from megazoo.core.checkpoint import save_full_model_state
    from megazoo.zoo.bert import BertModel, megatron_bert
    from megazoo.zoo.hf import gather_full_state

    cfg = megatron_bert(num_layers=1, hidden_size=16, num_heads=2, vocab_size=30522, seq_length=128)
    query, context = (gather_full_state(BertModel(cfg).initialize(seed)) for seed in (1, 2))
    state = {**{"query." + k: v for k, v in query.items()}, **{"context." + k: v for k, v in context.items()}} \
        if towers else query
    meta = {"arch": "bert", "model": {**cfg.to_dict(), "pooling": "mean"}, "data": {"tokenizer": "bert-wordpiece"}}
    if task is not None:
        meta["task"] = task
    save_full_model_state(root / "checkpoints", state, meta)
    return root


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    from megazoo.core.data.tokenizers import _gpt2_dir
    from megazoo.core.parallel.context import ParallelContext
    from megazoo.core.parallel.gather import full_state
    from megazoo.zoo.gpt import GPTModel, llama_layout
    from megazoo.zoo.io import save_model

    cfg = llama_layout(num_layers=1, hidden_size=32, num_heads=4, num_kv_heads=2, ffn_hidden_size=64,
                       vocab_size=50257, seq_length=2048)
    out = tmp_path_factory.mktemp("msdp-sel") / "decoder"
    save_model(out, "llama", cfg, full_state(GPTModel(cfg).initialize(0), ParallelContext.single()),
               tokenizer=_gpt2_dir())
    return out


def test_command_records_choices_of_the_query_tower(tmp_path, files, decoder):
    from megazoo.cli import main as megazoo
    from megazoo.eval.question_tower import QuestionTower

    torch.set_num_threads(1)
    test, pool = files
    enc = save_encoder(tmp_path / "retriever", {"name": "retrieval", "objective": "supervised",
                                                "similarity": "cosine"})
    data, out = tmp_path / "test.tsv", tmp_path / "k.jsonl"
    common = ["task", "dialogue", "msdp", "--data", str(data), "--checkpoint", str(decoder), "--max-new-tokens", "3"]
    assert megazoo([*common, "--stage", "knowledge", "--query-encoder", str(enc), "--out", str(out)]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    tower = QuestionTower(enc)
    assert tower.separate and tower.similarity == "cosine"
    config = selection.SelectionConfig(data_type="wow_unseen")  # auto: Kite and Lighthouse are not in the pool
    prompts, chosen = selection.knowledge_prompts(test, pool, tower.encode, config)
    assert [[e["sample"] for e in r["examples"]] for r in rows] == chosen
    assert [[e["line"] for e in r["examples"]] for r in rows] == [[pool[i].line for i in c] for c in chosen]
    assert (tmp_path / "k.prompt.txt").read_text() == prompts[0] + "\n"
    record = json.loads((tmp_path / "k.selection.json").read_text())
    assert record["data_type"] == "wow_unseen" and record["encoder"]["kind"] == "bi-encoder query tower"

    assert megazoo([*common, "--stage", "response", "--knowledge", str(out), "--out", str(tmp_path / "r.jsonl")]) == 0
    fixed = response_selection.response_examples(pool, 20, 1234)
    assert [e["sample"] for e in json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])["examples"]] == fixed
    last = (tmp_path / "r.prompt.txt").read_text().splitlines()[-1]
    assert last.startswith("Topic: Jazz. User says: Mostly jazz , where did it come from ? We know that: ")


def test_encoder_that_is_not_a_bi_encoder_is_one_line(tmp_path, decoder, capsys):
    from megazoo.cli import main as megazoo

    (tmp_path / "test.tsv").write_text("\n".join(TEST) + "\n")
    (tmp_path / "train.tsv").write_text("\n".join(train_lines()) + "\n")
    plain = save_encoder(tmp_path / "bert", None, towers=False)  # a BERT pretraining checkpoint
    reader = save_encoder(tmp_path / "reader", {"name": "retrieval", "component": "reader"})
    common = ["task", "dialogue", "msdp", "--stage", "knowledge", "--data", str(tmp_path / "test.tsv"),
              "--checkpoint", str(decoder), "--out", str(tmp_path / "k.jsonl")]
    for bad, says in ((plain, "not a retrieval checkpoint"), (reader, "'reader' (reader) checkpoint"),
                      (decoder, "imported (import-hf) model folder")):
        capsys.readouterr()
        assert megazoo([*common, "--query-encoder", str(bad)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"megazoo task dialogue msdp: error: --query-encoder {bad}: ") and "\n" not in err
        assert says in err and "not a bi-encoder" in err and "--embedder" in err
    assert not (tmp_path / "k.jsonl").exists()


def test_question_tower_is_the_retrievers_query_tower(tmp_path):
    from megazoo.eval.question_tower import QuestionTower
    from megazoo.tasks.retrieval.encoder import BiEncoder

    torch.set_num_threads(1)
    for similarity in ("cosine", "dot"):
        enc = save_encoder(tmp_path / similarity, {"name": "retrieval", "objective": "supervised",
                                                    "similarity": similarity})
        texts = ["( Jazz ) Mostly jazz, where did it come from?", "( Kite ) We flew a kite at the beach."]
        retriever = BiEncoder(enc / "checkpoints")
        got, want = QuestionTower(enc).encode(texts), retriever.questions(texts)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        context = retriever.encode_rows(retriever.rows.questions(texts))  # the same rows through the context tower
        assert not np.allclose(got, context, atol=1e-3)


def test_query_encoder_and_embedder_together_is_one_line(tmp_path, decoder, capsys):
    from megazoo.cli import main as megazoo

    (tmp_path / "test.tsv").write_text("\n".join(TEST) + "\n")
    (tmp_path / "train.tsv").write_text("\n".join(train_lines()) + "\n")
    enc = save_encoder(tmp_path / "retriever", {"name": "retrieval", "objective": "supervised"})
    code = megazoo(["task", "dialogue", "msdp", "--stage", "knowledge", "--data", str(tmp_path / "test.tsv"),
                    "--checkpoint", str(decoder), "--out", str(tmp_path / "k.jsonl"), "--query-encoder", str(enc),
                    "--embedder", str(enc)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "--query-encoder" in err and "not both" in err
