#!/usr/bin/env python3
"""Sustained GEMM rate: one GEMM shape run back to back for `--seconds`, its rate
printed per window as CSV (t_s,tflops) to stdout, so that the drop from a short burst
(what MAMF sweeps and gemm.py time) to a long run (what a training step sees) is measured
instead of fitted. Run `nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu
--format=csv -lms 500` beside it to see the clock and power behind the drop.

    python3 bench/gpu/sustained.py [--shape 8192,8192,8192] [--seconds 60] > sustained.csv

Needs PyTorch with CUDA. Each window is `--per-window` GEMMs between two CUDA events.
"""
import argparse
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="8192,8192,8192", help="m,n,k")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--per-window", type=int, default=200)
    ap.add_argument("--dtype", choices=["bf16", "fp8"], default="bf16",
                    help="fp8: torch._scaled_mm with per-tensor scales (cuBLASLt)")
    args = ap.parse_args()
    import torch
    from timing import mean_us, provenance

    m, n, k = (int(v) for v in args.shape.split(","))
    print(provenance(torch, f"{args.dtype} {m}x{n}x{k} back to back"))
    print("t_s,tflops")
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    if args.dtype == "fp8":
        a8, b8 = a.to(torch.float8_e4m3fn), b.t().contiguous().to(torch.float8_e4m3fn).t()
        one = torch.tensor(1.0, device="cuda")
        gemm = lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    else:
        gemm = lambda: torch.matmul(a, b, out=c)
    flops = 2.0 * m * n * k
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < args.seconds:
        us = mean_us(torch, gemm, args.per_window, warmup=0)  # one window, back to back
        print(f"{time.perf_counter() - t0:.2f},{flops / us / 1e6:.1f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
