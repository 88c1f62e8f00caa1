"""A hand-written LLaMA-style decode step in plain PyTorch over a static KV cache.

RMSNorm written out as its users write it (upcast, pow, mean, rsqrt, scale), rotary
position embedding with rotate_half, a SwiGLU MLP through F.linear, and grouped-query
attention over the cache through F.scaled_dot_product_attention. Random weights; no
download. The shapes follow published decoder configurations (named below) so the
fixtures look like a real model's step; nothing is loaded from them.

One step decodes one token for each of `batch` sequences whose caches hold `context`
positions (the new key and value are written at the last position). The greedy next
token is fed back into the input buffer, so steps run back to back and can be captured
into a CUDA graph.
"""

import torch
import torch.nn.functional as F

# layers, width, query heads, key/value heads, MLP width, vocabulary
LLAMA_SIZES = {
    # the shape of Llama 3.2 1B (16 layers, 2048 wide, 32/8 heads, 8192 MLP, 128,256 vocab)
    "llama-1b": dict(layers=16, width=2048, heads=32, kv_heads=8, mlp=8192, vocab=128256),
    # the shape of TinyLlama 1.1B (22 layers, 2048 wide, 32/4 heads, 5632 MLP, 32,000 vocab)
    "tinyllama-1.1b": dict(layers=22, width=2048, heads=32, kv_heads=4, mlp=5632, vocab=32000),
}


def _sdpa_gqa(q, k, v, heads, kv_heads):
    """Decode attention of `heads` query heads over `kv_heads` cached heads."""
    try:
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    except TypeError:  # a PyTorch before enable_gqa: expand the cached heads
        rep = heads // kv_heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        return F.scaled_dot_product_attention(q, k, v)


class LlamaDecodeStep:
    """Weights, a static KV cache and the buffers of one decode step."""

    program = "llama-handwritten"

    def __init__(self, model, dtype, context, batch, device="cuda", seed=0, eps=1e-5, theta=500000.0):
        cfg = LLAMA_SIZES[model]
        self.model = model
        self.cfg = cfg
        self.dtype = dtype
        self.context = context
        self.batch = batch
        self.device = device
        self.eps = eps
        layers, width, heads, kv_heads = cfg["layers"], cfg["width"], cfg["heads"], cfg["kv_heads"]
        mlp, vocab = cfg["mlp"], cfg["vocab"]
        self.head_dim = width // heads
        gen = torch.Generator(device=device)
        gen.manual_seed(seed)

        def rand(*shape, std=0.02):
            t = torch.randn(*shape, generator=gen, device=device, dtype=dtype)
            return t if std == 1.0 else t.mul_(std)

        def ones(n):
            return torch.ones(n, device=device, dtype=dtype)

        # nn.Linear layout: (out, in)
        self.embed = rand(vocab, width)
        self.blocks = []
        for _ in range(layers):
            self.blocks.append(
                dict(
                    attn_norm=ones(width),
                    wq=rand(heads * self.head_dim, width),
                    wk=rand(kv_heads * self.head_dim, width),
                    wv=rand(kv_heads * self.head_dim, width),
                    wo=rand(width, heads * self.head_dim),
                    mlp_norm=ones(width),
                    w_gate=rand(mlp, width),
                    w_up=rand(mlp, width),
                    w_down=rand(width, mlp),
                )
            )
        self.final_norm = ones(width)
        self.lm_head = rand(vocab, width)
        self.k_cache = [rand(batch, kv_heads, context, self.head_dim, std=1.0) for _ in range(layers)]
        self.v_cache = [rand(batch, kv_heads, context, self.head_dim, std=1.0) for _ in range(layers)]
        self.pos = context - 1
        self.ids = torch.randint(0, vocab, (batch,), generator=gen, device=device)
        # rotary tables for the current position, (1, 1, 1, head_dim)
        inv_freq = 1.0 / (theta ** (torch.arange(0, self.head_dim, 2, device=device, dtype=torch.float32) / self.head_dim))
        angles = torch.tensor([float(self.pos)], device=device)[:, None] * inv_freq[None, :]
        emb = torch.cat((angles, angles), dim=-1)
        self.cos = emb.cos().to(dtype).view(1, 1, 1, self.head_dim)
        self.sin = emb.sin().to(dtype).view(1, 1, 1, self.head_dim)

    def cache_bytes(self):
        return sum(t.numel() * t.element_size() for t in self.k_cache + self.v_cache)

    def weight_bytes(self):
        n = self.embed.numel() + self.lm_head.numel() + self.final_norm.numel()
        for blk in self.blocks:
            n += sum(t.numel() for t in blk.values())
        return n * self.embed.element_size()

    def _rms_norm(self, x, weight):
        xf = x.to(torch.float32)
        var = xf.pow(2).mean(-1, keepdim=True)
        xf = xf * torch.rsqrt(var + self.eps)
        return weight * xf.to(x.dtype)

    @staticmethod
    def _rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    def _rope(self, x):
        return x * self.cos + self._rotate_half(x) * self.sin

    def step(self):
        """One decode step; returns the logits. Writes the next token into self.ids."""
        c = self.cfg
        b, heads, kv_heads, hd, pos = self.batch, c["heads"], c["kv_heads"], self.head_dim, self.pos
        x = F.embedding(self.ids, self.embed)  # (B, D)
        for layer, blk in enumerate(self.blocks):
            a = self._rms_norm(x, blk["attn_norm"])
            q = F.linear(a, blk["wq"]).view(b, heads, 1, hd)
            k = F.linear(a, blk["wk"]).view(b, kv_heads, 1, hd)
            v = F.linear(a, blk["wv"]).view(b, kv_heads, 1, hd)
            q = self._rope(q)
            k = self._rope(k)
            kc, vc = self.k_cache[layer], self.v_cache[layer]
            kc[:, :, pos:pos + 1].copy_(k)
            vc[:, :, pos:pos + 1].copy_(v)
            attn = _sdpa_gqa(q, kc[:, :, : pos + 1], vc[:, :, : pos + 1], heads, kv_heads)
            x = x + F.linear(attn.reshape(b, heads * hd), blk["wo"])
            m = self._rms_norm(x, blk["mlp_norm"])
            x = x + F.linear(F.silu(F.linear(m, blk["w_gate"])) * F.linear(m, blk["w_up"]), blk["w_down"])
        x = self._rms_norm(x, self.final_norm)
        logits = F.linear(x, self.lm_head)
        self.ids.copy_(torch.argmax(logits, dim=-1))
        return logits

    def flops_per_step(self):
        """Matrix-product FLOPs of one step (2 per multiply-add), for the summary."""
        c = self.cfg
        d, hd, t = c["width"], self.head_dim, self.context
        qkvo = d * (c["heads"] * hd) * 2 + d * (c["kv_heads"] * hd) * 2
        per_layer = 2 * (qkvo + 3 * d * c["mlp"]) + 2 * 2 * t * c["heads"] * hd
        return self.batch * (c["layers"] * per_layer + 2 * d * c["vocab"])
