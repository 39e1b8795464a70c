#!/usr/bin/env python3
"""A traced training step for `paraplan calibrate profile`: forward and backward of a few
Llama-3-8B-shaped decoder layers (RMSNorm, GQA attention with RoPE through PyTorch's SDPA,
SwiGLU MLP, embedding and LM head with cross-entropy) in plain PyTorch on one GPU, BF16.
Prints the mean step time (CUDA events, no profiler) as CSV (quantity,time_ms) and writes a
Chrome trace of one profiled step.

    python3 bench/gpu/trace_step.py [--layers 4] [--seq 4096] [--batch 2] --trace step.json > step.csv

Needs PyTorch with CUDA. Eager PyTorch, not Megatron-Core: its norm, RoPE and SwiGLU are
several kernels each where Transformer Engine fuses them, so compare op classes (GEMM,
attention) rather than the memory-bound remainder. No optimizer step.
"""
import argparse
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--ffn", type=int, default=14336)
    ap.add_argument("--vocab", type=int, default=128256)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--trace", required=True)
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from timing import mean_us, provenance

    torch.manual_seed(0)
    dev, dt = "cuda", torch.bfloat16
    h, nh, nkv, d = args.hidden, args.heads, args.kv_heads, args.hidden // args.heads

    def param(*shape):
        return torch.nn.Parameter(torch.randn(*shape, device=dev, dtype=dt) * 0.02)

    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.n2 = (torch.nn.Parameter(torch.ones(h, device=dev, dtype=dt)) for _ in range(2))
            self.qkv = param((nh + 2 * nkv) * d, h)
            self.proj = param(h, nh * d)
            self.fc1 = param(2 * args.ffn, h)
            self.fc2 = param(h, args.ffn)

        def forward(self, x, cos, sin):
            b, s, _ = x.shape
            y = F.rms_norm(x, (h,), self.n1)
            q, k, v = F.linear(y, self.qkv).split([nh * d, nkv * d, nkv * d], dim=-1)
            q, k, v = (t.view(b, s, -1, d).transpose(1, 2) for t in (q, k, v))

            def rope(t):
                t1, t2 = t.chunk(2, dim=-1)
                return t * cos + torch.cat((-t2, t1), dim=-1) * sin

            o = F.scaled_dot_product_attention(rope(q), rope(k), v, is_causal=True, enable_gqa=True)
            x = x + F.linear(o.transpose(1, 2).reshape(b, s, nh * d), self.proj)
            g, u = F.linear(F.rms_norm(x, (h,), self.n2), self.fc1).chunk(2, dim=-1)
            return x + F.linear(F.silu(g) * u, self.fc2)

    emb = param(args.vocab, h)
    head = param(args.vocab, h)
    norm = torch.nn.Parameter(torch.ones(h, device=dev, dtype=dt))
    layers = torch.nn.ModuleList(Layer() for _ in range(args.layers))
    pos = torch.arange(args.seq, device=dev, dtype=torch.float32)
    freq = 1.0 / (500000.0 ** (torch.arange(0, d, 2, device=dev, dtype=torch.float32) / d))
    ang = torch.cat((torch.outer(pos, freq),) * 2, dim=-1)
    cos, sin = ang.cos().to(dt), ang.sin().to(dt)
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq + 1), device=dev)

    def step():
        x = F.embedding(tokens[:, :-1], emb)
        for layer in layers:
            x = layer(x, cos, sin)
        logits = F.linear(F.rms_norm(x, (h,), norm), head)
        loss = F.cross_entropy(logits.view(-1, args.vocab).float(), tokens[:, 1:].reshape(-1))
        loss.backward()

    print(provenance(torch, f"{args.layers} layers, h {h}, heads {nh}/{nkv}, ffn {args.ffn}, "
                             f"seq {args.seq}, batch {args.batch}, vocab {args.vocab}, bf16"))
    print("quantity,time_ms")
    print(f"step,{mean_us(torch, step, args.steps, warmup=3) / 1e3:.3f}")
    print(f"peak_memory_gib,{torch.cuda.max_memory_allocated() / 2**30:.3f}")
    sys.stdout.flush()
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    prof.export_chrome_trace(args.trace)


if __name__ == "__main__":
    main()
