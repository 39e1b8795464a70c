#!/usr/bin/env bash
# Seed corpora for the fuzz targets (tests/fuzz/), from the presets and tests/data:
#   fuzz_yaml       a kind byte (0 hardware, 1 model, 2 strategy, 3 space) + the YAML text
#   fuzz_calibrate  a kind byte (0 nccl-tests log or size table, 1 GEMM sweep, 2 DeepEP log,
#                   3 per-op CSV, 4 trace JSON, 5 attention CSV, 6 memory-bound CSV,
#                   7 launch CSV) + the file
#   fuzz_capi       hardware YAML, NUL, model YAML, NUL, strategy YAML
# Usage: tests/fuzz/seed_corpus.sh OUT_DIR (from the repository root)
set -euo pipefail
out=$1
mkdir -p "$out/fuzz_yaml" "$out/fuzz_calibrate" "$out/fuzz_capi"
n=0
seed() {  # seed TARGET KIND FILE
  n=$((n + 1))
  { printf "\\x$(printf %02x "$2")"; cat "$3"; } > "$out/$1/seed_$n"
}
for f in hardware/*.yaml; do seed fuzz_yaml 0 "$f"; done
for f in models/*.yaml; do seed fuzz_yaml 1 "$f"; done
for f in strategies/*.yaml tests/data/good/*.yaml; do
  case "$f" in *.space.yaml) seed fuzz_yaml 3 "$f" ;; *) seed fuzz_yaml 2 "$f" ;; esac
done
for f in tests/data/bad/*.yaml; do seed fuzz_yaml 2 "$f"; done
seed fuzz_calibrate 0 tests/data/calibrate/all_reduce_perf_h100.log
seed fuzz_calibrate 0 tests/data/calibrate/br166_sendrecv.csv
seed fuzz_calibrate 1 tests/data/calibrate/deepgemm_fp8_h800.csv
seed fuzz_calibrate 1 tests/data/calibrate/gemm_py_sample.csv
seed fuzz_calibrate 2 tests/data/calibrate/deepep_internode_ep16.log
seed fuzz_calibrate 5 tests/data/calibrate/attention_py_sample.csv
seed fuzz_calibrate 6 tests/data/calibrate/memory_bound_py_sample.csv
seed fuzz_calibrate 7 tests/data/calibrate/launch_py_sample.csv
seed fuzz_calibrate 3 calibration/profiles/br166-ep16-profile.csv
printf '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16", "ts": 0, "dur": 120.5, "pid": 0, "tid": 7}]}' > "$out/tmp.json"
seed fuzz_calibrate 4 "$out/tmp.json"
rm -f "$out/tmp.json"
for s in strategies/br166-ep16-mb2.yaml strategies/deepseek-v3-h800.yaml; do
  n=$((n + 1))
  { cat hardware/h100-sxm-ib.yaml; printf '\0'; cat models/deepseek-v3.yaml; printf '\0'; grep -v '^hardware:\|^model:' "$s"; } \
    > "$out/fuzz_capi/seed_$n"
done
echo "fuzz: seeded $n inputs in $out"
