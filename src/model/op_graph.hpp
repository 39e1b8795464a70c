#pragma once
// The ops one device (one pipeline rank) runs for one micro-batch through one layer of
// each kind, with shapes after the strategy's TP / SP / CP / EP / ETP splits. Forward ops
// are built from the model; input-gradient, weight-gradient and recompute ops are derived
// from them. Communication is added by the communication model, not here.

#include <array>
#include <string>
#include <vector>

#include "paraplan/spec.hpp"

namespace paraplan::model {

enum class Phase { Forward, InputGrad, WeightGrad, Recompute };
enum class OpKind { Gemm, GroupedGemm, Attention, Memory, HostSync };
enum class LayerKind { Dense, Moe, Embedding, Head, Mtp };

/// Which recompute module an op belongs to (Megatron-LM --recompute-modules names).
enum class Module { Norm, AttnProj, MlaUpProj, CoreAttn, Mlp, Router, Experts, ExpertAct, SharedExperts, Other };

/// One kernel-level operation.
struct Op {
  std::string name;
  OpKind kind = OpKind::Memory;
  Phase phase = Phase::Forward;
  Module module = Module::Other;
  double m = 0, n = 0, k = 0;  ///< GEMM dims per group: C[m, n] = A[m, k] B[k, n]
  int groups = 1;              ///< grouped GEMM: experts on this rank
  /// Grouped GEMM: standard deviation of a group's m around `m` (routed rows per expert
  /// under random routing); 0 = every group has m rows (balanced routing, or m is not rows).
  double m_sd = 0;
  double flops = 0;            ///< executed FLOP, all groups
  double bytes = 0;            ///< HBM bytes read + written
  double bwd_bytes = 0;        ///< Memory ops: bytes of the input-gradient pass (0 = none)
  bool per_die = false;        ///< runs on one die (die-level EP) rather than the whole device
  bool low_precision = false;  ///< GEMM in the strategy's precision (FP8 if set), else BF16
  MemClass mem_class = MemClass::Elementwise;  ///< Memory ops: the bandwidth class
  int kernels = 1;             ///< kernels launched (each pays the launch overhead); HostSync: syncs
  int bwd_kernels = 0;         ///< Memory ops: kernels of the backward pass (0 = as forward)
  /// The kernels are the framework's launches one for one (an eager loop the graph spells
  /// out), so device.launches_per_kernel (launches per graph kernel) does not multiply them.
  bool exact_launches = false;
  /// torchtitan's op policy takes this op's result from the forward's cache (a reduce-scatter's
  /// output is in its `_save_list`), so the op does not run again in its backward.
  bool kept_by_op_policy = false;
  /// Replicated across the TP ranks, outside its module's TP block (MLA's down-projections,
  /// on the sequence-parallel rows before the latents are gathered).
  bool replicated = false;
  /// Captured in a CUDA graph (training.cuda_graphs): replayed by one launch of the graph,
  /// not issued by the host kernel by kernel.
  bool graphed = false;
  /// A grouped GEMM run as one persistent kernel over every group (moe.fused_mlp), even where
  /// the hardware's grouped path is a per-group loop.
  bool fused_grouped = false;
  bool causal = true;          ///< Attention: causal mask
  double window = 0;           ///< Attention: keys per query under a sliding window; 0 = none
  double head_dim = 0;         ///< Attention: mean of the query-key and value head dims
  /// FP8: rows of the input quantized before this GEMM; 0 = its m x groups. The routed
  /// experts' tokens are quantized once before the FP8 dispatch, not once per copy.
  double quantized_rows = 0;
  /// A GEMM the graph fuses that a module without fusion runs as separate matmuls (q, k, v;
  /// gate, up): their n in the module's order; all 0 = one matmul. Recompute `op` counts them.
  std::array<double, 3> unfused_n{};
  /// The GEMM runs as the separate matmuls of `unfused_n` (`training.linears: separate`):
  /// their extents along n in the forward and weight-gradient passes, along k in the
  /// input-gradient pass (whose k is the forward's n).
  bool separate = false;
  /// With separate matmuls, what summing their input gradients costs beyond one GEMM's
  /// output: bytes through HBM and kernels of its own (the input-gradient pass adds it as an
  /// op `<name>.dgrad_sum`).
  double grad_sum_bytes = 0;
  int grad_sum_kernels = 0;
};

/// All ops of one layer kind, forward then backward (input grad, weight grad, recompute).
struct Layer {
  LayerKind kind = LayerKind::Dense;
  int count = 0;  ///< how many layers of this kind the model has (whole model)
  std::vector<Op> ops;
};

/// Token counts that shape the ops of one micro-batch on one rank.
struct Tokens {
  double per_device = 0;       ///< tokens through the dense GEMMs: micro_batch x seq / cp
  double per_rank_moe = 0;     ///< tokens a MoE rank (die with ep_over_dies) routes
  double per_expert = 0;       ///< mean routed tokens per expert on one rank
  double per_expert_slowest = 0;  ///< the slowest rank's tokens per expert
  /// Standard deviation of one expert's routed tokens: each of the EP group's tokens picks a
  /// given expert with p = top_k / E, so a count is binomial, variance per_expert (1 - p);
  /// 0 under balanced and round-robin routing.
  double per_expert_sd = 0;
  int experts_per_rank = 0;
};

/// Whether the strategy's low-precision GEMMs run in FP8: it asks for FP8 and the device
/// has an FP8 peak (otherwise they fall back to BF16).
inline bool fp8_gemms(Precision precision, const DeviceSpec& device) {
  return precision == Precision::Fp8 && device.peak(Dtype::Fp8) > 0;
}

/// Token counts for a strategy. `expert_load` = slowest rank's expert load / mean
/// (>= 1; the routing statistics supply it; 1 = perfectly balanced).
Tokens tokens_of(const ModelSpec& m, const Strategy& s, const HardwareSpec& hw, double expert_load);

/// Layer kinds the model has (dense, MoE, embedding, head, MTP), each with its ops.
/// The tensor-parallel block a GEMM belongs to ("attention", "mlp", "shared_experts"; "" for
/// none): its input is all-gathered before the block's first GEMMs (column-parallel) and its
/// last forward GEMM's output (row-parallel) reduce-scattered after, and with overlap.tp the
/// block's exchanges hide under its GEMMs. MLA's down-projections are not in it: replicated,
/// they run on the sequence-parallel rows before the latents are gathered (Megatron-Core's
/// MLASelfAttention).
const char* tp_block(const Op& op);

std::vector<Layer> build_layers(const ModelSpec& m, const Strategy& s, const HardwareSpec& hw,
                                double expert_load);

const char* name(Phase p);
const char* name(OpKind k);
const char* name(LayerKind k);

}  // namespace paraplan::model
