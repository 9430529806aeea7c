"""Package data of synthetic_qa: dev.json, the hand-written SQuAD v1.1 dev set (66 questions written as
people ask them, about 33 paragraphs of the embedded corpus; every answer is a span of its paragraph).
A package (this file) so that setup.py ships the JSON with the wheel."""
