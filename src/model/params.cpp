#include "model/params.hpp"

#include <algorithm>

#include "paraplan/model.hpp"

namespace paraplan::model {

int qk_head_dim(const ModelSpec& m) {
  const AttentionSpec& a = m.attention;
  return a.kind == AttentionKind::Mla ? a.qk_nope_head_dim + a.qk_rope_head_dim : a.head_dim;
}

int v_head_dim(const ModelSpec& m) {
  const AttentionSpec& a = m.attention;
  return a.kind == AttentionKind::Mla ? a.v_head_dim : a.head_dim;
}

double attention_kv_heads(const ModelSpec& m, const Strategy& s) {
  const AttentionSpec& a = m.attention;
  const double t = s.parallel.tp;
  if (a.kind == AttentionKind::Gqa && !s.training.repeat_kv) return std::max(1.0, a.kv_heads / t);
  return a.heads / t;
}

double window_share(const ModelSpec& m, double seq) {
  const AttentionSpec& a = m.attention;
  if (a.window <= 0 || a.window >= seq || m.layers <= 0) return 0.0;
  return static_cast<double>(a.window_layers) / m.layers;
}

double window_pair_fraction(const ModelSpec& m, double seq) {
  const double w = m.attention.window;
  if (w <= 0 || w >= seq) return 1.0;
  const double x = w / seq;
  return 2 * x - x * x;
}

std::int64_t norm_params(const ModelSpec& m, int width) {
  return (m.norm == NormKind::LayerNorm ? 2 : 1) * static_cast<std::int64_t>(width);
}

std::int64_t attention_params(const ModelSpec& m) {
  const AttentionSpec& a = m.attention;
  const std::int64_t h = m.hidden, heads = a.heads;
  if (a.kind == AttentionKind::Mla) {
    // DeepSeek-V2/V3 MLA (arXiv 2405.04434 sec. 2.1): q = W_UQ norm(W_DQ x), [c_kv, k_rope]
    // = W_DKV x, [k_nope, v] = W_UKV norm(c_kv), out = W_O o.
    const std::int64_t qk = qk_head_dim(m), rope = a.qk_rope_head_dim;
    std::int64_t q = a.q_lora_rank > 0 ? h * a.q_lora_rank + norm_params(m, a.q_lora_rank) +
                                             static_cast<std::int64_t>(a.q_lora_rank) * heads * qk
                                       : h * heads * qk;
    std::int64_t kv = h * (a.kv_lora_rank + rope) + norm_params(m, a.kv_lora_rank) +
                      static_cast<std::int64_t>(a.kv_lora_rank) * heads *
                          (a.qk_nope_head_dim + a.v_head_dim);
    std::int64_t o = heads * a.v_head_dim * h;
    return q + kv + o;
  }
  const std::int64_t d = a.head_dim, kv_heads = a.kv_heads;
  std::int64_t weights = h * heads * d + 2 * h * kv_heads * d + heads * d * h;
  std::int64_t biases = m.bias ? heads * d + 2 * kv_heads * d + h : 0;
  // qk-norm: one norm of head_dim shared by the query heads, one by the key heads.
  std::int64_t qk_norms = a.qk_norm ? 2 * norm_params(m, a.head_dim) : 0;
  return weights + biases + qk_norms;
}

std::int64_t ffn_params(const ModelSpec& m, int intermediate) {
  const std::int64_t h = m.hidden, f = intermediate;
  if (m.ffn.kind == FfnKind::Swiglu) return 3 * h * f + (m.bias ? 2 * f + h : 0);
  return 2 * h * f + (m.bias ? f + h : 0);
}

// The gate's weights, and with linear biases one per expert (Megatron-Core's TopKRouter under
// add_bias_linear, GPT-OSS's router).
std::int64_t router_params(const ModelSpec& m) {
  return m.moe ? static_cast<std::int64_t>(m.moe->routed_experts) * (m.hidden + (m.bias ? 1 : 0)) : 0;
}

std::int64_t shared_experts_params(const ModelSpec& m) {
  return m.moe ? m.moe->shared_experts * ffn_params(m, m.moe->shared_expert_intermediate) : 0;
}

std::int64_t dense_layer_params(const ModelSpec& m) {
  return 2 * norm_params(m, m.hidden) + attention_params(m) + ffn_params(m, m.ffn.intermediate);
}

std::int64_t moe_layer_params(const ModelSpec& m) {
  if (!m.moe) return 0;
  return 2 * norm_params(m, m.hidden) + attention_params(m) + router_params(m) +
         shared_experts_params(m) + m.moe->routed_experts * ffn_params(m, m.moe->expert_intermediate);
}

std::int64_t moe_layer_active_params(const ModelSpec& m) {
  if (!m.moe) return 0;
  return 2 * norm_params(m, m.hidden) + attention_params(m) + router_params(m) +
         shared_experts_params(m) + m.moe->top_k * ffn_params(m, m.moe->expert_intermediate);
}

int moe_layers(const ModelSpec& m) { return m.moe ? m.layers - m.moe->dense_layers : 0; }
int dense_layers(const ModelSpec& m) { return m.layers - moe_layers(m); }

namespace {

// Parameters of one layer that sit in matrix multiplies per token (no norms, no biases):
// what the 6N FLOP rule counts.
std::int64_t matmul_params(const ModelSpec& m, bool moe_layer) {
  ModelSpec plain = m;
  plain.bias = false;
  std::int64_t attn = attention_params(plain);
  if (m.attention.kind == AttentionKind::Mla) {
    attn -= norm_params(m, m.attention.kv_lora_rank);
    if (m.attention.q_lora_rank > 0) attn -= norm_params(m, m.attention.q_lora_rank);
  }
  if (!moe_layer) return attn + ffn_params(plain, m.ffn.intermediate);
  return attn + router_params(plain) + shared_experts_params(plain) +
         m.moe->top_k * ffn_params(plain, m.moe->expert_intermediate);
}

// Causal attention forward FLOP per token per layer: QK^T and PV over the lower triangle,
// 2 x heads x s x (d_qk + d_v) / 2; windowed layers over the pairs their window keeps,
// averaged over the layers.
double attention_fwd_flops_per_token(const ModelSpec& m, int seq) {
  const double share = window_share(m, seq);
  const double pairs = 1.0 - share + share * window_pair_fraction(m, seq);
  return static_cast<double>(m.attention.heads) * seq * (qk_head_dim(m) + v_head_dim(m)) * pairs;
}

}  // namespace

}  // namespace paraplan::model

