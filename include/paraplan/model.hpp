#pragma once
/// Exact parameter and FLOP counts of a model (no strategy involved).

#include <cstdint>

#include "paraplan/export.hpp"
#include "paraplan/spec.hpp"

namespace paraplan {

/// Parameter and training-FLOP counts. Parameters are exact integers.
///
/// FLOP convention (also used for MFU): a multiply-add is 2 FLOP; training = forward +
/// backward = 3 x forward; forward per token = 2 x (active parameters used in matrix
/// multiplies: every linear layer including the LM head, not the embedding lookup, norms
/// or biases) + causal attention counted once: per layer 2 x heads x seq x (d_qk + d_v) / 2
/// (QK^T and PV over the lower triangle). Recompute is not model FLOPs.
struct ModelCounts {
  std::int64_t total_params = 0;      ///< main model: embeddings, all layers, final norm, head
  std::int64_t active_params = 0;     ///< per token: attention, dense FFN, shared + top_k routed experts
  std::int64_t embedding_params = 0;  ///< input embedding (+ learned positions)
  std::int64_t head_params = 0;       ///< output head; 0 when tied to the embedding
  std::int64_t mtp_params = 0;        ///< MTP modules' own weights (embedding and head are shared)
  std::int64_t mtp_active_params = 0; ///< MTP parameters used per token
  std::int64_t dense_layer_params = 0;  ///< one dense transformer layer
  std::int64_t moe_layer_params = 0;    ///< one MoE transformer layer (0 for dense models)
  std::int64_t expert_params = 0;       ///< one routed expert
  double flops_per_token = 0;           ///< training FLOP per token, main model (see above)
  double attention_flops_per_token = 0; ///< the causal-attention part of flops_per_token
  double mtp_flops_per_token = 0;       ///< training FLOP per token of the MTP modules
};

/// Counts for `model` at sequence length `seq_len` (0 = the model's).
[[nodiscard]] PARAPLAN_EXPORT ModelCounts count_model(const ModelSpec& model, int seq_len = 0);

}  // namespace paraplan
