"""Readers of the dialogue formats, all flattened to Megatron's 4-field TSV (tasks/msdp/preprocessing.py):

    topic \t turns joined by " [SEP] " \t gold knowledge \t gold response

- Wizard of Wikipedia (ParlAI): `train.json`, `valid_{random,topic}_split.json`, `test_{random,topic}_split.json`,
  each one JSON array of dialogues {chosen_topic, persona, wizard_eval, chosen_topic_passage, dialog[]};
  a turn has speaker ("0_Wizard" / "1_Apprentice"), text, checked_sentence ({key: sentence}), checked_passage.
  One sample per wizard turn after the first turn: the context is every earlier turn, the knowledge the
  checked sentence (or `no_passages_used`), the topic the checked passage (else the chosen topic).
  Texts without final punctuation get a full stop, as Megatron's preprocessing adds one.
- Wizard of Internet: `*.jsonl`, one {dialog_id: {apprentice_persona, dialog_history: [{action, text,
  context: {contents: [{url, title, content: [sentences]}], selected_contents: [[no_selection],
  [bool per sentence]...]}}]}} per line. One sample per "Wizard => Apprentice" turn after the first
  turn: the topic is the wizard's last search query, the knowledge the selected sentences (none
  selected: topic `no_topic`, knowledge `no_passages_used`).
- Conversations (multi-actor and local-knowledge projects): JSONL {"id", "turns": [{"speaker", "text"}],
  "knowledge": [...]} (optional "topic"; "thread": conversations of one thread share it, "links": URLs
  the whole conversation links, e.g. its submission's); one sample per turn after the first, knowledge
  joined by spaces. A Reddit-style dump (JSON lines of comments, reddit.py) is read as the
  conversations of its threads wherever conversations are (its first line says which it is).

Each also takes the same data as a Hugging Face dataset, a row per dialogue, conversation or comment
(data_hf.py, whose problems are `FILE: row N: problem`).

Every problem raises LineError `file:line: problem`, except a bad dialogue of a WoW array (streamed, one
dialogue at a time, so no line is counted; the official release is one line anyway): ItemError
`file: item D: dialogue D turn T ...`. A syntax error in a WoW file keeps its line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from megazoo.core.fs import write_text_atomic
from megazoo.eval.readers import common
from megazoo.eval.readers.common import LineError
from megazoo.eval.readers.json_stream import ItemError, array_items
from megazoo.eval.metrics.dialogue import NO_PASSAGE

SEP = " [SEP] "
NO_TOPIC = "no_topic"
WOW_FILES = ("train.json", "valid_random_split.json", "valid_topic_split.json", "test_random_split.json",
             "test_topic_split.json")


@dataclass
class Sample:
    """One flattened example: the TSV's four fields and where it came from (`line` in a line-based
    file; 0 in a WoW JSON array, whose lines are not counted, where `item` is the dialogue's number)."""

    topic: str
    turns: list[str]
    knowledge: str
    response: str
    path: str = ""
    line: int = 0
    item: int = 0

    @property
    def last_turn(self) -> str:
        return self.turns[-1] if self.turns else ""

    @property
    def where(self) -> dict:
        """Where the sample came from, for output rows: {"line": L}, or {"item": D} in a WoW array."""
        return {"line": self.line} if self.line else {"item": self.item}

    def tsv(self) -> str:
        fields = [self.topic, SEP.join(self.turns), self.knowledge, self.response]
        return "\t".join(" ".join(f.split()) for f in fields) + "\n"  # tabs and newlines become spaces


@dataclass
class Turn:
    speaker: str
    text: str


ANONYMOUS = "[deleted]"  # a turn whose speaker is unknown (a deleted Reddit account): never an actor or a user


