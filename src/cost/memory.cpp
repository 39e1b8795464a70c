#include "cost/memory.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>

#include "model/op_graph.hpp"
#include "model/params.hpp"
#include "paraplan/units.hpp"

namespace paraplan::cost {
namespace {

// What a stored tensor is, for the recompute rules and the by-module breakdown.
enum class Tag {
  NormInput,      // inputs of the two layer norms (kept for their backward)
  NormOutput,     // outputs of the two layer norms = inputs of attention and MLP/MoE GEMMs
  MlaCompressed,  // MLA q_a / kv_a outputs: compressed q and kv, with the shared k_rope
  MlaUp,          // MLA q/kv norm outputs and up-projected q, k, v (with rope parts)
  AttnQkv,        // MHA/GQA q, k, v
  CoreAttn,       // flash: FP32 log-sum-exp; otherwise the s x s softmax, mask, dropout output
  AttnOut,        // attention output = o_proj input
  Dropout,        // 1-byte hidden-dropout masks (Korthikanti et al. 2022; GPT-3-era models)
  Mlp,            // dense MLP fc1 (gate/up) output
  MlpAct,         // dense MLP activation output = fc2 input
  Router,         // FP32 router scores and the routing map
  Dispatched,     // top-k token copies on this rank after dispatch (slowest rank)
  ExpertFc1,      // expert gate/up outputs
  ExpertAct,      // expert activation outputs = expert down-projection inputs
  ExpertOut,      // expert outputs, kept for the probability-weighted combine
  Shared,         // shared-expert intermediates
};

const char* part_name(Tag t) {
  switch (t) {
    case Tag::NormInput:
      return "norm_inputs";
    case Tag::NormOutput:
      return "norm_outputs";
    case Tag::MlaCompressed:
      return "mla.compressed";
    case Tag::MlaUp:
      return "mla.up_proj";
    case Tag::AttnQkv:
      return "attention.qkv";
    case Tag::CoreAttn:
      return "attention.core";
    case Tag::AttnOut:
      return "attention.output";
    case Tag::Dropout:
      return "dropout_masks";
    case Tag::Mlp:
      return "mlp.fc1";
    case Tag::MlpAct:
      return "mlp.act";
    case Tag::Router:
      return "moe.router";
    case Tag::Dispatched:
      return "moe.dispatched";
    case Tag::ExpertFc1:
      return "moe.expert_fc1";
    case Tag::ExpertAct:
      return "moe.expert_act";
    case Tag::ExpertOut:
      return "moe.expert_output";
    case Tag::Shared:
      return "moe.shared_experts";
  }
  return "?";
}

// Megatron-LM --recompute-modules: which stored tensors a module's recompute drops.
bool recomputed(const Recompute& r, Tag t) {
  switch (r.mode) {
    case RecomputeMode::None:
    case RecomputeMode::Full:
    case RecomputeMode::Op:
      return false;  // full and op are handled by the caller
    case RecomputeMode::Selective:
      return t == Tag::CoreAttn;  // Korthikanti et al. 2022
    case RecomputeMode::Modules:
      break;
  }
  switch (t) {
    case Tag::CoreAttn:
      return r.has(RecomputeModule::CoreAttn);
    case Tag::NormOutput:
      return r.has(RecomputeModule::LayerNorm);
    case Tag::MlaUp:
      return r.has(RecomputeModule::MlaUpProj);
    case Tag::Mlp:
    case Tag::MlpAct:
      return r.has(RecomputeModule::Mlp);
    case Tag::Router:
    case Tag::Dispatched:
    case Tag::ExpertFc1:
    case Tag::ExpertOut:
      return r.has(RecomputeModule::Moe);
    case Tag::ExpertAct:
      return r.has(RecomputeModule::Moe) || r.has(RecomputeModule::MoeAct);
    case Tag::Shared:
      return r.has(RecomputeModule::Moe) || r.has(RecomputeModule::SharedExperts);
    case Tag::NormInput:
    case Tag::MlaCompressed:
    case Tag::AttnQkv:
    case Tag::AttnOut:
    case Tag::Dropout:
      return false;
  }
  return false;
}

void add_part(std::vector<MemoryPart>& parts, const std::string& name, double bytes) {
  if (bytes <= 0) return;
  for (MemoryPart& p : parts) {
    if (p.name == name) {
      p.bytes += bytes;
      return;
    }
  }
  parts.push_back({name, bytes});
}

void add_parts(std::vector<MemoryPart>& to, const std::vector<MemoryPart>& from, double factor) {
  for (const MemoryPart& p : from) add_part(to, p.name, p.bytes * factor);
}

int seq_of(const Plan& plan) {
  return plan.strategy.training.seq_len > 0 ? plan.strategy.training.seq_len : plan.model.seq_len;
}

// Tokens through norms, residuals and saved GEMM inputs: T / tp with sequence parallelism
// (MoE layers with tp > 1 always use it, as Megatron-Core requires), else T.
double replicated_tokens(const Plan& plan, double T) {
  const Parallel& p = plan.strategy.parallel;
  const bool sp = p.sp || (plan.model.moe && p.tp > 1);
  return sp ? T / p.tp : T;
}

int dies_per_rank_group(const Plan& plan) {
  return plan.strategy.ep_over_dies ? std::max(1, plan.hardware.device.dies) : 1;
}

// Attention parameters on one TP rank: column-parallel projections split by t, MLA's down-
// projections and their norms replicated; GQA with t > kv_heads keeps one KV head per rank.
double attention_params_per_rank(const ModelSpec& m, double t) {
  const AttentionSpec& a = m.attention;
  const double h = m.hidden, heads = a.heads;
  const double dqk = model::qk_head_dim(m), dv = model::v_head_dim(m);
  if (a.kind == AttentionKind::Mla) {
    double q = a.q_lora_rank > 0
                   ? h * a.q_lora_rank + static_cast<double>(model::norm_params(m, a.q_lora_rank)) +
                         static_cast<double>(a.q_lora_rank) * heads * dqk / t
                   : h * heads * dqk / t;
    double kv =
        h * (a.kv_lora_rank + a.qk_rope_head_dim) +
        static_cast<double>(model::norm_params(m, a.kv_lora_rank)) +
        static_cast<double>(a.kv_lora_rank) * heads * (a.qk_nope_head_dim + a.v_head_dim) / t;
    return q + kv + heads * dv * h / t;
  }
  const double d = a.head_dim;
  const double kvh = t <= a.kv_heads ? a.kv_heads / t : 1.0;
  double w = h * heads * d / t + 2 * h * kvh * d + heads * d * h / t;
  double b = m.bias ? heads * d / t + 2 * kvh * d + h : 0.0;
  // qk-norm weights are replicated over TP
  const double qk = a.qk_norm ? 2.0 * static_cast<double>(model::norm_params(m, a.head_dim)) : 0.0;
  return w + b + qk;
}

// A feed-forward block of width f split t ways (row-parallel output bias replicated).
double ffn_params_per_rank(const ModelSpec& m, double f, double t) {
  const double h = m.hidden;
  if (m.ffn.kind == FfnKind::Swiglu) return 3 * h * f / t + (m.bias ? 2 * f / t + h : 0.0);
  return 2 * h * f / t + (m.bias ? f / t + h : 0.0);
}

double dense_layer_params_per_rank(const ModelSpec& m, double t) {
  return 2.0 * static_cast<double>(model::norm_params(m, m.hidden)) +
         attention_params_per_rank(m, t) + ffn_params_per_rank(m, m.ffn.intermediate, t);
}

// A MoE layer on one device, without its routed experts.
double moe_layer_dense_params_per_rank(const ModelSpec& m, double t) {
  if (!m.moe) return 0;
  return 2.0 * static_cast<double>(model::norm_params(m, m.hidden)) +
         attention_params_per_rank(m, t) + static_cast<double>(model::router_params(m)) +
         m.moe->shared_experts * ffn_params_per_rank(m, m.moe->shared_expert_intermediate, t);
}

// Routed-expert parameters of one MoE layer on one device (card).
double moe_layer_expert_params_per_device(const Plan& plan) {
  const ModelSpec& m = plan.model;
  if (!m.moe) return 0;
  const Parallel& p = plan.strategy.parallel;
  const double experts =
      static_cast<double>(m.moe->routed_experts) / p.ep * dies_per_rank_group(plan);
  return experts * ffn_params_per_rank(m, m.moe->expert_intermediate, p.etp);
}

// Activations of the head chunk's extras for one micro-batch (per set): final norm input and
// LM-head input; per MTP depth also its two norm inputs, the 2h concatenation fed to eh_proj,
// its final norm input and head input. MTP's transformer block is counted as a layer.
std::vector<MemoryPart> head_activations(const Plan& plan, double Tr) {
  const double h = plan.model.hidden;
  std::vector<MemoryPart> parts;
  add_part(parts, "head", 2 * Tr * h * kBf16Bytes);
  if (plan.model.mtp_depth > 0)
    add_part(parts, "mtp", plan.model.mtp_depth * 6 * Tr * h * kBf16Bytes);
  return parts;
}

// Communication buffers of the MoE dispatch on one device (card), the dispatch's transient
// working memory on top of the stored activations.
double dispatch_buffer_bytes(const Plan& plan, const model::Tokens& tok) {
  const ModelSpec& m = plan.model;
  if (!m.moe) return 0;
  const Strategy& s = plan.strategy;
  const double h = m.hidden, k = m.moe->top_k, E = m.moe->routed_experts;
  const double dies = dies_per_rank_group(plan);
  const double Tr = tok.per_rank_moe;  // tokens one MoE rank routes
  const double group = static_cast<double>(s.parallel.ep) * s.parallel.etp;
  // Allgather: the tokens of the whole EP x ETP group plus their FP32 probabilities and
  // routing map. With ep_over_dies one gathered buffer per card serves both dies (the seeds'
  // "112 MB x 8 = 896 MB each rank receives", SEED_DIGEST sec. 5.1).
  const double gathered = group * Tr * (h * kBf16Bytes + E * (kFp32Bytes + 1.0));
  // All-to-all / DeepEP: the rank's top-k copies staged for sending (DeepEP: the seeds'
  // staging buffer at its upper bound 8 x 112 MB per card, SEED_DIGEST sec. 5.12).
  const double copies = k * Tr * h * kBf16Bytes * dies;
  // Inter-node send/recv first hop: a staging buffer for the tokens of the mate rank; in
  // chunks, two chunks' worth (one arriving while the intra-node stage reads the other).
  const int chunks = std::max(1, s.moe.chunks);
  const double staging = Tr * h * kBf16Bytes * dies * std::min(1.0, 2.0 / chunks);
  switch (s.moe.dispatch) {
    case Dispatch::AllGather:
      return gathered;
    case Dispatch::AllToAll:
    case Dispatch::DeepEp:
      return copies;
    case Dispatch::SendRecvAllGather:
      return staging + gathered;
    case Dispatch::SendRecvDeepEp:
      return staging + copies;
  }
  return 0;
}

std::string gb(double bytes) { return units::format_size(bytes); }

}  // namespace

double sum(const std::vector<MemoryPart>& parts) {
  double s = 0;
  for (const MemoryPart& p : parts) s += p.bytes;
  return s;
}

std::vector<MemoryPart> layer_activations(const Plan& plan, bool moe_layer, double expert_load,
                                          const ActivationOptions& opt, bool apply_recompute) {
  const ModelSpec& m = plan.model;
  const Strategy& s = plan.strategy;
  const model::Tokens tok = model::tokens_of(m, s, plan.hardware, expert_load * s.moe.imbalance);
  const double t = s.parallel.tp;
  const double T = tok.per_device;               // b s / cp
  const double Tr = replicated_tokens(plan, T);  // T / t with SP
  const double h = m.hidden;
  const AttentionSpec& a = m.attention;
  const double heads = a.heads / t;
  const double dqk = model::qk_head_dim(m), dv = model::v_head_dim(m);
  const bool swiglu = m.ffn.kind == FfnKind::Swiglu;
  const double kvh = std::max(1.0, a.kv_heads / t);  // GQA kv heads per rank (one when t > kv_heads)
  const double f = m.ffn.intermediate / t;            // dense FFN width per rank
  // MoE: the slowest rank's routed copies (a card holds all its dies' ranks); shared width.
  const double copies = m.moe ? tok.per_expert_slowest * tok.experts_per_rank * dies_per_rank_group(plan) : 0.0;
  const double fs = m.moe ? static_cast<double>(m.moe->shared_experts) * m.moe->shared_expert_intermediate / t : 0.0;
  // FP8 training keeps the quantized (column-wise) copy of each FP8 GEMM's input for its
  // weight gradient, 1 B per element, instead of the BF16 input (Transformer Engine's FP8
  // Linear; DeepSeek-V3 sec. 3.3.3 caches activations in FP8). Inputs other ops also need
  // in backward stay BF16: norm inputs, SwiGLU inputs, q/k/v, the attention output O (the
  // flash backward reads it, so O is kept in BF16 beside its FP8 copy).
  const bool fp8 = model::fp8_gemms(s.training.precision, plan.hardware.device);
  const double gemm_in = fp8 ? 1.0 : kBf16Bytes;
  // DeepSeek-V3's low-precision storage (sec. 3.3.3): the attention output once in FP8
  // (E5M6), the experts' SwiGLU inputs in FP8.
  const bool low_store = fp8 && s.training.fp8_storage;

  struct Stored {
    Tag tag;
    double bytes;
  };
  std::vector<Stored> st;
  auto keep = [&](Tag tag, double elems, double bytes_per_elem) {
    st.push_back({tag, elems * bytes_per_elem});
  };

  // Korthikanti et al. 2022, sec. 4.1: each layer norm keeps its input (2sbh), and the GEMMs
  // after it keep its output (QKV input 2sbh, MLP input 2sbh). With SP all of them are the
  // sequence shard (the gathered input is re-gathered in backward).
  keep(Tag::NormInput, 2 * Tr * h, kBf16Bytes);
  keep(Tag::NormOutput, 2 * Tr * h, gemm_in);
  // Eager elementwise (`training.elementwise: eager`, torchtitan without torch.compile): an
  // RMSNorm written as x.float() * rsqrt(x.pow(2).mean(-1) + eps), cast back and scaled,
  // leaves autograd the FP32 copy of its input (pow's) and the BF16 normalized tensor
  // (the weight multiply's) instead of the BF16 input a fused norm keeps: 4 B more per
  // element (pytorch/torchtitan@9dec370 torchtitan/models/norms.py, RMSNorm._norm). A
  // LayerNorm is one ATen kernel (native_layer_norm) eager or not, and keeps what a fused one does.
  const bool eager = s.training.eager_elementwise;
  if (eager && m.norm == NormKind::RmsNorm) keep(Tag::NormInput, 2 * Tr * h, kFp32Bytes);

  if (a.kind == AttentionKind::Mla) {
    // DeepSeek-V2 MLA: q_a and kv_a project the SP shard; q_b / kv_b are column-parallel.
    if (a.q_lora_rank > 0) {
      keep(Tag::MlaCompressed, Tr * a.q_lora_rank, kBf16Bytes);  // q_a out = q norm input
      keep(Tag::MlaUp, Tr * a.q_lora_rank, gemm_in);             // q norm out = q_b input
    }
    keep(Tag::MlaCompressed, Tr * (a.kv_lora_rank + a.qk_rope_head_dim),
         kBf16Bytes);                                          // c_kv, k_rope
    keep(Tag::MlaUp, Tr * a.kv_lora_rank, gemm_in);            // kv norm out = kv_b input
    keep(Tag::MlaUp, T * heads * (2 * dqk + dv), kBf16Bytes);  // q, k (nope + rope), v
  } else {
    // Q and K (4sbh/t) and V (2sbh/t) for MHA; GQA keeps its kv heads, or the query heads'
    // width when repeat_kv expanded them before the attention (which saves its inputs).
    const double kv_kept = s.training.repeat_kv ? heads : kvh;
    keep(Tag::AttnQkv, T * (heads * dqk + kv_kept * dqk + kv_kept * dv), kBf16Bytes);
    // qk-norm keeps its inputs, q and k before the norm, beside the normalized ones
    if (a.qk_norm) keep(Tag::AttnQkv, T * (heads + kvh) * dqk, kBf16Bytes);
  }
  if (opt.flash_attention) {
    keep(Tag::CoreAttn, T * heads, kFp32Bytes);  // log-sum-exp per query and head
  } else {
    // softmax output (2 B), with dropout also its mask (1 B) and output (2 B): Korthikanti
    // et al. 2022's 5 a s^2 b / t bytes, 2 a s^2 b / t without dropout; a rank of a
    // context-parallel group holds s / cp queries against all s keys.
    const double b = s.training.micro_batch, seq = seq_of(plan);
    keep(Tag::CoreAttn, (opt.attention_dropout ? 5.0 : 2.0) * b * heads * (seq / s.parallel.cp) * seq, 1.0);
  }
  // o_proj input (= flash output O); with FP8 also its FP8 copy
  keep(Tag::AttnOut, T * heads * dv, low_store ? 1.0 : fp8 ? kBf16Bytes + 1.0 : kBf16Bytes);
  if (opt.hidden_dropout) keep(Tag::Dropout, Tr * h, 1.0);  // after attention

  // Eager SwiGLU, silu(x W1) * (x W3): the multiply keeps silu's output beside W3's, 2 B per
  // element more than a fused SwiGLU, which keeps only its two inputs.
  const double eager_act = eager && swiglu ? kBf16Bytes : 0.0;
  if (!moe_layer) {
    keep(Tag::Mlp, T * (swiglu ? 2 : 1) * f, kBf16Bytes);  // gate+up, or GeLU input (8sbh/t)
    if (eager_act > 0) keep(Tag::Mlp, T * f, eager_act);
    keep(Tag::MlpAct, T * f, gemm_in);                     // fc2 input (GeLU: 8sbh/t)
  } else if (m.moe) {
    const MoeSpec& e = *m.moe;
    keep(Tag::Router, Tr * e.routed_experts, kFp32Bytes + 1.0);  // FP32 scores + bool map
    const double fe = static_cast<double>(e.expert_intermediate) / s.parallel.etp;
    keep(Tag::Dispatched, copies * h, gemm_in);  // FP8 dispatch delivers FP8 tokens
    keep(Tag::ExpertFc1, copies * (swiglu ? 2 : 1) * fe, low_store ? 1.0 : kBf16Bytes);
    if (eager_act > 0) keep(Tag::ExpertFc1, copies * fe, eager_act);
    // A clamped GLU (GPT-OSS): the eager clamps keep the FC1 output for their gradient
    // beside the concatenation the fused activation keeps (op_graph.cpp, glu_clamp); inside
    // the activation's checkpoint, so recomputed with it.
    if (swiglu && m.ffn.clamp > 0) keep(Tag::ExpertAct, copies * 2 * fe, kBf16Bytes);
    keep(Tag::ExpertAct, copies * fe, gemm_in);
    // Routing weights applied at the combine need the expert outputs for their gradient;
    // applied on the SwiGLU output (DeepSeek) they do not.
    if (!s.moe.gate_at_swiglu) keep(Tag::ExpertOut, copies * h, kBf16Bytes);
    if (e.shared_experts > 0) {
      keep(Tag::Shared, T * (swiglu ? 2 : 1) * fs, kBf16Bytes);  // fc1 output
      if (eager_act > 0) keep(Tag::Shared, T * fs, eager_act);
      keep(Tag::Shared, T * fs, gemm_in);                         // activation = fc2 input
    }
  }
  if (opt.hidden_dropout) keep(Tag::Dropout, Tr * h, 1.0);  // after the MLP

  std::vector<MemoryPart> parts;
  const Recompute& rc = s.training.recompute;
  if (apply_recompute && rc.mode == RecomputeMode::Op) {
    // torchtitan's selective op policy (see model::add_op_policy_recompute): the block's input,
    // the outputs of every other matmul (the 1st, 3rd, ... in the module's order), the SDPA
    // outputs (O and the log-sum-exp), grouped-GEMM and dispatch outputs; nothing else.
    add_part(parts, "layer_input", Tr * h * kBf16Bytes);
    int matmuls = 0;
    auto mm = [&](Tag tag, double elems) {
      if (++matmuls % 2 == 1) add_part(parts, part_name(tag), elems * kBf16Bytes);
    };
    if (a.kind == AttentionKind::Mla) {
      if (a.q_lora_rank > 0) {
        mm(Tag::MlaCompressed, Tr * a.q_lora_rank);  // q_a
        mm(Tag::MlaUp, T * heads * dqk);             // q_b
      } else {
        mm(Tag::MlaUp, T * heads * dqk);  // q
      }
      mm(Tag::MlaCompressed, Tr * (a.kv_lora_rank + a.qk_rope_head_dim));  // kv_a
      mm(Tag::MlaUp, T * heads * (a.qk_nope_head_dim + dv));                // kv_b
    } else {
      mm(Tag::AttnQkv, T * heads * dqk);  // wq
      mm(Tag::AttnQkv, T * kvh * dqk);    // wk
      mm(Tag::AttnQkv, T * kvh * dv);     // wv
    }
    for (const Stored& x : st) {
      if (x.tag == Tag::CoreAttn) add_part(parts, part_name(x.tag), x.bytes);
    }
    add_part(parts, part_name(Tag::AttnOut), T * heads * dv * kBf16Bytes);  // SDPA output
    mm(Tag::AttnOut, T * h);                                                // wo
    if (!moe_layer) {
      if (swiglu) mm(Tag::Mlp, T * f);  // w1 (gate)
      mm(Tag::Mlp, T * f);              // w3 (up), or fc1
      mm(Tag::MlpAct, T * h);           // w2 (down)
    } else if (m.moe) {
      const MoeSpec& e = *m.moe;
      mm(Tag::Router, Tr * e.routed_experts);
      for (const Stored& x : st) {
        if (x.tag == Tag::Dispatched || x.tag == Tag::ExpertFc1) add_part(parts, part_name(x.tag), x.bytes);
      }
      add_part(parts, part_name(Tag::ExpertOut), copies * h * kBf16Bytes);
      if (e.shared_experts > 0) {
        if (swiglu) mm(Tag::Shared, T * fs);
        mm(Tag::Shared, T * fs);
        mm(Tag::Shared, T * h);
      }
    }
    return parts;
  }
  if (apply_recompute && rc.mode == RecomputeMode::Full) {
    // Only the layer input is kept: 2sbh, or 2sbh/t with SP (Korthikanti et al. 2022).
    add_part(parts, "layer_input", Tr * h * kBf16Bytes);
    return parts;
  }
  for (const Stored& x : st) {
    if (apply_recompute && recomputed(rc, x.tag)) continue;
    add_part(parts, part_name(x.tag), x.bytes);
  }
  return parts;
}

double optimizer_bytes_per_param(Optimizer o) {
  switch (o) {
    case Optimizer::Adam:
      return 3 * kFp32Bytes;
    case Optimizer::Adam8bit:
      return kFp32Bytes + 2 * (1.0 + kFp32Bytes / kAdam8bitBlock);
    case Optimizer::AdamBf16:
      return kFp32Bytes + 2 * kBf16Bytes;
  }
  return 3 * kFp32Bytes;
}

// Ring attention's buffers on a rank of a context-parallel group while a layer's attention
// backward runs, beyond what the layer stores: the other ranks' K/V (all cp chunks when they
// are all-gathered, the current and the next one on TE's ring), the FP32 dQ accumulator, and
// dK/dV three times over (the running sum, the send and the receive buffer; FP32 in torch,
// BF16 in Transformer Engine). Sources as model::cp_merge's (op_graph.cpp).
namespace {

double cp_work_bytes(const Plan& plan, double T) {
  const ModelSpec& m = plan.model;
  const Strategy& s = plan.strategy;
  const int cp = s.parallel.cp;
  if (cp <= 1 || s.training.unfused_attention) return 0.0;
  if (s.training.cp_comm == CpComm::A2a) return 0.0;  // no ring: whole heads after the all-to-all
  const double t = s.parallel.tp;
  const double heads = m.attention.heads / t;
  const double kvh = model::attention_kv_heads(m, s);
  const double dqk = model::qk_head_dim(m), dv = model::v_head_dim(m);
  const double kv_elems = T * kvh * (dqk + dv);
  const bool gathered = s.training.cp_comm != CpComm::P2p;
  const double grad = s.training.cp_comm == CpComm::TorchAllGather ? kFp32Bytes : kBf16Bytes;
  return (gathered ? cp : 2) * kv_elems * kBf16Bytes + T * heads * dqk * kFp32Bytes + 3 * kv_elems * grad;
}

}  // namespace

MemoryInputs memory_inputs(const Plan& plan, double expert_load) {
  const ModelSpec& m = plan.model;
  const Strategy& s = plan.strategy;
  const model::Tokens tok = model::tokens_of(m, s, plan.hardware, expert_load * s.moe.imbalance);
  const double t = s.parallel.tp, h = m.hidden;
  MemoryInputs in;
  in.T = tok.per_device;
  in.Tr = replicated_tokens(plan, in.T);
  ActivationOptions act;
  act.flash_attention = !s.training.unfused_attention;
  act.attention_dropout = m.attention_dropout > 0;
  act.hidden_dropout = m.hidden_dropout > 0;
  in.dense_act = layer_activations(plan, false, expert_load, act);
  in.dense_act_sum = sum(in.dense_act);
  in.dense_extra = sum(layer_activations(plan, false, expert_load, act, false)) - in.dense_act_sum;
  if (m.moe) {
    in.moe_act = layer_activations(plan, true, expert_load, act);
    in.moe_act_sum = sum(in.moe_act);
    in.moe_extra = sum(layer_activations(plan, true, expert_load, act, false)) - in.moe_act_sum;
  }
  in.cp_work = cp_work_bytes(plan, in.T);
  in.head_act = head_activations(plan, in.Tr);
  in.head_act_sum = sum(in.head_act);
  in.dispatch_buffer = dispatch_buffer_bytes(plan, tok);
  in.dense_layer = dense_layer_params_per_rank(m, t);
  in.moe_layer_dense = moe_layer_dense_params_per_rank(m, t);
  in.moe_layer_expert = moe_layer_expert_params_per_device(plan);
  in.vocab_shard_params = static_cast<double>(m.vocab) / t * h;
  in.positions = m.position_embedding == PositionEmbedding::Learned ? static_cast<double>(seq_of(plan)) * h : 0.0;
  in.final_norm = static_cast<double>(model::norm_params(m, m.hidden));
  // DeepSeek-V3 sec. 2.2: per MTP depth 3 norms and eh_proj (2h -> h, column-parallel).
  in.mtp_own = 3.0 * in.final_norm + 2 * h * h / t;
  return in;
}

ChunkCounts count_chunk(const ModelSpec& m, int nd_model, const schedule::Chunk& c, bool embedding_copy) {
  ChunkCounts n;
  n.dense = c.dense_layers(nd_model);
  n.moe = c.layers - n.dense;
  n.embedding = c.embedding ? 1 : 0;
  n.head = c.head ? 1 : 0;
  n.embedding_copy = embedding_copy ? 1 : 0;
  n.mtp = c.mtp && m.mtp_depth > 0 ? 1 : 0;
  return n;
}

bool ChunkCounts::operator==(const ChunkCounts& o) const {
  return dense == o.dense && moe == o.moe && embedding == o.embedding && head == o.head &&
         embedding_copy == o.embedding_copy && mtp == o.mtp && kept_dense == o.kept_dense && kept_moe == o.kept_moe;
}

ParamCount counted_params(const MemoryInputs& in, const ModelSpec& m, const ChunkCounts& n) {
  ParamCount pc;
  pc.dense = n.dense * in.dense_layer + n.moe * in.moe_layer_dense;
  pc.expert = n.moe * in.moe_layer_expert;
  // Vocab-parallel embedding; learned positions are not split.
  pc.bf16_only += n.embedding * (in.vocab_shard_params + in.positions);
  // Final norm and, untied, the output head.
  pc.bf16_only += n.head * (in.final_norm + (m.tied_embeddings ? 0.0 : in.vocab_shard_params));
  pc.bf16_only += n.embedding_copy * in.vocab_shard_params;
  if (n.mtp > 0) {
    // One transformer block per depth; embedding and head are shared with the main model.
    const bool moe_block = m.moe.has_value();
    pc.dense += n.mtp * m.mtp_depth * (in.mtp_own + (moe_block ? in.moe_layer_dense : in.dense_layer));
    if (moe_block) pc.expert += n.mtp * m.mtp_depth * in.moe_layer_expert;
  }
  pc.dense += pc.bf16_only;
  return pc;
}

ParamCount chunk_params(const MemoryInputs& in, const ModelSpec& m, const schedule::Chunk& c,
                        bool embedding_copy) {
  return counted_params(in, m, count_chunk(m, model::dense_layers(m), c, embedding_copy));
}

ParamCount chunk_params(const Plan& plan, const schedule::Chunk& c, bool embedding_copy) {
  return chunk_params(memory_inputs(plan, 1.0), plan.model, c, embedding_copy);
}

double expert_dp(const Plan& plan) {
  const Parallel& p = plan.strategy.parallel;
  const double ranks = static_cast<double>(p.tp) * p.cp * p.dp * dies_per_rank_group(plan);
  return std::max(1.0, ranks / (static_cast<double>(p.ep) * p.etp));
}

}  // namespace paraplan::cost