namespace paraplan {

ModelCounts count_model(const ModelSpec& m, int seq_len) {
  using namespace model;
  const int seq = seq_len > 0 ? seq_len : m.seq_len;
  const std::int64_t h = m.hidden;
  ModelCounts c;
  c.embedding_params = static_cast<std::int64_t>(m.vocab) * h +
                       (m.position_embedding == PositionEmbedding::Learned ? std::int64_t{seq} * h : 0);
  c.head_params = m.tied_embeddings ? 0 : static_cast<std::int64_t>(m.vocab) * h;
  c.dense_layer_params = dense_layer_params(m);
  c.moe_layer_params = moe_layer_params(m);
  c.expert_params = m.moe ? ffn_params(m, m.moe->expert_intermediate) : 0;
  const std::int64_t final_norm = norm_params(m, m.hidden);
  const std::int64_t outside = c.embedding_params + c.head_params + final_norm;
  c.total_params = outside + dense_layers(m) * c.dense_layer_params + moe_layers(m) * c.moe_layer_params;
  c.active_params = outside + dense_layers(m) * c.dense_layer_params +
                    moe_layers(m) * moe_layer_active_params(m);

  // The output projection is a matmul whether tied or not.
  const double head_matmul = static_cast<double>(m.vocab) * h;
  const double layer_matmuls = dense_layers(m) * static_cast<double>(matmul_params(m, false)) +
                               moe_layers(m) * static_cast<double>(m.moe ? matmul_params(m, true) : 0);
  c.attention_flops_per_token = 3.0 * m.layers * attention_fwd_flops_per_token(m, seq);
  c.flops_per_token = 6.0 * (layer_matmuls + head_matmul) + c.attention_flops_per_token;

  // MTP (DeepSeek-V3 sec. 2.2): per depth, norms of the hidden state and of the embedding,
  // a 2h -> h projection, one transformer block (MoE when the model is) and the shared head
  // behind its own final norm.
  if (m.mtp_depth > 0) {
    const bool moe_block = m.moe.has_value();
    const std::int64_t block = moe_block ? c.moe_layer_params : c.dense_layer_params;
    const std::int64_t block_active = moe_block ? moe_layer_active_params(m) : c.dense_layer_params;
    const std::int64_t own = 3 * final_norm + 2 * h * h;
    c.mtp_params = m.mtp_depth * (own + block);
    c.mtp_active_params = m.mtp_depth * (own + block_active);
    const double mtp_matmul = 2.0 * h * h + matmul_params(m, moe_block) + head_matmul;
    c.mtp_flops_per_token =
        m.mtp_depth * (6.0 * mtp_matmul + 3.0 * attention_fwd_flops_per_token(m, seq));
  }
  return c;
}

}  // namespace paraplan