@dataclass
class Conversation:
    id: str
    turns: list[Turn]
    knowledge: list[str] = field(default_factory=list)
    topic: str = ""
    path: str = ""
    line: int = 0
    thread: str = ""  # conversations of one thread (one Reddit submission) share it; "" is a thread of its own
    links: list[str] = field(default_factory=list)  # URLs of the whole conversation (URLs in turns are in their text)

    @property
    def group(self) -> str:
        """What references and histories must not share with it: its thread, else itself."""
        return self.thread or self.id


# reading text -----------------------------------------------------------------------------------------
def decode(data: bytes, path) -> str:
    """UTF-8 text; an undecodable byte is a LineError `file:line: not valid UTF-8 ...` (core/fs/text.py)."""
    from megazoo.core.fs import decode_utf8

    return decode_utf8(data, path, LineError)


# the readers' own (eval/readers/common.py), raising LineError: `file:line: problem`
def read_text(path, what: str) -> str:
    """The whole UTF-8 file; a missing, undecodable or empty (blank) file names itself (and the line)."""
    return common.read_text(path, what, LineError)


def numbered_lines(path, what: str):
    """(line number, line without its line end) for each non-blank line of a non-empty file."""
    return common.numbered_lines(path, what, LineError)


def read_jsonl(path, what: str):
    """(line number, object) for each non-blank line of a JSON-lines file of objects."""
    return common.read_jsonl(path, what, LineError)


def _punctuated(text: str) -> str:
    text = text.strip()
    return text if text.endswith(("?", ".", "!")) else text + "."


def _string(value, path, line: int, where: str) -> str:
    if not isinstance(value, str):
        raise LineError(path, line, f"{where} must be a string, got {type(value).__name__}")
    return value


# Wizard of Wikipedia --------------------------------------------------------------------------------
WOW_JSON = "a Wizard of Wikipedia JSON array of dialogues"


def iter_wow(path) -> Iterator[Sample]:
    """The samples of one Wizard of Wikipedia JSON file (or its .gz; see the module docstring), one at
    a time, streamed: time linear in the file, memory bounded by one dialogue
    (eval/readers/json_stream.py). A problem is `file: item D: dialogue D ...` (ItemError). A Hugging
    Face dataset with a row per dialogue is read by data_hf.py."""
    from megazoo.tasks.dialogue import data_hf  # parquet/arrow/save_to_disk/hf: (eval/readers/hf_source.py)
    if data_hf.is_hf_source(path):
        yield from data_hf.iter_wow_hf(path)
        return
    for d, dialogue in array_items(path, WOW_JSON):
        if not isinstance(dialogue, dict):
            raise ItemError(path, d, f"dialogue {d} must be a JSON object, got {type(dialogue).__name__}")
        if "dialog" not in dialogue:
            raise ItemError(path, d, f'dialogue {d} has no "dialog" (the list of turns)')
        turns = dialogue["dialog"]
        if not isinstance(turns, list):
            raise ItemError(path, d, f'dialogue {d}: "dialog" must be a list of turns')
        yield from _wow_samples(d, dialogue.get("chosen_topic", ""), turns, path)


def read_wow(path) -> list[Sample]:
    """All samples of one Wizard of Wikipedia JSON file (see iter_wow)."""
    return list(iter_wow(path))


def _wow_samples(d: int, chosen_topic: str, turns: list, path) -> Iterator[Sample]:
    history = []
    for j, turn in enumerate(turns):
        where = f"dialogue {d} turn {j + 1}"
        if not isinstance(turn, dict):
            raise ItemError(path, d, f"{where} must be a JSON object")
        if "text" not in turn:
            raise ItemError(path, d, f'{where} has no "text"')
        if not isinstance(turn["text"], str):
            raise ItemError(path, d, f'{where} "text" must be a string, got {type(turn["text"]).__name__}')
        text = _punctuated(turn["text"])
        speaker = str(turn.get("speaker", "")).lower()
        if j == 0 or "wizard" not in speaker:
            history.append(text)
            continue
        sentences = list((turn.get("checked_sentence") or {}).values())
        passages = list((turn.get("checked_passage") or {}).values())
        if len(sentences) > 1:
            raise ItemError(path, d, f"{where} has {len(sentences)} checked sentences; WoW gives at most one")
        knowledge = sentences[0] if sentences else NO_PASSAGE
        topic = passages[0] if len(passages) == 1 and passages[0] != NO_PASSAGE else chosen_topic
        yield Sample(topic, list(history), knowledge, text, str(path), 0, d)
        history.append(text)


