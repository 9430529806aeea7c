"""The biomed evaluations for `megazoo eval leaderboard` (entry points megazoo.evaluations:
biomed-ner, biomed-re, biomed-qa).

A suite entry `{name: biomed-ner, path: DATA, split: test}` scores every model of the suite that
was fine-tuned with `task: biomed, kind: ner` (the model kind `biomed-ner`); likewise re and qa.
`path` is a data file or a release folder (its `split`, default test). The metrics are the
evaluate stage's: precision, recall, f1 (headline f1) or strict_accuracy (headline),
lenient_accuracy, mrr. A qa entry with `golden: GOLDEN.json` (the test batch's BioASQ golden
file) scores per question, as BioMegatron reports BioASQ (bioasq.py); without it, per snippet.
"""

from __future__ import annotations

from megazoo.eval.registry import Evaluation
from megazoo.eval.suite_options import suite_int
from megazoo.tasks.biomed.evaluate import HEADLINE, METRICS


def runner(kind: str):
    def run(checkpoint: str, path: str, entry: dict) -> dict:
        from megazoo.tasks.biomed.cli_evaluate import MAX_BATCH
        from megazoo.tasks.biomed.evaluate_stage import evaluate_checkpoint

        batch = suite_int(entry, "batch_size", 32, 1, MAX_BATCH)
        golden = entry.get("golden")
        if golden is not None and (kind != "qa" or not isinstance(golden, str)):
            raise ValueError(f"suite entry biomed-{kind}: golden={golden!r}; `golden` names the BioASQ golden file "
                             f"of a qa test batch (a path)")
        r = evaluate_checkpoint(path, checkpoint, kind, entry.get("split", "test"), batch, golden=golden)
        if golden is not None:  # per question, as BioMegatron reports BioASQ
            q = r["questions"]
            return {**r["metrics"], "n": q.n_questions, "n_skipped": q.n_skipped}
        return {**r["metrics"], "n": len(r["examples"])}

    return run


DATA = {"ner": "BioBERT NER TSV (test.tsv, or a folder with train/devel/test.tsv)",
        "re": "BLUE ChemProt TSV (test.tsv, or a folder with train/dev/test.tsv)",
        "qa": "BioASQ factoid SQuAD-v1.1 JSON (test.json, or a folder with train/dev/test.json)"}


def evaluation(kind: str) -> Evaluation:
    return Evaluation(name=f"biomed-{kind}", data=DATA[kind], metrics=METRICS[kind], headline=HEADLINE[kind],
                      run=runner(kind), kinds=(f"biomed-{kind}",),
                      options={"split": "the split when path is a folder (default test)",
                               "batch_size": "rows per forward pass (default 32)",
                               **({"golden": "qa: the test batch's BioASQ golden file; scores per question (as "
                                             "BioMegatron), not per snippet"} if kind == "qa" else {})})


NER = evaluation("ner")
RE = evaluation("re")
QA = evaluation("qa")
