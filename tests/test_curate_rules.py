"""megazoo curate with NVIDIA's rules (issue #39): decontamination as Megatron-LM's
tools/openwebtext/filter_ngrams.py does it (a hand-made set worked out by hand, a straight port of
the tool on 200 generated documents, lm-eval's Janitor where the two rules coincide), fuzzy dedup's
keep policies, the MT-NLG blend preset, and bad input refused in one line before any work."""

import json
import random
import re

import pytest

from megazoo.cli import main as megazoo
from megazoo.curate import mt_nlg
from megazoo.curate.decontaminate import PRESETS, build_index, clean
from megazoo.curate.executor import LocalExecutor
from megazoo.curate.pipeline import run_stage
from megazoo.curate.shards import iter_output

QUIZ = "which river flows through the ancient city of old york"  # 10 words: indexed whole
COMMON = "the quick brown fox jumps over the lazy dog near the river bank"  # 13 words


def filler(k: int) -> str:
    """A 50-character sentence (49 characters, the `.` at offset 48, then a space)."""
    return f"Filler sentence number {k:03d} holds plain words abc. "


def rows(folder):
    return {d["id"]: d["text"] for d in iter_output(folder)}


def removed(folder):
    return [json.loads(line) for p in sorted((folder / "_removed").rglob("*.jsonl")) for line in p.read_text().splitlines()]


