"""The dialogue data sets as Hugging Face datasets (parquet, arrow, a save_to_disk folder or
`hf:NAME[:CONFIG]@SPLIT`; eval/readers/hf_source.py), a row per dialogue, conversation or comment with
the native files' keys as columns, read by data.py's and reddit.py's own rules:

    Wizard of Wikipedia     chosen_topic, dialog: [{speaker, text, checked_sentence, checked_passage}]
                            (ParlAI's json, a row per dialogue; persona, wizard_eval, chosen_topic_passage
                            are not read). checked_sentence/checked_passage: {key: sentence} (Arrow
                            gives every key of the split, null where a turn has none), a list, or a string
    Wizard of the Internet  dialog_id, dialog_history: [{action, text, context: {contents: [{url, title,
                            content}], selected_contents}}] (a JSONL line's {dialog_id: {...}} as a row)
    Reddit comments         id, parent_id, link_id, author, body, created_utc, subreddit (the Pushshift
                            columns of the Hub's comment copies; created_utc seconds or a timestamp)
    conversations           turns: [{speaker, text}], id, knowledge, topic, thread, links

told apart by their columns (dialog, dialog_history, body, turns; SCHEMA). A problem is
`FILE: row N: problem`, the native reader's words.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterator

from megazoo.eval.readers.common import LineError
from megazoo.eval.readers.hf_source import NumberedRows, RowError, column_names, is_hf_source
from megazoo.eval.readers.json_stream import ItemError
from megazoo.tasks.dialogue.data import (Conversation, Sample, _wow_samples, _woi_samples, conversation_samples,
                                         parse_conversation)
from megazoo.tasks.dialogue.reddit import REQUIRED, RedditThreads, build_threads, comments_of

WOW = "Wizard of Wikipedia's json keys, a row per dialogue: chosen_topic, dialog [{speaker, text, checked_sentence}]"
WOI = "Wizard of the Internet's keys, a row per dialogue: dialog_id, dialog_history [{action, text, context}]"
REDDIT = "Reddit comments (the Pushshift columns): id, parent_id, link_id, author, body, created_utc, subreddit"
CONVERSATIONS = "conversations: turns [{speaker, text}], id, knowledge, topic, thread, links"
SCHEMA = f"one of: {WOW}; {WOI}; {REDDIT}; {CONVERSATIONS}"

__all__ = ["is_hf_source", "iter_wow_hf", "read_any_hf", "read_conversations_hf", "read_reddit_hf", "read_woi_hf"]


class DialogueRowError(RowError, LineError):
    """A bad row of a dialogue dataset: `FILE: row N: problem`."""


# Wizard of Wikipedia --------------------------------------------------------------------------------
def _checked(value) -> dict:
    """checked_sentence / checked_passage as the json's {key: text}: Arrow's struct of every key (nulls
    dropped), a list, or one string."""
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return {str(i): v for i, v in enumerate(value) if v is not None}
    return {"": value} if isinstance(value, str) and value else {}


def _wow_turn(turn):
    if not isinstance(turn, dict):
        return turn  # the native checks name it
    return {**turn, "checked_sentence": _checked(turn.get("checked_sentence")),
            "checked_passage": _checked(turn.get("checked_passage"))}


def iter_wow_hf(path: str | os.PathLike, split: str | None = None) -> Iterator[Sample]:
    """The samples of one split of WoW dialogues, as data.iter_wow gives them (item: the row number)."""
    rows = NumberedRows(path, ("dialog",), WOW, optional=("chosen_topic",), split=split, error=DialogueRowError)
    with rows.native_errors(ItemError):
        for n, row in rows:
            turns = row["dialog"]
            if not isinstance(turns, list):
                raise ItemError(rows.text, n, f'dialogue {n}: "dialog" must be a list of turns')
            yield from _wow_samples(n, row.get("chosen_topic") or "", [_wow_turn(t) for t in turns], rows.text)


# Wizard of the Internet -----------------------------------------------------------------------------
def read_woi_hf(path: str | os.PathLike, split: str | None = None) -> list[Sample]:
    """The samples of one split of WoI dialogues, as data.read_woi gives them (line: the row number)."""
    rows = NumberedRows(path, ("dialog_history",), WOI, optional=("dialog_id",), split=split, error=DialogueRowError)
    out: list[Sample] = []
    with rows.native_errors(LineError):
        for n, row in rows:
            dialog_id = str(row.get("dialog_id") or n)
            if not isinstance(row["dialog_history"], list):
                raise LineError(rows.text, n, f'dialogue {dialog_id} has no "dialog_history" list')
            out += _woi_samples(dialog_id, row["dialog_history"], rows.text, n)
    return out


# Reddit comments and conversations -------------------------------------------------------------------
def _comment(row: dict) -> dict:
    """A row as the dump's object: a timestamp as seconds, a null optional cell as no key."""
    time = row.get("created_utc")
    if isinstance(time, datetime.datetime):
        row["created_utc"] = (time if time.tzinfo else time.replace(tzinfo=datetime.timezone.utc)).timestamp()
    return {k: v for k, v in row.items() if v is not None or k in REQUIRED}


def read_reddit_hf(path: str | os.PathLike, min_turns: int = 2, split: str | None = None) -> RedditThreads:
    """The threads of one split of Reddit comments, as reddit.read_reddit builds them from a dump."""
    rows = NumberedRows(path, REQUIRED, REDDIT, optional=("created_utc", "subreddit"), split=split,
                        error=DialogueRowError)
    with rows.native_errors(LineError):
        comments = comments_of(rows.text, ((n, _comment(row)) for n, row in rows))
        return build_threads(comments, rows.text, min_turns)


def read_conversations_hf(path: str | os.PathLike, split: str | None = None) -> list[Conversation]:
    """The conversations of one split: Reddit comments (a `body` column) as their threads' paths, else
    conversation rows checked as data.read_conversations checks a line."""
    if "body" in column_names(path, split, DialogueRowError):
        return read_reddit_hf(path, split=split).conversations
    rows = NumberedRows(path, ("turns",), CONVERSATIONS, optional=("id", "knowledge", "topic", "thread", "links"),
                        split=split, error=DialogueRowError)
    with rows.native_errors(LineError):
        return [parse_conversation({k: v for k, v in row.items() if v is not None}, rows.text, n) for n, row in rows]


def read_any_hf(path: str | os.PathLike, split: str | None = None) -> list[Sample]:
    """The samples of any of the four schemas, chosen by the columns (see the module doc)."""
    columns = column_names(path, split, DialogueRowError)
    if "dialog" in columns:
        return list(iter_wow_hf(path, split))
    if "dialog_history" in columns:
        return read_woi_hf(path, split)
    if "body" in columns or "turns" in columns:
        return conversation_samples(read_conversations_hf(path, split))
    raise DialogueRowError(str(path), None, f"has none of the columns dialog, dialog_history, body, turns "
                                            f"(expected {SCHEMA}; it has {', '.join(columns) or 'none'})")
