#!/usr/bin/env python3
"""Build a tiny random Qwen2 model (with a tiny local tokenizer) for vLLM log captures.

Nothing is downloaded: the tokenizer is a byte-level BPE
trained on a few fixed lines with the `tokenizers` library, and the weights are random.

Usage:
    python make_model.py [OUT_DIR] [--head-dim N]   # default /work/venvs/models/tiny-qwen2, head_dim 16

Run it with the same virtualenv as vLLM (it needs torch, transformers, tokenizers).

The start-up captures used head_dim 16, which is enough to start a server. To generate tokens, vLLM's CPU
attention kernel needs a head size it supports (32, 64, 80, ... in 0.32.0): with 16 the first request kills
the engine with "Unsupported CPU attention configuration: head_dim=16". The tests' server
(tools/vllm-cpu-env.sh) therefore builds the model with --head-dim 32.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CORPUS = [
    "the model node rank gpu log error hello world vllm ray nccl start ready token",
    "one two three four five six seven eight nine ten",
    "The quick brown fox jumps over the lazy dog. Hello, world!",
    "multi-node inference failed to start because the port was in use",
]


def build_tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer (the Qwen2 kind) trained on a few lines."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
    )
    fast.add_special_tokens({"additional_special_tokens": SPECIALS[1:]})
    # A minimal chat template so /v1/chat/completions would also work.
    fast.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    return fast


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("out", nargs="?", default="/work/venvs/models/tiny-qwen2", type=Path)
    parser.add_argument("--head-dim", type=int, default=16, help="per attention head (4 heads, 2 KV heads)")
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer()
    vocab_size = 384  # >= len(tokenizer); a multiple of 64 keeps kernels happy
    assert len(tokenizer) <= vocab_size, len(tokenizer)
    config = Qwen2Config(
        vocab_size=vocab_size,
        hidden_size=4 * args.head_dim,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=args.head_dim,
        max_position_embeddings=4096,
        max_window_layers=2,
        tie_word_embeddings=True,
        rope_theta=10000.0,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        torch_dtype="bfloat16",
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    print(f"saved tiny Qwen2 ({sum(p.numel() for p in model.parameters())} params) to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