@pytest.fixture(scope="module")
def handmade(tmp_path_factory):
    root = tmp_path_factory.mktemp("handmade")
    (root / "eval").mkdir()
    (root / "eval" / "quiz.jsonl").write_text(json.dumps({"text": QUIZ}) + "\n")
    (root / "eval" / "story.jsonl").write_text(json.dumps({"text": COMMON + " and then it slept"}) + "\n")
    before, after = [filler(k) for k in range(10)], [filler(k) for k in range(10, 20)]
    leak = "".join(before) + f"Then we asked {QUIZ} again. " + "".join(after)
    docs = [{"id": "leak", "text": leak}, {"id": "clean", "text": "".join(filler(k) for k in range(30, 45))}]
    docs += [{"id": f"common{i:02d}", "text": "".join(filler(k) for k in range(6)) + f"We saw {COMMON} today. "
              + "".join(filler(k) for k in range(50, 62))} for i in range(12)]
    (root / "raw").mkdir()
    (root / "raw" / "s.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    tasks = [str(root / "eval" / "quiz.jsonl"), str(root / "eval" / "story.jsonl")]
    return root, tasks, before, after, leak


def test_handmade_set_gives_the_removals_worked_out_by_hand(handmade, tmp_path):
    root, tasks, before, after, leak = handmade
    run_stage("decontaminate", {"tasks": tasks, "preset": "nvidia"}, root / "raw", tmp_path / "n", "text",
              LocalExecutor(False))
    out = rows(tmp_path / "n")
    # the leak: 10 fillers (500 characters), then "Then we asked " (14): the match starts at 514 and is
    # 54 characters long. Cut before: 514 - 200 = 314, back to the `.` at 298 (end of filler 6):
    # piece 0 = characters 0..298 = six fillers without the last space (299 > 200: kept). Cut after:
    # 514 + 54 + 200 = 768, on to the `.` at 774 (the fourth filler after the leak sentence, which
    # spans 500..575): piece 1 = characters 775.. = " " + the last six fillers (301 characters).
    assert out["leak#0"] == "".join(before[:6])[:-1]
    assert out["leak#1"] == " " + "".join(after[4:])
    # the 13-gram of `story` is in 12 documents (>= 10): a common phrase, left alone; `clean` untouched
    assert sorted(k for k in out if not k.startswith("leak")) == ["clean"] + [f"common{i:02d}" for i in range(12)]
    assert all(out[f"common{i:02d}"].count(COMMON) == 1 for i in range(12))
    gone = removed(tmp_path / "n")
    assert [g["id"] for g in gone] == ["leak"] and f'quiz: "{QUIZ}"' in gone[0]["reason"]
    stats = json.loads((tmp_path / "n" / "_stage.json").read_text())
    assert stats["extra"]["frequent_ngrams_left"] == 1 and stats["extra"]["eval_ngram_lengths"] == [10, 13]
    # the plain 13-gram rule: the 10-word text is not indexed, the common phrase is cut from all 12
    run_stage("decontaminate", {"tasks": tasks, "preset": "gpt3"}, root / "raw", tmp_path / "g", "text",
              LocalExecutor(False))
    out = rows(tmp_path / "g")
    assert out["leak"] == leak and out["clean"]
    # common: 6 fillers (300) + "We saw " (7): match at 307, 13 words (63 characters); piece 0 = the
    # first 107 characters (dropped: <= 200), piece 1 = from 307 + 63 + 200 = 570 on (408 kept)
    doc = "".join(filler(k) for k in range(6)) + f"We saw {COMMON} today. " + "".join(filler(k) for k in range(50, 62))
    assert all(out[f"common{i:02d}#0"] == doc[570:] for i in range(12))
    assert sorted(g["id"] for g in removed(tmp_path / "g")) == [f"common{i:02d}" for i in range(12)]


# ---- a straight port of NVIDIA's filter_ngrams.py (its rule, written out here) ---------------------

def nv_words(text):
    words, positions = [], []
    for m in re.finditer(r"\w+", text.lower()):
        words.append(m.group(0))
        positions.append(m.start())
    return words, positions


def nv_split(text, start, margin, seq):
    pos, first = start - margin, ""
    while pos > 0 and text[pos] not in ".!?":
        pos -= 1
    if pos > 0:
        first = text[:pos + 1]
    pos, second = start + len(seq) + margin, ""
    while pos < len(text) and text[pos] not in ".!?":
        pos += 1
    if pos + 1 < len(text):
        second = text[pos + 1:]
    return first, second


def nv_check(words, ngrams, text, start, free, buf, local, freq_only):
    seq = " ".join(words)
    if seq not in ngrams:
        return True
    if freq_only:
        local[seq] = local.get(seq, 0) + 1
        if start + len(seq) + 1 < len(text):
            buf.append(text[start + len(seq) + 1:])
        return False
    first, second = nv_split(text, start, 200, seq)
    if len(first) > 200:
        free.append(first)
    if len(second) > 200:
        buf.append(second)
    return False


def nv_free(text, ngrams, lengths, freq_only, max_n=13):
    buf, free, local = [text], [], {}
    while buf:
        part = buf.pop(0)
        words, pos = nv_words(part)
        ok = True
        for i in range(len(words) - max_n + 1):
            if not nv_check(words[i:i + max_n], ngrams, part, pos[i], free, buf, local, freq_only):
                ok = False
                break
            for n in lengths:
                if not nv_check(words[i:i + n], ngrams, part, pos[i], free, buf, local, freq_only):
                    ok = False
                    break
            if not ok:
                break
        if ok and len(words) - max_n > 0:
            last, at = words[len(words) - max_n:], len(words) - max_n
            for n in lengths:
                if n == max_n:
                    continue
                for i in range(len(last) - n + 1):
                    if not nv_check(last[i:i + n], ngrams, part, pos[at + i], free, buf, local, freq_only):
                        ok = False
                        break
                if not ok:
                    break
        if ok and not freq_only:
            free.append(part)
    return free, local


def nv_tool(docs, task_texts):
    ngrams = {}
    for text in task_texts:
        words, _ = nv_words(text)
        if len(words) < 8:
            continue
        if len(words) < 13:
            ngrams.setdefault(" ".join(words), 0)
        for i in range(len(words) - 12):
            ngrams.setdefault(" ".join(words[i:i + 13]), 0)
    lengths = sorted({len(k.split()) for k in ngrams})
    for doc in docs:
        for key in nv_free(doc, ngrams, lengths, True)[1]:
            ngrams[key] += 1
    below = {k: 1 for k, v in ngrams.items() if v < 10}
    lengths = sorted({len(k.split()) for k in below})
    out = []
    for doc in docs:
        free = nv_free(doc, below, lengths, False)[0]
        out.append([] if len(free) > 10 else free)
    return out


def generated(seed=5, n_docs=200):
    rng = random.Random(seed)
    vocab = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe", "ro", "si", "tu", "va", "ze") for b in
             ("bar", "den", "fin", "gol", "hum", "jet", "kip", "lum", "mor", "nix", "pod", "quo", "rim", "sol")]

    def sentence():
        words = [rng.choice(vocab) for _ in range(rng.randint(4, 14))]
        if rng.random() < 0.3:
            words[rng.randrange(len(words))] += ","
        return " ".join(words).capitalize() + rng.choice(".!?")

    tasks = [" ".join(rng.choice(vocab) for _ in range(rng.randint(8, 12))) for _ in range(12)]
    tasks += [" ".join(rng.choice(vocab) for _ in range(rng.randint(15, 30))) for _ in range(12)]
    common = " ".join(tasks[-1].split()[:13])
    docs = []
    for d in range(n_docs):
        parts = [sentence() for _ in range(rng.randint(10, 60))]
        if d % 3 == 0:
            for _ in range(rng.randint(1, 14)):
                task = rng.choice(tasks).split()
                n = len(task) if len(task) < 13 else rng.randint(13, len(task))
                start = rng.randint(0, len(task) - n)
                leak = " ".join(task[start:start + n])
                at = rng.randrange(len(parts) + 1)
                if rng.random() < 0.5:
                    parts.insert(at, leak)  # between sentences
                else:  # mid-sentence
                    parts.insert(at, "And " + leak + " " + sentence().lower())
        if d % 12 == 1:
            parts.insert(rng.randrange(len(parts) + 1), common)  # in 17 documents: a common phrase
        docs.append(" ".join(parts))
    return docs, tasks


