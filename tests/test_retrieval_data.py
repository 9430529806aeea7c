"""The DPR readers on hand-written fixtures, the generator's files read back by them, the salient
span tagger, and every bad input of the issue with its one-line `file:line: problem` message (a bad item
of a streamed JSON array: `file: item N: problem`), and the commands' exit code 2 without a traceback."""

import json
from pathlib import Path

import pytest

from megazoo.cli import main as megazoo
from megazoo.tasks.retrieval.data import RetrievalFormatError, read_dpr_json, read_passages, read_qas, read_qas_csv

FIXTURE = Path(__file__).parent / "fixtures" / "retrieval"


def test_passages_header_skipped_ids_and_pairs():
    ps = read_passages(FIXTURE / "psgs.tsv")
    assert len(ps) == 12 and [p.id for p in ps] == list(range(1, 13))
    assert ps[1].title == "Frankenstein" and ps[1].text.startswith("Frankenstein is an 1818 novel")


def test_qas_csv_and_json_layouts():
    qs = read_qas_csv(FIXTURE / "nq-test.csv")
    assert len(qs) == 9 and qs[0].question == "who wrote the novel frankenstein" and qs[0].answers == ["Mary Shelley"]
    assert qs[2].answers == ["Alexander Fleming", "Fleming"]
    items = read_dpr_json(FIXTURE / "nq-train.json")
    assert len(items) == 6 and items[0].positives[0]["title"] == "Frankenstein"
    assert items[0].positives[0]["passage_id"] == "2" and len(items[0].hard_negatives) == 1
    assert items[1].hard_negatives == [] and items[1].negatives == []
    assert [q.question for q in read_qas(FIXTURE / "nq-dev.json")] == [q.question for q in items[:4]]


@pytest.mark.parametrize("name, reader, message", [
    ("psgs-noheader.tsv", read_passages,
     "psgs-noheader.tsv:1: the header is ['1', 'The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars "
     "in Paris. It was designed by the company of Gustave Eiffel and completed in 1889.', 'Eiffel Tower']; a "
     "psgs_w100.tsv file starts with the line id<TAB>text<TAB>title"),
    ("psgs-badid.tsv", read_passages, "psgs-badid.tsv:3: passage id 'wiki:2' is not an integer"),
    ("qas-notlist.csv", read_qas_csv, "qas-notlist.csv:2: answers must be a list of strings, got str '1889'"),
    ("nq-nopositive.json", read_dpr_json,
     "nq-nopositive.json: item 2: the item has no `positive_ctxs` (a non-empty list); supervised training needs a "
     "positive passage per question"),
])
def test_bad_inputs_name_file_and_line_or_item(name, reader, message):
    with pytest.raises(RetrievalFormatError) as err:
        reader(FIXTURE / name)
    assert str(err.value) == f"{FIXTURE / name}".replace(name, "") + message


def test_bad_passages_file_fails_the_command_with_one_line(tmp_path, capsys):
    code = megazoo(["task", "retrieval", "evaluate", "--passages", str(FIXTURE / "psgs-badid.tsv"), "--qas",
                    str(FIXTURE / "nq-test.csv"), "--checkpoint", str(tmp_path / "ckpt"), "--out", str(tmp_path / "x.json")])
    err = capsys.readouterr().err.strip()  # (an --out inside the --checkpoint folder is refused: core/fs/policy.py)
    assert code == 2 and err == (f"megazoo task retrieval evaluate: error: {FIXTURE / 'psgs-badid.tsv'}:3: passage id "
                                 f"'wiki:2' is not an integer")
    assert not (tmp_path / "x.json").exists()


