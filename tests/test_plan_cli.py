"""`megazoo plan`: the breakdown, --json, --search, --plot, --dry-run and its errors."""

from __future__ import annotations

import json
import resource
import time

import pytest

from megazoo.cli import main


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["plan", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_plan_json_keys(capsys):
    code, out, _ = run_cli(capsys, "gpt-1.3b", "--gpus", "16", "--gpu", "a100-80gb", "--tp", "2", "--pp", "2",
                           "--global-batch", "64", "--recompute", "selective", "--json")
    assert code == 0
    plan = json.loads(out)
    for key in ("params_per_gpu", "memory_gb_per_gpu", "step_time_s", "tflops_per_gpu", "mfu", "bubble_fraction", "fits"):
        assert key in plan
    assert plan["layout"]["dp"] == 4 and plan["num_micro_batches"] == 16
    assert plan["bubble_fraction"] == pytest.approx(1 / 16)
    assert plan["fits"] is True and 0 < plan["mfu"] < 1


def test_plan_text(capsys):
    code, out, _ = run_cli(capsys, "mt-nlg-530b", "--gpus", "2240", "--tp", "8", "--pp", "35",
                           "--global-batch", "1920", "--recompute", "full")
    assert code == 0
    assert "fits" in out and "TFLOP/s per GPU" in out and "bubble" in out


def test_known_bad_layout_is_flagged(capsys):
    code, out, _ = run_cli(capsys, "mt-nlg-530b", "--gpus", "2240", "--tp", "8", "--pp", "1",
                           "--global-batch", "2240", "--json")
    assert code == 0
    assert json.loads(out)["fits"] is False


@pytest.mark.parametrize("argv,message", [
    (("mt-nlg-530b", "--gpus", "2240", "--tp", "8", "--pp", "4", "--global-batch", "1920"),
     "num_layers 105 is not divisible by pp 4"),
    (("gpt-345m", "--gpus", "12", "--tp", "8"), "12 GPUs are not divisible by tp x pp = 8 x 1 = 8"),
    (("gpt-345m", "--gpus", "8", "--gpu", "a200"), "unknown GPU 'a200'; known GPUs: v100, a100-40gb"),
    (("gpt-13b", "--gpus", "8"), "unknown model card 'gpt-13b'. Did you mean 'gpt-1.3b'? Known cards:"),
])
def test_bad_input_gives_one_clear_error(capsys, argv, message):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("megazoo plan: error: ") and message in err
    assert err.count("error") == 1


def test_search_ranks_layouts(capsys, tmp_path):
    png = tmp_path / "search.png"
    code, out, _ = run_cli(capsys, "gpt-8.3b", "--gpus", "64", "--gpu", "h100", "--global-batch", "512",
                           "--search", "--top", "5", "--plot", str(png))
    assert code == 0
    lines = [line for line in out.splitlines()[1:] if line.strip()]
    assert len(lines) == 5 and lines[0].split()[0] == "1"
    assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"


def test_plot_of_one_plan(capsys, tmp_path):
    png = tmp_path / "plan.png"
    code, _, _ = run_cli(capsys, "smollm2-135m", "--gpus", "8", "--global-batch", "64", "--plot", str(png))
    assert code == 0 and png.read_bytes()[:4] == b"\x89PNG"


def test_dry_run_of_mtnlg_agrees_in_seconds_without_memory(capsys):
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    start = time.perf_counter()
    code, out, _ = run_cli(capsys, "mt-nlg-530b", "--gpus", "2240", "--tp", "8", "--pp", "35",
                           "--global-batch", "1920", "--recompute", "full", "--dry-run", "--json")
    elapsed = time.perf_counter() - start
    assert code == 0
    result = json.loads(out)
    checks = result["dry_run"]
    assert [c["stage"] for c in checks] == [0, 17, 34]
    assert all(c["ok"] and c["shapes_match"] for c in checks)
    assert max(c["model_params"] for c in checks) == result["params_per_gpu"]  # about 2.06e9 on stage 0
    assert elapsed < 30
    grown_gib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 2**20
    assert grown_gib < 1.0  # 2e9 real bf16 parameters would need 4 GiB


def test_dry_run_llama_interleaved(capsys):
    from megazoo.cli import main as cli

    code = cli(["plan", "smollm2-135m", "--gpus", "12", "--tp", "3", "--pp", "2", "--vpp", "3",
                "--global-batch", "8", "--no-sp", "--dry-run"])
    out = capsys.readouterr().out
    assert code == 0 and out.count(": agree") == 2


def test_dry_run_refuses_other_architectures(capsys):
    code, _, err = run_cli(capsys, "bert-345m", "--gpus", "8", "--dry-run")
    assert code == 2 and "--dry-run builds the GPT family" in err


# ---- issue 16 point 9: every validated row from the command line -------------------------------------
def _validation_rows():
    from megazoo.core.plan.validation import published_rows

    return published_rows()


@pytest.mark.parametrize("row", _validation_rows(), ids=lambda r: r.label.replace(" ", "_"))
def test_every_validation_row_reproduces_from_the_cli(capsys, row):
    from megazoo.core.plan.validation import evaluate
    from megazoo.zoo.cli_plan import row_command

    expected = evaluate(row)
    code, out, err = run_cli(capsys, *row_command(row), "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["step_time_s"] == pytest.approx(expected["predicted_step_s"], rel=1e-9)
    assert got["flops_convention"] == row.convention
    assert got["tflops_per_gpu"] == pytest.approx(expected["predicted_tflops"], rel=1e-9)
    assert got["memory_gb_per_gpu"] == pytest.approx(expected["memory_gb"], rel=1e-9)


def test_the_issue_command_gives_the_validation_row(capsys):
    # the command of issue 16: without --no-scatter-gather it predicted 51 s and 110 (model) TFLOP/s
    argv = ["mt-nlg-530b", "--gpus", "2240", "--gpu", "a100-80gb", "--tp", "8", "--pp", "35", "--global-batch",
            "1920", "--micro-batch", "1", "--recompute", "full", "--no-sp", "--no-flash-attention"]
    code, out, _ = run_cli(capsys, *argv, "--json")
    default = json.loads(out)
    assert code == 0 and default["flops_convention"] == "model" and default["layout"]["scatter_gather"] is True
    code, out, _ = run_cli(capsys, *argv, "--no-scatter-gather", "--flops-convention", "narayanan", "--json")
    plan = json.loads(out)
    assert plan["step_time_s"] > default["step_time_s"]  # the whole activation crosses the network
    assert plan["step_time_s"] == pytest.approx(53.2, abs=0.05)
    assert plan["tflops_per_gpu"] == pytest.approx(142.1, abs=0.05)  # bench/RESULTS.md's row
    assert plan["mfu"] == pytest.approx(default["mfu"] * default["step_time_s"] / plan["step_time_s"])
    code, text, _ = run_cli(capsys, *argv, "--no-scatter-gather", "--flops-convention", "narayanan")
    assert "142.1 TFLOP/s per GPU (narayanan FLOPs)" in text and "no scatter/gather" in text


def test_flops_conventions_differ_as_documented(capsys):
    argv = ["gpt-1.3b", "--gpus", "8", "--global-batch", "64", "--recompute", "full", "--json"]
    tflops = {}
    for conv in ("model", "narayanan", "megatron2024"):
        code, out, _ = run_cli(capsys, *argv, "--flops-convention", conv)
        tflops[conv] = json.loads(out)["tflops_per_gpu"]
    # narayanan counts the recompute forward (4 passes, not 3); megatron2024 the full attention core
    assert tflops["narayanan"] > tflops["megatron2024"] > tflops["model"]
    assert 1.25 < tflops["narayanan"] / tflops["megatron2024"] < 1.4
    with pytest.raises(SystemExit) as exc:  # argparse names the three choices
        run_cli(capsys, *argv, "--flops-convention", "peak")
    assert exc.value.code == 2 and "choose from 'model', 'narayanan', 'megatron2024'" in capsys.readouterr().err


def test_validate_prints_the_whole_table(capsys):
    from megazoo.core.plan.validation import published_rows

    code, out, _ = run_cli(capsys, "--validate")
    assert code == 0
    for row in published_rows():
        assert row.label in out
    assert "44.4" in out and "50.2" in out and "60.1" in out  # MT-NLG's three step times
    assert out.count("megazoo plan ") == len(published_rows())
    code, out, _ = run_cli(capsys, "--validate", "--json")
    table = json.loads(out)
    assert len(table) == len(published_rows()) and all(r["command"].startswith("megazoo plan ") for r in table)


def test_plan_without_model_or_gpus_says_what_to_give(capsys):
    code, out, err = run_cli(capsys, "gpt-345m")
    assert code == 2 and "--gpus" in err and "--validate" in err


def test_size_flags_refuse_dry_run(capsys):
    code, _, err = run_cli(capsys, "gpt-345m", "--gpus", "8", "--num-layers", "12", "--dry-run")
    assert code == 2 and "size flags" in err
