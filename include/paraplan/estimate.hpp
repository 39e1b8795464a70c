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
  std::string kind;       ///< gemm | grouped_gemm | attention | memory | host_sync
  std::string op_class;   ///< calibration class (kOpClassNames: gemm ... norm, permute, ...); empty for host syncs
  double time_s = 0;      ///< predicted time, including the kernel launch overhead
  double flops = 0;       ///< executed FLOP
  double bytes = 0;       ///< HBM bytes read + written
  double m = 0, n = 0, k = 0;  ///< GEMM / attention shape (per group)
  int groups = 1;         ///< grouped GEMM: experts on this rank
  double m_sd = 0;        ///< grouped GEMM: standard deviation of an expert's m (random routing); 0 = all at m
  double efficiency = 0;  ///< achieved / peak FLOP/s used for the time (GEMM, attention)
  bool per_die = false;   ///< ran on one die (die-level EP)
  bool fp8 = false;       ///< a GEMM run in FP8
  int kernels = 1;        ///< kernels launched (0 for a host synchronisation)
  double achieved = 0;    ///< FLOP/s (GEMM, attention) or bytes/s (memory) over time_s
  std::string bound;      ///< what limits it: compute | memory | launch | host
  /// A GEMM of a tensor-parallel block (attention | mlp | shared_experts), whose TP exchange
  /// it can hide with overlap.tp; empty otherwise.
  std::string block;
  /// With overlap.tp, a GEMM that pipelines a TP exchange: its time run in the overlap's
  /// chunks of its rows (cost::tp_exposed); 0 for the others.
  double split_s = 0;
};

/// One layer kind: the time of one micro-batch through one layer of that kind.
struct LayerEstimate {
  std::string kind;        ///< dense | moe | embedding | head | mtp
  int count = 0;           ///< layers of this kind in the whole model
  double forward_s = 0;    ///< forward ops
  double backward_s = 0;   ///< input-grad + weight-grad + recompute ops
  double recompute_s = 0;  ///< the recompute part of backward_s
  double weight_grad_s = 0;  ///< the weight-grad part of backward_s (W of zero-bubble schedules)
  /// Layers training.recompute_layers leaves out of the recompute: they run as without it
  /// (listed after the kind's recomputing layers).
  bool recompute_skipped = false;
  std::vector<OpEstimate> ops;
};

/// One stage of a communication op (a transfer over a tier or link, or a local pass).
struct CommStageEstimate {
  std::string name;     ///< e.g. "rdma_to_same_index_rank"
  std::string link;     ///< tier or link name ("node", "cluster+port10", "die", "local")
  std::string engine;   ///< dma | compute
  double bytes = 0;     ///< per rank
  double bandwidth = 0; ///< bytes/s achieved
  double time_s = 0;
  std::string collective;  ///< the collective its transfer is (all_gather, all_to_all, send_recv, ...)
  double compute_share = 0;  ///< share of the compute units its kernels hold (1: all of them, 0: copy engines)
};

/// One communication op of one layer for one micro-batch on one rank.
struct CommOpEstimate {
  std::string name;        ///< e.g. "ep_dispatch", "attention.tp_all_gather", "cp_kv_all_gather"
  std::string phase;       ///< forward | backward
  std::string group;       ///< tp | cp | ep | dp | pp
  std::string algorithm;   ///< scheme or collective algorithm
  double time_s = 0;       ///< after the op's own internal overlap
  double compute_s = 0;    ///< compute units busy during it (engine compute x share)
  double queueing_s = 0;   ///< Kingman wait, reported apart from time_s
  int steps = 1;           ///< transfers one after another (a CP ring's steps); time_s covers all
  std::vector<CommStageEstimate> stages;
};

/// Communication of one layer kind.
struct LayerComm {
  std::string kind;  ///< dense | moe | mtp
  std::vector<CommOpEstimate> ops;
  double forward_s = 0, backward_s = 0, queueing_s = 0;
};

/// Routing statistics of the EP group (uniform or node-limited top-k).
struct RoutingEstimate {
  int ep = 1, ranks_per_node = 1, nodes = 1;
  bool ep_over_dies = false;
  double p_rank = 0, p_node = 0;            ///< probability a given rank / node is needed
  double ranks_per_token = 0, nodes_per_token = 0;
  double expert_load = 1, rank_load = 1;     ///< expected busiest / mean
  double dispatch_bytes_per_token = 0, combine_bytes_per_token = 0;
};

