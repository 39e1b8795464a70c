#!/usr/bin/env python3
"""Flash-attention timings for `paraplan calibrate attention`: forward and backward of each
available kernel over sequence lengths, causal and not, and prints CSV
(kernel,pass,causal,batch,heads,head_dim,v_head_dim,seq,time_us,tflops) to stdout.

    python3 bench/gpu/attention.py [--head-dim 128] [--tokens 16384] [--hidden 2048] > attention.csv
    python3 bench/gpu/attention.py --head-dim 192 --v-head-dim 128 --hidden 3072 > mla.csv  # MLA's heads
    paraplan calibrate attention attention.csv -H h100-sxm-ib --into hardware/my-h100.yaml

Needs PyTorch with CUDA. The setting is FlashAttention's own benchmark (Dao 2023; Shah et al.
2024): `--tokens` tokens per batch (batch = tokens / seq), `--hidden` / head_dim heads, BF16.
Kernels: PyTorch's scaled_dot_product_attention restricted to its flash backend (`fa2`: it
wraps FlashAttention-2) and to cuDNN (`cudnn`, where PyTorch has it), and the flash_attn
package's FA3 interface (`fa3`, flash_attn_interface) when it is installed. FLOP as the
FlashAttention papers count them: 4 b h s^2 d forward (2 b h s^2 (d + dv) with a value head
dim of its own), half of it causal, 2.5 x backward. A kernel that does not take a shape is
skipped with a note on stderr.
"""
import argparse
import sys


def kernels(torch, dropout=0.0):
    """(name, fn(q, k, v, causal) -> out) for every kernel this machine has; q, k, v are
    (batch, seq, heads, head_dim); `dropout` on the probabilities (PyTorch's kernels only)."""
    found = []
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        import torch.nn.functional as F

        def sdpa(backend):
            def run(q, k, v, causal):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                          is_causal=causal, dropout_p=dropout).transpose(1, 2)
            return run

        found.append(("fa2", sdpa(SDPBackend.FLASH_ATTENTION)))
        if hasattr(SDPBackend, "CUDNN_ATTENTION"):
            found.append(("cudnn", sdpa(SDPBackend.CUDNN_ATTENTION)))
    except ImportError:
        pass
    if dropout > 0:
        return found
    try:
        import flash_attn_interface  # FlashAttention-3 (hopper/ of the flash-attention repository)

        def fa3(q, k, v, causal):
            out = flash_attn_interface.flash_attn_func(q, k, v, causal=causal)
            return out[0] if isinstance(out, tuple) else out

        found.append(("fa3", fa3))
    except ImportError:
        pass
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--v-head-dim", type=int, default=0, help="value head dim (MLA: 128 with --head-dim 192); 0 = --head-dim")
    ap.add_argument("--tokens", type=int, default=16384, help="tokens per batch (batch = tokens / seq)")
    ap.add_argument("--hidden", type=int, default=2048, help="heads = hidden / head_dim")
    ap.add_argument("--seqs", default="512,1024,2048,4096,8192,16384")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--dropout", type=float, default=0.0,
                    help="dropout on the attention probabilities (Megatron's attention_dropout); the kernel name "
                         "gets a _dropout suffix")
    args = ap.parse_args()
    import torch
    from timing import mean_us, provenance

    dev = torch.device("cuda")
    d = args.head_dim
    dv = args.v_head_dim or d
    print(provenance(torch, f"head dim {args.head_dim}" + (f" (values {dv})" if dv != d else "") +
                     f", {args.tokens} tokens per batch"))
    print("kernel,pass,causal,batch,heads,head_dim,v_head_dim,seq,time_us,tflops")
    h = max(1, args.hidden // d)
    for name, attend in kernels(torch, args.dropout):
        if args.dropout > 0:
            name += "_dropout"
        for seq in [int(s) for s in args.seqs.split(",")]:
            b = max(1, args.tokens // seq)
            for causal in (True, False):
                q, k, v = (torch.randn(b, seq, h, width, device=dev, dtype=torch.bfloat16, requires_grad=True)
                           for width in (d, d, dv))
                try:
                    out = attend(q, k, v, causal)
                    out.backward(torch.randn_like(out))
                except RuntimeError as e:  # this kernel does not take this shape here
                    print(f"# {name} seq {seq}: {str(e).splitlines()[0]}", file=sys.stderr)
                    continue
                grad = torch.randn_like(out)
                flops = 2 * b * h * seq * seq * (d + dv) * (0.5 if causal else 1.0)
                fwd_us = mean_us(torch, lambda: attend(q, k, v, causal), args.iters, warmup=3)
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

                # Backward alone: a forward outside the timed region, then its backward.
                def backward():
                    o = attend(q, k, v, causal)
                    torch.cuda.synchronize()
                    start.record()
                    o.backward(grad)
                    end.record()

                bwd_total = 0.0
                for i in range(args.iters + 3):
                    q.grad = k.grad = v.grad = None
                    backward()
                    torch.cuda.synchronize()
                    if i >= 3:
                        bwd_total += start.elapsed_time(end) * 1e3
                bwd_us = bwd_total / args.iters
                for p, us, f in (("forward", fwd_us, flops), ("backward", bwd_us, 2.5 * flops)):
                    print(f"{name},{p},{int(causal)},{b},{h},{d},{dv},{seq},{us:.3f},{f / us / 1e6:.1f}")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
