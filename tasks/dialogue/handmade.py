"""The hand-made Wizard of Wikipedia-format set (wow_handmade.json, installed with the package).

41 dialogues whose turns were written by hand (not from templates), in ParlAI's layout: chosen_topic,
persona, wizard_eval, chosen_topic_passage and dialog[], a turn with speaker ("0_Wizard"/"1_Apprentice"
or "0_Apprentice"/"1_Wizard", whoever spoke first), text, checked_sentence, checked_passage,
retrieved_passages and retrieved_topics. The passages are offline text: the WordNet 3.0 sentences of a
topic of topics.txt (facts.topic_facts); each turn retrieves the chosen topic's passage and one related
topic's; a wizard turn checks one sentence of them, verbatim ("chosen_T_i" or "partner_T_i", as in WoW),
or says `no_passages_used`. 30 dialogues are on seen topics (the generated train split has them),
11 on unseen ones; split_handmade puts them into the official test files:

    test_random_split.json   dialogues on seen topics   (MSDP's seen test set)
    test_topic_split.json    dialogues on unseen topics (MSDP's unseen test set)

The in-context examples of MSDP still come from the generated train split.
"""

from __future__ import annotations

import json
from pathlib import Path

HANDMADE = Path(__file__).parent / "wow_handmade.json"
SPLITS = {True: "test_random_split", False: "test_topic_split"}  # by whether the topic is seen


def load_handmade(path=HANDMADE) -> list[dict]:
    return json.loads(Path(path).read_text())


def split_handmade(dialogues: list[dict]) -> dict[str, list[dict]]:
    """{split name: dialogues}: seen topics to test_random_split, unseen ones to test_topic_split."""
    from megazoo.tasks.dialogue.facts import load_topics

    seen = {t.name: t.seen for t in load_topics()}
    out: dict[str, list[dict]] = {name: [] for name in SPLITS.values()}
    for d in dialogues:
        if d["chosen_topic"] not in seen:
            raise ValueError(f"hand-made dialogue on {d['chosen_topic']!r}: not a topic of topics.txt")
        out[SPLITS[seen[d["chosen_topic"]]]].append(d)
    return out


def write_handmade(out, path=HANDMADE) -> dict[str, int]:
    """Write OUT/test_random_split.json and OUT/test_topic_split.json from the hand-made set."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    for name, dialogues in split_handmade(load_handmade(path)).items():
        (out / f"{name}.json").write_text(json.dumps(dialogues, indent=1, ensure_ascii=False) + "\n")
        counts[name] = len(dialogues)
    return counts
