"""tasks/story knowledge: ConceptNet CSV and TSV readers with their malformed-line errors, templates,
the WordNet-built base (written as ConceptNet CSV and read back), the retriever and keywords."""

from __future__ import annotations

from pathlib import Path

import pytest

from megazoo.core.data.errors import DataError
from megazoo.tasks.story.keywords import extract_keywords, parse_keywords
from megazoo.tasks.story.knowledge import KnowledgeBase, Triple, read_knowledge, write_conceptnet
from megazoo.tasks.story.wordnet_kb import antonym, build_wordnet_kb

FIX = Path(__file__).parent / "fixtures" / "story"


def test_conceptnet_csv_keeps_english_assertions():
    triples = read_knowledge(FIX / "conceptnet.csv")
    assert triples == [Triple("dog", "IsA", "animal"), Triple("knife", "UsedFor", "cutting bread"),
                       Triple("dog", "AtLocation", "park")]


def test_tsv_with_or_without_relation_prefix():
    assert read_knowledge(FIX / "kb.tsv") == [Triple("apple", "IsA", "fruit"), Triple("run", "Antonym", "walk"),
                                              Triple("ice cream", "AtLocation", "freezer")]


@pytest.mark.parametrize("name, line, problem", [
    ("bad_kb.tsv", 2, "expected head<TAB>relation<TAB>tail (3 non-empty fields), got 1 field(s)"),
    ("bad_conceptnet.csv", 2, "a ConceptNet assertion has 5 tab-separated fields (uri, relation, start, end, json), "
                              "this line has 3"),
])
def test_malformed_line_names_file_and_line(name, line, problem):
    with pytest.raises(DataError) as e:
        read_knowledge(FIX / name)
    assert str(e.value) == f"{FIX / name}:{line}: {problem}"


def test_bad_conceptnet_fields(tmp_path):
    f = tmp_path / "kb.csv"
    f.write_text("/a/x\t/r/IsA\t/c/en/dog\t/c/en/animal\tnot json\n")
    with pytest.raises(DataError, match=r"kb\.csv:1: the fifth field is not JSON"):
        read_knowledge(f)
    f.write_text("/a/x\tIsA\tdog\tanimal\t{}\n")
    with pytest.raises(DataError, match=r"kb\.csv:1: expected /r/Relation"):
        read_knowledge(f)


def test_templates_turn_triples_into_sentences():
    assert Triple("dog", "IsA", "animal").sentence() == "dog is an animal"
    assert Triple("knife", "UsedFor", "cutting bread").sentence() == "knife is used for cutting bread"
    assert Triple("hot", "Antonym", "cold").sentence() == "hot is the opposite of cold"
    assert Triple("car", "HasA", "engine").sentence() == "car has an engine"
    assert Triple("bird", "NotDesires", "cage").sentence() == "bird not desires cage"


def test_retriever_by_keyword_and_its_inflections():
    kb = KnowledgeBase(read_knowledge(FIX / "conceptnet.csv") + read_knowledge(FIX / "kb.tsv"))
    assert kb.retrieve(["dogs"]) == ["dog is an animal", "dog is found at park"]
    assert kb.retrieve(["dog", "apple"], limit=3) == ["dog is an animal", "apple is a fruit", "dog is found at park"]
    assert kb.retrieve(["ran"]) == ["run is the opposite of walk"]
    assert kb.retrieve(["zebra"]) == []


def test_wordnet_base_round_trips_through_conceptnet_csv(tmp_path):
    triples = build_wordnet_kb(["hot", "bread", "car"])
    assert Triple("hot", "Antonym", "cold") in triples
    assert Triple("bread", "IsA", "baked goods") in triples
    assert any(t.head == "car" and t.relation == "HasA" for t in triples)
    assert read_knowledge(write_conceptnet(tmp_path / "kb.csv", triples)) == triples
    assert antonym("happy") == "unhappy" and antonym("closed") == "open" and antonym("bread") is None


def test_keywords_skip_names_and_function_words():
    # RAKE (the default, the paper's): phrases "bought fresh bread" (each word degree 3: score 9) and
    # "bakery" (1), best first, each phrase read from its last word
    assert extract_keywords("[FEMALE] bought fresh bread at the bakery.", 4) == ["bread", "fresh", "bought", "bakery"]
    assert extract_keywords("[FEMALE] was on a long road trip.") == ["trip", "road"]
    # equal scores keep the sentence's order (rake-nltk alone would sort them reverse-alphabetically)
    assert extract_keywords("She stopped at a diner.") == ["stopped", "diner"]
    # a token that is no plain word ends a phrase: "didn't" and "3" leave "want" (1) and "red shoes" (4)
    assert extract_keywords("He didn't want 3 red shoes.", 3) == ["shoes", "red", "want"]
    assert extract_keywords("He was late.") == ["late"]
    # YAKE! stays an option: its own one-word ranking, with the same filters
    words = extract_keywords("[FEMALE] bought fresh bread at the bakery.", 3, extractor="yake")
    assert len(words) == 3 and "bakery" in words and set(words) <= {"bought", "fresh", "bread", "bakery"}
    assert extract_keywords("He was late.", extractor="yake") == ["late"]
    with pytest.raises(ValueError, match=r"^keyword extractor='keybert': choose one of rake, yake"):
        extract_keywords("He was late.", extractor="keybert")
    assert parse_keywords(" Bread, bakery, none\nmore") == ["bread", "bakery"]
    assert parse_keywords(" none") == []