/// Alpha-beta fit (least squares, Eigen) of a tier's measured message-size table.
struct LinkFit {
  std::string tier;
  double alpha_s = 0, beta_bytes_per_s = 0, r2 = 0, worst_relative = 0;
};

/// Communication of a strategy: per layer kind, pipeline send/recv, routing statistics.
struct CommBreakdown {
  RoutingEstimate routing;
  std::vector<LayerComm> layers;
  CommOpEstimate pp_send;   ///< activations to the next stage, one micro-batch
  std::vector<LinkFit> link_fits;  ///< tiers with a size table: t = alpha + bytes / beta
};

/// The communication breakdown of a loaded strategy.
[[nodiscard]] PARAPLAN_EXPORT CommBreakdown estimate_comm(const Plan& plan);

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

// ---------------------------------------------------------------------------------------
// Memory (docs/cost-model.md, section "Memory")
// ---------------------------------------------------------------------------------------

/// A named share of one memory component (an activation module, a buffer), bytes per device.
struct MemoryPart {
  std::string name;  ///< e.g. "moe.dispatched", "ep_dispatch"
  double bytes = 0;  ///< per device (card)
};

/// Peak memory of one pipeline rank on one device (card), in bytes. The components add up:
/// total = weights + gradients + optimizer_states + activations + buffers + reserve.
struct StageMemory {
  int stage = 0;              ///< pipeline rank, 0-based
  int layers = 0;             ///< transformer layers held (all chunks; DualPipe: both copies)
  int dense_layers = 0;       ///< of them dense-FFN layers
  int moe_layers = 0;         ///< of them MoE layers
  bool embedding = false;     ///< holds the input embedding
  bool head = false;          ///< holds the final norm, LM head and loss (and the MTP modules)
  double dense_params = 0;    ///< parameters on the device outside routed experts (after TP)
  double expert_params = 0;   ///< routed-expert parameters on the device (all its dies)
  double in_flight = 0;       ///< activation sets held at the peak: (micro-batch, chunk) pairs
  double weights = 0;         ///< BF16 weights (+ FP8 copies), ZeRO-3 sharded
  double gradients = 0;       ///< FP32 main gradients, ZeRO-2/3 sharded
  double optimizer_states = 0;  ///< FP32 master + moments, ZeRO-1+ sharded; 0 when offloaded
  double activations = 0;     ///< kept for backward (in-flight sets) + recompute working set
  double buffers = 0;         ///< communication buffers, logits, GEMM workspace
  double reserve = 0;         ///< the hardware's memory_reserve + `allocator_excess`
  /// Of `reserve`: what the caching allocator holds beyond the step's transient tensors
  /// (activations and buffers x (calibration.allocator - 1)); 0 on an uncalibrated device.
  double allocator_excess = 0;
  double total = 0;           ///< sum of the above
  double host_bytes = 0;      ///< per device in host memory (offloaded optimizer, activations)
  /// Activation bytes of one in-flight set that training.offload_layers keeps in host memory
  /// (part of host_bytes): each micro-batch copies them out in its forward and back for its
  /// backward.
  double offloaded_activations = 0;
  std::vector<MemoryPart> activation_parts;  ///< activations by module (sums to `activations`)
  std::vector<MemoryPart> buffer_parts;      ///< buffers by kind (sums to `buffers`)
};

/// Per-device memory of every pipeline rank of a strategy and its feasibility.
struct MemoryEstimate {
  std::vector<StageMemory> stages;  ///< one per pipeline rank
  int worst_stage = 0;              ///< index of the stage with the largest total
  double capacity = 0;              ///< device memory, bytes
  int micro_batches = 0;            ///< per step per DP rank: global_batch / (dp x micro_batch)
  bool feasible = true;             ///< every stage fits in `capacity`, host memory fits
  std::vector<std::string> infeasible_reasons;  ///< names the stage, largest part and overflow
  double host_bytes_per_node = 0;   ///< host memory the busiest node needs (offload)
  double host_capacity = 0;         ///< host memory per node; 0 = unknown, not checked
};

/// Peak memory per pipeline rank. `expert_load` is the slowest rank's expert load over the
/// mean (>= 1), multiplied with the strategy's `imbalance`, as in estimate_compute; MoE
/// activations use the slowest rank's token count. Formulas: docs/cost-model.md, "Memory".
[[nodiscard]] PARAPLAN_EXPORT MemoryEstimate estimate_memory(const Plan& plan,
                                                             double expert_load = 1.0);

}  // namespace paraplan
