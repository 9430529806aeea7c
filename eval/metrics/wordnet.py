"""WordNet 3.0 offline, through nltk's reader, from Debian's `wordnet-base` files.

nltk's own `nltk.download("wordnet")` needs the network; Debian ships the same Princeton WordNet
3.0 database in /usr/share/wordnet (package `wordnet-base`, installed by scripts/setup.sh). Two
things keep nltk's reader from opening that folder as it is: nltk (3.9+) only reads corpora under a
folder on `nltk.data.path`, and the Debian package leaves out the `lexnames` table (the 45 lexicographer
file names, fixed since WordNet 1.5). So the first call copies the database files into a cache folder
(`wordnet` in megazoo's cache, core/fs/cache.py), writes `lexnames` beside them and opens that.

Users: METEOR's synonym stage (tasks/dialogue), the knowledge base and antonyms of tasks/story.
"""
from __future__ import annotations

import functools
import shutil
import warnings
from pathlib import Path

from megazoo.core.fs import atomic_file, cache_root, write_text_atomic

DEBIAN = Path("/usr/share/wordnet")
_FILES = [f"{kind}.{pos}" for kind in ("data", "index") for pos in ("noun", "verb", "adj", "adv")] + [
    f"{pos}.exc" for pos in ("noun", "verb", "adj", "adv")]
# WordNet's lexicographer files in their fixed order (WordNet 3.0 `lexnames`): number, name, part of speech
_LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location "
    "noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process "
    "noun.quantity noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change "
    "verb.cognition verb.communication verb.competition verb.consumption verb.contact verb.creation "
    "verb.emotion verb.motion verb.perception verb.possession verb.social verb.stative verb.weather "
    "adj.ppl").split()
_POS_NUMBER = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}


class WordNetMissing(FileNotFoundError):
    """The WordNet database is not installed."""


def _prepare(source: Path, target: Path) -> None:
    missing = [name for name in _FILES if not (source / name).is_file()]
    if missing:
        raise WordNetMissing(f"WordNet not found: {source} lacks {', '.join(missing[:3])}; install Debian's "
                             "wordnet-base (apt-get install wordnet-base) or pass the folder of a WordNet 3.0 "
                             "database")
    target.mkdir(parents=True, exist_ok=True)
    for name in _FILES:
        src, dst = source / name, target / name
        if not dst.is_file() or dst.stat().st_size != src.stat().st_size:
            with open(src, "rb") as f, atomic_file(dst) as out:  # a reader never sees half a file
                shutil.copyfileobj(f, out)
    lexnames = "".join(f"{i:02d}\t{name}\t{_POS_NUMBER[name.split('.')[0]]}\n" for i, name in enumerate(_LEXNAMES))
    if not (target / "lexnames").is_file() or (target / "lexnames").read_text() != lexnames:
        write_text_atomic(target / "lexnames", lexnames)


@functools.lru_cache(maxsize=4)
def load_wordnet(source: str | Path = DEBIAN, cache: str | Path | None = None):
    """nltk's WordNetCorpusReader over the WordNet 3.0 files in `source` (default: Debian's)."""
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class _Reader(WordNetCorpusReader):
        def map_wn(self, version="wordnet"):
            return None  # this is WordNet 3.0 itself: no mapping to load (nltk would look for its download)

    target = Path(cache) if cache is not None else cache_root() / "wordnet"
    _prepare(Path(source), target)
    if str(target) not in nltk.data.path:
        nltk.data.path.append(str(target))  # nltk reads only under its data path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available": no OMW here
        return _Reader(str(target), None)
