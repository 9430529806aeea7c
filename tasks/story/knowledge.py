"""The knowledge base: ConceptNet assertions read from its CSV release or a plain TSV, turned into
sentences by templates, and retrieved by keyword.

Formats (UTF-8, one assertion a line, streamed, gzip read directly; a malformed line is an error
`file:line: problem`):
    ConceptNet 5 CSV  /a/[/r/IsA/,/c/en/dog/n/,/c/en/animal/]<TAB>/r/IsA<TAB>/c/en/dog/n<TAB>/c/en/animal<TAB>{json}
                      (assertions with a non-English end are skipped, as the paper keeps English)
    TSV               head<TAB>relation<TAB>tail   (relation with or without /r/; words with _ or spaces)
The same as a Hugging Face dataset (the Hub's `conceptnet5` rows, or head/relation/tail) is read by data_hf.py.
The retriever maps a keyword (or its WordNet base form) to the assertions whose head is that word.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import defaultdict
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from megazoo.core.data.errors import DataError
from megazoo.core.fs import atomic_file

TEMPLATES = {
    "IsA": "{h} is a {t}", "UsedFor": "{h} is used for {t}", "PartOf": "{h} is part of {t}",
    "HasA": "{h} has a {t}", "AtLocation": "{h} is found at {t}", "CapableOf": "{h} can {t}",
    "Synonym": "{h} is similar to {t}", "Antonym": "{h} is the opposite of {t}", "RelatedTo": "{h} is related to {t}",
    "Causes": "{h} causes {t}", "Desires": "{h} wants {t}", "HasProperty": "{h} is {t}",
    "MadeOf": "{h} is made of {t}", "HasPrerequisite": "{h} requires {t}", "MotivatedByGoal": "{h} because of {t}",
    "CausesDesire": "{h} makes you want to {t}", "HasSubevent": "{h} involves {t}", "ReceivesAction": "{h} can be {t}",
    "SimilarTo": "{h} is similar to {t}", "DerivedFrom": "{h} comes from {t}", "FormOf": "{h} is a form of {t}",
}
ENGLISH = "/c/en/"


class KnowledgeError(DataError):
    def __init__(self, path, line: int, problem: str):
        super().__init__(f"{os.fspath(path)}:{line}: {problem}")
        self.path, self.line, self.problem = os.fspath(path), line, problem


@dataclass(frozen=True)
class Triple:
    head: str
    relation: str
    tail: str

    def sentence(self) -> str:
        """The assertion as a sentence: the relation's template, or `head <relation words> tail`."""
        template = TEMPLATES.get(self.relation)
        if template is None:
            words = re.sub(r"(?<!^)([A-Z])", r" \1", self.relation).lower()
            template = "{h} " + words + " {t}"
        return re.sub(r"\b([Aa]) ([aeiou])", r"\1n \2", template.format(h=self.head, t=self.tail))


def concept_text(uri: str) -> str:
    """/c/en/ice_cream/n/... -> 'ice cream'."""
    return uri.split("/")[3].replace("_", " ")


def _relation(text: str) -> str:
    return text[3:] if text.startswith("/r/") else text


def tab_fields(path, comments: bool = False):
    """(line number, tab-separated fields) of each non-blank line of a UTF-8 file (or its gzip),
    streamed; with `comments`, lines starting with # are skipped too. Close it (contextlib.closing)
    when leaving early."""
    from megazoo.tasks.story.data import utf8_lines

    lines = utf8_lines(path, KnowledgeError)
    with closing(lines):
        for number, line in enumerate(lines, start=1):
            line = line.rstrip("\n")
            if line.strip() and not (comments and line.startswith("#")):
                yield number, line.split("\t")


def iter_conceptnet(path) -> Iterator[Triple]:
    """The English assertions (both ends /c/en/) of a ConceptNet 5 CSV (tab-separated, five fields; or
    its gzip, as conceptnet-assertions-5.7.0.csv.gz ships), one at a time, streamed: the real file has
    34M lines (10 GB, 0.5 GB gzipped), of which about 3.4M are English-English. Every line's fields and
    URIs are checked; the JSON of the fifth field is parsed only for the kept lines (json.loads on all
    34M would double the time), and a skipped line's need only look like an object."""
    rows = tab_fields(path)
    with closing(rows):
        yield from conceptnet_triples(path, rows)


