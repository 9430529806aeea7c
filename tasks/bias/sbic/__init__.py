"""Package data of the bias task: the hand-written posts (posts.yaml) and the SBIC-format set made
from them (SBIC.v2.{trn,dev,tst}.csv, SBIC.v2.agg.*.csv; see megazoo.tasks.bias.generate)."""
