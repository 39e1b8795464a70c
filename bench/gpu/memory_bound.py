#!/usr/bin/env python3
"""Memory-bound kernel timings for `paraplan calibrate memory`: the elementwise, norm, cast,
softmax, reduction, permute and copy kernels a training step runs, at several sizes, and
prints CSV (op,class,bytes,time_us,gbps) to stdout.

    python3 bench/gpu/memory_bound.py [--sizes-mib 64,256,1024] > memory.csv
    paraplan calibrate memory memory.csv -H h100-sxm-ib --into hardware/my-h100.yaml

Needs PyTorch with CUDA. `bytes` counts what the kernel reads and writes once (BF16 2 B,
FP8 1 B, FP32 4 B per element); the fit per class is t = fixed + bytes / (fraction x HBM),
so sizes far above the L2 cache (50 MB on H100) give the fraction and the spread of sizes
the fixed time per kernel. Rows of width 7168 (DeepSeek-V3's hidden size).
"""
import argparse
import sys

WIDTH = 7168


def cases(torch, n):
    """(op, class, bytes, fn) for a BF16 activation of n elements (rows of WIDTH)."""
    rows = max(1, n // WIDTH)
    x = torch.randn(rows, WIDTH, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(rows, WIDTH, device="cuda", dtype=torch.bfloat16)
    w = torch.ones(WIDTH, device="cuda", dtype=torch.bfloat16)
    idx = torch.randperm(rows, device="cuda")
    e = rows * WIDTH
    out = [
        ("copy", "copy", 4 * e, lambda: x.clone()),
        # two inputs: `x + x` reads x once (both loads hit the same lines) and so looked 1.5x
        # faster than HBM on H100 (4.5 TB/s of 3.35)
        ("add", "elementwise", 6 * e, lambda: x + y),
        # one activation kernel (eager PyTorch's SwiGLU is two, SiLU and the product: not one
        # class's rate; Transformer Engine fuses it into one kernel of this kind)
        ("silu", "elementwise", 4 * e, lambda: torch.nn.functional.silu(x)),
        ("softmax", "softmax", 4 * e, lambda: torch.softmax(x, dim=-1)),
        ("row_sum", "reduction", 2 * e, lambda: x.sum(dim=-1)),
        ("gather_rows", "permute", 4 * e, lambda: x.index_select(0, idx)),
    ]
    if hasattr(torch.nn.functional, "rms_norm"):
        out.append(("rms_norm", "norm", 4 * e, lambda: torch.nn.functional.rms_norm(x, (WIDTH,), w)))
    else:
        out.append(("layer_norm", "norm", 4 * e, lambda: torch.nn.functional.layer_norm(x, (WIDTH,), w)))
    if hasattr(torch, "float8_e4m3fn"):
        out.append(("cast_fp8", "cast", 3 * e, lambda: x.to(torch.float8_e4m3fn)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes-mib", default="64,256,1024", help="BF16 activation sizes in MiB")
    ap.add_argument("--iters", type=int, default=50)
    args = ap.parse_args()
    import torch
    from timing import mean_us, provenance

    print(provenance(torch))
    print("op,class,bytes,time_us,gbps")
    for mib in [int(s) for s in args.sizes_mib.split(",")]:
        for op, cls, nbytes, fn in cases(torch, mib * 1048576 // 2):
            us = mean_us(torch, fn, args.iters)
            print(f"{op},{cls},{nbytes},{us:.3f},{nbytes / us / 1e3:.1f}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
