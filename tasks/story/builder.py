"""MEGATRON-CNTRL's three trained components on the core trainer: `task: story` in a recipe (entry
point megazoo.tasks:story), the component picked by `task.component`.

    generator  a GPT/Llama decoder fine-tuned on (story so far + top knowledge + keywords -> next
               sentence), the loss on the sentence only (zoo/sft.py's batching and objective)
    keywords   the same decoder recipe on (story so far -> the next sentence's keywords)
    ranker     a BERT scorer of (knowledge sentence, story so far): the choice head over a step's
               `task.candidates` knowledge sentences, cross-entropy towards the weak label (the
               sentence closest to the gold next sentence in MiniLM embedding space, written by
               `megazoo task story label`); validation: top-1 agreement with the weak label

Task keys (task.*):
    component      generator | keywords | ranker (default generator)
    knowledge      the knowledge base (ConceptNet CSV or TSV) for the generator's pairs (null: none)
    n_knowledge    knowledge sentences in a generator prompt (2)
    n_keywords     keywords per sentence (2)
    keyword_extractor  rake | yake: how the gold sentences' keywords are extracted (rake, the paper's;
                   keywords.py); recorded in the run's config.yaml and the checkpoint's meta
    drop_keywords  share of generator pairs without keywords and knowledge (0.15)
    drop_knowledge share of generator pairs without knowledge only (0.15)
    swap_antonyms  share of generator pairs whose keywords that occur in the gold sentence are swapped
                   for their WordNet antonyms in keywords and sentence alike (0: none, the paper's data)
    valid_stories  validation stories used (0: all)
    max_seq_length ranker: tokens of (knowledge, story) (128)
    eval_batch     ranker: steps per forward pass in evaluation (16)
data.path: generator/keywords: a folder with train.csv and valid.csv or one ROCStories CSV;
ranker: a folder with ranker-train.jsonl and ranker-valid.jsonl.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from megazoo.core.train.errors import ConfigError
from megazoo.core.train.task_settings import TaskSettings

from megazoo.tasks.story.keywords import DEFAULT_EXTRACTOR, EXTRACTORS

COMPONENTS = ("generator", "keywords", "ranker")


@dataclass
class StoryTask(TaskSettings):
    NAME = "story"
    CHOICES = {"component": COMPONENTS, "keyword_extractor": EXTRACTORS}
    BOUNDS = {"n_knowledge": 0, "n_keywords": 0, "valid_stories": 0, "max_seq_length": 8}

    component: str = "generator"
    knowledge: str | None = None
    n_knowledge: int = 2
    n_keywords: int = 2
    keyword_extractor: str = DEFAULT_EXTRACTOR
    drop_keywords: float = 0.15
    drop_knowledge: float = 0.15
    swap_antonyms: float = 0.0
    valid_stories: int = 0
    max_seq_length: int = 128
    eval_batch: int = 16

    def check(self) -> None:
        shares = (self.drop_keywords, self.drop_knowledge, self.swap_antonyms)
        if not (min(shares) >= 0 and sum(shares) <= 1):
            raise ConfigError(f"task.drop_keywords, task.drop_knowledge and task.swap_antonyms must be shares that sum "
                              f"to at most 1, got {self.drop_keywords}, {self.drop_knowledge} and {self.swap_antonyms}")


def build(task: dict, model: dict, recompute: str = "none"):
    settings = StoryTask.from_dict(task)
    if settings.component == "ranker":
        from megazoo.tasks.story.ranker_builder import RankerBuilder

        return RankerBuilder(settings, model, recompute)
    from megazoo.tasks.story.decoder_builder import StoryDecoderBuilder
    from megazoo.zoo.gpt.task import decoder_model

    return StoryDecoderBuilder(decoder_model(model, recompute, f"task story's {settings.component} is a decoder"),
                               asdict(settings))
