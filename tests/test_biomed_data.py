"""biomed readers (BioBERT NER TSV, BLUE ChemProt, BioASQ SQuAD-v1.1 JSON) on hand-made fixtures,
each bad input with its `file:line: problem` message (`file: article N: problem` in a SQuAD file), and
the generated sets (official layouts, test entity names unseen in training)."""

import json
from pathlib import Path

import pytest

from megazoo.tasks.biomed.data import (BiomedFormatError, ner_label_set, read_chemprot_tsv, read_ner_tsv, read_split,
                                       read_squad_json)
from megazoo.tasks.biomed.generate import generate_biomed

FIXTURES = Path(__file__).parent / "fixtures" / "biomed"


def test_ner_reader_single_and_multi_type():
    train = read_ner_tsv(FIXTURES / "ner" / "train.tsv")
    assert len(train) == 4
    assert train[0].tokens[:2] == ("Naloxone", "reverses") and train[0].labels[:2] == ("B", "O")
    assert train[1].labels[2:4] == ("B", "I") and train[1].line == 10
    assert ner_label_set(train) == ["O", "B", "I"]
    multi = read_ner_tsv(FIXTURES / "ner-multi" / "train.tsv")
    assert multi[0].labels[2:6] == ("B-Disease", "O", "I-Disease", "I-Disease")  # an I after O is accepted
    assert ner_label_set(multi) == ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
    assert [len(s.tokens) for s in read_split(FIXTURES / "ner", "ner", "dev")] == [7, 4]  # devel.tsv


def test_chemprot_reader():
    train = read_chemprot_tsv(FIXTURES / "chemprot" / "train.tsv")
    assert [r.label for r in train] == ["CPR:4", "CPR:3", "CPR:5", "CPR:6", "CPR:9", "false", "false", "false"]
    assert train[0].id == "10064839.T3.T9" and train[0].sentence.startswith("@CHEMICAL$ strongly")
    assert "@CHEM-GENE$" in train[6].sentence  # one span that is both entities
    test = read_chemprot_tsv(FIXTURES / "chemprot" / "test.tsv")  # BLUE's header line is skipped
    assert len(test) == 3 and test[0].line == 2


def test_squad_reader_keeps_synonyms_and_articles():
    qs = read_squad_json(FIXTURES / "bioasq" / "train.json")
    assert [q.id for q in qs] == ["5c7e_001", "5c7e_002", "5c7e_003"]
    q = qs[0]
    assert q.answers == ("CFTR", "cystic fibrosis transmembrane conductance regulator")
    assert q.context[q.answer_start:q.answer_start + 4] == "CFTR" and q.answer_text == "CFTR"
    assert qs[2].answers == ("chronic myeloid leukemia", "CML") and qs[2].answer_start is not None
    dev = read_squad_json(FIXTURES / "bioasq" / "dev.json")
    assert dev[1].answers == ("metformin",) and dev[1].answer_start is None  # a synonym that is not located
    assert [q.article for q in dev] == [1] * len(dev) and dev[0].line == 0  # streamed: articles, not lines


