"""Exported policies reload with the training policy's logits: a full model, and a LoRA model both
merged (a plain HF directory) and as its adapter (peft); the training model is left unchanged."""

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from agentenvs.learners.llm.export import export_policy, merged_state_dict  # noqa: E402
from agentenvs.learners.llm.policy import Policy  # noqa: E402
from agentenvs.learners.llm.tiny import build_tiny_tokenizer, save_tiny  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

IDS = torch.tensor([[5, 6, 7, 8, 9], [10, 11, 12, 13, 14]])


def _logits(model):
    with torch.no_grad():
        return model(input_ids=IDS).logits


def _state(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def _unchanged(model, before):
    after = model.state_dict()
    return after.keys() == before.keys() and all(
        torch.equal(after[k], v) for k, v in before.items()
    )


@pytest.fixture(scope="module")
def base_dir(tmp_path_factory):
    return save_tiny(tmp_path_factory.mktemp("tiny"))


def _lora_policy(base_dir):
    """The tiny model with a trained-looking LoRA adapter (nonzero B) on every linear layer."""
    from peft import LoraConfig, get_peft_model

    base = AutoModelForCausalLM.from_pretrained(base_dir)
    model = get_peft_model(
        base, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM")
    )
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.2)
    return Policy(model.eval(), build_tiny_tokenizer())


def test_full_model_export_reloads_with_the_same_logits(base_dir, tmp_path):
    model = AutoModelForCausalLM.from_pretrained(base_dir)
    with torch.no_grad():
        model.model.layers[0].mlp.up_proj.weight.add_(0.1)  # trained: not the saved base
    policy = Policy(model.eval(), build_tiny_tokenizer())
    before = _state(model)
    path = export_policy(policy, tmp_path / "policy")
    reloaded = AutoModelForCausalLM.from_pretrained(path)
    assert torch.allclose(_logits(reloaded), _logits(model), atol=1e-5)
    assert _unchanged(model, before)
    assert (path / "generation_config.json").exists() and (path / "tokenizer.json").exists()
    with pytest.raises(ValueError, match="LoRA policy"):
        export_policy(policy, tmp_path / "adapter", merged=False)


def test_lora_export_merged_is_a_plain_model_with_the_same_logits(base_dir, tmp_path):
    policy = _lora_policy(base_dir)
    before = _state(policy.model)
    expected = _logits(policy.model)
    with policy.model.disable_adapter():
        assert not torch.allclose(expected, _logits(policy.model), atol=1e-3)  # the adapter counts
    path = export_policy(policy, tmp_path / "policy")
    reloaded = AutoModelForCausalLM.from_pretrained(path)
    assert torch.allclose(_logits(reloaded), expected, atol=1e-5)
    assert _unchanged(policy.model, before)  # nothing merged in place
    assert torch.allclose(_logits(policy.model), expected)  # the adapter is still active
    names = set(merged_state_dict(policy.model))
    assert names == set(AutoModelForCausalLM.from_pretrained(base_dir).state_dict())
    assert not any("lora" in n or "base_layer" in n or n.startswith("base_model") for n in names)
    config = json.loads((path / "config.json").read_text())
    assert config["model_type"] == "qwen2" and (path / "tokenizer.json").exists()


def test_lora_export_adapter_loads_with_peft(base_dir, tmp_path):
    from peft import PeftModel

    policy = _lora_policy(base_dir)
    before = _state(policy.model)
    path = export_policy(policy, tmp_path / "adapter", merged=False)
    assert {"adapter_config.json", "adapter_model.safetensors"} <= {p.name for p in path.iterdir()}
    reloaded = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base_dir), path)
    assert torch.allclose(_logits(reloaded), _logits(policy.model), atol=1e-6)
    assert _unchanged(policy.model, before)
