"""Row sources shared by the fine-tuning tasks (core/train/rows.py) and the multiple-choice inputs
(zoo/heads/choice.py): wrapping, a fresh permutation per epoch, padding columns cut and nothing else."""

import torch

from megazoo.core.train.rows import Rows, Shuffled, kept_length, trim
from megazoo.zoo.heads.choice import ChoiceBatch, collate_choices, micro_batch, pair_ids


def choice_batch(n: int = 5, c: int = 3, width: int = 20) -> ChoiceBatch:
    """n examples of c `[CLS] a [SEP] b [SEP]` options of random (seeded) lengths, padded to width."""
    g = torch.Generator().manual_seed(0)

    def words(most: int) -> list[int]:
        return torch.randint(5, 50, (int(torch.randint(1, most, (), generator=g)),), generator=g).tolist()

    rows = [[pair_ids(words(6), words(8), width, 1, 2, 0) for _ in range(c)] for _ in range(n)]

    def column(k: int, dtype) -> torch.Tensor:
        return torch.tensor([[r[k] for r in ex] for ex in rows], dtype=dtype)

    return ChoiceBatch(column(0, torch.int32), column(1, torch.int8), column(2, torch.int8), torch.arange(n) % c)


def test_rows_wrap_and_shuffled_is_a_fresh_permutation_each_epoch():
    table = choice_batch()
    rows = Rows(table)
    assert len(rows) == 5
    assert torch.equal(rows.get(7)["input_ids"], table.input_ids[2])
    shuffled = Shuffled(rows, seed=3)
    epochs = [[_index(table, shuffled.get(e * 5 + i)) for i in range(5)] for e in range(3)]
    assert all(sorted(order) == list(range(5)) for order in epochs)
    assert len({tuple(order) for order in epochs}) > 1  # not the same order every epoch
    again = Shuffled(Rows(table), seed=3)
    assert [_index(table, again.get(i)) for i in range(15)] == [i for order in epochs for i in order]


def _index(table: ChoiceBatch, sample: dict) -> int:
    return next(i for i in range(len(table)) if torch.equal(table.input_ids[i], sample["input_ids"]))


def test_trim_cuts_only_the_columns_that_are_padding_everywhere():
    mask = torch.tensor([[1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0]])
    batch = {"input_ids": mask * 7, "attention_mask": mask, "labels": torch.tensor([1, 0])}
    assert kept_length(mask, 1) == 9 and kept_length(mask, 8) == 12 and kept_length(mask, 4) == 12
    assert kept_length(torch.zeros(2, 12, dtype=torch.long), 8) == 8
    out = trim(batch, multiple=2)
    assert out["input_ids"].shape == (2, 10) and torch.equal(out["input_ids"], batch["input_ids"][:, :10])
    assert torch.equal(out["labels"], batch["labels"])  # per-row targets are kept whole


def test_collate_choices_equals_micro_batch_of_the_same_examples():
    table = choice_batch()
    samples = [table.sample(i) for i in (1, 3, 4)]
    got = collate_choices(samples)
    want = micro_batch(table, [1, 3, 4])
    assert got.keys() == want.keys() and all(torch.equal(got[k], want[k]) for k in got)
    longest = int(table.attention_mask[[1, 3, 4]].sum(-1).max())
    assert got["input_ids"].shape == (9, min(20, -(-longest // 8) * 8))  # 3 examples x 3 options, multiple of 8
    assert got["input_ids"].dtype == torch.int64
    width = got["input_ids"].shape[1]
    assert torch.equal(got["input_ids"].view(3, 3, -1), table.input_ids[[1, 3, 4], :, :width].long())
