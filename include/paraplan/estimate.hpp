#pragma once
/// Result structs: plain data, SI units (seconds, FLOP, bytes).

#include <string>
#include <vector>

#include "paraplan/export.hpp"
#include "paraplan/model.hpp"
#include "paraplan/spec.hpp"

namespace paraplan {

/// One kernel of one layer for one micro-batch on one device.
struct OpEstimate {
  std::string name;       ///< e.g. "q_b_proj", "experts.gate_up_proj.wgrad"
  std::string phase;      ///< forward | input_grad | weight_grad | recompute
  std::string kind;       ///< gemm | grouped_gemm | attention | memory
  double time_s = 0;      ///< predicted time, including the kernel launch overhead
  double flops = 0;       ///< executed FLOP
  double bytes = 0;       ///< HBM bytes read + written
  double m = 0, n = 0, k = 0;  ///< GEMM / attention shape (per group)
  int groups = 1;         ///< grouped GEMM: experts on this rank
  double efficiency = 0;  ///< achieved / peak FLOP/s used for the time (GEMM, attention)
  bool per_die = false;   ///< ran on one die (die-level EP)
};

/// One layer kind: the time of one micro-batch through one layer of that kind.
struct LayerEstimate {
  std::string kind;        ///< dense | moe | embedding | head | mtp
  int count = 0;           ///< layers of this kind in the whole model
  double forward_s = 0;    ///< forward ops
  double backward_s = 0;   ///< input-grad + weight-grad + recompute ops
  double recompute_s = 0;  ///< the recompute part of backward_s
  double weight_grad_s = 0;  ///< the weight-grad part of backward_s (W of zero-bubble schedules)
  std::vector<OpEstimate> ops;
};

/// Compute-side breakdown of a strategy: counts, and per layer kind the op times.
/// Communication is not included yet.
struct ComputeBreakdown {
  ModelCounts model;
  double tokens_per_device = 0;   ///< per micro-batch, through dense GEMMs
  double tokens_per_expert = 0;   ///< mean routed tokens per expert on one rank (MoE)
  double tokens_per_expert_slowest = 0;  ///< the slowest rank's tokens per expert
  int experts_per_rank = 0;
  std::vector<LayerEstimate> layers;
};

/// The compute breakdown of a loaded strategy. `expert_load` is the slowest rank's expert
/// load over the mean (>= 1; 1 = balanced); it multiplies with the strategy's `imbalance`.
[[nodiscard]] PARAPLAN_EXPORT ComputeBreakdown estimate_compute(const Plan& plan,
                                                                double expert_load = 1.0);

}  // namespace paraplan
