"""Training question-answering models from synthetic data (Puri et al., EMNLP 2020).

Stages (`megazoo task synthetic_qa STAGE`), each reading and writing SQuAD-format JSON so that any
stage can be rerun or swapped:

    generate   paragraphs of the embedded corpus and a template-question SQuAD set to bootstrap with
    train      the core trainer on a recipe: the QA model (kind qa), the answer extractor (kind
               answers), the question generator (task sft on SmolLM2)
    answers    the extractor's top candidate spans per paragraph (questions left empty)
    questions  sampled questions per candidate answer (top-k / top-p), several per answer
    filter     roundtrip: the QA model answers each question; kept when it matches the proposed answer
    evaluate   a QA checkpoint on a SQuAD dev file: exact_match, f1 (v2: HasAns_*, NoAns_*)
    score      a predictions file {id: answer} alone, as the official scripts score it

Modules: squad.py (reader/writer), score.py (the official v1.1/v2.0 evaluation), builder.py (the
span-head trainer task) with decode.py (SQuAD features, n-best and null-answer decoding),
predict.py (a checkpoint in one process), answers.py (candidate spans), prompts.py and
questions.py (question generation), roundtrip.py (filtration), templates.py and generate.py
(bootstrap data), evaluate_stage.py, leaderboard.py, cli*.py (the stages). data/dev.json is the
hand-written dev set: 66 questions, as people ask them, about 33 corpus paragraphs.
"""
