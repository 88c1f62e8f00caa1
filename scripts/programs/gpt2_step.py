"""A hand-written GPT-2 decode step in plain PyTorch over a static KV cache.

The program a user writes when following the GPT-2 chapter the bottleneck model was
built for: layer_norm, addmm (Conv1D-style weights, in x out), gelu, softmax and matmuls
over a preallocated key/value cache. Random weights; no download.

One step decodes one token for each of `batch` sequences whose caches hold `context`
positions (the new token's key and value are written at the last position, and the
query attends over all `context` positions). The step ends with the greedy next token
fed back into the input buffer, so steps can run back to back (and be captured into a
CUDA graph) without a host sync.
"""

import math

import torch
import torch.nn.functional as F

# layers, width, heads, MLP width, vocabulary, positions
GPT2_SIZES = {
    "gpt2-small": dict(layers=12, width=768, heads=12, mlp=3072, vocab=50257, positions=1024),
    "gpt2-medium": dict(layers=24, width=1024, heads=16, mlp=4096, vocab=50257, positions=1024),
    "gpt2-large": dict(layers=36, width=1280, heads=20, mlp=5120, vocab=50257, positions=1024),
    "gpt2-xl": dict(layers=48, width=1600, heads=25, mlp=6400, vocab=50257, positions=1024),
}


class Gpt2DecodeStep:
    """Weights, a static KV cache and the buffers of one decode step."""

    program = "gpt2-handwritten"

    def __init__(self, model, dtype, context, batch, device="cuda", seed=0):
        cfg = GPT2_SIZES[model]
        if context > cfg["positions"]:
            raise ValueError(f"context {context} exceeds {model}'s {cfg['positions']} positions")
        self.model = model
        self.cfg = cfg
        self.dtype = dtype
        self.context = context
        self.batch = batch
        self.device = device
        layers, width, heads, mlp, vocab = (cfg[k] for k in ("layers", "width", "heads", "mlp", "vocab"))
        self.head_dim = width // heads
        self.scale = 1.0 / math.sqrt(self.head_dim)
        gen = torch.Generator(device=device)
        gen.manual_seed(seed)

        def rand(*shape, std=0.02):
            t = torch.randn(*shape, generator=gen, device=device, dtype=dtype)
            return t if std == 1.0 else t.mul_(std)

        def ones(n):
            return torch.ones(n, device=device, dtype=dtype)

        def zeros(n):
            return torch.zeros(n, device=device, dtype=dtype)

        self.wte = rand(vocab, width)
        self.wpe = rand(cfg["positions"], width, std=0.01)
        self.blocks = []
        for _ in range(layers):
            self.blocks.append(
                dict(
                    ln1_w=ones(width), ln1_b=zeros(width),
                    attn_w=rand(width, 3 * width), attn_b=zeros(3 * width),
                    proj_w=rand(width, width), proj_b=zeros(width),
                    ln2_w=ones(width), ln2_b=zeros(width),
                    fc_w=rand(width, mlp), fc_b=zeros(mlp),
                    fc2_w=rand(mlp, width), fc2_b=zeros(width),
                )
            )
        self.lnf_w = ones(width)
        self.lnf_b = zeros(width)
        # Static cache: [layer] -> (batch, heads, context, head_dim), filled with random
        # keys and values as if `context - 1` tokens had been decoded before.
        self.k_cache = [rand(batch, heads, context, self.head_dim, std=1.0) for _ in range(layers)]
        self.v_cache = [rand(batch, heads, context, self.head_dim, std=1.0) for _ in range(layers)]
        self.pos = context - 1
        self.ids = torch.randint(0, vocab, (batch,), generator=gen, device=device)
        self.pos_ids = torch.full((batch,), self.pos, device=device, dtype=torch.long)

    def cache_bytes(self):
        return sum(t.numel() * t.element_size() for t in self.k_cache + self.v_cache)

    def weight_bytes(self):
        n = self.wte.numel() + self.wpe.numel() + self.lnf_w.numel() + self.lnf_b.numel()
        for blk in self.blocks:
            n += sum(t.numel() for t in blk.values())
        return n * self.wte.element_size()

    def step(self):
        """One decode step; returns the logits. Writes the next token into self.ids."""
        b, width = self.batch, self.cfg["width"]
        heads, hd, pos = self.cfg["heads"], self.head_dim, self.pos
        x = F.embedding(self.ids, self.wte) + F.embedding(self.pos_ids, self.wpe)  # (B, D)
        for layer, blk in enumerate(self.blocks):
            a = F.layer_norm(x, (width,), blk["ln1_w"], blk["ln1_b"], 1e-5)
            qkv = torch.addmm(blk["attn_b"], a, blk["attn_w"])  # (B, 3D)
            q, k, v = qkv.split(width, dim=1)
            q = q.view(b, heads, 1, hd)
            k = k.view(b, heads, 1, hd)
            v = v.view(b, heads, 1, hd)
            kc, vc = self.k_cache[layer], self.v_cache[layer]
            kc[:, :, pos:pos + 1].copy_(k)
            vc[:, :, pos:pos + 1].copy_(v)
            keys = kc[:, :, : pos + 1]
            values = vc[:, :, : pos + 1]
            scores = torch.matmul(q, keys.transpose(-1, -2)) * self.scale  # (B, H, 1, T)
            probs = torch.softmax(scores, dim=-1)
            ctx = torch.matmul(probs, values)  # (B, H, 1, hd)
            ctx = ctx.reshape(b, width)
            x = x + torch.addmm(blk["proj_b"], ctx, blk["proj_w"])
            m = F.layer_norm(x, (width,), blk["ln2_w"], blk["ln2_b"], 1e-5)
            h = F.gelu(torch.addmm(blk["fc_b"], m, blk["fc_w"]), approximate="tanh")
            x = x + torch.addmm(blk["fc2_b"], h, blk["fc2_w"])
        x = F.layer_norm(x, (width,), self.lnf_w, self.lnf_b, 1e-5)
        logits = torch.matmul(x, self.wte.t())  # (B, vocab), tied embedding
        self.ids.copy_(torch.argmax(logits, dim=-1))
        return logits

    def flops_per_step(self):
        """Matrix-product FLOPs of one step (2 per multiply-add), for the summary."""
        c = self.cfg
        d, m, v, t = c["width"], c["mlp"], c["vocab"], self.context
        per_layer = 2 * (d * 3 * d + d * d + 2 * d * m) + 2 * 2 * t * d
        return self.batch * (c["layers"] * per_layer + 2 * d * v)
