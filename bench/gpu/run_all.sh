#!/usr/bin/env bash
# Runs the bench/gpu suite on one GPU and writes each result beside its provenance:
#   bench/gpu/run_all.sh DIR
# DIR gets gemm-bf16.csv, gemm-fp8.csv (back to back: the power-capped rates),
# gemm-bf16-burst.csv, gemm-fp8-burst.csv (each row after 0.3 s idle), gemm-grouped8.csv,
# attention-hd128.csv, attention-hd64.csv, memory.csv, launch.csv, sustained.csv, smi.csv
# (clock and power sampled every 0.5 s throughout) and versions.txt. Each script has its own time limit and a
# failure of one does not stop the others. nccl.sh needs several GPUs and is not run here.
set -u
out=${1:?usage: run_all.sh DIR}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,vbios_version,power.limit,power.max_limit,clocks.max.sm,clocks.max.mem,memory.total,pcie.link.gen.current --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())'
  python3 -m pip list 2>/dev/null | grep -iE '^(torch|triton|nvidia-cublas|nvidia-cudnn|nvidia-nccl)' || true
} >"$out/versions.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 500 >"$out/smi.csv" 2>&1 &
smi=$!
run() {  # run LIMIT_S FILE SCRIPT ARGS...
  local limit=$1 file=$2; shift 2
  echo "== $* -> $file ($(date -u +%T))" >&2
  timeout "$limit" python3 "$@" >"$out/$file" || echo "== $* failed or timed out: $?" >&2
}
run 120 gemm-bf16.csv gemm.py --dtype bf16
run 60 gemm-fp8.csv gemm.py --dtype fp8
run 200 gemm-bf16-burst.csv gemm.py --dtype bf16 --burst 0.3
run 80 gemm-fp8-burst.csv gemm.py --dtype fp8 --burst 0.3
run 60 gemm-grouped8.csv gemm.py --grouped 8 --passes forward --iters 10
run 60 attention-hd128.csv attention.py --head-dim 128
run 60 attention-hd64.csv attention.py --head-dim 64 --hidden 4096
run 45 memory.csv memory_bound.py
run 30 launch.csv launch.py
run 80 sustained.csv sustained.py --seconds 60
kill $smi 2>/dev/null
echo "== done ($(date -u +%T))" >&2
