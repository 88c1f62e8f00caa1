"""A Hugging Face Transformers GPT-2 decode step, built from a config with random weights.

The step a user gets from the library: `GPT2LMHeadModel` from a `GPT2Config` (no weights
are downloaded), a prompt of `context` random tokens prefilled once, then one-token
decode steps through the library's own dynamic cache and attention. Eager only: the
dynamic cache grows by one position each step, so the attended context runs from
`context` upwards by the number of steps taken (recorded by the driver).
"""

import torch

from gpt2_step import GPT2_SIZES


class HfGpt2DecodeStep:
    """A library GPT-2 model, its prefilled cache and the next-token buffer."""

    program = "hf-gpt2"
    graph_capable = False

    def __init__(self, model, dtype, context, batch, device="cuda", seed=0):
        from transformers import GPT2Config, GPT2LMHeadModel

        cfg = GPT2_SIZES[model]
        self.model = model
        self.cfg = cfg
        self.dtype = dtype
        self.context = context
        self.batch = batch
        self.device = device
        torch.manual_seed(seed)
        config = GPT2Config(
            vocab_size=cfg["vocab"],
            n_positions=2048,  # room for the cache to grow past the prompt while timing
            n_embd=cfg["width"],
            n_layer=cfg["layers"],
            n_head=cfg["heads"],
            n_inner=cfg["mlp"],
        )
        with torch.device(device):
            net = GPT2LMHeadModel(config)
        self.net = net.to(dtype=dtype).eval()
        self.steps_taken = 0
        prompt = torch.randint(0, cfg["vocab"], (batch, context), device=device)
        out = self.net(input_ids=prompt, use_cache=True)
        self.past = out.past_key_values
        self.ids = out.logits[:, -1].argmax(dim=-1, keepdim=True)
        del out

    def cache_bytes(self):
        c = self.cfg
        per_pos = 2 * c["layers"] * c["width"] * torch.tensor([], dtype=self.dtype).element_size()
        return self.batch * (self.context + self.steps_taken) * per_pos

    def weight_bytes(self):
        return sum(p.numel() * p.element_size() for p in self.net.parameters())

    def step(self):
        out = self.net(input_ids=self.ids, past_key_values=self.past, use_cache=True)
        self.past = out.past_key_values
        self.ids = out.logits[:, -1].argmax(dim=-1, keepdim=True)
        self.steps_taken += 1
        return out.logits

    def flops_per_step(self):
        c = self.cfg
        d, m, v, t = c["width"], c["mlp"], c["vocab"], self.context
        per_layer = 2 * (d * 3 * d + d * d + 2 * d * m) + 2 * 2 * t * d
        return self.batch * (c["layers"] * per_layer + 2 * d * v)
