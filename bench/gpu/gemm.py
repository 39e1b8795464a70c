#!/usr/bin/env python3
"""GEMM sweep for `paraplan calibrate gemm`: times torch.matmul over the shapes DeepSeek-V3
and Llama use, in the three passes of training, and prints CSV
(m,n,k,groups,pass,time_us,tflops) to stdout.

    python3 bench/gpu/gemm.py [--dtype bf16|fp8] [--iters 50] > sweep.csv
    python3 bench/gpu/gemm.py --grouped 8 > grouped.csv     # 8 experts' GEMMs, one loop
    python3 bench/gpu/gemm.py --burst 0.3 > burst.csv       # each row after 0.3 s idle
    paraplan calibrate gemm sweep.csv --model -H h100-sxm-ib --into hardware/my-h100.yaml

Needs PyTorch with CUDA. Forward C[m, n] = A[m, k] W[k, n] (m tokens, (n, k) the weight);
dgrad dA[m, k] = dC[m, n] W^T; wgrad dW[k, n] = A^T dC, rows written as the GEMM they are
(m x n x k of the product). FP8 uses torch._scaled_mm (per-tensor scales), forward only.
`--grouped G` times G GEMMs of m tokens each back to back (what Transformer Engine's
default GroupedLinear path runs, one cuBLAS GEMM per expert); the row's `groups` is G.
"""
import argparse
import sys
import time

# (n, k) of the projections: DeepSeek-V3 (h 7168: MLA, dense MLP, experts, head) and
# Llama 3 70B (h 8192: QKV with GQA, output, MLP), at TP 1 and 8.
WEIGHTS = [
    (1536, 7168), (24576, 1536), (576, 7168), (32768, 512), (7168, 16384),   # MLA
    (36864, 7168), (7168, 18432), (4096, 7168), (7168, 2048),               # dense MLP, expert
    (10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672),              # Llama 70B TP1
    (1280, 8192), (8192, 1024), (7168, 8192), (8192, 3584),                 # Llama 70B TP8
]
TOKENS = [256, 512, 1024, 2048, 4096, 8192, 16384]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", choices=["bf16", "fp8"], default="bf16")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--grouped", type=int, default=1, help="GEMMs per row (experts), run back to back")
    ap.add_argument("--passes", default="forward,dgrad,wgrad", help="comma-separated: forward, dgrad, wgrad")
    ap.add_argument("--burst", type=float, default=0.0,
                    help="seconds idle before each row, whose timing then lasts ~10 ms: the rate before the "
                         "power limit pulls the clock down (0: rows back to back, the power-capped rate)")
    args = ap.parse_args()
    import torch

    from timing import mean_us, provenance

    dev = torch.device("cuda")
    print(provenance(torch, f"dtype {args.dtype}" + (f", burst: {args.burst} s idle before each row" if args.burst else "")))
    print("m,n,k,groups,pass,time_us,tflops")
    passes = ["forward"] if args.dtype == "fp8" else args.passes.split(",")
    for n, k in WEIGHTS:
        for m in TOKENS:
            x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            w = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
            dy = torch.randn(m, n, device=dev, dtype=torch.bfloat16)
            for p in passes:
                if args.dtype == "fp8":
                    a8 = x.to(torch.float8_e4m3fn)
                    b8 = w.t().contiguous().to(torch.float8_e4m3fn).t()
                    one = torch.tensor(1.0, device=dev)
                    one_gemm = lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                    shape = (m, n, k)
                elif p == "forward":
                    one_gemm, shape = (lambda: x @ w), (m, n, k)
                elif p == "dgrad":
                    one_gemm, shape = (lambda: dy @ w.t()), (m, k, n)
                else:
                    one_gemm, shape = (lambda: x.t() @ dy), (k, n, m)
                run = (lambda: [one_gemm() for _ in range(args.grouped)]) if args.grouped > 1 else one_gemm
                if args.burst > 0:
                    probe = mean_us(torch, run, 1, warmup=1)
                    torch.cuda.synchronize()
                    time.sleep(args.burst)
                    us = mean_us(torch, run, max(2, min(args.iters, int(10000 / probe))), warmup=1)
                else:
                    us = mean_us(torch, run, args.iters)
                flops = 2 * shape[0] * shape[1] * shape[2] * args.grouped
                print(f"{shape[0]},{shape[1]},{shape[2]},{args.grouped},{p},{us:.3f},{flops / us / 1e6:.1f}")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