def test_preset_nvidia_equals_a_straight_port_of_nvidias_tool(tmp_path):
    docs, tasks = generated()
    (tmp_path / "raw").mkdir()
    for s in range(2):  # two shards: the document-frequency pass sums over both
        (tmp_path / "raw" / f"s{s}.jsonl").write_text("".join(json.dumps({"id": f"d{i:03d}", "text": t}) + "\n"
                                                           for i, t in enumerate(docs) if i % 2 == s))
    (tmp_path / "eval.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in tasks))
    run_stage("decontaminate", {"tasks": [str(tmp_path / "eval.jsonl")], "preset": "nvidia"}, tmp_path / "raw",
              tmp_path / "out", "text", LocalExecutor(False))
    ours = rows(tmp_path / "out")
    theirs = nv_tool(docs, tasks)
    for i, pieces in enumerate(theirs):
        mine = [ours[k] for k in sorted(ours) if k == f"d{i:03d}" or k.startswith(f"d{i:03d}#")]
        assert mine == pieces, i
    assert sum(1 for p in theirs if p == []) >= 3 and sum(1 for p in theirs if len(p) > 1) >= 10  # the rules ran
    stats = json.loads((tmp_path / "out" / "_stage.json").read_text())
    assert stats["extra"]["frequent_ngrams_left"] >= 1


def test_gpt3_preset_equals_lm_eval_janitor_where_the_rules_coincide():
    """lm-eval's Janitor and the `gpt3` preset coincide on a document of plain lowercase words
    separated by single spaces with one leaked 13-gram: both remove the match +-200 characters and
    keep the sides. They differ elsewhere, so the documents avoid those cases: Janitor splits on
    whitespace and deletes punctuation inside a word ("don't" is one word; \\w+ makes two), cuts
    every overlapping matched n-gram and drops a document after 10 matched n-grams (NVIDIA: after
    10 surviving pieces, rescanning the text after each cut), starts a middle chunk one character
    earlier than the last one, and keeps a last piece of exactly 200 characters (NVIDIA: more than
    200). Piece lengths of exactly 200 are therefore skipped here."""
    from lm_eval.decontamination.janitor import Janitor

    rng = random.Random(3)
    vocab = [f"w{i}" for i in range(500)]
    leak = " ".join(rng.choice(vocab) for _ in range(13))
    janitor = Janitor(ngram_n=13, window_to_remove=200, too_dirty_cutoff=10, minimum_slice_length=200)
    janitor.register_contaminant_python(leak)
    index = build_index({"t": [leak]}, 13, 13)
    compared = 0
    for _ in range(60):
        before = " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 120)))
        after = " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 120)))
        doc = " ".join(x for x in (before, leak, after) if x)
        ours, _ = clean(doc, index, PRESETS["gpt3"])
        if 200 in (len(before) - 200, len(after) - 200 + 0):
            continue
        assert ours == janitor.clean_python(doc), doc
        compared += 1
    assert compared >= 50


# ---- fuzzy dedup: keep policies, preset nvidia ------------------------------------------------------

@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """Pairs of near copies (one word in 120 changed) across the datasets books, web and zeta."""
    root = tmp_path_factory.mktemp("datasets")
    rng = random.Random(7)
    vocab = [f"{a}{b}{c}" for a in "bcdfg" for b in "aeiou" for c in "klmnprst"]
    shards = {"books": [], "web": [], "zeta": []}
    pairs = []
    for k in range(12):
        words = [rng.choice(vocab) for _ in range(120)]
        copy = list(words)
        copy[rng.randrange(120)] = "changed"
        first, second = [("books", "web"), ("web", "zeta"), ("zeta", "books")][k % 3]
        a, b = (f"{first}-{k}", f"{second}-{k}")
        shards[first].append({"id": a, "text": " ".join(words) + ("" if k % 2 else " more words")})
        shards[second].append({"id": b, "text": " ".join(copy) + (" more words" if k % 2 else "")})
        pairs.append((a, b))
    for name, docs in shards.items():
        (root / "raw" / name).mkdir(parents=True)
        (root / "raw" / name / "s.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    return root, pairs


def test_priority_keeps_the_higher_priority_copy_in_every_pair(datasets, tmp_path, capsys):
    root, pairs = datasets
    assert megazoo(["curate", "fuzzy-dedup", "--no-progress", "--input", str(root / "raw"), "--output",
                    str(tmp_path / "p"), "--preset", "nvidia", "--keep", "priority", "--priority", "web,zeta"]) == 0
    kept = set(rows(tmp_path / "p"))
    rank = {"web": 0, "zeta": 1, "books": 2}  # books is not listed: after the listed ones
    for a, b in pairs:
        winner, loser = sorted((a, b), key=lambda i: rank[i.split("-")[0]])
        assert winner in kept and loser not in kept, (a, b)
    settings = json.loads((tmp_path / "p" / "_settings.json").read_text())["settings"]
    assert (settings["shingle"], settings["permutations"], settings["bands"], settings["rows"],
            settings["candidate_threshold"], settings["threshold"]) == ("char", 100, 10, 10, 0.5, 0.9)
    run_stage("fuzzy-dedup", {"preset": "nvidia", "keep": "longest"}, root / "raw", tmp_path / "l", "text",
              LocalExecutor(False))
    kept = set(rows(tmp_path / "l"))
    for k, (a, b) in enumerate(pairs):  # odd pairs: the copy is longer, even pairs: the original
        assert (b if k % 2 else a) in kept and (a if k % 2 else b) not in kept


@pytest.mark.parametrize("extra, message", [
    (["--keep", "priority", "--priority", "web,nosuch"], "fuzzy-dedup.priority: nosuch is not a dataset of"),
    (["--priority", "web"], "keep `priority` and a `priority` list go together"),
    (["--keep", "priority", "--priority", "web,web"], "names a dataset twice"),
    (["--candidate-threshold", "0.95"], "candidate_threshold: 0.95 is above the group threshold 0.9"),
    (["--shingle", "byte:5"], "expected char:N or word:N"),
])
def test_bad_fuzzy_settings_are_one_line_before_any_work(datasets, tmp_path, capsys, extra, message):
    root, _ = datasets
    out = tmp_path / "o"
    code = megazoo(["curate", "fuzzy-dedup", "--no-progress", "--input", str(root / "raw"), "--output", str(out),
                    "--preset", "nvidia"] + extra)
    err = capsys.readouterr().err.strip()
    # one line (argparse's own usage errors print the usage above it, like every megazoo command)
    assert code == 2 and message in err.splitlines()[-1] and not out.exists(), err
    assert len(err.splitlines()) == 1 or err.splitlines()[0].startswith("usage:")


def test_bad_decontaminate_settings_are_refused(tmp_path, capsys):
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "s.jsonl").write_text('{"text": "a b c"}\n')
    code = megazoo(["curate", "decontaminate", "--input", str(tmp_path / "raw"), "--output", str(tmp_path / "o"),
                    "--tasks", "generated", "--ngram", "8", "--min-ngram", "10"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "min_ngram: 10 is above ngram 8" in err and len(err.splitlines()) == 1


# ---- the MT-NLG blend ------------------------------------------------------------------------------

def test_mt_nlg_blend_preset():
    weights = [w for _, w, _ in mt_nlg.MT_NLG_TABLE.values()]
    assert len(weights) == 15 and abs(sum(weights) - 100) < 0.2
    for name, (tokens, weight, epochs) in mt_nlg.MT_NLG_TABLE.items():  # epochs = weight x 270B / tokens
        assert abs(weight / 100 * mt_nlg.TRAINING_TOKENS_B / tokens - epochs) <= 0.15 * epochs + 0.05, name
    path = mt_nlg.data_path({"Books3": "data/books3", "OpenWebText2": "data/owt2", "Pile-CC": "data/cc",
                             "CC-2020-50": "data/cc"})
    words = path.split()
    assert words[1::2] == ["data/books3", "data/owt2", "data/cc"]
    total = 14.3 + 19.3 + 9.4 + 13.0
    assert [float(w) for w in words[0::2]] == pytest.approx([14.3 / total, 19.3 / total, 22.4 / total], rel=1e-5)
    with pytest.raises(ValueError, match="Books: not a dataset of the mt-nlg table; did you mean `Books3`"):
        mt_nlg.data_path({"Books": "x"})


def test_blend_preset_checks_its_map_before_tokenising(tmp_path, capsys):
    raw = tmp_path / "raw"
    for name in ("books", "web"):
        (raw / name).mkdir(parents=True)
        (raw / name / "s.jsonl").write_text('{"text": "some words here"}\n')
    base = ["curate", "blend", "--no-progress", "--input", str(raw), "--output", str(tmp_path / "o"),
            "--preset", "mt-nlg"]
    assert megazoo(base + ["--map", "Books3=books"]) == 2
    assert "the source web of the input has no mt-nlg dataset" in capsys.readouterr().err
    assert megazoo(base + ["--map", "Books3=books", "Pile-CC=web", "ArXiv=papers"]) == 2
    assert "papers is not a source of the input" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