namespace paraplan {

MemoryEstimate estimate_memory(const Plan& plan, double expert_load) {
  return cost::combine_memory(cost::memory_inputs(plan, expert_load), plan.hardware, plan.model,
                              plan.strategy, true);
}

}  // namespace paraplan

namespace paraplan::cost {

MemoryEstimate combine_memory(const MemoryInputs& in, const HardwareSpec& hw, const ModelSpec& m,
                              const Strategy& s, bool detail) {
  MemoryEstimate est;
  combine_memory(in, hw, m, s, detail, est);
  return est;
}

void combine_memory(const MemoryInputs& in, const HardwareSpec& hw, const ModelSpec& m, const Strategy& s,
                    bool detail, MemoryEstimate& est) {
  const Parallel& p = s.parallel;
  const double T = in.T;
  const double Tr = in.Tr;
  const double h = m.hidden;
  const bool has_moe = m.moe.has_value();

  // Start from an empty estimate that keeps the lists' storage (the search reuses one).
  {
    std::vector<StageMemory> stages = std::move(est.stages);
    std::vector<std::string> reasons = std::move(est.infeasible_reasons);
    stages.clear();
    reasons.clear();
    est = MemoryEstimate{};
    est.stages = std::move(stages);
    est.infeasible_reasons = std::move(reasons);
  }
  est.capacity = hw.device.memory_bytes;
  est.host_capacity = hw.host.memory_bytes;
  est.micro_batches = schedule::micro_batches(s);

  // BF16 weights, and their FP8 copies under FP8 training; FP8 only with FP8 parameters or
  // low-precision storage (the FP32 master lives with the optimizer). The embedding, the
  // output head and the final norm stay BF16 either way: they run no FP8 GEMM (the op graph's
  // lm_head is BF16; DeepSeek-V3 sec. 3.3.1, Megatron-Core's output layer and torchao's Float8
  // skip it).
  const bool fp8_weights = s.training.precision == Precision::Fp8;
  // ZeRO-3 keeps no FP8 copy of its shards: each gathered layer is cast for its GEMMs and the
  // cast dropped with the gathered weights (FSDP2 with torchao's Float8Linear, Megatron-FSDP
  // with Transformer Engine), so the shards are BF16 (FP8 with FP8 parameters).
  const double weight_bytes = s.training.fp8_weights_only() ? 1.0
                              : s.training.zero >= 3      ? kBf16Bytes
                                                          : kBf16Bytes + (fp8_weights ? 1.0 : 0.0);
  // The FP8 cast of the layer in use beside the gathered BF16 weights (ZeRO-3, FP8 GEMMs).
  const double gathered_cast = fp8_weights && !s.training.fp8_weights_only() ? 1.0 : 0.0;
  const double grad_bytes = s.training.bf16_grads ? kBf16Bytes : kFp32Bytes;
  const double opt_bytes = optimizer_bytes_per_param(s.training.optimizer);
  // ZeRO shards the dense states over the dp x cp ranks, or over one replica of them with
  // hybrid sharding (parallel.dp_replicate).
  const double dense_shard = p.dense_shard_ranks();
  const double dies = s.ep_over_dies ? std::max(1, hw.device.dies) : 1;
  const double expert_shard =
      std::max(1.0, static_cast<double>(p.tp) * p.cp * p.dp * dies / (static_cast<double>(p.ep) * p.etp));
  const int zero = s.training.zero;
  // Logits of the vocab shard for the loss, main head and each MTP head, on the head rank: a
  // fused or vocab-parallel cross-entropy holds them in FP32 (4 B per logit). The eager loss
  // (`training.loss: eager`; torchtitan: cross_entropy(pred.float(), labels)) peaks in its
  // backward at 12 B: the saved FP32 log-probabilities, nll's FP32 gradient and log_softmax's
  // FP32 input gradient (in forward 10 B: BF16 logits, their FP32 copy and the log-probabilities).
  // With TP the eager loss runs on the vocab shard under torch's loss_parallel, whose
  // log_softmax is the decomposition with all-reduces inserted
  // (torch/distributed/tensor/parallel/loss.py, _log_softmax; torchtitan enables it whenever
  // TP > 1): max, shifted = x - max, exp(shifted), result = shifted - log(sum): forward peaks
  // at 14 B (BF16 logits, FP32 x, shifted, exp or result), backward at 16 B (the saved
  // log-probabilities, nll's gradient, exp(output) and the product before the subtraction).
  // Megatron's unfused loss peaks at its start: the BF16 logits and their FP32 copy (6 B).
  const double eager_peak = p.tp > 1 ? 4 * kFp32Bytes : 3 * kFp32Bytes;
  const double logits = (1 + m.mtp_depth) * T * m.vocab / p.tp *
                        (s.training.eager_loss ? eager_peak : s.training.unfused_loss ? kFp32Bytes + kBf16Bytes : kFp32Bytes);

  // What a rank holds apart from its in-flight activation sets follows from what its chunks
  // count; neighbouring ranks usually count the same, and then share it.
  struct Held {
    ChunkCounts n;
    std::size_t chunks = 0;
    ParamCount pc;
    double per_set_sum = 0;  // one activation set of every chunk
    double ws = 0;           // recompute working set beyond the logits
    double weights = 0, gradients = 0, optimizer_states = 0, optimizer_host = 0, buffers = 0;
    std::vector<MemoryPart> per_set, buffer_parts;  // detail only
  };
  auto held_by = [&](const ChunkCounts& n, std::size_t chunks, Held& o) {
    o.n = n;
    o.chunks = chunks;
    o.pc = counted_params(in, m, n);
    // The MTP block is a transformer layer of the model's kind.
    const int mtp_layers = n.mtp * m.mtp_depth;
    const double nd_sets = n.dense + (has_moe ? 0 : mtp_layers), nm_sets = n.moe + (has_moe ? mtp_layers : 0);
    // Layers training.recompute_layers leaves out store what the recompute would drop too.
    const double kept = n.kept_dense * in.dense_extra + n.kept_moe * in.moe_extra;
    o.per_set_sum = nd_sets * in.dense_act_sum + nm_sets * in.moe_act_sum + n.head * in.head_act_sum + kept;
    o.per_set.clear();
    o.buffer_parts.clear();
    if (detail) {
      add_parts(o.per_set, in.dense_act, nd_sets);
      add_parts(o.per_set, in.moe_act, nm_sets);
      add_parts(o.per_set, in.head_act, n.head);
      if (kept > 0) add_part(o.per_set, "not_recomputed_layers", kept);
    }
    const bool has_dense_layer = nd_sets > 0, has_moe_layer = nm_sets > 0;
    o.ws = 0;
    if (s.training.recompute.mode != RecomputeMode::None) {
      // One layer's recomputed tensors exist again while its backward runs.
      const bool dense_recomputes = nd_sets > n.kept_dense, moe_recomputes = nm_sets > n.kept_moe;
      o.ws = std::max(dense_recomputes ? in.dense_extra : 0.0, moe_recomputes ? in.moe_extra : 0.0);
    }
    // Ring attention's buffers join them during the attention backward (cp_work_bytes).
    if (has_dense_layer || has_moe_layer) o.ws += in.cp_work;
    // On the stage with the loss they never meet the FP32 logits: the loss's backward frees
    // those before the first layer is recomputed (1F1B runs the last stage's forward and
    // backward of a micro-batch back to back), so only what the working set needs beyond the
    // logits adds to the peak.
    if (n.head > 0) o.ws = std::max(0.0, o.ws - logits);

    // Weights, gradients, optimizer states (ZeRO over DP x CP for dense parameters, over the
    // expert-DP group for experts). The BF16-only part has no FP8 copy.
    auto shard = [&](int stage_needed, double dense_b, double expert_b) {
      return o.pc.dense * dense_b / (zero >= stage_needed ? dense_shard : 1.0) +
             o.pc.expert * expert_b / (zero >= stage_needed ? expert_shard : 1.0);
    };
    o.weights = shard(3, weight_bytes, weight_bytes) +
                o.pc.bf16_only * (kBf16Bytes - weight_bytes) / (zero >= 3 ? dense_shard : 1.0);
    o.gradients = shard(2, grad_bytes, grad_bytes);
    o.optimizer_states = shard(1, opt_bytes, opt_bytes);
    o.optimizer_host = 0;
    if (s.training.optimizer_offload) {
      o.optimizer_host = o.optimizer_states;
      o.optimizer_states = 0;
    }

    // Buffers.
    o.buffers = 0;
    auto buffer = [&](const char* name, double bytes) {
      if (bytes <= 0) return;
      o.buffers += bytes;
      if (detail) add_part(o.buffer_parts, name, bytes);
    };
    buffer("gemm_workspace", kGemmWorkspaceBytes);
    if (has_moe_layer) buffer("ep_dispatch", in.dispatch_buffer);
    if (n.head > 0) buffer("logits", logits);
    if (p.pp > 1) buffer("pp_p2p", 2 * Tr * h * kBf16Bytes);  // activation + gradient
    if (Tr < T) buffer("sp_gather", T * h * kBf16Bytes);      // gathered GEMM input
    if (zero >= 3) {
      // Two layers' unsharded weights gathered ahead of use (prefetch).
      double layer = 0;
      if (has_dense_layer) layer = in.dense_layer;
      if (has_moe_layer) layer = std::max(layer, in.moe_layer_dense + in.moe_layer_expert);
      buffer("zero3_prefetch", 2 * layer * weight_bytes + layer * gathered_cast);
    }
  };

  // The share of a set's activations training.offload_layers (> 0: the callers ask) moves to
  // host memory: that many of the rank's layers (a layer's activations taken as the set's per
  // layer).
  auto layer_offload_share = [&](int layers) {
    return layers > 0 ? std::min(1.0, static_cast<double>(s.training.offload_layers) / layers) : 0.0;
  };
  // Rank r's activations, `in_flight` sets spread evenly over its chunks, its host memory and
  // its total (everything else of `st` filled from `o`).
  auto place_sets = [&](StageMemory& st, int r, double in_flight, std::size_t chunks, const Held& o) {
    st.stage = r;
    st.in_flight = in_flight;
    const double sets_per_chunk_avg = in_flight / static_cast<double>(chunks);
    double on_device = sets_per_chunk_avg;
    st.host_bytes = o.optimizer_host;
    if (s.training.activation_offload && in_flight > 1) {
      // Offload: every in-flight set but the one being computed lives in host memory.
      on_device = 1.0 / static_cast<double>(chunks);
      st.host_bytes += o.per_set_sum * (sets_per_chunk_avg - on_device);
    }
    // Layer offload (training.offload_layers, Transformer Engine's CPU-offload context): the
    // activations of that many of the rank's layers, of each set, live in host memory.
    if (s.training.offload_layers > 0) {
      const double offloaded = layer_offload_share(st.layers);
      st.offloaded_activations = o.per_set_sum * offloaded;
      st.host_bytes += o.per_set_sum * on_device * offloaded;
      on_device *= 1.0 - offloaded;
    }
    st.activations = o.per_set_sum * on_device;
    if (detail) add_parts(st.activation_parts, o.per_set, on_device);
    if (o.ws > 0) {
      st.activations += o.ws;
      if (detail) add_part(st.activation_parts, "recompute_working_set", o.ws);
    }
    // The caching allocator's excess over the transient tensors (calibration.allocator).
    st.allocator_excess = (hw.calibration.allocator - 1.0) * (st.activations + st.buffers);
    st.reserve = hw.device.memory_reserve_bytes + st.allocator_excess;
    st.total = st.weights + st.gradients + st.optimizer_states + st.activations + st.buffers + st.reserve;
  };

  // The search's fast path keeps one stage per run of ranks that hold the same layers (see
  // combine_memory in memory.hpp) and visits only each run's first rank, which holds the
  // most in-flight sets; each rank's host memory follows from its run's (host_of below).
  const int nd_model = model::dense_layers(m);
  const bool compact = !detail;
  const auto runs = compact ? schedule::rank_runs(m, s, nd_model) : nullptr;
  const auto layout = compact ? runs->ranks : schedule::rank_chunks(m, s);
  const auto& ranks = *layout;
  const int pp = static_cast<int>(ranks.size());
  const std::size_t visits = compact ? runs->starts.size() : ranks.size();
  est.stages.reserve(visits);
  // Compact: what each stage's ranks keep in host memory, for host_of.
  struct RunHost {
    int first = 0;
    int layers = 0;
    double optimizer_host = 0, per_set_sum = 0;
    std::size_t chunks = 1;
  };
  thread_local std::vector<RunHost> run_host;  // reused: no allocation per candidate
  run_host.clear();
  Held held;
  const bool has_mtp = m.mtp_depth > 0;
  const int run_micro = schedule::run_micro_batches(s);  // one run of the schedule's micro-batches
  for (std::size_t i = 0; i < visits; ++i) {
    const int r = compact ? runs->starts[i] : static_cast<int>(i);
    const auto& chunks = ranks[static_cast<std::size_t>(r)];
    // What the rank's chunks hold (the run's, counted once per pipeline layout, when compact).
    const schedule::RankRuns::Held c = compact ? runs->held[i] : schedule::rank_held(chunks, nd_model);
    ChunkCounts n;
    n.dense = c.dense;
    n.moe = c.moe;
    n.embedding = c.embedding;
    n.head = c.head;
    n.mtp = has_mtp ? c.mtp : 0;
    if (s.training.partial_recompute()) {
      for (const schedule::Chunk& ch : chunks) {
        const int nd = ch.dense_layers(nd_model), rd = ch.recomputed_dense(s.training.recompute_layers, nd_model);
        n.kept_dense += nd - rd;
        n.kept_moe += ch.layers - nd - (ch.recomputed(s.training.recompute_layers) - rd);
      }
    }
    // A rank without the embedding holds its own copy where a head ties to it or an MTP
    // block uses it.
    n.embedding_copy = (m.tied_embeddings ? c.head_apart : 0) + (has_mtp ? c.mtp_apart : 0) +
                       (m.tied_embeddings || has_mtp ? c.both_apart : 0);
    const bool same = r > 0 && n == held.n && chunks.size() == held.chunks;
    if (!same) held_by(n, chunks.size(), held);
    const double in_flight = schedule::in_flight_sets(s, r, run_micro);
    if (same && compact) {
      // Only in-flight sets differ from the rank before: the run's representative is the
      // rank that holds the most (the first, as every schedule's warm-up shrinks with r).
      if (in_flight > est.stages.back().in_flight) place_sets(est.stages.back(), r, in_flight, chunks.size(), held);
      continue;
    }

    StageMemory& st = est.stages.emplace_back();
    st.dense_params = held.pc.dense;
    st.expert_params = held.pc.expert;
    st.dense_layers = n.dense;
    st.moe_layers = n.moe;
    st.layers = n.dense + n.moe;
    st.embedding = n.embedding > 0;
    st.head = n.head > 0;
    st.weights = held.weights;
    st.gradients = held.gradients;
    st.optimizer_states = held.optimizer_states;
    st.buffers = held.buffers;
    if (detail) st.buffer_parts = held.buffer_parts;
    place_sets(st, r, in_flight, chunks.size(), held);
    if (compact) run_host.push_back({r, st.layers, held.optimizer_host, held.per_set_sum, chunks.size()});
  }
  // Rank r's host memory: its stage's, or (compact) as place_sets gives it for r's sets.
  auto host_of = [&](int r) {
    if (!compact) return est.stages[static_cast<std::size_t>(r)].host_bytes;
    const auto run = std::prev(std::upper_bound(run_host.begin(), run_host.end(), r,
                                                [](int rank, const RunHost& h) { return rank < h.first; }));
    double host = run->optimizer_host;
    const double in_flight = schedule::in_flight_sets(s, r, run_micro);
    double on_device = in_flight / static_cast<double>(run->chunks);
    if (s.training.activation_offload && in_flight > 1) {
      const double chunks = static_cast<double>(run->chunks);
      host += run->per_set_sum * (in_flight / chunks - 1.0 / chunks);
      on_device = 1.0 / chunks;
    }
    if (s.training.offload_layers > 0) host += run->per_set_sum * on_device * layer_offload_share(run->layers);
    return host;
  };

  for (std::size_t i = 1; i < est.stages.size(); ++i) {
    if (est.stages[i].total > est.stages[static_cast<std::size_t>(est.worst_stage)].total) {
      est.worst_stage = static_cast<int>(i);
    }
  }

  // Host memory per node: devices are laid out with PP outermost (Megatron), so device g
  // belongs to stage g / (tp x cp x dp).
  // A node's devices g in [n x per_node, (n + 1) x per_node) meet each stage they overlap
  // for as many devices as the two ranges share; no offload, no host memory.
  bool offloads = false;
  for (const StageMemory& st : est.stages) offloads = offloads || st.host_bytes > 0;
  const long long per_node = offloads ? std::max(1, hw.devices_per_node()) : 1;
  const long long stage_size = std::max(1, p.tp * p.cp * p.dp);
  const long long nodes = std::max(1, s.nodes);
  if (offloads && stage_size % per_node == 0 && pp * stage_size == nodes * per_node) {
    // Every node lies inside one stage and holds per_node of its ranks (what the sweep below
    // finds, without it): without activation offload a stage's ranks keep their run's.
    double most = 0;
    if (compact && !s.training.activation_offload && s.training.offload_layers == 0) {
      for (const RunHost& run : run_host) most = std::max(most, run.optimizer_host);
    } else {
      for (int r = 0; r < pp; ++r) most = std::max(most, host_of(r));
    }
    est.host_bytes_per_node = static_cast<double>(per_node) * most;
  } else if (offloads) {
    // Nodes in order, stages swept alongside; a node inside one stage holds what every
    // later node inside it holds, so those are skipped.
    long long first = 0;  // the first stage node n meets
    for (long long n = 0; n < nodes;) {
      const long long lo = n * per_node, hi = lo + per_node;  // [lo, hi)
      while (first < pp - 1 && (first + 1) * stage_size <= lo) ++first;
      double node = 0;
      for (long long st = first; st < pp; ++st) {
        // The last stage also takes devices past pp x stage_size (as g / stage_size clamps).
        const long long a = std::max(lo, st * stage_size);
        const long long b = st == pp - 1 ? hi : std::min(hi, (st + 1) * stage_size);
        if (b > a) node += static_cast<double>(b - a) * host_of(static_cast<int>(st));
        if (b >= hi) break;
      }
      est.host_bytes_per_node = std::max(est.host_bytes_per_node, node);
      const bool inside = lo >= first * stage_size && (first == pp - 1 || hi <= (first + 1) * stage_size);
      if (!inside) {
        ++n;
      } else if (first == pp - 1) {
        break;
      } else {
        n = std::max(n + 1, (first + 1) * stage_size / per_node);
      }
    }
  }

  // Feasibility.
  if (!est.stages.empty() && est.capacity > 0) {
    const StageMemory& w = est.stages[static_cast<std::size_t>(est.worst_stage)];
    if (w.total > est.capacity) {
      if (!detail) {
        est.infeasible_reasons.push_back("device memory");
      } else {
        struct Named {
          const char* name;
          double bytes;
          const std::vector<MemoryPart>* detail;  // its parts, where the estimate keeps them
        };
        const Named parts[] = {{"weights", w.weights, nullptr},
                               {"gradients", w.gradients, nullptr},
                               {"optimizer states", w.optimizer_states, nullptr},
                               {"activations", w.activations, &w.activation_parts},
                               {"buffers", w.buffers, &w.buffer_parts}};
        const Named* largest =
            std::max_element(std::begin(parts), std::end(parts),
                             [](const Named& a, const Named& b) { return a.bytes < b.bytes; });
        std::string reason = "stage " + std::to_string(w.stage) + " needs " + gb(w.total) +
                             " of " + units::format_size_binary(est.capacity) + " (" +
                             gb(est.capacity) + ") capacity: " + largest->name + " " +
                             gb(largest->bytes) + " are the largest part";
        if (largest->detail != nullptr && !largest->detail->empty()) {
          const MemoryPart& top = *std::max_element(
              largest->detail->begin(), largest->detail->end(),
              [](const MemoryPart& a, const MemoryPart& b) { return a.bytes < b.bytes; });
          reason += " (" + top.name + " " + gb(top.bytes) + ")";
        }
        reason += "; over by " + gb(w.total - est.capacity);
        int over = 0;
        for (const StageMemory& sm : est.stages) over += sm.total > est.capacity ? 1 : 0;
        if (over > 1)
          reason += "; " + std::to_string(over) + " of " + std::to_string(pp) + " stages do not fit";
        est.infeasible_reasons.push_back(reason);
      }
    }
  }
  if (est.host_capacity > 0 && est.host_bytes_per_node > est.host_capacity) {
    est.infeasible_reasons.push_back(
        !detail ? std::string("host memory")
                : "offloaded state needs " + gb(est.host_bytes_per_node) +
                      " of host memory per node, more than the " +
                      units::format_size_binary(est.host_capacity) + " (" +
                      gb(est.host_capacity) + ") a node has; over by " +
                      gb(est.host_bytes_per_node - est.host_capacity));
  }
  est.feasible = est.infeasible_reasons.empty();
}

}  // namespace paraplan::cost