# bad input --------------------------------------------------------------------------------------
def write(tmp_path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_ner_line_without_a_tab(tmp_path):
    path = write(tmp_path, "train.tsv", "Naloxone\tB\nreverses O\n")
    with pytest.raises(BiomedFormatError) as e:
        read_ner_tsv(path)
    assert str(e.value) == f"{path}:2: no tab in 'reverses O'; a NER line is token<TAB>label"


def test_a_ner_label_outside_the_scheme(tmp_path):
    path = write(tmp_path, "train.tsv", "Naloxone\tB\nreverses\tO\n\nclonidine\tX\n")
    with pytest.raises(BiomedFormatError, match=rf"^{path}:4: label 'X' is not in the B/I/O scheme"):
        read_ner_tsv(path)
    path = write(tmp_path, "other.tsv", "a\tB-Chem\nb\tE-Chem\n")
    with pytest.raises(BiomedFormatError, match=rf"^{path}:2: label 'E-Chem'"):
        read_ner_tsv(path)
    path = write(tmp_path, "iafter.tsv", "a\tO\nb\tI\n")  # accepted: seqeval opens an entity there
    assert read_ner_tsv(path)[0].labels == ("O", "I")


def test_a_chemprot_row_with_an_unknown_label_or_no_mask(tmp_path):
    path = write(tmp_path, "train.tsv", "1.T1.T2\t@CHEMICAL$ inhibits @GENE$ .\tCPR:4\n2.T1.T2\t@CHEMICAL$ binds @GENE$ .\tCPR:7\n")
    with pytest.raises(BiomedFormatError) as e:
        read_chemprot_tsv(path)
    assert str(e.value) == f"{path}:2: label 'CPR:7' is not one of false, CPR:3, CPR:4, CPR:5, CPR:6, CPR:9"
    path = write(tmp_path, "dev.tsv", "1.T1.T2\t@CHEMICAL$ inhibits @GENE$ .\tCPR:4\n\n3.T1.T2\taspirin inhibits @GENE$ .\tfalse\n")
    with pytest.raises(BiomedFormatError) as e:
        read_chemprot_tsv(path)
    assert str(e.value) == f"{path}:3: the sentence lacks the entity mask @CHEMICAL$"
    path = write(tmp_path, "test.tsv", "1.T1.T2 @CHEMICAL$ inhibits @GENE$ . CPR:4\n")
    with pytest.raises(BiomedFormatError, match=rf"^{path}:1: 1 tab-separated columns"):
        read_chemprot_tsv(path)


def test_a_qa_answer_start_that_does_not_match(tmp_path):
    data = json.loads((FIXTURES / "bioasq" / "train.json").read_text())
    data["data"][0]["paragraphs"][1]["qas"][1]["answers"][0]["answer_start"] += 2
    path = tmp_path / "train.json"
    path.write_text(json.dumps(data, indent=1))
    with pytest.raises(BiomedFormatError) as e:
        read_squad_json(path)
    assert str(e.value).startswith(f"{path}: article 1: question '5c7e_003': answer_start ")
    assert "does not match the answer text 'chronic myeloid leukemia'" in str(e.value)
    path = write(tmp_path, "broken.json", '{"data": [\n {"paragraphs": [{"context": "x", "qas": [\n{"id": 1}]}]}]}')
    with pytest.raises(BiomedFormatError) as e:
        read_squad_json(path)
    assert str(e.value) == f"{path}: article 1: a question has no 'question'"
    path = write(tmp_path, "notjson.json", '{"data": [\n}')
    with pytest.raises(BiomedFormatError, match=rf"^{path}:2: not valid JSON"):
        read_squad_json(path)


# generated sets ---------------------------------------------------------------------------------
def test_generated_sets_are_readable_and_test_names_are_unseen(tmp_path):
    sizes = {"ner": {"train": 60, "dev": 10, "test": 20}, "re": {"train": 60, "dev": 10, "test": 20},
             "qa": {"train": 20, "dev": 6, "test": 10}}
    counts = generate_biomed(tmp_path, seed=3, sizes=sizes, text_copies=1)
    assert counts["ner"] == sizes["ner"] and counts["re"] == sizes["re"]
    ner = {s: read_split(tmp_path / "ner", "ner", s) for s in ("train", "dev", "test")}
    assert ner_label_set(ner["train"]) == ["O", "B", "I"]

    def entities(sentences):
        return {t.lower() for s in sentences for t, lab in zip(s.tokens, s.labels) if lab != "O"}

    train_names, test_names = entities(ner["train"]), entities(ner["test"])
    assert test_names and not (test_names - {"acute", "chronic", "severe", "familial", "congenital", "progressive",
                                             "recurrent", "idiopathic"}) & train_names
    rel = {s: read_split(tmp_path / "re", "re", s) for s in ("train", "test")}
    assert {r.label for r in rel["train"]} >= {"false", "CPR:4"}
    qa = {s: read_split(tmp_path / "qa", "qa", s) for s in ("train", "test")}
    assert all(q.answer_start is not None for q in qa["train"] + qa["test"])
    train_answers = {a.lower() for q in qa["train"] for a in q.answers}
    assert not {q.answer_text.lower() for q in qa["test"]} & train_answers
    held = (tmp_path / "text" / "heldout_terms.txt").read_text().split()
    bio = (tmp_path / "text" / "bio.txt").read_text()
    assert held and not any(f" {t} " in f" {bio} " for t in held[:200])


def test_generated_relations_hold_out_one_wording_per_class(tmp_path):
    sizes = {"ner": {"train": 8, "dev": 2, "test": 2}, "re": {"train": 300, "dev": 10, "test": 300},
             "qa": {"train": 4, "dev": 2, "test": 2}}
    generate_biomed(tmp_path, seed=1, sizes=sizes, kinds=("re",))
    held = {"CPR:3": "was stimulated by @CHEMICAL$", "CPR:4": "@CHEMICAL$ blocked @GENE$",
            "CPR:5": "was activated by the agonist @CHEMICAL$", "CPR:6": "was blocked by the antagonist @CHEMICAL$",
            "CPR:9": "@CHEMICAL$ is metabolized by @GENE$", "false": "while @GENE$ was unchanged"}

    def wordings(split):
        return {r.label for r in read_split(tmp_path / "re", "re", split) if held[r.label] in r.sentence}

    assert not wordings("train") and len(wordings("test")) >= 5
