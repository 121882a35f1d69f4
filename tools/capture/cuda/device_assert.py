"""A token id past the end of a model's vocabulary, looked up on the GPU: what an engine prints when its
tokenizer and its model's embedding disagree (a tokenizer of another model, added tokens the weights lack).
PyTorch's indexing kernel fails its device-side assertion; the kernel's own message goes to stdout from the
GPU, and the next call that waits for the GPU raises PyTorch's "device-side assert triggered". Lines this
script prints start with ``device_assert:``.
"""

import torch

VOCAB, HIDDEN = 32000, 256

gpu = torch.cuda.get_device_name(0)
print(f"device_assert: torch {torch.__version__}, GPU {gpu}, embedding of {VOCAB} tokens", flush=True)
embedding = torch.nn.Embedding(VOCAB, HIDDEN, device="cuda")
tokens = torch.tensor([[1, 2989, 32011, 13]], device="cuda")  # 32011 is past the vocabulary
hidden = embedding(tokens)
print(f"device_assert: first value {hidden[0, 0, 0].item():.3f}", flush=True)
