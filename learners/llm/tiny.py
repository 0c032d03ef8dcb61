"""Random causal LMs and a byte-level BPE tokenizer trained in code: ``--model tiny`` and ``random-60m``.

This module holds :func:`build_tiny_tokenizer`, :func:`build_tiny_model`, :func:`seeded_model`
(a model class built from a seed), :data:`RANDOM_MODELS` (the larger random sizes by ``--model``
name), :func:`save_tiny` and :func:`tiny_fingerprint`.

Nothing is downloaded: the tokenizer is trained on a fixed text corpus shipped beside this module
(``tiny_corpus.json``: action-format snippets and rendered agent prompts), the model is a Qwen2
architecture initialised from a seed. With the tokenizer's 512-token vocabulary the embedding is a
small share of any size (0.4% of ``random-60m``), so the parameters sit in the decoder layers.

>>> tok = build_tiny_tokenizer()
>>> ids = tok.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True)
>>> tok.decode(ids)
'<|im_start|>user\\nhi<|im_end|>\\n<|im_start|>assistant\\n'
>>> model = build_tiny_model(tok, seed=0)
>>> model.config.vocab_size == len(tok), model.num_parameters() < 1_000_000
(True, True)
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the llm extra's; imported where the tiny model is built
    from transformers import PreTrainedTokenizerFast, Qwen2ForCausalLM

__all__ = [
    "CHAT_TEMPLATE",
    "build_tiny_tokenizer",
    "build_tiny_model",
    "seeded_model",
    "RANDOM_MODELS",
    "save_tiny",
    "tiny_fingerprint",
]

#: ChatML, the template of Qwen2 and SmolLM2 (no default system prompt).
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

#: The tokenizer's fixed training text: action-format snippets and rendered agent prompts of the
#: grid-puzzle and household envs (plain text data; nothing here depends on an env).
CORPUS_FILE = Path(__file__).with_name("tiny_corpus.json")


def _corpus() -> list[str]:
    """The fixed training text (each sample four times, which sets the BPE merge counts)."""
    return json.loads(CORPUS_FILE.read_text(encoding="utf-8")) * 4


def build_tiny_tokenizer(vocab_size: int = 512) -> PreTrainedTokenizerFast:
    """A byte-level BPE ``PreTrainedTokenizerFast`` (vocab ``vocab_size``) with ChatML tokens.

    ``eos`` and ``pad`` are ``<|im_end|>`` and ``<|endoftext|>``; any unicode text round-trips.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=_SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(_corpus(), trainer=trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
    )
    tok.chat_template = CHAT_TEMPLATE
    return tok


def build_tiny_model(
    tokenizer: PreTrainedTokenizerFast,
    *,
    seed: int = 0,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 2,
    intermediate_size: int | None = None,
) -> Qwen2ForCausalLM:
    """A random ``Qwen2ForCausalLM`` sized to ``tokenizer`` (fp32, eval mode, tied embeddings).

    Defaults give ~0.1M parameters: a forward/backward over a few hundred tokens takes milliseconds.
    The default head size (``hidden_size // num_heads`` = 32) is one vLLM's CPU attention accepts
    (it needs 32, 64, 128, ...), so the same model runs on both backends. ``intermediate_size``:
    the MLP's width (default ``2 * hidden_size``); every head attends with its own keys and values
    (no grouped-query attention).
    """
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size or 2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_heads,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return seeded_model(Qwen2ForCausalLM, config, tokenizer, seed)


def seeded_model(model_cls: Any, config: Any, tokenizer: Any, seed: int) -> Any:
    """``model_cls(config)`` with weights drawn from ``seed`` (torch's global RNG is left as it
    was), ``tokenizer``'s EOS and pad in its generation config, in eval mode."""
    import torch

    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = model_cls(config)
    finally:
        torch.random.set_rng_state(state)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model.eval()


#: Larger random models by ``--model`` name: :func:`build_tiny_model` keywords. ``random-60m``
#: (59,018,752 parameters: 14 layers of 4,196,864, a 262,144-entry tied embedding, the final norm)
#: is the GPU recipe's model (docs/learner-gpu.md): a GPU machine receives no pretrained weights,
#: so the model is built there, in seconds.
RANDOM_MODELS: dict[str, dict[str, int]] = {
    "random-60m": {"hidden_size": 512, "num_layers": 14, "num_heads": 8, "intermediate_size": 2048},
}


def save_tiny(path: str | Path, *, seed: int = 0, **model_kwargs: Any) -> Path:
    """Build the tiny tokenizer and model and save both to ``path`` (an HF model directory)."""
    path = Path(path)
    tok = build_tiny_tokenizer()
    build_tiny_model(tok, seed=seed, **model_kwargs).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def tiny_fingerprint() -> str:
    """8 hex digits of the recipe (this module's source and the corpus): names cached copies."""
    digest = hashlib.sha256(Path(__file__).read_bytes() + CORPUS_FILE.read_bytes())
    return digest.hexdigest()[:8]
