"""The generator and keyword predictor as trainer tasks: SFT batching and loss (zoo/sft.py) over
(prompt, response) pairs built from ROCStories-format stories (inputs.py)."""

from __future__ import annotations

import torch.distributed as dist

from megazoo.core.data import sft as reader
from megazoo.core.train.data import EpochSource
from megazoo.core.train.errors import ConfigError
from megazoo.zoo.sft import SFTBuilder


def pairs_of(settings: dict, stories, seed: int) -> list[tuple[str, str]]:
    from megazoo.tasks.story.inputs import generator_pairs, keyword_pairs
    from megazoo.tasks.story.knowledge import KnowledgeBase

    extractor = settings.get("keyword_extractor", "rake")
    if settings["component"] == "keywords":
        return keyword_pairs(stories, settings["n_keywords"], extractor)
    kb = KnowledgeBase.load(settings["knowledge"]) if settings["knowledge"] else None
    return generator_pairs(stories, kb, settings["n_knowledge"], settings["n_keywords"], settings["drop_keywords"],
                           settings["drop_knowledge"], seed, settings["swap_antonyms"], extractor=extractor)


class StoryDecoderBuilder(SFTBuilder):
    def __init__(self, model_builder, task: dict):
        super().__init__(model_builder, task)
        self.task = dict(task)  # the story keys only (the checkpoint's meta rebuilds the task from them)

    def check_data(self, data: dict) -> None:
        if not data.get("path"):
            raise ConfigError("task story needs data.path: a folder with train.csv and valid.csv (`megazoo task "
                              "story data` writes one) or one ROCStories CSV")

    def data_sources(self, data: dict, tokenizer, seed: int, num_samples) -> tuple:
        from megazoo.tasks.story.stories import load_split

        self.check_data(data)
        self.pad_id = tokenizer.pad if tokenizer.pad is not None else tokenizer.eod
        try:
            train, valid = load_split(data["path"], seed)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        if self.task["valid_stories"]:
            valid = valid[: self.task["valid_stories"]]
        sources = []
        for name, stories in (("train", train), ("valid", valid)):
            examples = [reader.Example([(p, False), (r, True)], f"{data['path']}:{name}", i + 1)
                        for i, (p, r) in enumerate(pairs_of(self.task, stories, seed))]
            samples = reader.tokenize(examples, tokenizer, self.seq_length, "left")
            if not samples.items:
                raise ConfigError(f"data.path={data['path']!r}: no {name} example fits in model.seq_length")
            sources.append(EpochSource(samples.items, seed, shuffle=name == "train"))
        if not dist.is_initialized() or dist.get_rank() == 0:
            print(f"task story ({self.task['component']}): {len(train)} training and {len(valid)} validation "
                  f"stories, {len(sources[0])} and {len(sources[1])} steps", flush=True)
        return tuple(sources)