# Wizard of Internet ---------------------------------------------------------------------------------
def read_woi(path) -> list[Sample]:
    """The samples of one Wizard of Internet JSONL file (see the module docstring), or of a Hugging Face
    dataset with a row per dialogue (data_hf.py)."""
    from megazoo.tasks.dialogue import data_hf
    if data_hf.is_hf_source(path):
        return data_hf.read_woi_hf(path)
    out = []
    for line, obj in read_jsonl(path, "one Wizard of Internet dialogue {dialog_id: {...}} per line"):
        for dialog_id, dialogue in obj.items():
            if not isinstance(dialogue, dict) or not isinstance(dialogue.get("dialog_history"), list):
                raise LineError(path, line, f'dialogue {dialog_id} has no "dialog_history" list')
            out += _woi_samples(dialog_id, dialogue["dialog_history"], path, line)
    return out


def _woi_samples(dialog_id: str, history: list, path, line: int) -> list[Sample]:
    turns, search, out = [], NO_TOPIC, []
    for j, turn in enumerate(history):
        where = f"dialogue {dialog_id} turn {j + 1}"
        if not isinstance(turn, dict) or "text" not in turn:
            raise LineError(path, line, f'{where} has no "text"')
        text = _string(turn["text"], path, line, f'{where} "text"').strip()
        action = turn.get("action", "")
        if action == "Apprentice => Wizard":
            turns.append(text)
        elif action == "Wizard => SearchAgent":
            search = text
        elif action == "Wizard => Apprentice":
            if not turns:
                turns.append(text)
                continue
            topic, knowledge = _woi_knowledge(turn.get("context") or {}, search, path, line, where)
            out.append(Sample(topic, list(turns), knowledge, text, str(path), line))
            turns.append(text)
        elif action != "SearchAgent => Wizard":
            raise LineError(path, line, f"{where} has an unknown action {action!r}")
    return out


def _woi_knowledge(context: dict, search: str, path, line: int, where: str) -> tuple[str, str]:
    contents, selects = context.get("contents") or [], context.get("selected_contents") or [[True]]
    if not selects or (selects[0] and selects[0][0]):  # the wizard chose "no selection"
        return NO_TOPIC, NO_PASSAGE
    if len(selects) - 1 != len(contents):
        raise LineError(path, line, f"{where}: selected_contents has {len(selects) - 1} entries for "
                                    f"{len(contents)} contents")
    chosen = [s for doc, flags in zip(contents, selects[1:]) for s, f in zip(doc.get("content", []), flags) if f]
    if not chosen:
        return NO_TOPIC, NO_PASSAGE
    return search, " ".join(s.strip() for s in chosen)


# conversations --------------------------------------------------------------------------------------
CONVERSATION = 'one conversation {"id", "turns": [{"speaker", "text"}], "knowledge": [...]} per line'


def read_conversations(path) -> list[Conversation]:
    """The conversations of a conversation JSONL file, or of a Reddit-style dump (reddit.py) when its
    first line is a comment; or of a Hugging Face dataset of either's columns (data_hf.py)."""
    from megazoo.tasks.dialogue import data_hf
    if data_hf.is_hf_source(path):
        return data_hf.read_conversations_hf(path)
    if is_reddit(path):
        from megazoo.tasks.dialogue.reddit import read_reddit

        return read_reddit(path).conversations
    return [parse_conversation(obj, path, line) for line, obj in read_jsonl(path, CONVERSATION)]


