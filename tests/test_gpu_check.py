"""The GPU acceptance script on CPU: its dry run (configs and planner) and one measured case on the
tiny architecture (the same trainer, generation and update path the GPU cases take)."""

import argparse
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


def test_qwen2_config_has_the_published_parameter_count():
    pytest.importorskip("transformers")
    from learners.llm.plan import ARCHITECTURES

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
