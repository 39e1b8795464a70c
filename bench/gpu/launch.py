#!/usr/bin/env python3
"""Host costs for `paraplan calibrate launch`: the host time per kernel of a training-like
loop of small autograd ops (host_issue) and one device-to-host read with the stream drained
behind it (host_sync), repeated; prints CSV (quantity,time_us) to stdout.

    python3 bench/gpu/launch.py [--repeats 5] > launch.csv
    paraplan calibrate launch launch.csv -H h100-sxm-ib --into hardware/my-h100.yaml

Needs PyTorch with CUDA. host_issue: forward and backward of a chain of tiny Linear + GELU
layers (the GPU finishes each kernel long before the next is issued, so wall time / kernels
is the host's own: Python, autograd, dispatcher, cudaLaunchKernel); the kernels per step are
counted with the profiler when it is available, else 6 per layer assumed (forward: GEMM,
GELU; backward: two GEMMs, GELU's gradient, the accumulation). A real step (module hooks,
optimizer bookkeeping) costs more per kernel: `paraplan calibrate profile` on a trace of your
own run measures that. host_sync: `.item()` of a device scalar after a short kernel.
"""
import argparse
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--layers", type=int, default=64)
    args = ap.parse_args()
    import torch

    props = torch.cuda.get_device_properties(0)
    print(f"# {props.name}, torch {torch.__version__}, CUDA {torch.version.cuda}, driver via nvidia-smi")
    print("quantity,time_us")
    layers = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU())
                                   for _ in range(args.layers)]).cuda()
    x = torch.randn(8, 64, device="cuda", requires_grad=True)

    def step():
        layers(x).sum().backward()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    kernels = 6 * args.layers
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        counted = sum(e.count for e in prof.key_averages() if e.device_type.name == "CUDA")
        if counted > 0:
            kernels = counted
    except Exception:  # no CUPTI: keep the assumed count
        pass
    for _ in range(args.repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        t1 = time.perf_counter()  # host time only: no synchronisation inside
        torch.cuda.synchronize()
        print(f"host_issue,{(t1 - t0) * 1e6 / kernels:.3f}")
    y = torch.zeros((), device="cuda")
    for _ in range(args.repeats):
        y.add_(1)
        torch.cuda.synchronize()
        y.add_(1)
        t0 = time.perf_counter()
        y.item()
        t1 = time.perf_counter()
        print(f"host_sync,{(t1 - t0) * 1e6:.3f}")


if __name__ == "__main__":
    main()
