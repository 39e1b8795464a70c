"""What the bench/gpu scripts share: the provenance line they print first, and CUDA-event
timing of a callable (warm-up runs, then the mean of `iters` back-to-back runs)."""


def provenance(torch, extra=""):
    """The first line of every output: GPU, SM count, PyTorch and CUDA versions (the driver
    is read from nvidia-smi by whoever commits the result)."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    line = (f"# {props.name}, {props.multi_processor_count} SMs, torch {torch.__version__}, "
            f"CUDA {torch.version.cuda}, driver via nvidia-smi")
    return line + (f"; {extra}" if extra else "")


def mean_us(torch, fn, iters, warmup=5):
    """Mean time of fn() in microseconds over `iters` runs issued back to back."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / iters
