"""The GPU acceptance script on CPU: its dry run (configs and planner, the recipe's model built), one
measured case on the tiny architecture (the same trainer, generation and update path the GPU cases
take) and the GPU recipe's steps in miniature on the tiny model."""

import argparse
import dataclasses
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
gpu_check = pytest.importorskip("gpu_check")


def test_dry_run_plans_every_case(tmp_path):
    out = tmp_path / "table.md"
    done = subprocess.run(
        ["bash", "scripts/gpu_check.sh", "--dry-run", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in out.read_text().splitlines() if line.startswith("| Qwen2.5")]
    assert [r.split(" | ")[0] for r in rows] == [
        "| Qwen2.5-0.5B, LoRA r64", "| Qwen2.5-0.5B, full", "| Qwen2.5-1.5B, LoRA r64",
        "| Qwen2.5-1.5B, full", "| Qwen2.5-7B, LoRA r64", "| Qwen2.5-7B, full",
    ]  # fmt: skip
    assert all(r.endswith("planned only |") for r in rows)
    # 1.5B full fine-tune: bf16 weights + bf16 reference + fp32 masters + two fp32 AdamW states
    planned = float(rows[3].split(" | ")[5].split()[0])
    assert planned > 1_543_714_304 * (2 + 2 + 4 + 8) / 2**30
    # the recipe: its model built on CPU with the planner's parameter count (the script fails
    # otherwise), planned with fp32 weights + two fp32 AdamW states + an fp32 reference (KL)
    (recipe,) = [line for line in out.read_text().splitlines() if line.startswith("| random-60m")]
    cells = recipe.split(" | ")
    assert cells[1] == "59,018,752" and cells[-1] == "planned only |"
    assert float(cells[-2].split()[0]) > 59_018_752 * (4 + 8 + 4) / 2**30


def test_qwen2_config_has_the_published_parameter_count():
    pytest.importorskip("transformers")
    from agentenvs.learners.llm.plan import ARCHITECTURES

    config = gpu_check.qwen2_config(ARCHITECTURES["Qwen2.5-0.5B-Instruct"])
    q = config.num_attention_heads * config.hidden_size // config.num_attention_heads
    kv = config.num_key_value_heads * config.hidden_size // config.num_attention_heads
    h, i, n, v = config.hidden_size, config.intermediate_size, config.num_hidden_layers, 151936
    layer = h * (q + 2 * kv) + (q + 2 * kv) + q * h + 3 * h * i + 2 * h
    assert v * h + n * layer + h == 494_032_768


@pytest.mark.parametrize("lora_rank", [0, 8])
def test_a_case_measures_on_the_tiny_architecture(lora_rank):
    pytest.importorskip("torch")
    if lora_rank:
        pytest.importorskip("peft")
    args = argparse.Namespace(prompts=4, prompt_len=16, new_tokens=8, micro_batch=2)
    got = gpu_check.measure(gpu_check.Case("tiny", lora_rank), args, device="cpu")
    assert got["gen_tok_s"] > 0 and got["update_tok_s"] > 0
    assert math.isfinite(got["loss"]) and math.isnan(got["peak"])


def test_recipe_model_is_the_planned_architecture():
    """The recipe's model as resolve_model builds it: its config is the planner's architecture."""
    pytest.importorskip("transformers")
    from agentenvs.learners.llm.plan import ARCHITECTURES, load_arch
    from agentenvs.learners.llm.tiny import RANDOM_MODELS, build_tiny_tokenizer

    arch = ARCHITECTURES[gpu_check.RECIPE_MODEL]
    assert arch.num_params == 59_018_752 and arch.embedding_params / arch.num_params < 0.005
    kwargs = RANDOM_MODELS[gpu_check.RECIPE_MODEL]
    config = {
        "hidden_size": kwargs["hidden_size"], "intermediate_size": kwargs["intermediate_size"],
        "num_hidden_layers": kwargs["num_layers"], "num_attention_heads": kwargs["num_heads"],
        "vocab_size": len(build_tiny_tokenizer()), "tie_word_embeddings": True,
        "model_type": "qwen2",
    }  # fmt: skip
    assert load_arch(config) == dataclasses.replace(arch, name="qwen2")


def test_random_model_names_resolve_to_built_directories(tmp_path, monkeypatch):
    """A RANDOM_MODELS name resolves to a directory built once, named by the recipe's fingerprint
    (a small entry stands in for random-60m's 236 MB)."""
    pytest.importorskip("transformers")
    from agentenvs.learners.llm import models
    from agentenvs.learners.llm.plan import load_arch
    from agentenvs.learners.llm.tiny import tiny_fingerprint

    small = {"hidden_size": 32, "num_layers": 1, "num_heads": 1, "intermediate_size": 48}
    monkeypatch.setitem(models.RANDOM_MODELS, "random-test", small)
    path = models.resolve_model("random-test", cache_dir=tmp_path)
    assert path.name == f"random-test-{tiny_fingerprint()}"
    arch = load_arch(path)
    assert (arch.hidden_size, arch.num_layers, arch.intermediate_size) == (32, 1, 48)
    assert models.resolve_model("random-test", cache_dir=tmp_path) == path  # built once
    with pytest.raises(FileNotFoundError, match="'random-60m'"):
        models.resolve_model("random-6m", cache_dir=tmp_path)


def test_the_recipe_runs_in_miniature_on_the_tiny_model(tmp_path):
    """The recipe's flags (multi-step Sokoban, demo warm start, GraphGPO) and its steps, end to end
    with --smoke's counts on the tiny model: figures, report lines and the table."""
    pytest.importorskip("torch")
    args = gpu_check.recipe_args(tmp_path / "run", [*gpu_check.SMOKE_FLAGS, "--threads", "1"])
    assert args.env_kwargs == {"max_solution_steps": 4, "min_solution_steps": 2, "max_steps": 6}
    assert (args.warm_start, args.credit, args.config.kl_coef) == ("demo", "graph", 0.05)
    args.model = "tiny"  # the recipe's flags, the tiny model's cost
    got = gpu_check.run_recipe(args)
    assert got["params"] == 115_392 and got["iterations"] == 1 and got["collapsed"] in (0, 1)
    assert got["gen_tok_s"] > 0 and got["update_tok_s"] > 0 and got["s_per_iteration"] > 0
    assert math.isfinite(got["warm_loss_first"]) and math.isnan(got["peak"])
    for mode in ("greedy", "sampled"):
        assert 0 <= got[f"{mode}_before"] <= 1 and 0 <= got[f"{mode}_after"] <= 1
        assert got[f"{mode}_low"] <= got[f"{mode}_gain"] <= got[f"{mode}_high"]
    assert [line.split(":")[0] for line in got["report"]] == [
        "test success (greedy, 4 tasks)", "test success (sampled, 4 tasks)",
    ]  # fmt: skip
    plan = gpu_check.plan_recipe(args)
    text = gpu_check.recipe_table(args, plan, got, "CPU", "miniature")
    row = [line for line in text.splitlines() if line.startswith("| tiny |")][0]
    assert row.endswith("| ran |") and len(row.split(" | ")) == 13
    assert got["report"][0] in text
