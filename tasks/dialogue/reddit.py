"""Reddit-style dumps (the comment files of the Pushshift archives): JSON lines of comments

    {"id": "c2", "parent_id": "t1_c1", "link_id": "t3_s1", "author": "ann", "body": "text ...",
     "created_utc": 1600000000, "subreddit": "askscience"}        # the last two optional

read one line at a time (a `.gz` file directly; eval/readers/common.py), into conversations:

- threads: `parent_id` is `t1_ID` for a reply to comment ID and `t3_ID` for a top-level comment on
  submission ID (`link_id`, always `t3_...`), Reddit's "fullname" prefixes; `id` is given bare or as
  `t1_ID`. Every path from a top-level comment down to a comment without replies is one conversation
  (id `LINK/LEAF`, thread `LINK`, topic the subreddit when given, line the leaf's), its turns in order, replies walked
  in `created_utc` order (else file order). A comment whose parent is not in the dump starts a
  thread of its own (counted as an orphan). A comment whose body is `[deleted]` or `[removed]` ends
  the paths through it (its replies lose their context and are dropped, counted as removed).
- actors: the authors, each with the conversations they speak in; `[deleted]` (the author of a
  deleted account) is no actor: their turns stay in the conversation as speaker `[deleted]`, which
  is never conditioned on (data.ANONYMOUS).
- linked URLs: the http(s) URLs found in the bodies (links.find_urls), each with the comments that link it.

Memory holds every kept comment's text (the threads are only known at the end of the file): split a
month-sized dump by subreddit or submission first. Every problem is `file:line: problem`, e.g. a line
without `parent_id` names the file, the line and the key. The same columns as a Hugging Face dataset
(the Hub's Pushshift comment copies) are read by data_hf.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from megazoo.eval.readers.common import LineError

REQUIRED = ("id", "parent_id", "link_id", "author", "body")
WHAT = 'one Reddit comment {"id", "parent_id", "link_id", "author", "body"} per line'
REMOVED = ("[deleted]", "[removed]")
DELETED_AUTHOR = "[deleted]"


@dataclass
class Comment:
    id: str
    parent: str  # the parent's fullname: t1_... (a comment) or t3_... (the submission)
    link: str  # t3_...
    author: str
    body: str
    line: int
    time: float
    subreddit: str = ""


@dataclass
class RedditThreads:
    """What read_reddit builds: the conversations (data.Conversation), actors, linked URLs and counts."""

    conversations: list
    actors: dict[str, list[str]] = field(default_factory=dict)  # author -> ids of the conversations they speak in
    urls: dict[str, list[str]] = field(default_factory=dict)  # url -> ids of the comments linking it
    comments: int = 0
    removed: int = 0  # comments on a path through a [deleted]/[removed] body (dropped)
    orphans: int = 0  # comments whose parent is not in the dump (each starts a thread)


def is_reddit_comment(obj) -> bool:
    """A JSON object that looks like a Reddit comment (a body and a link or parent), not a conversation."""
    return isinstance(obj, dict) and "body" in obj and ("link_id" in obj or "parent_id" in obj)


def _bare(value: str) -> str:
    return value[3:] if value.startswith("t1_") else value


def parse_comment(obj: dict, path, line: int) -> Comment:
    for key in REQUIRED:
        if key not in obj:
            raise LineError(path, line, f'missing "{key}": a Reddit comment needs "id", "parent_id", "link_id", '
                                        f'"author" and "body"')
        if not isinstance(obj[key], str):
            raise LineError(path, line, f'"{key}" must be a string, got {type(obj[key]).__name__}')
    parent, link = obj["parent_id"], obj["link_id"]
    if not parent.startswith(("t1_", "t3_")):
        raise LineError(path, line, f'"parent_id" must be t1_ID (a comment) or t3_ID (the submission), got {parent!r}')
    if not link.startswith("t3_"):
        raise LineError(path, line, f'"link_id" must be t3_ID (the submission), got {link!r}')
    if parent.startswith("t3_") and parent != link:
        raise LineError(path, line, f'"parent_id" {parent} is a submission but "link_id" is {link}')
    cid = _bare(obj["id"])
    if not cid:
        raise LineError(path, line, '"id" is empty')
    if parent == "t1_" + cid:
        raise LineError(path, line, f'"parent_id" names the comment itself ({parent})')
    time = obj.get("created_utc", 0)
    try:
        time = float(time)
    except (TypeError, ValueError):
        raise LineError(path, line, f'"created_utc" must be a number of seconds, got {time!r}') from None
    subreddit = obj.get("subreddit") or ""
    return Comment(cid, parent, link, obj["author"], obj["body"], line, time,
                   subreddit if isinstance(subreddit, str) else "")


def read_comments(path) -> list[Comment]:
    """The comments of a dump, streamed (a duplicate id names both lines)."""
    from megazoo.eval.readers.common import read_jsonl

    return comments_of(path, read_jsonl(path, WHAT, LineError))


def comments_of(path, objects) -> list[Comment]:
    """The comments of (line number, object) pairs (a dump's lines, or a dataset's rows: data_hf.py)."""
    out, seen = [], {}
    for line, obj in objects:
        c = parse_comment(obj, path, line)
        if c.id in seen:
            raise LineError(path, line, f'comment id {c.id!r} already given on line {seen[c.id]}')
        seen[c.id] = line
        out.append(c)
    return out


def read_reddit(path, min_turns: int = 2) -> RedditThreads:
    """The conversations (root-to-leaf paths of at least `min_turns` turns), actors and URLs of a dump, or
    of the same columns as a Hugging Face dataset (data_hf.py)."""
    from megazoo.tasks.dialogue import data_hf  # parquet/arrow/save_to_disk/hf: (eval/readers/hf_source.py)
    if data_hf.is_hf_source(path):
        return data_hf.read_reddit_hf(path, min_turns)
    return build_threads(read_comments(path), path, min_turns)


def build_threads(comments: list[Comment], path, min_turns: int = 2) -> RedditThreads:
    from megazoo.tasks.dialogue.data import Conversation, Turn
    from megazoo.tasks.dialogue.links import find_urls

    by_id = {c.id: c for c in comments}
    children: dict[str, list[Comment]] = {}
    roots, orphans = [], 0
    for c in comments:
        parent = c.parent[3:] if c.parent.startswith("t1_") else None
        if parent is None:
            roots.append(c)
        elif parent in by_id:
            children.setdefault(parent, []).append(c)
        else:
            roots.append(c)
            orphans += 1
    order = {c.id: i for i, c in enumerate(comments)}

    def key(c):
        return (c.time, order[c.id])

    out = RedditThreads([], orphans=orphans, comments=len(comments))
    visited = set()
    paths = []
    for root in sorted(roots, key=key):
        if _removed(root):
            visited.add(root.id)
            out.removed += 1 + _count_below(root.id, children, visited)
            continue
        stack = [(root, [])]
        while stack:  # depth first, replies in time order, no recursion (deep threads)
            c, above = stack.pop()
            visited.add(c.id)
            here = above + [c]
            replies = []
            for r in sorted(children.get(c.id, []), key=key):
                if _removed(r):  # the paths through it end at c
                    visited.add(r.id)
                    out.removed += 1 + _count_below(r.id, children, visited)
                else:
                    replies.append(r)
            if not replies:
                paths.append(here)
            stack.extend((r, here) for r in reversed(replies))
    lost = [c for c in comments if c.id not in visited]
    if lost:  # not reachable from a top-level comment or an orphan: the parents form a cycle
        raise LineError(path, lost[0].line, f"comment {lost[0].id!r} is in a cycle of parent_id links")
    kept: dict[str, Comment] = {}
    for chain in paths:
        if len(chain) < min_turns:
            continue
        kept.update((c.id, c) for c in chain)
        first = chain[0]
        conv = Conversation(f"{first.link}/{chain[-1].id}", [Turn(c.author, c.body) for c in chain],
                            topic=first.subreddit, path=str(path), line=chain[-1].line, thread=first.link)
        out.conversations.append(conv)
        for author in dict.fromkeys(c.author for c in chain):
            if author != DELETED_AUTHOR:
                out.actors.setdefault(author, []).append(conv.id)
    for c in sorted(kept.values(), key=key):
        for url in find_urls(c.body):
            out.urls.setdefault(url, []).append(c.id)
    return out


def _removed(c: Comment) -> bool:
    return c.body.strip() in REMOVED


def _count_below(cid: str, children: dict, visited: set) -> int:
    n, stack = 0, list(children.get(cid, []))
    while stack:
        c = stack.pop()
        visited.add(c.id)
        n += 1
        stack.extend(children.get(c.id, []))
    return n
