#include <string>

#include "config/parse.hpp"
#include "config/reader.hpp"

namespace paraplan::config {
namespace {

const EnumNames<AttentionKind> kAttentionNames{
    {"mha", AttentionKind::Mha}, {"gqa", AttentionKind::Gqa}, {"mla", AttentionKind::Mla}};
const EnumNames<FfnKind> kFfnNames{{"swiglu", FfnKind::Swiglu}, {"gelu", FfnKind::Gelu}};
const EnumNames<NormKind> kNormNames{{"rmsnorm", NormKind::RmsNorm},
                                     {"layernorm", NormKind::LayerNorm}};
const EnumNames<PositionEmbedding> kPositionNames{{"rope", PositionEmbedding::Rope},
                                                  {"learned", PositionEmbedding::Learned},
                                                  {"alibi", PositionEmbedding::Alibi},
                                                  {"none", PositionEmbedding::None}};

constexpr int kMaxDim = 1 << 24;

AttentionSpec read_attention(MapReader& root, int hidden, int layers, Diags& diags) {
  AttentionSpec a;
  const Node* node = root.get("attention", Need::Required);
  MapReader r(node, diags, "attention", root.loc());
  if (node == nullptr) return a;
  if (auto v = r.enumeration("kind", kAttentionNames, Need::Required)) a.kind = *v;
  if (auto v = r.count("heads", Need::Required, 1, kMaxDim)) a.heads = *v;
  const bool mla = a.kind == AttentionKind::Mla;
  const bool gqa = a.kind == AttentionKind::Gqa;
  auto only = [&](std::string_view key, bool allowed, std::string_view kinds) {
    if (!allowed && r.get(key) != nullptr) {
      diags.error(r.get(key)->loc, "`attention." + std::string(key) + "` applies only to " +
                                       std::string(kinds) + " attention");
    }
  };
  a.kv_heads = a.heads;
  if (auto v = r.count("kv_heads", gqa ? Need::Required : Need::Optional, 1, kMaxDim)) {
    a.kv_heads = *v;
    if (!gqa && *v != a.heads) {
      diags.error(r.get("kv_heads")->loc, "`attention.kv_heads` differs from `heads`: use `kind: gqa`");
    }
    if (gqa && a.heads > 0 && a.heads % *v != 0) {
      diags.error(r.get("kv_heads")->loc, "`attention.heads` " + std::to_string(a.heads) +
                                              " is not a multiple of `kv_heads` " +
                                              std::to_string(*v));
    }
  }
  only("head_dim", !mla, "MHA and GQA");
  if (auto v = r.count("head_dim", Need::Optional, 1, kMaxDim)) {
    a.head_dim = *v;
  } else if (!mla && a.heads > 0 && hidden > 0) {
    if (hidden % a.heads != 0) {
      diags.error(r.loc(), "`hidden` " + std::to_string(hidden) + " is not divisible by `heads` " +
                               std::to_string(a.heads) + "; give `attention.head_dim`");
    }
    a.head_dim = hidden / a.heads;
  }
  for (std::string_view key : {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                               "qk_rope_head_dim", "v_head_dim"}) {
    only(key, mla, "MLA");
  }
  if (mla) {
    if (auto v = r.count("q_lora_rank", Need::Optional, 0, kMaxDim)) a.q_lora_rank = *v;
    if (auto v = r.count("kv_lora_rank", Need::Required, 1, kMaxDim)) a.kv_lora_rank = *v;
    if (auto v = r.count("qk_nope_head_dim", Need::Required, 1, kMaxDim)) a.qk_nope_head_dim = *v;
    if (auto v = r.count("qk_rope_head_dim", Need::Required, 0, kMaxDim)) a.qk_rope_head_dim = *v;
    if (auto v = r.count("v_head_dim", Need::Required, 1, kMaxDim)) a.v_head_dim = *v;
  }
  only("qk_norm", !mla, "MHA and GQA");
  if (auto v = r.boolean("qk_norm")) a.qk_norm = *v;
  if (auto v = r.count("window", Need::Optional, 1, 1 << 28)) {
    a.window = *v;
    a.window_layers = layers;
  }
  if (auto v = r.count("window_layers", Need::Optional, 0, 1 << 16)) {
    if (a.window == 0) {
      diags.error(r.get("window_layers")->loc, "`attention.window_layers` needs `attention.window`");
    } else if (layers > 0 && *v > layers) {
      diags.error(r.get("window_layers")->loc, "`attention.window_layers` " + std::to_string(*v) +
                                                   " exceeds `layers` " + std::to_string(layers));
    } else {
      a.window_layers = *v;
    }
  }
  r.finish();
  return a;
}

std::optional<MoeSpec> read_moe(MapReader& root, int layers, Diags& diags) {
  const Node* node = root.get("moe");
  if (node == nullptr) return std::nullopt;
  MoeSpec m;
  MapReader r(node, diags, "moe");
  if (auto v = r.count("dense_layers", Need::Optional, 0, kMaxDim)) m.dense_layers = *v;
  if (auto v = r.count("routed_experts", Need::Required, 1, kMaxDim)) m.routed_experts = *v;
  if (auto v = r.count("shared_experts", Need::Optional, 0, kMaxDim)) m.shared_experts = *v;
  if (auto v = r.count("top_k", Need::Required, 1, kMaxDim)) m.top_k = *v;
  if (auto v = r.count("expert_intermediate", Need::Required, 1, kMaxDim)) {
    m.expert_intermediate = *v;
  }
  m.shared_expert_intermediate = m.expert_intermediate;
  if (auto v = r.count("shared_expert_intermediate", Need::Optional, 1, kMaxDim)) {
    m.shared_expert_intermediate = *v;
  }
  if (auto v = r.count("max_nodes_per_token", Need::Optional, 0, kMaxDim)) {
    m.max_nodes_per_token = *v;
  }
  if (auto v = r.count("groups", Need::Optional, 1, kMaxDim)) {
    m.expert_groups = *v;
    if (m.routed_experts > 0 && m.routed_experts % m.expert_groups != 0) {
      diags.error(r.get("groups")->loc, "`moe.groups` " + std::to_string(m.expert_groups) +
                                            " does not divide `moe.routed_experts` " +
                                            std::to_string(m.routed_experts));
    }
  }
  if (m.top_k > m.routed_experts && m.routed_experts > 0) {
    diags.error(r.get("top_k")->loc, "`moe.top_k` " + std::to_string(m.top_k) +
                                         " exceeds `moe.routed_experts` " +
                                         std::to_string(m.routed_experts));
  }
  if (layers > 0 && m.dense_layers >= layers) {
    diags.error(r.get("dense_layers")->loc, "`moe.dense_layers` " +
                                                std::to_string(m.dense_layers) +
                                                " leaves no MoE layer of " +
                                                std::to_string(layers));
  }
  r.finish();
  return m;
}

}  // namespace

ModelSpec read_model(const Node& root, Diags& diags) {
  ModelSpec m;
  MapReader r(&root, diags, "");
  if (r.node() == nullptr) return m;
  if (auto v = r.text("name", Need::Required)) m.name = *v;
  if (auto v = r.text("description")) m.description = *v;
  m.sources = r.text_list("sources");
  if (auto v = r.count("layers", Need::Required, 1, 1 << 16)) m.layers = *v;
  if (auto v = r.count("hidden", Need::Required, 1, kMaxDim)) m.hidden = *v;
  if (auto v = r.count("vocab", Need::Required, 1, 1 << 28)) m.vocab = *v;
  if (auto v = r.count("seq_len", Need::Required, 1, 1 << 28)) m.seq_len = *v;
  if (auto v = r.boolean("tied_embeddings")) m.tied_embeddings = *v;
  if (auto v = r.enumeration("norm", kNormNames)) m.norm = *v;
  if (auto v = r.boolean("bias")) m.bias = *v;
  if (auto v = r.enumeration("position_embedding", kPositionNames)) m.position_embedding = *v;
  m.attention = read_attention(r, m.hidden, m.layers, diags);
  {
    const Node* node = r.get("ffn", Need::Required);
    MapReader f(node, diags, "ffn", r.loc());
    if (node != nullptr) {
      if (auto v = f.enumeration("kind", kFfnNames, Need::Required)) m.ffn.kind = *v;
      if (auto v = f.count("intermediate", Need::Required, 1, kMaxDim)) m.ffn.intermediate = *v;
      if (auto v = f.number("clamp", 1e-3, 1e6)) {
        m.ffn.clamp = *v;
        if (m.ffn.kind != FfnKind::Swiglu) {
          diags.error(f.get("clamp")->loc, "`ffn.clamp` clamps the halves of a gated (GLU) FFN: use `kind: swiglu`");
        }
      }
    }
    f.finish();
  }
  m.moe = read_moe(r, m.layers, diags);
  if (auto v = r.count("mtp_depth", Need::Optional, 0, 64)) m.mtp_depth = *v;
  if (auto v = r.number("attention_dropout", 0.0, 0.99)) m.attention_dropout = *v;
  if (auto v = r.number("hidden_dropout", 0.0, 0.99)) m.hidden_dropout = *v;
  r.finish();
  return m;
}

}  // namespace paraplan::config
