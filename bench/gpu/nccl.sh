#!/usr/bin/env bash
# nccl-tests sweeps for `paraplan calibrate collective`: one log per collective, with the GPU,
# driver and NCCL version in a header line, into DIR (default nccl-logs/).
#
#   NCCL_TESTS=/path/to/nccl-tests/build bench/gpu/nccl.sh [DIR] [-- extra nccl-tests args]
#   paraplan calibrate collective nccl-logs/all_reduce_perf.log -H h100-sxm-ib --tier node \
#       --into hardware/my-h100.yaml
#
# Within one node: the defaults (-g = every visible GPU). Across nodes, run it under your
# launcher (mpirun / srun) with -g 1 and say which tier the logs belong to (--tier cluster).
set -euo pipefail
dir=${1:-nccl-logs}
shift || true
[ "${1:-}" = "--" ] && shift
bin=${NCCL_TESTS:?set NCCL_TESTS to the nccl-tests build directory}
gpus=$(nvidia-smi -L | wc -l)
extra=("$@")
[ ${#extra[@]} -eq 0 ] && extra=(-g "$gpus")
mkdir -p "$dir"
header="# $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $gpus GPUs; $(date -u +%F)"
for t in all_reduce all_gather reduce_scatter alltoall sendrecv; do
  { echo "$header"; "$bin/${t}_perf" -b 1M -e 4G -f 2 -n 20 -w 5 "${extra[@]}"; } > "$dir/${t}_perf.log"
  echo "wrote $dir/${t}_perf.log"
done
