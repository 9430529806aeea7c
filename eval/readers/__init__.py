"""Readers of the official local file formats of the zero-shot suites.

Each ``read_*`` function returns a list of plain dataclass examples and raises ``ReaderError``
(a ValueError naming the file and line) for a wrong format, a missing field or an empty file.
"""
from megazoo.eval.readers.anli import ANLI_LABELS, AnliExample, read_anli
from megazoo.eval.readers.boolq import BoolQExample, read_boolq
from megazoo.eval.readers.common import ReaderError
from megazoo.eval.readers.hans import HANS_LABELS, HansExample, read_hans
from megazoo.eval.readers.hellaswag import HellaSwagExample, read_hellaswag
from megazoo.eval.readers.lambada import LambadaExample, read_lambada
from megazoo.eval.readers.piqa import PiqaExample, read_piqa
from megazoo.eval.readers.race import RaceExample, read_race
from megazoo.eval.readers.wic import WicExample, read_wic
from megazoo.eval.readers.wikitext import WikitextArticle, read_wikitext, wikitext_detokenize
from megazoo.eval.readers.winogrande import WinoGrandeExample, read_winogrande

__all__ = [
    "ReaderError",
    "ANLI_LABELS", "AnliExample", "read_anli",
    "BoolQExample", "read_boolq",
    "HANS_LABELS", "HansExample", "read_hans",
    "HellaSwagExample", "read_hellaswag",
    "LambadaExample", "read_lambada",
    "PiqaExample", "read_piqa",
    "RaceExample", "read_race",
    "WicExample", "read_wic",
    "WikitextArticle", "read_wikitext", "wikitext_detokenize",
    "WinoGrandeExample", "read_winogrande",
]
