"""Offline data in the three release layouts, built from Debian's hunspell-en-med word list and
the sentences of the embedded corpus (generated data, never the benchmarks themselves).

    generate_biomed("out", seed=0)   # out/ner/{train,devel,test}.tsv, out/re/{train,dev,test}.tsv,
                                     # out/qa/{train,dev,test}.json, out/text/{bio,general}.txt,
                                     # out/text/heldout_terms.txt

Entity names come from the word list, sorted into diseases, chemicals and enzymes (gene products)
by their suffixes, and split into train / dev / test pools that share no name, so every entity of
the test split is unseen in training. NER: disease mentions (a term, sometimes after a modifier
such as "acute") put into corpus sentences, with chemicals as unlabelled distractors (one type,
BioBERT's B/I/O files). ChemProt: relation sentences from templates per CPR class, masked as BLUE
does, with negated, co-occurrence and other-pair sentences as `false`; one wording per class only
in dev and test. BioASQ: paragraphs of corpus
sentences holding two or three facts (gene of a disease, drug of a disease, ...), a factoid
question per fact, gold synonyms as answer lists. text/: a biomedical text (the train-pool
sentences) and the general corpus for vocabulary training, and held-out terms for the report.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from megazoo.tasks.biomed.data import MissingFile

DICTIONARY = Path("/usr/share/hunspell/en_med_glut.dic")  # Debian's hunspell-en-med
SUFFIXES = {
    "disease": ("itis", "osis", "oma", "emia", "pathy", "algia", "plasia", "trophy", "penia", "iasis", "ectasia",
                "rrhea", "plegia", "uria", "megaly"),
    "chemical": ("mycin", "cillin", "azole", "pril", "olol", "statin", "amine", "azine", "idine", "oxacin", "profen",
                 "sartan", "dipine", "tidine", "caine", "barbital", "phylline", "ol", "ide", "ine"),
    "gene": ("ase",),
}
MODIFIERS = ("acute", "chronic", "severe", "familial", "congenital", "progressive", "recurrent", "idiopathic")
SPLITS = {"train": 0.7, "dev": 0.1, "test": 0.2}
_TOKEN = re.compile(r"\w+|[^\w\s]")
_CLEAN = re.compile(r"[A-Za-z0-9 ,.;:()'-]+")


def dictionary_terms(path: str | Path = DICTIONARY) -> list[str]:
    """The lowercase alphabetic words of 7+ letters of a hunspell .dic (flags and header dropped)."""
    path = Path(path)
    if not path.is_file():
        raise MissingFile(f"{path}: no such word list; install Debian's hunspell-en-med (scripts/setup.sh "
                                f"does) or give another .dic")
    words = set()
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        word = line.split("/", 1)[0].strip()
        if re.fullmatch(r"[a-z]{7,}", word):
            words.add(word)
    return sorted(words)


def term_pools(terms: list[str], seed: int) -> dict[str, dict[str, list[str]]]:
    """{kind: {split: names}}: each name in one kind (first matching suffix list) and one split."""
    by_kind: dict[str, list[str]] = {k: [] for k in SUFFIXES}
    for t in terms:
        for kind, ends in SUFFIXES.items():
            if t.endswith(ends):
                by_kind[kind].append(t)
                break
    pools = {}
    for kind, names in by_kind.items():
        rng = random.Random(f"{seed}-{kind}")
        names = sorted(names)
        rng.shuffle(names)
        a, b = int(len(names) * SPLITS["train"]), int(len(names) * (SPLITS["train"] + SPLITS["dev"]))
        pools[kind] = {"train": names[:a], "dev": names[a:b], "test": names[b:]}
    return pools


def corpus_sentences(seed: int) -> dict[str, list[str]]:
    """Clean sentences (6-30 words) of the embedded corpus, split 70/10/20 into train/dev/test."""
    from megazoo.core.data.corpus import documents
    from megazoo.core.data.text import split_sentences

    sents = sorted({s for d in documents("stdlib") for s in split_sentences(d)
                    if 6 <= len(s.split()) <= 30 and _CLEAN.fullmatch(s)})
    random.Random(seed).shuffle(sents)
    a, b = int(len(sents) * 0.7), int(len(sents) * 0.8)
    return {"train": sents[:a], "dev": sents[a:b], "test": sents[b:]}


# NER ------------------------------------------------------------------------------------------
def ner_sentence(sentence: str, diseases: list[str], chemicals: list[str], rng: random.Random
                 ) -> tuple[list[str], list[str]]:
    """A corpus sentence with 1-2 disease mentions (B/I) and maybe a chemical (O) in place of words."""
    tokens = _TOKEN.findall(sentence)
    labels = ["O"] * len(tokens)
    slots = [i for i, t in enumerate(tokens) if t.isalpha() and t.islower() and len(t) >= 4]
    rng.shuffle(slots)
    n = min(len(slots), rng.choice((1, 1, 2)))
    chem = slots[n] if len(slots) > n and rng.random() < 0.5 else None
    for i in sorted(slots[:n] + ([chem] if chem is not None else []), reverse=True):
        if i == chem:
            tokens[i] = rng.choice(chemicals)
            continue
        words = ([rng.choice(MODIFIERS)] if rng.random() < 0.3 else []) + [rng.choice(diseases)]
        tokens[i:i + 1] = words
        labels[i:i + 1] = ["B"] + ["I"] * (len(words) - 1)
    if tokens[0].islower():
        tokens[0] = tokens[0].capitalize()
    return tokens, labels


def write_ner(folder: Path, sentences: dict, pools: dict, sizes: dict, seed: int) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split, name in (("train", "train.tsv"), ("dev", "devel.tsv"), ("test", "test.tsv")):
        rng = random.Random(f"{seed}-ner-{split}")
        src = sentences[split]
        rows = [ner_sentence(src[i % len(src)], pools["disease"][split], pools["chemical"][split], rng)
                for i in range(sizes[split])]
        (folder / name).write_text("\n".join("".join(f"{t}\t{lab}\n" for t, lab in zip(*r)) for r in rows),
                                   encoding="utf-8")
        counts[split] = len(rows)
    return counts


# ChemProt -------------------------------------------------------------------------------------
RELATIONS = {
    "CPR:3": ["C increased the expression of G", "C activates G in cultured cells", "C up-regulated G",
              "treatment with C induced G expression", "G activity was stimulated by C"],
    "CPR:4": ["C strongly inhibited G activity", "C is a potent inhibitor of G", "C down-regulated G",
              "G expression was reduced by C", "C blocked G activity in vitro"],
    "CPR:5": ["C is a selective agonist of G", "C acts as an agonist at G", "C is a full G agonist",
              "G was activated by the agonist C"],
    "CPR:6": ["C is a competitive antagonist of G", "C acts as an antagonist at G", "C antagonizes G",
              "G was blocked by the antagonist C"],
    "CPR:9": ["G converts C into its active metabolite", "C is a substrate of G", "G catalyzes the oxidation of C",
              "C is metabolized by G"],
    "false": ["C and G were measured in the same samples", "levels of C and G did not correlate",
              "C did not inhibit G", "C had no effect on G expression", "C inhibited X but not G",
              "G and X were both elevated after C treatment", "C is an agonist of X, while G was unchanged"],
}


def re_sentence(label: str, chemicals: list[str], genes: list[str], sentences: list[str], rng: random.Random,
                held_out: bool = False) -> str:
    """A ChemProt-style row of `label`; the last template of each class is kept out of training
    (`held_out` False), so dev and test hold wordings the model never saw."""
    templates = RELATIONS[label] if held_out else RELATIONS[label][:-1]
    template = rng.choice(templates)
    text = template.replace("C", "@CHEMICAL$", 1).replace("G", "@GENE$", 1).replace("X", rng.choice(genes))
    text = text[0].upper() + text[1:]
    if rng.random() < 0.5:  # an unmasked chemical nearby, as ChemProt sentences name several entities
        text += f" , whereas {rng.choice(chemicals)} was inactive"
    if rng.random() < 0.4:
        text = rng.choice(sentences).rstrip(".") + " ; " + text
    return " ".join(_TOKEN.findall(text.replace("@CHEMICAL$", "CHEMMASK").replace("@GENE$", "GENEMASK"))) \
        .replace("CHEMMASK", "@CHEMICAL$").replace("GENEMASK", "@GENE$") + " ."


def write_re(folder: Path, sentences: dict, pools: dict, sizes: dict, seed: int) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    labels = ["false"] * 5 + ["CPR:3", "CPR:4", "CPR:4", "CPR:5", "CPR:6", "CPR:9"]  # false the majority, as ChemProt
    counts = {}
    for split in ("train", "dev", "test"):
        rng = random.Random(f"{seed}-re-{split}")
        rows = []
        for i in range(sizes[split]):
            label = rng.choice(labels)
            text = re_sentence(label, pools["chemical"][split], pools["gene"][split], sentences[split], rng,
                               held_out=split != "train")
            rows.append(f"{10000000 + i}.T{rng.randint(1, 20)}.T{rng.randint(21, 40)}\t{text}\t{label}\n")
        (folder / f"{split}.tsv").write_text("".join(rows), encoding="utf-8")
        counts[split] = len(rows)
    return counts


# BioASQ ---------------------------------------------------------------------------------------
FACTS = {  # (fact sentence, question, answer slot)
    "gene": ("{d} is caused by mutations in the {g} gene.", "Which gene is mutated in {d}?", "g"),
    "drug": ("{c} is the drug of choice for {d}.", "Which drug is used to treat {d}?", "c"),
    "disease": ("Long-term use of {c} can lead to {d}.", "Which condition can long-term use of {c} cause?", "d"),
    "enzyme": ("{c} is metabolized mainly by {g}.", "Which enzyme metabolizes {c}?", "g"),
}


def synonyms(answer: str) -> list[str]:
    """The gold synonym list of a generated answer (BioASQ gives several names per answer)."""
    words = answer.split()
    out = [answer]
    if len(words) > 1:  # "acute nephritis" is also "nephritis"
        out.append(words[-1])
    out.append(answer + " protein" if answer.endswith("ase") else answer.capitalize())
    return out


def qa_paragraph(pools: dict, split: str, sentences: list[str], rng: random.Random, n_sentences: int,
                 uid: str) -> dict:
    facts = []
    kinds = rng.sample(list(FACTS), rng.choice((2, 3)))
    if rng.random() < 0.5:  # a second fact of the same kind: the question must pick the right one
        kinds.append(kinds[0])
    for kind in kinds:
        d = rng.choice(pools["disease"][split])
        if rng.random() < 0.3:
            d = f"{rng.choice(MODIFIERS)} {d}"
        fill = {"d": d, "c": rng.choice(pools["chemical"][split]), "g": rng.choice(pools["gene"][split])}
        fact, question, slot = FACTS[kind]
        text = fact.format(**fill)
        facts.append((text[0].upper() + text[1:], question.format(**fill), fill[slot]))
    body = rng.sample(sentences, min(n_sentences, len(sentences)))
    for fact in facts:
        body.insert(rng.randint(0, len(body)), fact[0])
    context = " ".join(body)
    qas = []
    for k, (fact, question, answer) in enumerate(facts):
        at = context.index(fact) + fact.lower().index(answer.lower())
        written = context[at:at + len(answer)]  # capitalised when the fact starts with it
        gold = [{"text": written, "answer_start": at}] + [{"text": s} for s in synonyms(answer) if s != written]
        qas.append({"id": f"{uid}_{k:03d}", "question": question, "answers": gold})
    return {"context": context, "qas": qas}


def write_qa(folder: Path, sentences: dict, pools: dict, sizes: dict, seed: int, n_sentences: int) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split in ("train", "dev", "test"):
        rng = random.Random(f"{seed}-qa-{split}")
        paragraphs, n = [], 0
        while n < sizes[split]:
            p = qa_paragraph(pools, split, sentences[split], rng, n_sentences, f"{split}{len(paragraphs):05d}")
            paragraphs.append(p)
            n += len(p["qas"])
        data = {"version": "BioASQ-generated", "data": [{"title": f"generated-{split}", "paragraphs": paragraphs}]}
        (folder / f"{split}.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        counts[split] = n
    return counts


# text for the vocabularies --------------------------------------------------------------------
def documents_text(sentences: list[str], per_document: int = 6) -> str:
    """A sentence per line, a blank line after every `per_document`: documents for BERT's
    sentence-order samples (`megazoo preprocess --text-mode blank --split-sentences`)."""
    docs = [sentences[i:i + per_document] for i in range(0, len(sentences), per_document)]
    return "\n\n".join("\n".join(d) for d in docs) + "\n"


def write_text(folder: Path, sentences: dict, pools: dict, seed: int, copies: int) -> dict:
    """bio.txt: the corpus sentences with train-pool terms (diseases, chemicals, enzymes) put in,
    `copies` times; general.txt: the same sentences as they are (both as documents of 6 sentences);
    heldout_terms.txt: the test-pool terms, which neither text contains."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(f"{seed}-text")
    names = [t for kind in pools for t in pools[kind]["train"]]
    all_sentences = [s for split in ("train", "dev", "test") for s in sentences[split]]
    bio = []
    for _ in range(copies):
        for s in all_sentences:
            tokens = s.split()
            for _ in range(rng.randint(1, 3)):
                tokens[rng.randrange(len(tokens))] = rng.choice(names)
            bio.append(" ".join(tokens))
    (folder / "bio.txt").write_text(documents_text(bio), encoding="utf-8")
    (folder / "general.txt").write_text(documents_text(all_sentences * copies), encoding="utf-8")
    held = sorted(t for kind in pools for t in pools[kind]["test"])
    (folder / "heldout_terms.txt").write_text("\n".join(held) + "\n", encoding="utf-8")
    return {"bio_lines": len(bio), "heldout_terms": len(held)}