def test_generated_set_reads_back_in_both_layouts(tmp_path):
    from megazoo.tasks.retrieval.evaluate import has_answer

    out = tmp_path / "gen"
    assert megazoo(["task", "retrieval", "data", str(out), "--corpus", "stdlib"]) == 0
    passages = read_passages(out / "psgs_w100.tsv")
    lengths = sorted(len(p.text.split()) for p in passages)
    assert len(passages) > 300 and 90 <= lengths[len(lengths) // 2] <= 160 and lengths[-1] <= 300  # about 100 words
    by_id = {p.id: p for p in passages}
    train = read_dpr_json(out / "nq-train.json")
    assert len(train) > 200
    for q in train[:50]:  # each positive is a passage of the collection holding the answer
        pos = q.positives[0]
        assert by_id[int(pos["passage_id"])].text == pos["text"] and has_answer(q.answers, pos["text"])
    csv_q, json_q = read_qas(out / "nq-test.csv"), read_qas(out / "nq-test.json")
    assert [(q.question, q.answers) for q in csv_q] == [(q.question, q.answers) for q in json_q]
    test_ids = {int(json.loads(x)["passage_id"]) for x in (out / "heldout.jsonl").read_text().splitlines()}
    train_ids = {int(q.positives[0]["passage_id"]) for q in train}
    assert test_ids and not test_ids & train_ids  # documents are split, so no test passage is trained on
    from megazoo.core.data import IndexedDataset

    text, titles = IndexedDataset(out / "ict" / "text"), IndexedDataset(out / "ict" / "titles")
    assert text.num_documents == titles.num_documents and len(text) > text.num_documents  # sentence-split


def test_salient_spans():
    from megazoo.tasks.retrieval.reader.salient import mask_spans, salient_spans

    text = "Apollo 11 landed on the Moon on 20 July 1969. Its elevation is 8,849 metres. The Eiffel Tower is tall."
    spans = salient_spans(text)
    assert [(s.kind, s.text) for s in spans] == [("entity", "Apollo 11"), ("entity", "Moon"), ("date", "20 July 1969"),
                                                 ("number", "8,849 metres"), ("entity", "Eiffel Tower")]
    assert mask_spans(text, spans[:3]) == "[MASK] landed on the [MASK] on [MASK]. Its elevation is 8,849 metres. " \
                                          "The Eiffel Tower is tall."


def test_recipe_errors_before_any_rank_starts(capsys):
    assert megazoo(["task", "retrieval", "train", "retrieval-finetune", "--set", "task.objective=dpr"]) == 2
    assert capsys.readouterr().err.strip() == ("megazoo task retrieval train: error: task.objective='dpr'; choose one "
                                               "of ict, supervised")
    assert megazoo(["task", "retrieval", "train", "retrieval-finetune", "--set", "task.hard_negative=2",
                    "train.init_from=null"]) == 2
    assert capsys.readouterr().err.strip() == ("megazoo task retrieval train: error: task retrieval: unknown key "
                                               "`task.hard_negative`; did you mean `task.hard_negatives`?")


def test_bm25_hard_negatives_skip_the_positive_and_answer_passages():
    from megazoo.tasks.retrieval.evaluate import has_answer
    from megazoo.tasks.retrieval.negatives import BM25Index, mine_hard_negatives

    pool = [{"title": p.title, "text": p.text} for p in read_passages(FIXTURE / "psgs.tsv")]
    questions = read_dpr_json(FIXTURE / "nq-train.json")
    mined = mine_hard_negatives(questions, pool, 2)
    assert all(len(m) == 2 for m in mined)
    for q, negs in zip(questions, mined):
        for n in negs:
            assert n["text"] != q.positives[0]["text"] and not has_answer(q.answers, n["text"])
    # BM25 ranks the passage sharing the question's words first
    rows, scores = BM25Index([f"{p['title']} {p['text']}" for p in pool]).search(["eiffel tower paris"], 3)
    assert pool[int(rows[0][0])]["title"] == "Eiffel Tower" and scores[0][0] > scores[0][1]


def test_ict_examples_remove_the_query_sentence_and_prepend_the_title(tmp_path):
    from megazoo.core.data import build_tokenizer
    from megazoo.tasks.retrieval.generate import write_ict_data
    from megazoo.tasks.retrieval.inputs import RowEncoder
    from megazoo.tasks.retrieval.sources import ICTExamples, ict_blocks

    docs = [(f"Title {d}", [f"Sentence {i} of document {d} names thing{d}x{i} here." for i in range(5)])
            for d in range(6)]
    write_ict_data(tmp_path / "ict", docs)
    tok = build_tokenizer("bert-wordpiece")
    blocks, titles, doc_index = ict_blocks(str(tmp_path / "ict" / "text"), "train", "100,0,0", 48, 0,
                                           str(tmp_path / "cache"), str(tmp_path / "ict" / "titles"))
    rows = RowEncoder(tok, 24, 96)  # room for the whole block (blocks are cut for 48 tokens)
    for prob, inside in ((0.0, 0), (1.0, 1)):
        examples = ICTExamples(blocks, rows, seed=0, query_in_block_prob=prob, titles=titles, document_indices=doc_index)
        for i in range(len(examples)):
            query, (context,) = examples.get(i)
            q = tok.decode(query.ids[1:-1])
            title_end = context.ids.index(tok.sep)
            title, text = tok.decode(context.ids[1:title_end]), tok.decode(context.ids[title_end + 1:-1])
            assert title.startswith("title") and title.split()[1] in q  # the block's own document title
            assert text.count(q) == inside
            assert set(context.types[title_end + 1:]) == {1} and set(context.types[:title_end + 1]) == {0}
