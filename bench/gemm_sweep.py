#!/usr/bin/env python3
"""GEMM sweep for `paraplan calibrate gemm`: times torch.matmul over the shapes DeepSeek-V3
and Llama use and prints CSV (m,n,k,time_us,tflops) to stdout.

    python3 bench/gemm_sweep.py [--dtype bf16|fp8] [--iters 50] > sweep.csv
    paraplan calibrate gemm sweep.csv --dtype bf16 -H h100-sxm-ib --into hardware/my-h100.yaml

Needs PyTorch with CUDA. C[m, n] = A[m, k] B[k, n]; m is tokens, (n, k) are the weight's
dimensions. FP8 uses torch._scaled_mm (per-tensor scales) where available.
"""
import argparse
import sys

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
    args = ap.parse_args()
    import torch

    dev = torch.device("cuda")
    print(f"# {torch.cuda.get_device_name(dev)}, torch {torch.__version__}, dtype {args.dtype}")
    print("m,n,k,time_us,tflops")
    for n, k in WEIGHTS:
        for m in TOKENS:
            a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
            if args.dtype == "fp8":
                a8 = a.to(torch.float8_e4m3fn)
                b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()
                one = torch.tensor(1.0, device=dev)
                run = lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            else:
                run = lambda: a @ b
            for _ in range(5):
                run()
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(args.iters):
                run()
            end.record()
            torch.cuda.synchronize()
            us = start.elapsed_time(end) * 1e3 / args.iters
            print(f"{m},{n},{k},{us:.3f},{2 * m * n * k / us / 1e6:.1f}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
