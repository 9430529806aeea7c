"""The trainer's one door to data: global sample index -> a sample, split into micro-batches.

A source's `get(i)` returns (input_ids, labels) or a dict of same-shaped tensors per sample (a
model builder's own data, e.g. BERT's input_ids, token_type_ids, attention_mask, labels, sop_labels);
micro-batches are dicts of the stacked tensors.

Step k of a run consumes global samples [c, c + global_batch) where c is the number of samples
consumed so far (under train.rampup_batch_size: the step's own batch, core/train/rampup.py);
data-parallel rank r takes the r-th contiguous part of it and cuts it into micro-batches. Every
layout (dp, accumulation, one big batch) therefore sees the same samples per step, and a resumed
run continues exactly where it stopped.

Sources:
  - `SyntheticSource`: deterministic, learnable token sequences (tests and benchmarks);
  - the real pipeline of megazoo.core.data (indexed .bin/.idx, blends, the embedded corpus), used
    when its GPT sample builder is available (see `build_source`).
"""

from __future__ import annotations

import torch

from megazoo.core.parallel.cp_split import split_batch

IGNORE = -100


class SyntheticSource:
    """Arithmetic progressions modulo the vocabulary with a little noise: learnable in a few steps,
    different per split, with a few ignored labels so token counts differ between micro-batches."""

    def __init__(self, vocab_size: int, seq_length: int, seed: int = 0, split: str = "train"):
        self.vocab, self.seq = vocab_size, seq_length
        self.base = seed * 1_000_003 + {"train": 0, "valid": 500_000_000, "test": 700_000_000}[split]

    def __len__(self) -> int:
        return 1 << 40

    def get(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(self.base + index)
        start = int(torch.randint(0, self.vocab, (1,), generator=g))
        stride = int(torch.randint(1, 8, (1,), generator=g))
        tokens = (start + stride * torch.arange(self.seq + 1)) % self.vocab
        noise = torch.rand(self.seq + 1, generator=g) < 0.05
        tokens = torch.where(noise, torch.randint(0, self.vocab, (self.seq + 1,), generator=g), tokens)
        labels = tokens[1:].clone()
        labels[: int(torch.randint(0, 4, (1,), generator=g))] = IGNORE
        return tokens[:-1], labels


class CoreDataSource:
    """Adapter over megazoo.core.data's GPT dataset: item -> tokens[seq + 1] (labels shifted)."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def get(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        item = self.dataset[index % len(self.dataset)]
        if isinstance(item, dict):
            if "labels" in item:
                return torch.as_tensor(item["input_ids"]).long(), torch.as_tensor(item["labels"]).long()
            tokens = torch.as_tensor(item.get("tokens", item.get("text"))).long()
        else:
            tokens = torch.as_tensor(item).long()
        return tokens[:-1], tokens[1:].clone()


def build_sources(cfg, builder) -> tuple:
    """(train, valid) sources: synthetic when `data.synthetic`, else the builder's
    `data_sources(data, tokenizer, seed, num_samples)` over `data.path` (a prefix, a blend or a
    task's files) or, when unset, the embedded corpus (megazoo.core.train.builder has the default:
    GPT samples)."""
    from megazoo.core.train.errors import ConfigError

    if cfg.data.synthetic:
        if builder.own_data:
            raise ConfigError(f"model.arch={builder.to_dict().get('arch')!r}{_task(cfg)} trains on text: set "
                              "data.synthetic=false")
        return tuple(SyntheticSource(builder.vocab_size, builder.seq_length, cfg.train.seed, split)
                     for split in ("train", "valid"))
    import torch.distributed as dist

    from megazoo.core.data import build_tokenizer

    # a builder may ask for sentinel ids (T5's span corruption)
    tokenizer = build_tokenizer(cfg.data.tokenizer, extra_ids=builder.tokenizer_extra_ids)
    if tokenizer.vocab_size > builder.vocab_size:
        raise ValueError(f"data.tokenizer={cfg.data.tokenizer!r} has {tokenizer.vocab_size} tokens but model.vocab_size="
                         f"{builder.vocab_size}; set model.vocab_size >= {tokenizer.vocab_size}")
    t = cfg.train
    # with train.epochs the steps follow the data: one pass of each split
    wanted = (None, None, None) if t.epochs else (t.steps * t.global_batch, t.eval_iters * t.global_batch, None)
    data = data_settings(cfg)
    distributed = dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1
    # rank 0 tokenises and writes the index caches first; the others then read them
    if distributed and dist.get_rank() != 0:
        dist.barrier()
    try:
        sources = builder.data_sources(data, tokenizer, t.seed, wanted)
    finally:
        if distributed and dist.get_rank() == 0:
            dist.barrier()
    if sources[1] is None:
        raise ValueError(f"data.split={cfg.data.split!r} leaves no validation data; give the valid split a weight")
    return sources


def data_settings(cfg) -> dict:
    """The data section as a builder reads it (data_sources, check_data)."""
    return {"path": cfg.data.path, "split": cfg.data.split, "corpus": cfg.data.corpus, "cache_dir": cfg.data.cache_dir,
            "tokenizer": cfg.data.tokenizer}


def _task(cfg) -> str:
    return f" (task {cfg.task.get('name')!r})" if cfg.task else ""


class Batches:
    """Cuts global batches into this data-parallel rank's micro-batches; under context parallelism
    (cp > 1) each micro-batch is then cut to this cp rank's two chunks of the sequence
    (megazoo.core.parallel.cp_split), so every model and task builder gets its tokens already split."""

    def __init__(self, source, global_batch: int, micro_batch: int, dp: int, dp_rank: int, device=None,
                 collate=None, cp: int = 1, cp_rank: int = 0):
        self.source, self.global_batch, self.micro_batch = source, global_batch, micro_batch
        self.dp, self.dp_rank, self.device = dp, dp_rank, device
        self.cp, self.cp_rank = cp, cp_rank
        self.collate = collate or stack_samples

    def step(self, consumed: int, global_batch: int | None = None) -> list[dict]:
        """Micro-batches of the global batch that starts at sample `consumed` (`global_batch`: this
        step's size under a batch ramp-up, a multiple of micro_batch x dp; default the constant one)."""
        per_rank = (global_batch or self.global_batch) // self.dp
        first = consumed + self.dp_rank * per_rank
        out = []
        for m in range(per_rank // self.micro_batch):
            samples = [self.source.get(first + m * self.micro_batch + i) for i in range(self.micro_batch)]
            mb = split_batch(self.collate(samples), self.cp, self.cp_rank)
            if self.device is not None and self.device.type != "cpu":
                mb = {k: v.to(self.device, non_blocking=True) for k, v in mb.items()}
            out.append(mb)
        return out


def stack_samples(samples: list) -> dict:
    """Stack (input_ids, labels) pairs or dicts of same-shaped tensors into one micro-batch."""
    if not isinstance(samples[0], dict):
        samples = [{"input_ids": s[0], "labels": s[1]} for s in samples]
    return {k: torch.stack([s[k] for s in samples]) for k in samples[0]}


class EpochSource:
    """A finite list of samples as a trainer source: global sample i is item perm_e[i mod N] of
    epoch e = i // N, with a fresh seeded permutation each epoch (every layout sees the same order;
    a resumed run continues it)."""

    def __init__(self, items: list, seed: int, shuffle: bool = True):
        if not items:
            raise ValueError("no samples")
        self.items, self.seed, self.shuffle = items, seed, shuffle
        self._order: tuple[int, torch.Tensor] | None = None

    def __len__(self) -> int:
        return len(self.items)

    def get(self, index: int):
        epoch, i = divmod(index, len(self.items))
        if not self.shuffle:
            return self.items[i]
        if self._order is None or self._order[0] != epoch:
            g = torch.Generator().manual_seed(self.seed * 1000 + epoch)
            self._order = (epoch, torch.randperm(len(self.items), generator=g))
        return self.items[int(self._order[1][i])]
