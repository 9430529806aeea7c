"""Model kinds are traits, not names (issue #37 point 6): no code outside zoo/<arch>/ compares an
architecture's name; every registered builder has traits, and the traits agree with what it builds;
one model registry serves the trainer and the Hugging Face converters."""

import pathlib
import re

import pytest

from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.plan.shapes import ModelShape, PlanError
from megazoo.core.plan.traits import TRAITS, UnknownArchitecture, arch_traits, kind_of
from megazoo.core.train.models import available_architectures

ROOT = pathlib.Path(__file__).resolve().parents[1]
FOLDERS = ("core", "zoo", "eval", "tasks", "megazoo", "curate")
OWN = re.compile(r"^zoo/(gpt|bert|t5|llama)/")  # an architecture's own folder may name itself
NAMES = r"(gpt|bert|t5|llama)"
CHECKS = [
    # arch == "t5", shape.arch in ("gpt", ...), card["arch"] not in (...), model.get("arch") == "bert"
    re.compile(r"\barch\w*[\"'\])]* *(==|!=|not in|in) *[(\"'\[{]"),
    # "t5" == arch, "bert" in archs
    re.compile(rf"[\"']{NAMES}[\"'] *(==|!=|not in|in) "),
    # a table of names to test against: ARCHS = ("gpt", "llama")
    re.compile(rf"[(\[{{] *[\"']{NAMES}[\"'] *, *[\"']{NAMES}[\"']"),
]
TINY = {"num_layers": 2, "hidden_size": 64, "num_heads": 4, "vocab_size": 300, "seq_length": 32}


def name_checks(root: pathlib.Path) -> list[str]:
    """`file:line: text` of every comparison of an architecture name outside zoo/<arch>/."""
    out = []
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            label = path.relative_to(root).as_posix()
            if OWN.match(label):
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if any(c.search(line) for c in CHECKS):
                    out.append(f"{label}:{n}: {line.strip()}")
    return out


def test_no_architecture_name_is_compared_outside_its_folder():
    found = name_checks(ROOT)
    assert not found, "branch on traits (core/plan/traits.py), not on names:\n" + "\n".join(found)


def test_the_check_catches_planted_name_comparisons(tmp_path):
    (tmp_path / "core" / "plan").mkdir(parents=True)
    (tmp_path / "zoo" / "t5").mkdir(parents=True)
    (tmp_path / "tasks").mkdir()
    (tmp_path / "core" / "plan" / "x.py").write_text('if shape.arch == "t5":\n    pass\nok = shape.traits.causal\n')
    (tmp_path / "tasks" / "y.py").write_text('if model.get("arch", "gpt") not in ("gpt", "llama"):\n'
                                             '    pass\nif card["arch"] != \'bert\':\n    pass\n')
    (tmp_path / "zoo" / "t5" / "z.py").write_text('if arch == "t5":\n    pass\n')  # its own folder: allowed
    assert name_checks(tmp_path) == [
        'core/plan/x.py:1: if shape.arch == "t5":',
        'tasks/y.py:1: if model.get("arch", "gpt") not in ("gpt", "llama"):',
        "tasks/y.py:3: if card[\"arch\"] != 'bert':",
    ]


def test_every_registered_architecture_has_traits_and_no_more():
    assert set(available_architectures()) == set(TRAITS)


@pytest.mark.parametrize("name", sorted(TRAITS))
def test_builder_traits_match_the_shape_and_the_model(name):
    builder = available_architectures()[name].load()({"arch": name, **TINY})
    traits = arch_traits(name)
    shape = ModelShape(arch=name, **TINY, ffn_hidden_size=256)
    assert builder.traits == traits == builder.shape().traits == shape.traits
    assert builder.shape().position == traits.position  # the layout's default positions
    model_cp = getattr(builder.model_class, "context_parallel", False)
    assert builder.context_parallel == traits.context_parallel == model_cp
    # the planner counts with the traits (token types, BERT's heads, a decoder stack): the real module agrees
    (model,) = builder.chunks(ParallelContext.single(), 0, device="meta")
    assert sum(p.numel() for p in model.parameters()) == builder.num_parameters()
    if traits.pipeline_parallel:
        builder.check_layout(ParallelConfig(pp=2))
    else:
        with pytest.raises(ValueError, match=f"{traits.title} does not support pipeline parallelism"):
            builder.check_layout(ParallelConfig(pp=2))


def test_one_registry_from_hf_model_type_to_builder_and_back():
    """Each HF converter names a registered architecture whose builder lists its model type, and
    each model type a builder lists has a converter."""
    from megazoo.zoo.hf import ADAPTERS
    from megazoo.zoo.registry import builder_class

    for model_type, adapter in ADAPTERS.items():
        assert model_type in builder_class(adapter.ARCH).hf_model_types, model_type
    for name in TRAITS:
        assert all(t in ADAPTERS and builder_class(ADAPTERS[t].ARCH) is builder_class(name)
                   for t in builder_class(name).hf_model_types), name


@pytest.mark.parametrize("name, model, model_type", [
    ("gpt", {}, "gpt2"), ("llama", {}, "llama"), ("gpt", {"position": "rope"}, "llama"),
    ("llama", {"position": "learned"}, "gpt2"), ("llama", {"moe": {"num_experts": 2}}, "mixtral"),
    ("bert", {}, "megatron-bert"), ("bert", {"post_norm": True}, "bert"), ("t5", {}, "t5"),
])
def test_export_picks_the_one_adapter_that_exports_the_config(name, model, model_type):
    from megazoo.zoo.hf import ADAPTERS, adapter_for

    builder = available_architectures()[name].load()({"arch": name, **TINY, **model})
    assert adapter_for(name, builder.config).MODEL_TYPE == model_type
    exporting = [t for t, ad in ADAPTERS.items() if t in builder.hf_model_types and ad.exports(builder.config)]
    assert exporting == [model_type]


def test_an_unknown_architecture_is_one_clear_error():
    from megazoo.zoo.hf import HFExportError, adapter_for
    from megazoo.zoo.hf.models import config_from_dict

    with pytest.raises(UnknownArchitecture, match="model arch 'gtp' is not one of gpt, llama, bert, t5"):
        arch_traits("gtp")
    with pytest.raises(PlanError, match="model arch 'gtp' is not one of"):
        ModelShape(arch="gtp", **TINY, ffn_hidden_size=256).validate()
    with pytest.raises(ValueError, match="unknown megazoo architecture 'gtp'; known: "):
        config_from_dict("gtp", {})
    with pytest.raises(HFExportError, match="architecture 'gtp' has no Hugging Face export"):
        adapter_for("gtp", None)
    assert kind_of("gtp") is None and kind_of(["gpt"]) is None and kind_of("t5") == "encoder-decoder"