DEFAULT_SIZES = {"ner": {"train": 1200, "dev": 150, "test": 300}, "re": {"train": 1500, "dev": 200, "test": 400},
                 "qa": {"train": 600, "dev": 100, "test": 200}}


def generate_biomed(out_dir: str | Path, seed: int = 0, sizes: dict | None = None, qa_sentences: int = 6,
                    text_copies: int = 3, dictionary: str | Path = DICTIONARY, kinds=("ner", "re", "qa", "text")) -> dict:
    """Write the sets under out_dir (see the module doc); returns the counts per kind and split."""
    sizes = {**DEFAULT_SIZES, **(sizes or {})}
    out = Path(out_dir)
    pools = term_pools(dictionary_terms(dictionary), seed)
    for kind, splits in pools.items():  # every split draws names of every kind
        if not all(splits.values()):
            raise ValueError(f"{dictionary}: too few {kind} names (words of 7+ letters ending in "
                             f"{', '.join(SUFFIXES[kind][:4])}, ...) to split them into train, dev and test; "
                             f"give a larger word list")
    sentences = corpus_sentences(seed)
    counts = {}
    if "ner" in kinds:
        counts["ner"] = write_ner(out / "ner", sentences, pools, sizes["ner"], seed)
    if "re" in kinds:
        counts["re"] = write_re(out / "re", sentences, pools, sizes["re"], seed)
    if "qa" in kinds:
        counts["qa"] = write_qa(out / "qa", sentences, pools, sizes["qa"], seed, qa_sentences)
    if "text" in kinds:
        counts["text"] = write_text(out / "text", sentences, pools, seed, text_copies)
    return counts