def conceptnet_triples(path, rows) -> Iterator[Triple]:
    """The English triples of (line number, the five fields) pairs, checked as iter_conceptnet's lines."""
    for number, fields in rows:
        if len(fields) != 5:
            raise KnowledgeError(path, number, f"a ConceptNet assertion has 5 tab-separated fields (uri, "
                                               f"relation, start, end, json), this line has {len(fields)}")
        uri, rel, start, end, meta = fields
        if not rel.startswith("/r/") or not start.startswith("/c/") or not end.startswith("/c/"):
            raise KnowledgeError(path, number, f"expected /r/Relation, /c/lang/start and /c/lang/end, got "
                                               f"{rel!r}, {start!r}, {end!r}")
        keep = start.startswith(ENGLISH) and end.startswith(ENGLISH) and start.count("/") > 2 \
            and end.count("/") > 2
        if keep:
            try:
                json.loads(meta)
            except json.JSONDecodeError as e:
                raise KnowledgeError(path, number, f"the fifth field is not JSON ({e.msg})") from None
            yield Triple(concept_text(start), sys.intern(_relation(rel)), concept_text(end))
        elif not (meta.startswith("{") and meta.rstrip().endswith("}")):
            raise KnowledgeError(path, number, "the fifth field is not JSON (expected a JSON object)")


def read_conceptnet(path) -> list[Triple]:
    """All English assertions of a ConceptNet 5 CSV (iter_conceptnet); the list is the measured constant
    of this reader: about 3.4M triples for the real 5.7 file."""
    return list(iter_conceptnet(path))


def read_tsv(path) -> list[Triple]:
    """head<TAB>relation<TAB>tail lines."""
    rows = tab_fields(path, comments=True)
    with closing(rows):
        return tsv_triples(path, rows)


def tsv_triples(path, rows) -> list[Triple]:
    """The triples of (line number, [head, relation, tail]) pairs, checked as read_tsv's lines."""
    out = []
    for number, fields in rows:
        if len(fields) != 3 or not all(x.strip() for x in fields):
            raise KnowledgeError(path, number, f"expected head<TAB>relation<TAB>tail (3 non-empty fields), got "
                                               f"{len(fields)} field(s)")
        h, r, t = (x.strip() for x in fields)
        out.append(Triple(h.replace("_", " "), _relation(r), t.replace("_", " ")))
    return out


def read_knowledge(path) -> list[Triple]:
    """A ConceptNet CSV or a TSV, told apart by the first line's field count; or a Hugging Face dataset of
    ConceptNet rows or triples (data_hf.py)."""
    from megazoo.tasks.story import data_hf  # parquet/arrow/save_to_disk/hf: (eval/readers/hf_source.py)
    if data_hf.is_hf_source(path):
        return data_hf.read_knowledge_hf(path)
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such knowledge file (a ConceptNet CSV or a head<TAB>relation<TAB>tail TSV)")
    from megazoo.tasks.story.data import utf8_lines

    lines = utf8_lines(path, KnowledgeError)
    with closing(lines):
        first = next((ln for ln in lines if ln.strip() and not ln.startswith("#")), "")
    return read_conceptnet(path) if first.count("\t") == 4 else read_tsv(path)


def write_conceptnet(path, triples: list[Triple]) -> Path:
    """Triples as ConceptNet 5 CSV lines (what read_conceptnet reads back)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path, "w") as f:
        for t in triples:
            h, e = (ENGLISH + x.replace(" ", "_") for x in (t.head, t.tail))
            f.write(f"/a/[/r/{t.relation}/,{h}/,{e}/]\t/r/{t.relation}\t{h}\t{e}\t" + '{"weight": 1.0}\n')
    return path


class KnowledgeBase:
    """Triples indexed by head word; retrieve(keyword) gives their sentences."""

    def __init__(self, triples: list[Triple]):
        self.by_head: dict[str, list[Triple]] = defaultdict(list)
        for t in dict.fromkeys(triples):
            self.by_head[t.head.lower()].append(t)

    @classmethod
    def load(cls, path) -> "KnowledgeBase":
        return cls(read_knowledge(path))

    def triples(self, keyword: str) -> list[Triple]:
        from megazoo.tasks.story.morph import base_forms

        key = keyword.lower()
        found = list(self.by_head.get(key, []))
        for base in sorted(base_forms(key) - {key}):
            found += self.by_head.get(base, [])
        return list(dict.fromkeys(found))

    def retrieve(self, keywords: list[str], limit: int = 8) -> list[str]:
        """Knowledge sentences of the keywords, interleaved (each keyword's first, then seconds, ...),
        without repeats, at most `limit`."""
        lists = [[t.sentence() for t in self.triples(k)] for k in keywords]
        out: list[str] = []
        for i in range(max((len(x) for x in lists), default=0)):
            for x in lists:
                if i < len(x) and x[i] not in out:
                    out.append(x[i])
        return out[:limit]
