"""Metrics, LM scoring, zero-shot suites, the lm-eval adapter and the leaderboard runner."""
