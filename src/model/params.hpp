#pragma once
// Parameter counts of the building blocks of a transformer layer (unsplit, whole model
// dimension). Shared by the model counts, the op graph and the memory model.

#include <cstdint>

#include "paraplan/spec.hpp"

namespace paraplan::model {

/// Per-head query/key width: head_dim, or nope + rope for MLA.
int qk_head_dim(const ModelSpec& m);
/// Per-head value width: head_dim, or v_head_dim for MLA.
int v_head_dim(const ModelSpec& m);
/// Key/value heads one TP rank hands its attention kernel (and exchanges under CP): the
/// query heads / tp, or GQA's kv heads / tp (one replica when tp > kv heads), widened to the
/// query heads by `training.repeat_kv`.
double attention_kv_heads(const ModelSpec& m, const Strategy& s);
/// Sliding-window attention: the share of the layers that attend through the window (0 when
/// the model has no window or the window covers the whole sequence `seq`).
double window_share(const ModelSpec& m, double seq);
/// The causal query-key pairs of one windowed layer relative to a whole-context one over `seq`
/// tokens: each query meets min(position, window) keys, so w s - w^2 / 2 of s^2 / 2, i.e.
/// 2x - x^2 for x = window / seq (1 when the window covers the sequence).
double window_pair_fraction(const ModelSpec& m, double seq);
/// One norm's parameters: h (RMSNorm) or 2h (LayerNorm: gain and bias).
std::int64_t norm_params(const ModelSpec& m, int width);
/// Attention block of one layer: projections (with biases if any) and MLA's inner norms.
std::int64_t attention_params(const ModelSpec& m);
/// A feed-forward block of width `intermediate`: 3hf (SwiGLU) or 2hf (GeLU) + biases.
std::int64_t ffn_params(const ModelSpec& m, int intermediate);
/// MoE router: routed_experts x h.
std::int64_t router_params(const ModelSpec& m);
/// All shared experts of one MoE layer.
std::int64_t shared_experts_params(const ModelSpec& m);
/// Dense layer: 2 norms + attention + dense FFN.
std::int64_t dense_layer_params(const ModelSpec& m);
/// MoE layer: 2 norms + attention + router + shared + all routed experts.
std::int64_t moe_layer_params(const ModelSpec& m);
/// Parameters of an MoE layer used by one token: as above with top_k routed experts.
std::int64_t moe_layer_active_params(const ModelSpec& m);
/// Number of MoE layers.
int moe_layers(const ModelSpec& m);
/// Number of dense layers.
int dense_layers(const ModelSpec& m);

}  // namespace paraplan::model
