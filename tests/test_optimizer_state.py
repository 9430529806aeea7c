"""The optimizer's checkpoint state (MixedPrecisionOptimizer.sharded_state_dict): the trainer's
checkpoint keys are those checkpoints written before the optimizer owned its state had, so old
checkpoints load; loading sets the Adam step and refreshes the model from the main weights."""

import torch

from megazoo.core.checkpoint import Sharded, named_parameters
from megazoo.core.checkpoint.spec import flatten
from megazoo.core.train import Trainer
from megazoo.core.train.checkpointing import training_state
from tests.train_cases import one_thread, tiny

# captured from training_state before the optimizer owned its state (same config as below)
SAVED_KEYS = [
    'consumed_samples', 'losses', 'model/embed.weight', 'model/final_norm.bias', 'model/final_norm.weight',
    'model/layers.0.attn.proj.bias', 'model/layers.0.attn.proj.weight', 'model/layers.0.attn.qkv.bias',
    'model/layers.0.attn.qkv.weight', 'model/layers.0.mlp.fc1.bias', 'model/layers.0.mlp.fc1.weight',
    'model/layers.0.mlp.fc2.bias', 'model/layers.0.mlp.fc2.weight', 'model/layers.0.norm1.bias',
    'model/layers.0.norm1.weight', 'model/layers.0.norm2.bias', 'model/layers.0.norm2.weight', 'model/pos_embed',
    'optimizer/exp_avg/layers.0.mlp.fc1.bias', 'optimizer/exp_avg/layers.0.mlp.fc1.weight',
    'optimizer/exp_avg/layers.0.mlp.fc2.bias', 'optimizer/exp_avg/layers.0.mlp.fc2.weight',
    'optimizer/exp_avg_sq/layers.0.mlp.fc1.bias', 'optimizer/exp_avg_sq/layers.0.mlp.fc1.weight',
    'optimizer/exp_avg_sq/layers.0.mlp.fc2.bias', 'optimizer/exp_avg_sq/layers.0.mlp.fc2.weight',
    'optimizer/main/layers.0.mlp.fc1.bias', 'optimizer/main/layers.0.mlp.fc1.weight',
    'optimizer/main/layers.0.mlp.fc2.bias', 'optimizer/main/layers.0.mlp.fc2.weight', 'optimizer/step',
    'rng/cpu', 'rng/trackers/0/default', 'rng/trackers/0/tensor-parallel', 'scaler/scale', 'scheduler/lr',
    'scheduler/min_lr', 'scheduler/style', 'scheduler/total', 'scheduler/warmup', 'skipped', 'step']


def test_checkpoint_keys_unchanged_and_state_loads(tmp_path):
    # bf16 (main weights exist) with frozen parameters (no optimizer entries for them)
    cfg = tiny(tmp_path, "train.steps=1", "model.num_layers=1", "precision.dtype=bf16",
               "train.trainable=[layers.0.mlp.*]")
    with one_thread():
        trainer = Trainer(cfg)
        try:
            trainer.fit()
            flat = flatten(training_state(trainer))
            keys = sorted([*flat.tensors, *flat.json, *flat.rank_tensors, *flat.rank_json])
            assert keys == SAVED_KEYS

            opt = trainer.optimizer
            params = named_parameters(trainer.chunks)
            frozen = {n: p.detach().clone() for n, p in params.items() if not p.requires_grad}
            mine = opt.sharded_state_dict()
            assert mine["step"] == 1
            # a loaded state in tensors of its own (not this optimizer's views)
            other = {"step": 7, **{k: {n: Sharded(v.tensor.clone() + 0.25, v.spec) for n, v in mine[k].items()}
                                   for k in ("exp_avg", "exp_avg_sq", "main")}}
            opt.load_sharded_state_dict(other)
            again = opt.sharded_state_dict()
            assert again["step"] == 7
            for k in ("exp_avg", "exp_avg_sq", "main"):
                for n, v in again[k].items():
                    assert torch.equal(v.tensor, other[k][n].tensor)
            for n, main in again["main"].items():  # the model computes with the rounded main weights
                assert torch.equal(params[n].detach().reshape(-1), main.tensor.to(torch.bfloat16))
            for n, value in frozen.items():  # frozen weights are not the optimizer's
                assert torch.equal(params[n], value)
        finally:
            trainer.close()
