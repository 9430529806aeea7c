"""The reader's pieces without a model: gold spans in a reader row, the marginal likelihood over
passages (checked against the sum written out), the best span under the length limit and the
retrieval prior, and the stages' recipe errors (exact match: tests/test_reader_em.py)."""

import math

import pytest
import torch

from megazoo.cli import main as megazoo
from megazoo.tasks.retrieval.reader.span import (answer_log_likelihood, best_span, find_spans,
                                            marginal_loss, reader_row, span_log_probs, text_mask)

CLS, SEP = 101, 102


def test_reader_row_marks_every_answer_occurrence_in_the_text_only():
    question, title, text = [7, 8], [9], [20, 21, 22, 20, 21, 30]
    r = reader_row(question, title, text, [[20, 21], [30], [8]], CLS, SEP, max_len=64)
    assert r.row.ids == [CLS, 7, 8, SEP, 9, SEP, 20, 21, 22, 20, 21, 30, SEP]
    assert r.row.types == [0] * 4 + [1] * 9
    assert (r.text_start, r.text_end) == (6, 12)
    # the question's token 8 is no answer position; both occurrences of [20, 21] are
    assert r.spans == [(6, 7), (9, 10), (11, 11)]
    cut = reader_row(question, title, text, [[30]], CLS, SEP, max_len=10)  # the text is cut to fit
    assert len(cut.row.ids) == 10 and cut.spans == []
    assert find_spans([1, 2, 1, 2], [[1, 2]], 0) == [(0, 1), (2, 3)]


def test_marginal_likelihood_sums_over_passages_and_spans():
    torch.manual_seed(0)
    rows = [reader_row([5], [6], [10, 11, 12, 11], [[11]], CLS, SEP, 32),   # two gold spans
            reader_row([5], [6], [13, 14, 15, 16], [[11]], CLS, SEP, 32),   # none
            reader_row([5], [6], [11, 17, 18, 19], [[11]], CLS, SEP, 32)]   # one
    L = 16
    start, end = torch.randn(3, L), torch.randn(3, L)
    ls, le = span_log_probs(start, end, text_mask(rows, L))
    prior = torch.log_softmax(torch.tensor([0.5, 2.0, -1.0]), 0)
    ll = answer_log_likelihood(ls, le, rows)
    assert math.isinf(float(ll[1])) and float(ll[1]) < 0
    p = prior.exp()
    expected = 0.0
    for z, r in enumerate(rows):
        for s, e in r.spans:
            expected += float(p[z] * ls[z, s].exp() * le[z, e].exp())
    assert float(marginal_loss(prior, ll)) == pytest.approx(-math.log(expected), rel=1e-5)
    # a question whose passages hold no answer has no loss
    assert marginal_loss(prior, torch.full((3,), float("-inf"))) is None
    # the text mask: no probability outside the text
    assert float(ls[0, :rows[0].text_start].exp().sum()) < 1e-4


def test_micro_batch_loss_equals_the_per_question_marginal_likelihood():
    """reader_loss.py on a collated micro-batch (2 questions x 3 passages) against reader.py's
    per-passage formula; a question without an answer in its passages adds exactly 0."""
    from types import SimpleNamespace

    from megazoo.tasks.retrieval.inputs import Row
    from megazoo.tasks.retrieval.reader.data import collate
    from megazoo.tasks.retrieval.reader.loss import question_losses

    torch.manual_seed(1)
    texts = [[10, 11, 12, 11], [13, 14, 15, 16], [11, 17, 18, 19]]
    q1 = [reader_row([5], [6], t, [[11]], CLS, SEP, 32) for t in texts]
    q2 = [reader_row([5], [6], t, [[99]], CLS, SEP, 32) for t in texts]  # no answer anywhere
    prior = torch.log_softmax(torch.randn(2, 3), -1)
    samples = [{"rows": rows, "question": Row([CLS, 5, SEP], [0, 0, 0]), "prior": prior[i]}
               for i, rows in enumerate((q1, q2))]
    mb = collate(samples, 0, end_to_end=False)
    assert mb["input_ids"].shape[0] == 6 and mb["answerable"].tolist() == [1, 0]
    L = mb["input_ids"].shape[1]
    start, end = torch.randn(6, L, requires_grad=True), torch.randn(6, L)
    got = question_losses(SimpleNamespace(start=start, end=end, query=None), mb)
    ls, le = span_log_probs(start[:3], end[:3], text_mask(q1, L))
    want = marginal_loss(prior[0], answer_log_likelihood(ls, le, q1))
    assert float(got[0].detach()) == pytest.approx(float(want.detach()), rel=1e-5) and float(got[1].detach()) == 0.0
    got.sum().backward()
    assert torch.isfinite(start.grad).all() and float(start.grad[3:].abs().sum()) == 0.0


def test_best_span_respects_the_limit_and_the_retrieval_prior():
    ls = torch.full((2, 6), -10.0)
    le = torch.full((2, 6), -10.0)
    ls[0, 1], le[0, 5] = 0.0, 0.0  # a 5-token span in passage 0
    ls[1, 2], le[1, 3] = -1.0, -1.0  # a 2-token span in passage 1, lower reader score
    flat = torch.zeros(2)
    assert best_span(ls, le, flat, max_tokens=10) == (0, 1, 5)
    assert best_span(ls, le, flat, max_tokens=3) == (1, 2, 3)
    assert best_span(ls, le, torch.tensor([-5.0, 0.0]), max_tokens=10) == (1, 2, 3)


@pytest.mark.parametrize("extra, message", [
    (["task.component=dpr"], "task.component='dpr'; choose one of reader, e2e, mss"),
    (["task.top_k=0"], "task.top_k, task.refresh_steps and task.max_answer_tokens must be >= 1"),
    (["task.retriever=''"], "task.retriever: give the retriever's checkpoint"),
    (["task.retriever_lr=1e-5"], "task.retriever_lr=1e-05: the query tower follows train.lr's schedule; give its "
                                 "rate as a multiple of train.lr, task.retriever_lr_scale"),
    (["task.retriever_lr_scale=-1"], "task.retriever_lr_scale=-1: must be >= 0"),
    (["task.reader_init=x"], "task.reader_init: give the reader's BERT as train.init_from"),
    (["train.init_from=null"], "the reader needs a BERT to start from: train.init_from"),
])
def test_reader_recipe_errors_are_one_line(extra, message, capsys):
    assert megazoo(["task", "retrieval", "train", "retrieval-reader", "--set", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err


def test_mss_examples_mask_one_salient_span_per_sentence():
    from megazoo.tasks.retrieval.reader.mss import mss_examples

    text = ("Apollo 11 landed on the Moon on 20 July 1969 after a long flight. It was a short sentence. "
            "The crew of three returned safely to Earth in the Pacific Ocean days later.")
    out = mss_examples([text], seed=0, per_passage=5)
    assert len(out) == 2  # the sentence of five words has no room
    for q in out:
        assert q.question.count("[MASK]") == 1 and len(q.answers) == 1
        assert q.question.replace("[MASK]", q.answers[0]) in text  # the span is the masked text
    assert mss_examples([text], seed=0, per_passage=1)[0].answers != []
