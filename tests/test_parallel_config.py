"""Bad parallel layouts fail with one clear error naming the numbers; core/ keeps no global state."""

import ast
import pathlib

import pytest

from megazoo.core.parallel.context import ParallelConfig, ParallelConfigError, ParallelContext
from megazoo.zoo.gpt import TINY, GPTModel

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_world_not_divisible_by_tp_times_pp():
    with pytest.raises(ParallelConfigError, match=r"world size 6 is not divisible by tp x cp x pp = 2 x 1 x 2 = 4"):
        ParallelConfig(tp=2, pp=2).validate(6)


def test_dp_is_derived():
    assert ParallelConfig(tp=2, pp=2).validate(8) == 2
    assert ParallelConfig().validate(1) == 1


def test_sequence_parallel_needs_tp():
    with pytest.raises(ParallelConfigError, match=r"parallel.sp=true needs parallel.tp > 1"):
        ParallelConfig(tp=1, sp=True).validate(2)


def test_bad_degree_values():
    with pytest.raises(ParallelConfigError, match=r"parallel.tp must be a positive integer, got 0"):
        ParallelConfig(tp=0).validate(1)
    with pytest.raises(ParallelConfigError, match=r"parallel.vpp > 1 needs parallel.pp > 1"):
        ParallelConfig(vpp=2).validate(1)


def _ctx(tp):
    # a context for shape checks only (no communication happens at construction)
    return ParallelContext(tp=tp, world_size=tp)


def test_heads_not_divisible_by_tp():
    with pytest.raises(ValueError, match=r"tp=3 must divide num_heads=4, num_kv_heads=4, ffn_hidden_size=256"):
        GPTModel(TINY["gpt-tiny"](), _ctx(3))


def test_kv_heads_not_divisible_by_tp():
    with pytest.raises(ValueError, match=r"tp=8 must divide num_kv_heads=4"):
        GPTModel(TINY["llama-tiny"](), _ctx(8))


def test_hidden_not_divisible_by_heads():
    with pytest.raises(ValueError, match=r"hidden_size 66 is not divisible by num_heads 4"):
        TINY["gpt-tiny"](hidden_size=66)


def _core_files():
    return sorted((ROOT / "core").rglob("*.py"))


def find_offenders(source: str, label: str) -> list[str]:
    """`global` statements anywhere, and process-group creation in module-level statements."""
    tree = ast.parse(source, filename=label)
    offenders = [f"{label}:{n.lineno}: `global` statement" for n in ast.walk(tree) if isinstance(n, ast.Global)]
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", getattr(node.func, "id", ""))
                if name in {"new_group", "init_process_group", "new_subgroups", "init_device_mesh"}:
                    offenders.append(f"{label}:{node.lineno}: module-level `{name}`")
    return offenders


def test_core_has_no_global_statement_or_module_level_group():
    files = _core_files()
    assert len(files) > 10, "core/ not found"
    offenders = [o for path in files for o in find_offenders(path.read_text(), str(path.relative_to(ROOT)))]
    assert not offenders, "core/ must not keep process groups at module level:\n" + "\n".join(offenders)


def test_the_checker_catches_a_planted_group():
    bad = "import torch.distributed as dist\nGROUP = dist.new_group([0, 1])\ndef f():\n    global GROUP\n"
    found = find_offenders(bad, "planted.py")
    assert found == ["planted.py:4: `global` statement", "planted.py:2: module-level `new_group`"]
    assert find_offenders("def f(dist):\n    return dist.new_group([0])\n", "ok.py") == []
