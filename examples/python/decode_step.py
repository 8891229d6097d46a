"""A decode step of a GPT-2-shaped model in PyTorch (random weights), for tracing: the Python
example (first_measurements.py) traces it at GPT-2-small size, and
bench/python_trace_vs_torch_profiler.py measures ridge.trace's overhead on it at a smaller size."""
import torch
import torch.nn.functional as F


def decoder_step(d=768, layers=12, heads=12, vocab=50257, cache=256):
    """A decode step of a GPT-2-small-shaped model (random weights): one token through every
    layer with a KV cache of fixed length, later positions masked; the next token by argmax."""
    torch.manual_seed(0)
    hd = d // heads

    def w(*shape):
        return (torch.randn(*shape, device="cuda") * 0.02).to(torch.bfloat16)
    blocks = [dict(ln1=torch.nn.LayerNorm(d, device="cuda", dtype=torch.bfloat16), qkv=w(3 * d, d), proj=w(d, d),
                   ln2=torch.nn.LayerNorm(d, device="cuda", dtype=torch.bfloat16), up=w(4 * d, d), down=w(d, 4 * d),
                   k=torch.zeros(1, heads, cache, hd, device="cuda", dtype=torch.bfloat16),
                   v=torch.zeros(1, heads, cache, hd, device="cuda", dtype=torch.bfloat16)) for _ in range(layers)]
    embed, ln_f = w(vocab, d), torch.nn.LayerNorm(d, device="cuda", dtype=torch.bfloat16)
    positions = torch.arange(cache, device="cuda")
    state = dict(token=torch.zeros(1, dtype=torch.long, device="cuda"), pos=torch.zeros(1, dtype=torch.long, device="cuda"))

    @torch.no_grad()
    def step():
        x = embed[state["token"]].view(1, 1, d)
        visible = (positions <= state["pos"]).view(1, 1, 1, cache)
        for b in blocks:
            q, k, v = F.linear(b["ln1"](x), b["qkv"]).view(1, 1, 3, heads, hd).permute(2, 0, 3, 1, 4)
            b["k"].index_copy_(2, state["pos"], k)
            b["v"].index_copy_(2, state["pos"], v)
            a = F.scaled_dot_product_attention(q, b["k"], b["v"], attn_mask=visible)
            x = x + F.linear(a.transpose(1, 2).reshape(1, 1, d), b["proj"])
            x = x + F.linear(F.gelu(F.linear(b["ln2"](x), b["up"])), b["down"])
        logits = F.linear(ln_f(x), embed).view(-1)  # tied embeddings, as GPT-2
        state["token"] = logits.argmax().view(1)
        state["pos"].add_(1).remainder_(cache)
        return logits
    return step
