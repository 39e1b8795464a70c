#pragma once
// Time of one op on one device: roofline over the hardware's GEMM efficiency surfaces and
// memory bandwidth, plus the kernel launch overhead.

#include "cost/gemm_efficiency.hpp"
#include "model/op_graph.hpp"
#include "paraplan/spec.hpp"

namespace paraplan::cost {

/// Everything op_time needs, prepared once per hardware and precision (no table lookups
/// by name in the hot loop).
struct ComputeModel {
  GemmEfficiency dense_bf16, dense_low, grouped_bf16, grouped_low;
  double peak_bf16 = 0;   ///< device FLOP/s
  double peak_low = 0;    ///< device FLOP/s in the strategy's GEMM precision
  double mem_bw = 0;      ///< device bytes/s reached by memory-bound kernels
  double overhead_s = 0;  ///< per kernel
  double attention_efficiency = 0;  ///< 0 = use dense_bf16 at the attention shape
  int dies = 1;
};

/// Builds the model. Tables missing for a dtype fall back in this order: grouped FP8 ->
/// FP8 -> grouped BF16 -> BF16 -> constant 0.6; a device without an FP8 peak runs FP8
/// GEMMs at its BF16 peak.
ComputeModel make_compute_model(const HardwareSpec& hw, Precision precision);

/// The constant used when a device has no BF16 table at all (documented default).
inline constexpr double kDefaultGemmEfficiency = 0.6;

struct OpTime {
  double time_s = 0;
  double efficiency = 0;  ///< FLOP-rate efficiency used (0 for memory ops)
};

/// Time of `op`. GEMMs: max(flops / (peak x eff(m, n, k)), bytes / mem_bw) + overhead;
/// attention: flops / (peak_bf16 x attention eff) + overhead; memory ops:
/// bytes / mem_bw + overhead. Ops flagged per_die use one die's peak and bandwidth; whole-
/// device ops on multi-die devices run split over the dies ("duplicate mode"), so their
/// efficiency is looked up at m / dies.
OpTime op_time(const ComputeModel& cm, const model::Op& op);

}  // namespace paraplan::cost
