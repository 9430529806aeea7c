"""The stages of `megazoo task synthetic_qa ...` (each reads and writes SQuAD-format JSON)."""

STAGES: dict[str, tuple[str, str]] = {
    "generate": ("megazoo.tasks.synthetic_qa.cli_generate", "write the bootstrap data from the embedded corpus: "
                                                             "generate OUT_DIR [--seed N]"),
    "train": ("megazoo.tasks.synthetic_qa.cli_train", "train the QA model, the answer extractor or the question "
                                                       "generator: train RECIPE [--set k=v ...] [--nproc N]"),
    "answers": ("megazoo.tasks.synthetic_qa.cli_answers",
                "propose answer spans per paragraph: answers --data PARAGRAPHS.json --checkpoint CKPT --out FILE.json "
                "[--top K]"),
    "questions": ("megazoo.tasks.synthetic_qa.cli_questions",
                  "sample questions per answer: questions --data ANSWERS.json --checkpoint QG --out FILE.json "
                  "[--samples N]"),
    "filter": ("megazoo.tasks.synthetic_qa.cli_filter",
               "roundtrip filtration: filter --data QUESTIONS.json --checkpoint QA --out KEPT.json [--rejected FILE] "
               "[--match em|f1]"),
    "evaluate": ("megazoo.tasks.synthetic_qa.cli_evaluate",
                 "EM/F1 of a QA checkpoint: evaluate --data DEV.json --checkpoint CKPT --out FILE.json "
                 "[--predictions FILE]"),
    "score": ("megazoo.tasks.synthetic_qa.cli_score",
              "score a predictions file as the official scripts do: score --data DEV.json --predictions PRED.json "
              "--out FILE.json"),
}
