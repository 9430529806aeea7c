"""WordNet 3.0 opens offline from Debian's files through nltk's reader (eval/metrics/wordnet.py)."""
import pytest

from megazoo.eval.metrics.wordnet import DEBIAN, WordNetMissing, load_wordnet

needs_wordnet = pytest.mark.skipif(not (DEBIAN / "data.noun").is_file(),
                                   reason="Debian's wordnet-base is not installed (scripts/setup.sh installs it)")


@needs_wordnet
def test_relations_and_morphology_come_from_the_database(tmp_path):
    wn = load_wordnet(DEBIAN, tmp_path / "cache")
    good = wn.synsets("good", "a")[0]
    assert [a.name() for lemma in good.lemmas() for a in lemma.antonyms()] == ["bad"]
    car = wn.synsets("car", "n")[0]
    assert "motor_vehicle.n.01" in [s.name() for s in car.hypernyms()]
    assert car.lexname() == "noun.artifact"  # read from the written lexnames table
    assert wn.morphy("cats") == "cat"


@needs_wordnet
def test_nltk_meteor_uses_it_for_synonyms(tmp_path):
    from nltk.translate.meteor_score import meteor_score

    wn = load_wordnet(DEBIAN, tmp_path / "cache")
    same = meteor_score([["the", "car", "stopped"]], ["the", "car", "stopped"], wordnet=wn)
    # (nltk stems words before its synonym stage, so a pair whose stems are themselves: auto, car)
    synonym = meteor_score([["the", "car", "stopped"]], ["the", "auto", "stopped"], wordnet=wn)
    other = meteor_score([["the", "car", "stopped"]], ["the", "tree", "stopped"], wordnet=wn)
    assert same == synonym > other  # nltk counts a synonym match as a full match


def test_a_missing_database_says_what_to_install(tmp_path):
    with pytest.raises(WordNetMissing, match="wordnet-base"):
        load_wordnet(tmp_path / "nowhere", tmp_path / "cache")