def parse_conversation(obj: dict, path, line: int) -> Conversation:
    """One conversation object (a JSONL line, or a dataset's row: data_hf.py), checked."""
    turns = obj.get("turns")
    if not isinstance(turns, list) or not turns:
        raise LineError(path, line, 'missing "turns": a non-empty list of {"speaker", "text"}')
    parsed = []
    for j, turn in enumerate(turns, start=1):
        if not isinstance(turn, dict) or "text" not in turn:
            raise LineError(path, line, f'turn {j} has no "text"')
        if "speaker" not in turn:
            raise LineError(path, line, f'turn {j} has no "speaker"')
        parsed.append(Turn(str(turn["speaker"]), _string(turn["text"], path, line, f'turn {j} "text"')))
    knowledge = obj.get("knowledge", [])
    if not isinstance(knowledge, list) or not all(isinstance(k, str) for k in knowledge):
        raise LineError(path, line, '"knowledge" must be a list of strings')
    links = obj.get("links", [])
    if not isinstance(links, list) or not all(isinstance(u, str) for u in links):
        raise LineError(path, line, '"links" must be a list of URLs (strings)')
    thread = obj.get("thread", "")
    if not isinstance(thread, str):
        raise LineError(path, line, f'"thread" must be a string, got {type(thread).__name__}')
    return Conversation(str(obj.get("id", line)), parsed, knowledge, str(obj.get("topic", "")),
                        str(path), line, thread, links)


def first_object(path, what: str):
    """The first JSON value of a JSON-lines file (or its .gz), read without reading the rest; None when
    the first line is not JSON (the full reader then names the problem)."""
    for _, line in numbered_lines(path, what):
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            return None
    return None


def is_reddit(path) -> bool:
    from megazoo.tasks.dialogue.reddit import is_reddit_comment

    return is_reddit_comment(first_object(path, CONVERSATION))


def conversation_samples(conversations: list[Conversation]) -> list[Sample]:
    """One TSV sample per turn after the first (topic: the conversation's topic, else its id)."""
    out = []
    for c in conversations:
        for j in range(1, len(c.turns)):
            out.append(Sample(c.topic or c.id, [t.text for t in c.turns[:j]], " ".join(c.knowledge) or NO_PASSAGE,
                              c.turns[j].text, c.path, c.line))
    return out


# the flattened TSV ----------------------------------------------------------------------------------
def read_tsv(path) -> list[Sample]:
    what = "the flattened dialogue TSV: topic, turns joined by ' [SEP] ', knowledge, response"
    out = []
    for line, text in numbered_lines(path, what):
        fields = text.split("\t")
        if len(fields) != 4:
            raise LineError(path, line, f"{len(fields)} tab-separated fields, expected 4 ({what})")
        topic, context, knowledge, response = fields
        turns = [t.strip() for t in context.split(SEP.strip())] if context.strip() else []
        out.append(Sample(topic, turns, knowledge, response, str(path), line))
    return out


def write_tsv(samples: list[Sample], path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, "".join(s.tsv() for s in samples))
    return path


def read_any(path) -> list[Sample]:
    """The samples of any supported file, by its name: .json or .json.gz (WoW), .jsonl or .jsonl.gz (WoI;
    conversations when the first object has "turns"; a Reddit-style dump when it is a comment),
    .tsv / .txt (already flattened)."""
    from megazoo.tasks.dialogue import data_hf
    from megazoo.tasks.dialogue.reddit import is_reddit_comment

    if data_hf.is_hf_source(path):  # a Hugging Face dataset: the reader by its columns (data_hf.py)
        return data_hf.read_any_hf(path)
    path = Path(path)
    if path.name.endswith((".json", ".json.gz")):
        return read_wow(path)
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        first = first_object(path, "JSONL")
        conversations = isinstance(first, dict) and ("turns" in first or is_reddit_comment(first))
        return conversation_samples(read_conversations(path)) if conversations else read_woi(path)
    return read_tsv(path)
