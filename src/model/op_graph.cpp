#include "model/op_graph.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "model/params.hpp"

namespace paraplan::model {

const char* name(Phase p) {
  switch (p) {
    case Phase::Forward: return "forward";
    case Phase::InputGrad: return "input_grad";
    case Phase::WeightGrad: return "weight_grad";
    case Phase::Recompute: return "recompute";
  }
  return "?";
}

const char* name(OpKind k) {
  switch (k) {
    case OpKind::Gemm: return "gemm";
    case OpKind::GroupedGemm: return "grouped_gemm";
    case OpKind::Attention: return "attention";
    case OpKind::Memory: return "memory";
    case OpKind::HostSync: return "host_sync";
  }
  return "?";
}

const char* name(LayerKind k) {
  switch (k) {
    case LayerKind::Dense: return "dense";
    case LayerKind::Moe: return "moe";
    case LayerKind::Embedding: return "embedding";
    case LayerKind::Head: return "head";
    case LayerKind::Mtp: return "mtp";
  }
  return "?";
}

namespace {

constexpr double kAct = 2.0;    // bytes per BF16 activation element
constexpr double kFp32 = 4.0;

// A GEMM's FLOP and operand bytes from its shape.
void set_gemm_n(Op& op, double n) {
  op.n = n;
  op.flops = 2.0 * op.m * n * op.k * op.groups;
  op.bytes = (op.m * op.k + op.k * n + op.m * n) * kAct * op.groups;
}

Op gemm(std::string name, Module module, double m, double n, double k, int groups = 1) {
  Op op;
  op.name = std::move(name);
  op.kind = groups > 1 ? OpKind::GroupedGemm : OpKind::Gemm;
  op.module = module;
  op.m = m;
  op.k = k;
  op.groups = groups;
  set_gemm_n(op, n);
  op.low_precision = true;
  return op;
}

Op memory(std::string name, Module module, double bytes, double bwd_bytes,
          MemClass cls = MemClass::Elementwise, int kernels = 1, int bwd_kernels = 0) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::Memory;
  op.module = module;
  op.bytes = bytes;
  op.bwd_bytes = bwd_bytes;
  op.mem_class = cls;
  op.kernels = kernels;
  op.bwd_kernels = bwd_kernels;
  return op;
}

/// Shapes every builder needs.
struct Ctx {
  const ModelSpec& m;
  const Strategy& s;
  Tokens tok;
  double t;        // tensor parallel degree
  double t_sp;     // tokens through norms and residuals: per_device / tp with SP
  int seq;         // sequence length
  bool fp8 = false;  // the low-precision GEMMs run in FP8 (fp8_gemms)
  const AttentionKernelSpec* attention = nullptr;  // the flash kernel that runs (none: no entry)
};

// Separate linear layers on one input (`training.linears: separate`; torchtitan's Llama: wq,
// wk, wv and w1, w3 at pytorch/torchtitan@9dec370 torchtitan/models/llama/model.py): each
// projection is a GEMM of its own, and the input's gradient is their input gradients summed.
// Counted in units of m x hidden BF16 moved beyond what one fused projection moves (its GEMM
// writes the gradient, the next op reads it once):
// - eager, autograd adds each further gradient into the first: read two, write one, a
//   kernel per add (3 units each);
// - compiled, Inductor takes a pair of BF16 matmuls of one shape (k and v; gate and up) by its
//   mm_plus_mm pattern as mm, then addmm_ into that output (pytorch/pytorch@016d1a55
//   torch/_inductor/kernel/mm_plus_mm.py; torch/csrc/inductor/inductor_ops.cpp, _mm_plus_mm):
//   one more read inside the GEMM. FP8 GEMMs are torch._scaled_mm, which the pattern does not
//   take. The t gradients left are summed by a pointwise kernel (t reads and a write) where
//   TP's reduction takes the sum, or read by the norm's backward beside the residual's (t - 1
//   more reads) where it does not.
void make_separate(const Ctx& c, Op& op) {
  if (!c.s.training.separate_linears || op.groups != 1) return;
  int parts = 0;
  for (double n : op.unfused_n) parts += n > 0 ? 1 : 0;
  if (parts < 2) return;
  op.separate = true;
  op.kernels = parts;
  const double unit = op.m * op.k * kAct;
  if (c.s.training.eager_elementwise) {
    op.grad_sum_bytes = 3.0 * (parts - 1) * unit;
    op.grad_sum_kernels = parts - 1;
    return;
  }
  const bool paired = !(c.fp8 && op.low_precision);
  const int left = parts - (paired ? 1 : 0);
  double units = paired ? 1.0 : 0.0;
  if (left > 1) {
    const bool reduced = c.t > 1;
    units += reduced ? left + 1 : left - 1;
    op.grad_sum_kernels = reduced ? 1 : 0;
  }
  op.grad_sum_bytes = units * unit;
}

// Norm over `tokens` x `width`: read x, write y; backward reads x and dy, writes dx, in a
// kernel and a second one that reduces the weight gradient over the blocks (TE / apex
// `ln_bwd` + `ln_bwd_finalize`). Eager PyTorch (torchtitan / HF RMSNorm: x.float(), pow,
// mean, rsqrt, mul, type_as, mul weight) runs 6 kernels moving 2+4, 4+4, 4, 4+4, 4+2, 2+2
// = 36 B per element through HBM at the elementwise rate, and its autograd backward about
// twice that in 10 kernels.
Op norm(const Ctx& c, std::string name, double tokens, double width) {
  const double elems = tokens * width;
  if (c.s.training.eager_elementwise) {
    return memory(std::move(name), Module::Norm, 36 * elems, 72 * elems, MemClass::Elementwise, 6, 10);
  }
  return memory(std::move(name), Module::Norm, 2 * elems * kAct, 3 * elems * kAct, MemClass::Norm, 1, 2);
}

// RoPE on `elems` elements of q and k. Fused (Megatron / TE): read and write once. Eager
// (torchtitan's complex rotation): x.float() as complex (2 + 4 B), the complex multiply (4 + 4
// B, frequencies cached), back to BF16 (4 + 2 B): 20 B per element in 3 kernels per tensor,
// and the same in backward.
//
// Unfused (Megatron-Core's `_apply_rotary_pos_emb_bshd`, NVIDIA/Megatron-LM@d98e8a64dd
// megatron/core/models/common/embeddings/rope_utils.py, BF16 throughout): t * cos (2 + 2 B),
// the rotated half's negation (1 + 1 B) and concatenation (2 + 2 B), * sin (2 + 2 B), the sum
// (4 + 2 B) and the concatenation with the empty pass-through part (2 + 2 B): 24 B per element
// in 6 kernels per tensor. Backward: the two products' gradients (2 x 4 B), the negation's
// (2 B), the concatenation of the halves' gradients (4 B) and their sum (6 B): 20 B in 5.
Op rope_op(const Ctx& c, Module module, double elems, int tensors) {
  if (c.s.training.eager_elementwise) {
    return memory("rope", module, 20 * elems, 20 * elems, MemClass::Elementwise, 3 * tensors);
  }
  if (c.s.training.unfused_rope) {
    return memory("rope", module, 24 * elems, 20 * elems, MemClass::Elementwise, 6 * tensors, 5 * tensors);
  }
  return memory("rope", module, 2 * elems * kAct, 2 * elems * kAct, MemClass::Elementwise, tensors);
}

// Ring attention's bookkeeping on one rank of a context-parallel group (cp > 1), for `q`
// output elements and `kv` key + value elements of the rank's own chunk. Every ring step
// after the first merges its partial output into an FP32 accumulator through the
// log-sum-exp (read the accumulator and the step's BF16 output, write the accumulator:
// 10 B per element), and the result is cast back (6 B). With the load-balanced causal split
// rank r merges all its queries at steps 1..r and half of them after: 3/4 of the queries per
// step over the ranks. Backward accumulates dQ the same way and dK/dV of the chunk passing
// through (read the running gradient and the step's BF16 one, write it back: FP32 in torch,
// BF16 in Transformer Engine). torch also concatenates K and V into one send buffer each
// step (4 B per element) and dK/dV into another (FP32, 8 B).
// torch/distributed/tensor/experimental/_attention.py (_SDPAMerger, _templated_ring_attention
// and its backward); TransformerEngine attention/dot_product_attention/context_parallel.py.
Op cp_merge(const Ctx& c, double q, double kv) {
  const double steps = c.s.parallel.cp - 1;
  const bool torch = c.s.training.cp_comm == CpComm::TorchAllGather;
  const double grad = torch ? kFp32 : kAct;
  const double q_pass = q * (0.75 * steps * (2 * kFp32 + kAct) + kFp32 + kAct);
  double fwd = q_pass;
  double bwd = q_pass + kv * (steps * (2 * grad + kAct) + grad + kAct);
  if (torch) {
    fwd += kv * steps * 2 * kAct;
    bwd += kv * steps * (2 * kAct + 2 * kFp32);
  }
  const int kernels = static_cast<int>(steps) * (torch ? 6 : 1) + 1;
  return memory("cp_attention_merge", Module::CoreAttn, fwd, bwd, MemClass::Elementwise, kernels, 2 * kernels);
}

// torch's micro-pipelined AsyncTP (overlap.tp: async) around one TP block with sequence
// parallelism whose gathered input is `width` wide and whose row-parallel matmul writes the
// hidden width (pytorch/pytorch torch/distributed/_symmetric_memory/__init__.py). Before the
// matmuls consume the gathered shards, the rank's own shard is copied into its symmetric
// buffer for the peers to pull (_pipelined_all_gather_and_consume: read and write the shard;
// in FP8 when the GEMMs are, as torchao casts before it gathers); in backward the output
// gradient's shard likewise (BF16) before the row-parallel input-gradient matmul it feeds.
// After the row-parallel matmul's tp chunks have been pulled by their ranks, the tp partial
// chunks are summed (_fused_matmul_reduce_scatter_impl, reduce_fn over the stacked
// partials): read T x h, write T / tp x h. The reduce-scatter's output is in torchtitan's op
// policy cache, so the sum does not run again there.
void add_tp_async(const Ctx& c, std::vector<Op>& ops, Module module, double width) {
  if (!c.s.overlap.tp_async || !c.s.parallel.sp || c.t <= 1) return;
  const double T = c.tok.per_device, h = c.m.hidden;
  ops.push_back(memory("tp_async_stage", module, 2 * T / c.t * width * (c.fp8 ? 1.0 : kAct), 2 * T / c.t * h * kAct,
                       MemClass::Copy, 1, 1));
  Op sum = memory("tp_async_reduce", module, (T + T / c.t) * h * kAct, 0, MemClass::Reduction, 1);
  sum.kept_by_op_policy = true;
  ops.push_back(sum);
}

void add_attention(const Ctx& c, std::vector<Op>& ops) {
  const AttentionSpec& a = c.m.attention;
  const double T = c.tok.per_device, h = c.m.hidden;
  const double heads = a.heads / c.t;
  const double dqk = qk_head_dim(c.m), dv = v_head_dim(c.m);
  const bool rope = c.m.position_embedding == PositionEmbedding::Rope;
  double kv_heads = heads;  // heads whose K/V this rank materialises
  if (a.kind == AttentionKind::Mla) {
    // Down-projections are replicated across TP; with SP each rank projects its own
    // sequence shard (Megatron-Core MLA).
    const double Td = c.t_sp;
    if (a.q_lora_rank > 0) {
      Op q_a = gemm("q_a_proj", Module::AttnProj, Td, a.q_lora_rank, h);
      q_a.replicated = true;
      ops.push_back(q_a);
      ops.push_back(norm(c, "q_a_norm", Td, a.q_lora_rank));
      ops.push_back(gemm("q_b_proj", Module::MlaUpProj, T, heads * dqk, a.q_lora_rank));
    } else {
      ops.push_back(gemm("q_proj", Module::AttnProj, T, heads * dqk, h));
    }
    Op kv_a = gemm("kv_a_proj", Module::AttnProj, Td, a.kv_lora_rank + a.qk_rope_head_dim, h);
    kv_a.replicated = true;
    ops.push_back(kv_a);
    ops.push_back(norm(c, "kv_a_norm", Td, a.kv_lora_rank));
    ops.push_back(gemm("kv_b_proj", Module::MlaUpProj, T, heads * (a.qk_nope_head_dim + dv),
                       a.kv_lora_rank));
    if (rope) {
      // RoPE on the rope part of q (per head) and on the shared k_rope: two kernels.
      double elems = T * (heads * a.qk_rope_head_dim + a.qk_rope_head_dim);
      ops.push_back(rope_op(c, Module::MlaUpProj, elems, 2));
    }
    // Megatron-Core MLA assembles the attention inputs by copy: q = cat(q_nope, q_rope) and
    // k = cat(k_nope, k_rope broadcast over the heads), and makes v (a strided slice of the
    // kv_b output) contiguous. Reads q_nope, q_rope, k_nope, k_rope and v, writes q, k and
    // v; backward splits the gradients the same way.
    {
      const double dn = a.qk_nope_head_dim, dr = a.qk_rope_head_dim;
      const double elems = T * (heads * (dn + dr + dn + dv) + dr + heads * (2 * (dn + dr) + dv));
      ops.push_back(memory("mla_qkv_assemble", Module::MlaUpProj, elems * kAct, elems * kAct,
                           MemClass::Copy, 3));
    }
  } else {
    kv_heads = std::max(1.0, a.kv_heads / c.t);
    Op qkv = gemm("qkv_proj", Module::AttnProj, T, (heads + 2 * kv_heads) * dqk, h);
    qkv.unfused_n = {heads * dqk, kv_heads * dqk, kv_heads * dv};
    make_separate(c, qkv);
    ops.push_back(qkv);
    if (a.qk_norm) {
      // Qwen3 / OLMo 2: a norm over each head's query and one over each head's key, before
      // RoPE: two norm kernels (Megatron-Core's q_layernorm and k_layernorm), backward alike.
      Op qk = norm(c, "qk_norm", T, (heads + kv_heads) * dqk);
      qk.kernels *= 2;
      qk.bwd_kernels *= 2;
      ops.push_back(qk);
    }
    if (rope) {
      double elems = T * (heads + kv_heads) * dqk;
      ops.push_back(rope_op(c, Module::AttnProj, elems, 2));
    }
    if (c.s.training.repeat_kv && kv_heads < heads) {
      // repeat_kv: expand + reshape copies K and V out to the query heads (one kernel each);
      // backward sums each group's gradients back (reads the wide, writes the narrow).
      const double narrow = T * kv_heads * (dqk + dv) * kAct, wide = T * heads * (dqk + dv) * kAct;
      ops.push_back(memory("repeat_kv", Module::CoreAttn, narrow + wide, narrow + wide, MemClass::Copy, 2, 2));
      kv_heads = heads;
    }
  }
  const double b = c.s.training.micro_batch;
  const double s = c.seq;
  const double cp = c.s.parallel.cp;
  if (c.s.training.unfused_attention) {
    // Unfused (Megatron-LM before FlashAttention): scores = QK^T and out = PV as batched GEMMs
    // over the full s x s matrix (the causal mask is applied after), and a softmax that reads
    // and writes the FP16/BF16 scores; its backward reads probabilities and gradients and
    // writes one gradient. Korthikanti et al. 2022 sec. 4.1.
    const int groups = static_cast<int>(b * heads);
    Op scores = gemm("attention_scores", Module::CoreAttn, s / cp, s, dqk, groups);
    Op values = gemm("attention_values", Module::CoreAttn, s / cp, dv, s, groups);
    scores.low_precision = values.low_precision = false;  // FP8 recipes cover the linear layers
    const double elems = b * heads * (s / cp) * s;
    ops.push_back(scores);
    ops.push_back(memory("softmax", Module::CoreAttn, 2 * elems * kAct, 3 * elems * kAct,
                         MemClass::Softmax));
    if (c.m.attention_dropout > 0) {
      // Dropout on the probabilities (Megatron-LM's attention_dropout): reads them, writes
      // the output and a 1-byte mask; backward reads the gradient and the mask, writes one.
      ops.push_back(memory("attention_dropout", Module::CoreAttn, elems * (2 * kAct + 1),
                           elems * (2 * kAct + 1)));
    }
    ops.push_back(values);
  } else {
    // Flash attention, causal: QK^T and PV over the lower triangle. With context parallel a
    // rank holds seq/cp queries against the whole causal context (load-balanced chunks), or
    // with Ulysses (cp_comm a2a) the whole sequence for heads / cp heads: the same FLOP.
    const bool ulysses = cp > 1 && c.s.training.cp_comm == CpComm::A2a;
    // An FP8 kernel (Transformer Engine's fp8_dot_product_attention) takes its inputs
    // quantized: Q, K and V read in BF16 and written in FP8 with their scales (about 1 B per
    // element, E8M0 scales per 32 under MXFP8: cudnn-frontend docs, mxfp8-attention-scaling);
    // the backward quantizes the output and its gradient the same way. The gradients it
    // writes stay BF16.
    if (c.attention != nullptr && c.attention->fp8) {
      const double in = T * (heads * dqk + kv_heads * dqk + kv_heads * dv), out = T * heads * dv;
      ops.push_back(memory("core_attention.fp8_cast", Module::CoreAttn, in * (kAct + 1.0), 2 * out * (kAct + 1.0),
                           MemClass::Cast, 3, 2));
    }
    Op core;
    core.name = "core_attention";
    core.kind = OpKind::Attention;
    core.module = Module::CoreAttn;
    core.flops = b * s * s * (dqk + dv) * heads / cp;
    core.m = ulysses ? s : s / cp;  // queries per sequence on this rank
    core.n = s;                     // keys
    core.k = dqk;
    core.head_dim = (dqk + dv) / 2;
    core.bytes = T * (heads * dqk + kv_heads * dqk + kv_heads * dv + heads * dv) * kAct;
    core.groups = static_cast<int>(b * (ulysses ? heads / cp : heads));
    // Sliding-window layers (attention.window): the kernel visits only the key blocks inside
    // the window (FlashAttention's local attention), so their share of the layers runs as a
    // second kernel over the pairs the window keeps; the mix is the model's on every layer.
    // Ring attention still exchanges the whole K/V (its skipped blocks are not modelled).
    if (const double share = window_share(c.m, s); share > 0) {
      Op local = core;
      local.name = "core_attention_window";
      local.window = c.m.attention.window;
      local.flops = core.flops * share * window_pair_fraction(c.m, s);
      local.bytes = core.bytes * share;
      core.flops *= 1.0 - share;
      core.bytes *= 1.0 - share;
      if (share < 1.0) ops.push_back(core);
      ops.push_back(local);
    } else {
      ops.push_back(core);
    }
    if (cp > 1 && !ulysses) ops.push_back(cp_merge(c, T * heads * dv, T * kv_heads * (dqk + dv)));
  }
  ops.push_back(gemm("o_proj", Module::AttnProj, T, h, heads * dv));
  const double gathered = a.kind == AttentionKind::Mla ? (a.q_lora_rank > 0 ? a.q_lora_rank : h) + a.kv_lora_rank : h;
  add_tp_async(c, ops, Module::AttnProj, gathered);
}

// A feed-forward block on `tokens` with per-rank width `f`; `groups` > 1 makes it grouped.
void add_ffn(const Ctx& c, std::vector<Op>& ops, const std::string& prefix, Module module,
             Module act_module, double tokens, double f, int groups, bool per_die) {
  const double h = c.m.hidden;
  const bool swiglu = c.m.ffn.kind == FfnKind::Swiglu;
  Op up = gemm(prefix + (swiglu ? "gate_up_proj" : "up_proj"), module, tokens, (swiglu ? 2 : 1) * f,
               h, groups);
  if (swiglu) up.unfused_n = {f, f};
  make_separate(c, up);
  // SwiGLU reads gate and up, writes the product; GeLU reads and writes one tensor. Eager
  // SwiGLU is silu(gate) then a multiply (2 + 2, 2 + 2 + 2 B per element, 2 kernels) and an
  // autograd backward of 4 kernels over about twice the bytes.
  double elems = tokens * f * groups;
  const bool eager = c.s.training.eager_elementwise;
  Op act = memory(prefix + (swiglu ? "swiglu" : "gelu"), act_module,
                  (swiglu ? (eager ? 5 : 3) : 2) * elems * kAct, (swiglu ? (eager ? 10 : 5) : 3) * elems * kAct,
                  MemClass::Elementwise, swiglu && eager ? 2 : 1, swiglu && eager ? 4 : 0);
  Op down = gemm(prefix + "down_proj", module, tokens, h, f, groups);
  auto add = [&](Op op) {
    op.per_die = per_die;
    ops.push_back(std::move(op));
  };
  add(std::move(up));
  // A clamped GLU (GPT-OSS) in grouped experts: Megatron-Core clamps the gate and the linear
  // half in eager PyTorch and concatenates them again before its fused activation
  // (NVIDIA/Megatron-LM@9ed8b0c4ac megatron/core/fusions/fused_bias_geglu.py,
  // weighted_bias_quick_geglu_impl). Per element of the 2f-wide FC1 output: the two clamps
  // read and write it (2 + 2 B), the concatenation again (2 + 2 B), three kernels. Backward
  // (PyTorch's clamp_backward: a where over masks of the input; the chunk's gradient is a
  // concatenation), per pair of gate and linear elements: the gate's mask and where
  // (2 + 1, 1 + 2 + 2 B), the linear half's two masks, their `and` and where (3 + 3 + 3 +
  // 5 B), the concatenation (2 x (2 + 2) B): 30 B per pair, seven kernels (a pair per elems).
  if (swiglu && module == Module::Experts && c.m.ffn.clamp > 0) {
    Op clamp = memory(prefix + "glu_clamp", act_module, 16 * elems, 30 * elems, MemClass::Elementwise, 3, 7);
    clamp.exact_launches = true;
    add(std::move(clamp));
  }
  add(std::move(act));
  add(std::move(down));
  if (module == Module::Mlp || module == Module::SharedExperts) add_tp_async(c, ops, module, h);
}

// Residual add after attention or the MLP: reads both inputs, writes the sum; backward
// passes the gradient to both. With hidden dropout it is Megatron-LM's fused
// bias-dropout-add, which also writes a 1-byte mask (read again in backward).
Op residual_add(const Ctx& c) {
  const double elems = c.t_sp * c.m.hidden;
  const double mask = c.m.hidden_dropout > 0 ? 1.0 : 0.0;
  return memory("residual_add", Module::Other, elems * (3 * kAct + mask), elems * (3 * kAct + mask));
}

void add_transformer_layer(const Ctx& c, std::vector<Op>& ops, bool moe, const std::string& prefix) {
  const double h = c.m.hidden;
  std::size_t first = ops.size();
  ops.push_back(norm(c, "input_norm", c.t_sp, h));
  add_attention(c, ops);
  ops.push_back(residual_add(c));
  ops.push_back(norm(c, "post_attention_norm", c.t_sp, h));
  if (!moe) {
    add_ffn(c, ops, "", Module::Mlp, Module::Mlp, c.tok.per_device, c.m.ffn.intermediate / c.t, 1,
            false);
  } else {
    const MoeSpec& e = *c.m.moe;
    const bool per_die = c.s.ep_over_dies;
    // Router: a small GEMM to expert logits (kept in BF16, DeepSeek-V3 sec. 3.3.1), then
    // score function + top-k over the logits in FP32.
    const double Tr = c.t_sp;  // tokens a TP rank routes (MoE needs SP when tp > 1)
    Op gate = gemm("router_gate", Module::Router, Tr, e.routed_experts, h);
    gate.low_precision = false;
    ops.push_back(gate);
    // Score function, top-k, gather and normalise the weights, load statistics: small
    // kernels over the FP32 logits (DeepSeek-V3: sigmoid, group-limited top-k).
    ops.push_back(memory("router_topk", Module::Router, 3 * Tr * e.routed_experts * kFp32,
                         3 * Tr * e.routed_experts * kFp32, MemClass::Reduction, 4, 3));
    // Local token shuffles around the experts of this rank (the dispatch scheme's own
    // stages are the communication model's): copies in expert order, and back with the
    // top-k weighted sum.
    const double copies = c.tok.per_expert_slowest * c.tok.experts_per_rank;
    // Gathers by index: the index build and the row gather, two kernels each way: the rank's
    // top-k copies read and written.
    // After an all-gather dispatch a rank holds the whole EP group's tokens (Megatron-Core's
    // MoEAllGatherTokenDispatcher gathers [S B EP, H] and restores that shape after the
    // experts; NVIDIA/Megatron-LM@d98e8a64dd megatron/core/transformer/moe/token_dispatcher.py,
    // dispatch_postprocess, moe_utils.py unpermute), and each of the four passes moves the
    // gathered buffer once beside the kept copies: the permute scans the gathered rows for
    // the local experts' tokens, the unpermute writes every gathered row (zero where no local
    // expert took the token) for the reduce-scatter, and their backwards the same in reverse.
    // The seeds' EP16 profile times the four alike (permute 5.2, unpermute 5.4, backward 5.2
    // and 7.7 ms; SEED_DIGEST.md sec. 4), where moving the kept copies alone would make the
    // unpermute the permute's double.
    const Dispatch d = c.s.moe.dispatch;
    const bool gathered = d == Dispatch::AllGather || d == Dispatch::SendRecvAllGather;
    const double rows = gathered ? copies + static_cast<double>(c.s.parallel.ep) * c.s.parallel.etp * c.tok.per_rank_moe
                                 : 2 * copies;
    Op permute = memory("permute", Module::Experts, rows * h * kAct, rows * h * kAct, MemClass::Permute, 2);
    Op unpermute = memory("unpermute", Module::Experts, rows * h * kAct, rows * h * kAct, MemClass::Permute, 2);
    permute.per_die = unpermute.per_die = per_die;
    // An all-to-all delivers a rank's tokens grouped by source rank, then by expert; with
    // more than one local expert the dispatcher copies them once more into expert order
    // before the grouped GEMM, and back into source-rank order before the combine (a second
    // permutation each way, one kernel when fused: Megatron-Core's MoEAlltoAllTokenDispatcher
    // dispatch_postprocess / combine_preprocess, sort_chunks_by_idxs, NVIDIA/Megatron-LM@
    // d98e8a64dd megatron/core/transformer/moe/token_dispatcher.py). DeepEP's dispatch takes
    // the routing map and leaves one permutation after it; an all-gather dispatch picks the
    // local experts' rows in its one permutation.
    const bool sorted_chunks = d == Dispatch::AllToAll && c.tok.experts_per_rank > 1;
    // Like the permutes, they run on a die with die-level EP.
    auto sort = [&](const char* name) {
      Op o = memory(name, Module::Experts, 2 * copies * h * kAct, 2 * copies * h * kAct, MemClass::Permute, 1);
      o.per_die = per_die;
      return o;
    };
    // Dropless MoE copies the token counts per expert to the host (grouped-GEMM sizes,
    // all-to-all splits) and waits for them: the stream drains once per forward.
    Op sync;
    sync.name = "moe_host_sync";
    sync.kind = OpKind::HostSync;
    sync.module = Module::Router;
    ops.push_back(sync);
    ops.push_back(permute);
    if (sorted_chunks) ops.push_back(sort("sort_by_expert"));
    const std::size_t experts_up = ops.size();
    add_ffn(c, ops, "experts.", Module::Experts, Module::ExpertAct, c.tok.per_expert_slowest,
            e.expert_intermediate / static_cast<double>(c.s.parallel.etp), c.tok.experts_per_rank,
            per_die);
    // Random routing gives each expert its own row count: the grouped GEMMs' tile rows.
    for (std::size_t i = experts_up; i < ops.size(); ++i) {
      if (ops[i].kind == OpKind::GroupedGemm) ops[i].m_sd = c.tok.per_expert_sd;
    }
    // An FP8 dispatch quantizes the rank's tokens once before sending them; otherwise every
    // received copy is quantized in front of the expert GEMM.
    if (c.s.moe.fp8_dispatch) ops[experts_up].quantized_rows = c.tok.per_rank_moe;
    // Routed experts with biases: Megatron-Core adds the FC2 bias outside the grouped GEMM,
    // scaled by each copy's routing probability, in eager PyTorch: t + b x p on each local
    // expert's slice, then a concatenation (NVIDIA/Megatron-LM@9ed8b0c4ac
    // megatron/core/transformer/moe/experts.py, TEGroupedMLP._apply_bias; BF16 probabilities
    // under the default router dtype). Per routed copy: b x p written (2h B), the sum reads
    // two rows and writes one (6h), the concatenation reads and writes one (4h): 2 kernels
    // per expert and one. Backward: grad x p and grad x b each read the gradient, write a
    // product and reduce it (2 x 6h), and the split's gradient is concatenated (4h): 4
    // kernels per expert, the bias gradient's accumulation per expert, the two
    // concatenations (the rows' and the probabilities').
    if (c.m.bias) {
      const int E = c.tok.experts_per_rank;
      Op bias = memory("experts.fc2_bias", Module::Experts, 12 * copies * h, 16 * copies * h,
                       MemClass::Elementwise, 2 * E + 1, 5 * E + 2);
      bias.per_die = per_die;
      bias.exact_launches = true;
      ops.push_back(bias);
    }
    if (sorted_chunks) ops.push_back(sort("unsort_by_expert"));
    ops.push_back(unpermute);
    // The shared experts see every token of the data-parallel rank. With die-level EP they
    // run at die level, inside the MoE block the dies run as EP ranks, over the device's
    // whole micro-batch: one die's time for every token (split between the dies as the
    // device-level ops' rows are, it would take half). The seeds' EP16 profile says so,
    // though not whether the other die runs the same or waits: the shared expert's 721
    // GFLOP forward (8192 tokens x 3 GEMMs of 7168 x 2048) take 3.255 ms, 221 TFLOP/s, the
    // rate of the die's grouped GEMM in the same profile (16 experts x 2048 tokens, 2.886
    // TFLOP in 13.155 ms: 219 TFLOP/s), where the device's o_proj reaches 663 TFLOP/s; and
    // the seeds count the shared expert among a die's experts ("256/16 + 1 shared",
    // SEED_DIGEST.md sec. 1.6). Memory keeps one copy of its weights per device.
    if (e.shared_experts > 0) {
      add_ffn(c, ops, "shared_experts.", Module::SharedExperts, Module::SharedExperts,
              c.tok.per_device,
              static_cast<double>(e.shared_experts) * e.shared_expert_intermediate / c.t, 1, per_die);
    }
  }
  ops.push_back(residual_add(c));
  for (std::size_t i = first; i < ops.size(); ++i) ops[i].name = prefix + ops[i].name;
}

// FP8 training (Transformer Engine, DeepSeek-V3 sec. 3.3): before each FP8 GEMM its BF16
// input is quantized, in a row-wise copy for the forward GEMM and a column-wise (transposed)
// copy for the weight-gradient GEMM: read 2 B, write 1 + 1 B per element. In backward the
// output gradient dY is quantized the same way for the dgrad and wgrad GEMMs (TE's
// cast_transpose kernels). Check against a measurement: TE's 5B configuration (h 4096, FFN
// 16384, 15872 tokens; TransformerEngine docs/examples/gemm_profiling) spends 0.61 ms more
// in one forward under FP8 autocast (delayed scaling) than with pre-quantized operands on an
// H200 NVL; these passes over its 455 M input and 201 M weight elements, 4 B each, take
// 0.68 ms at 0.8 x 4.8 TB/s. Weights are quantized once per step in training (TE caches
// them over micro-batches), so only inputs and gradients are counted here. MoE tokens are
// quantized once before an FP8 dispatch (Op::quantized_rows), not once per routed copy.
// A tensorwise recipe (current scaling) needs the tensor's amax before it can cast: one more
// read of the BF16 tensor, and an amax kernel and a scale kernel before the cast
// (TransformerEngine@d0067d0 transformer_engine/pytorch/csrc/quantizer.cpp,
// Float8CurrentScalingQuantizer::quantize_impl: nvte_compute_amax_with_config,
// nvte_compute_scale_from_amax, nvte_quantize_v2; torchao's dynamic Float8Linear likewise
// reduces the amax, then casts). Delayed scaling takes the scale from the amax history and
// records this pass's amax inside the cast; block recipes scale inside the cast kernel. The
// amax and scale kernels come from the same quantize call (TE's C++, or the compiled graph
// that torchao's casts sit in), not from more framework operators: they are counted as the
// extra read, not as launches that each cost the framework's host time per launch.
// With sequence parallelism a tensor that is all-gathered across the TP group before its
// GEMM (a TP block's column-parallel GEMMs' input forward, its row-parallel GEMM's output
// gradient backward; tp_block) is quantized on the rank's own shard, 1 / tp of its rows, and
// gathered in FP8 (Transformer Engine's gather_along_first_dim with the input / grad-output
// quantizer; torchao's PrepareFloat8ModuleInput and the row-wise style's backward cast before
// the redistribute); the column-wise copy for the weight gradient is a transpose of the
// gathered FP8 tensor: read 1 B, write 1 B per element of all its rows.
void add_fp8_casts(std::vector<Op>& ops, Fp8Recipe recipe, double sp_tp) {
  // Each TP block's row-parallel GEMM: its last forward GEMM.
  std::vector<std::pair<std::string_view, std::size_t>> rows;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const std::string_view block = tp_block(ops[i]);
    if (block.empty()) continue;
    auto it = std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.first == block; });
    if (it == rows.end()) {
      rows.emplace_back(block, i);
    } else {
      it->second = i;
    }
  }
  auto is_row = [&](std::size_t i) {
    return std::any_of(rows.begin(), rows.end(), [&](const auto& r) { return r.second == i; });
  };
  std::vector<Op> out;
  out.reserve(ops.size() * 2);
  const bool amax_pass = recipe == Fp8Recipe::Tensorwise;
  // read BF16, write FP8 row-wise + column-wise; with an amax pass, read BF16 once more
  const double cast_bytes = kAct + 2.0 + (amax_pass ? kAct : 0.0);
  // a gathered tensor: quantized row-wise on the shard (all but the column-wise write), the
  // column-wise copy transposed from the gathered FP8 rows
  auto gathered_bytes = [&](double elems) { return elems / sp_tp * (cast_bytes - 1.0) + elems * 2.0; };
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if ((op.kind == OpKind::Gemm || op.kind == OpKind::GroupedGemm) && op.low_precision) {
      const double quantized = op.quantized_rows > 0 ? op.quantized_rows : op.m * op.groups;
      const double in = quantized * op.k;
      const double grad = op.m * op.n * op.groups;
      const bool sp = sp_tp > 1, block = *tp_block(op) != '\0', row = block && is_row(i);
      // Row-wise and column-wise (transposed) copies: two kernels each way.
      Op cast = memory(op.name + ".fp8_cast", op.module, sp && block && !row ? gathered_bytes(in) : in * cast_bytes,
                       sp && row ? gathered_bytes(grad) : grad * cast_bytes, MemClass::Cast, 2);
      cast.per_die = op.per_die;
      out.push_back(std::move(cast));
    }
    out.push_back(op);
  }
  ops = std::move(out);
}

bool recomputed(const Recompute& r, Module mod) {
  switch (r.mode) {
    case RecomputeMode::None: return false;
    case RecomputeMode::Full: return true;
    case RecomputeMode::Selective: return mod == Module::CoreAttn;  // Korthikanti et al. 2022
    case RecomputeMode::Op: return false;                           // add_op_policy_recompute
    case RecomputeMode::Modules: break;
  }
  switch (mod) {
    case Module::CoreAttn: return r.has(RecomputeModule::CoreAttn);
    case Module::Norm: return r.has(RecomputeModule::LayerNorm);
    case Module::MlaUpProj: return r.has(RecomputeModule::MlaUpProj);
    case Module::Mlp: return r.has(RecomputeModule::Mlp);
    case Module::Router: return r.has(RecomputeModule::Moe);
    case Module::Experts: return r.has(RecomputeModule::Moe);
    case Module::ExpertAct: return r.has(RecomputeModule::Moe) || r.has(RecomputeModule::MoeAct);
    case Module::SharedExperts: return r.has(RecomputeModule::SharedExperts);
    case Module::AttnProj:
    case Module::Other: return false;
  }
  return false;
}

// torchtitan's selective op policy (pytorch/torchtitan@9dec370
// torchtitan/parallelisms/parallelize_llama.py, `_save_list` and `_custom_policy`): the block's
// forward runs again in backward, but the outputs of matmuls (aten.mm), attention (SDPA) and
// collectives come from the forward's cache, except every second matmul, counted per block
// in forward order. Matmuls are counted as the module runs them (Llama: wq, wk, wv, wo, w1,
// w3, w2, so wk, wo and w3 run again); grouped GEMMs are not aten.mm and stay saved.
// Everything memory-bound (norms, RoPE, SwiGLU, residual adds, FP8 casts) runs again.
void add_op_policy_recompute(std::vector<Op>& ops) {
  const std::size_t forward = ops.size();
  int matmuls = 0;
  for (std::size_t i = 0; i < forward; ++i) {
    const Op f = ops[i];
    if (f.kind == OpKind::Memory) {
      if (f.kept_by_op_policy) continue;
      Op r = f;
      r.phase = Phase::Recompute;
      ops.push_back(r);
      continue;
    }
    if (f.kind != OpKind::Gemm) continue;
    double n = 0;
    std::array<double, 3> again{};  // the matmuls run again, in order
    int count = 0;
    const bool fused = f.unfused_n[0] > 0;
    for (double part : fused ? f.unfused_n : std::array<double, 3>{f.n, 0, 0}) {
      if (part <= 0) continue;
      if (++matmuls % 2 == 0) {
        n += part;
        again[static_cast<std::size_t>(count++)] = part;
      }
    }
    if (n <= 0) continue;
    Op r = f;
    r.phase = Phase::Recompute;
    set_gemm_n(r, n);
    r.separate = f.separate && count > 1;
    r.unfused_n = r.separate ? again : std::array<double, 3>{};
    r.kernels = r.separate ? count : 1;
    ops.push_back(r);
  }
}

// Appends the backward ops of every forward op: input-gradient and weight-gradient GEMMs,
// the flash-attention backward (2.5x the forward FLOP: it recomputes QK^T, then dV, dP, dQ,
// dK; Dao 2023), memory-bound backward passes, and the recomputed forward ops.
void add_backward(std::vector<Op>& ops, const Recompute& recompute, bool recomputable) {
  const std::size_t forward = ops.size();
  if (recomputable && recompute.mode == RecomputeMode::Op) {
    add_op_policy_recompute(ops);
  } else {
    for (std::size_t i = 0; i < forward; ++i) {
      if (recomputable && recomputed(recompute, ops[i].module)) {
        Op r = ops[i];
        r.phase = Phase::Recompute;
        ops.push_back(r);
      }
    }
  }
  for (std::size_t i = forward; i-- > 0;) {
    const Op f = ops[i];
    switch (f.kind) {
      case OpKind::Gemm:
      case OpKind::GroupedGemm: {
        Op dx = f;  // dX[m, k] = dY[m, n] W^T
        dx.phase = Phase::InputGrad;
        dx.name = f.name + ".dgrad";
        dx.n = f.k;
        dx.k = f.n;
        ops.push_back(dx);
        if (f.grad_sum_bytes > 0) {
          Op sum = memory(f.name + ".dgrad_sum", f.module, f.grad_sum_bytes, 0, MemClass::Elementwise,
                          f.grad_sum_kernels);
          sum.phase = Phase::InputGrad;
          ops.push_back(sum);
        }
        Op dw = f;  // dW[k, n] = X^T dY
        dw.phase = Phase::WeightGrad;
        dw.name = f.name + ".wgrad";
        dw.m = f.k;
        dw.n = f.n;
        dw.k = f.m;
        dw.m_sd = 0;  // the rows are its k: the work is linear in them
        ops.push_back(dw);
        break;
      }
      case OpKind::Attention: {
        Op b = f;
        b.phase = Phase::InputGrad;
        b.name = f.name + ".bwd";
        b.flops = 2.5 * f.flops;
        b.bytes = 2 * f.bytes;
        ops.push_back(b);
        break;
      }
      case OpKind::Memory:
        if (f.bwd_bytes > 0) {
          Op b = f;
          b.phase = Phase::InputGrad;
          b.name = f.name + ".bwd";
          b.bytes = f.bwd_bytes;
          if (f.bwd_kernels > 0) b.kernels = f.bwd_kernels;
          ops.push_back(b);
        }
        break;
      case OpKind::HostSync: break;
    }
  }
}

// DeepSpeed's BF16 optimizer (`training.grad_accumulation: fp32_add`): after every
// micro-batch's backward its pipeline engine calls update_hp_grads, which casts each
// parameter tensor's BF16 gradient to FP32 (read 2 B, write 4 B) and adds it to the tensor's
// FP32 buffer (read 4 + 4 B, write 4 B): 18 B per parameter in two kernels per tensor
// (microsoft/DeepSpeed@077e674 deepspeed/runtime/pipe/engine.py _exec_backward_pass,
// deepspeed/runtime/bf16_optimizer.py update_hp_grads). The layer's parameters are its
// forward GEMMs' weights (k x n per group, the rank's shard), a bias beside each with
// `bias`, and its norms' weights (and biases with LayerNorm): h each (biases and norms are
// counted for their kernels; their bytes are a rounding error). `extra` adds the
// parameters of a layer without GEMM weights (the embedding table's shard); without
// `gemm_weights` the GEMMs' weights are another layer's (a tied head).
void add_grad_accumulation(std::vector<Op>& ops, const ModelSpec& m, double extra, bool gemm_weights = true) {
  double params = extra;
  int tensors = extra > 0 ? 1 : 0;
  const int per_norm = m.norm == NormKind::LayerNorm ? 2 : 1;
  for (const Op& op : ops) {
    if (op.phase != Phase::Forward) continue;
    // The unfused attention's batched GEMMs multiply activations: no weights.
    if ((op.kind == OpKind::Gemm || op.kind == OpKind::GroupedGemm) && gemm_weights && op.module != Module::CoreAttn) {
      int parts = 0;
      for (double n : op.unfused_n) parts += op.separate && n > 0 ? 1 : 0;
      params += op.k * op.n * op.groups;
      // biases on the transformer block's linears (GPT-2/3); the output head has none
      tensors += std::max(1, parts) * op.groups * (m.bias && op.module != Module::Other ? 2 : 1);
    } else if (op.kind == OpKind::Memory && op.module == Module::Norm) {
      params += per_norm * m.hidden;
      tensors += per_norm;
    }
  }
  if (params <= 0) return;
  Op add = memory("grad_accumulate", Module::Other, 18 * params, 0, MemClass::Elementwise, 2 * tensors);
  add.phase = Phase::WeightGrad;
  add.exact_launches = true;  // a Python loop over the parameter tensors, one cast and one add each
  ops.push_back(add);
}

// Transformer Engine's fused grouped MLP (moe.fused_mlp; TransformerEngine@d0067d0
// transformer_engine/pytorch/ops/fused/grouped_mlp.py, cuDNN's grouped_gemm_glu /
// grouped_gemm_dglu kernels): FC1's grouped GEMM applies the GLU (with its clamp and the
// routing weights) and writes FC2's input quantized, row-wise and column-wise, from its
// epilogue; the biases, FC2's scaled by each copy's routing weight, are the grouped linear
// ops' own (NVIDIA/Megatron-LM@d98e8a64dd megatron/core/transformer/moe/experts.py,
// _fused_forward), not Megatron-Core's eager per-expert additions; FC2's input-gradient GEMM
// reads the kept FC1 output, applies the GLU's backward and writes FC1's output gradient
// quantized from its own. So the activation and its backward, the quantization of FC2's
// input and that of FC1's output gradient are no kernels of their own, and the epilogues move
// those bytes: the FP8 copies of `rows` x `f` (FC1) and the kept BF16 FC1 output in, its FP8
// gradient copies out (FC2's dgrad). Every expert GEMM is one persistent grouped kernel
// (per-expert offsets on the device), whatever the hardware's grouped path. `rows`: the
// rank's routed copies; `f`: an expert's width.
void fuse_grouped_mlp(std::vector<Op>& ops, double rows, double f) {
  auto fused_away = [](const Op& op) {
    if (op.module != Module::ExpertAct && op.module != Module::Experts) return false;
    std::string_view n = op.name;
    if (n.starts_with("mtp.")) n.remove_prefix(4);
    const bool act = n.starts_with("experts.swiglu") || n.starts_with("experts.glu_clamp") ||
                     n.starts_with("experts.fc2_bias");
    const bool fc2_in = n == "experts.down_proj.fp8_cast" && op.phase != Phase::InputGrad;
    const bool fc1_grad = n == "experts.gate_up_proj.fp8_cast.bwd";
    return act || fc2_in || fc1_grad;
  };
  std::erase_if(ops, fused_away);
  for (Op& op : ops) {
    if (op.kind != OpKind::GroupedGemm || op.module != Module::Experts) continue;
    op.fused_grouped = true;
    if (op.name.ends_with("gate_up_proj")) op.bytes += rows * f * 2.0;  // FP8 row + column copies
    if (op.name.ends_with("down_proj.dgrad")) op.bytes += rows * 2 * f * (kAct + 2.0);
  }
}

}  // namespace

Tokens tokens_of(const ModelSpec& m, const Strategy& s, const HardwareSpec& hw, double expert_load) {
  Tokens t;
  const int seq = s.training.seq_len > 0 ? s.training.seq_len : m.seq_len;
  t.per_device = static_cast<double>(s.training.micro_batch) * seq / s.parallel.cp;
  if (m.moe) {
    const MoeSpec& e = *m.moe;
    const int dies = s.ep_over_dies ? hw.device.dies : 1;
    t.per_rank_moe = t.per_device / s.parallel.tp / dies;
    t.experts_per_rank = e.routed_experts / s.parallel.ep;
    // Every rank of the EP x ETP group sends T_r x top_k copies over E experts.
    t.per_expert = t.per_rank_moe * s.parallel.ep * s.parallel.etp * e.top_k / e.routed_experts;
    t.per_expert_slowest = t.per_expert * std::max(1.0, expert_load);
    const double p = static_cast<double>(e.top_k) / e.routed_experts;
    if (!balanced_load(s.moe.routing)) t.per_expert_sd = std::sqrt(t.per_expert * std::max(0.0, 1 - p));
  }
  return t;
}

const char* tp_block(const Op& op) {
  if (op.kind != OpKind::Gemm || op.replicated) return "";
  switch (op.module) {
    case Module::AttnProj:
    case Module::MlaUpProj: return "attention";
    case Module::Mlp: return "mlp";
    case Module::SharedExperts: return "shared_experts";
    default: return "";
  }
}

std::vector<Layer> build_layers(const ModelSpec& m, const Strategy& s, const HardwareSpec& hw,
                                double expert_load) {
  Ctx c{m, s, tokens_of(m, s, hw, expert_load), static_cast<double>(s.parallel.tp), 0.0,
        s.training.seq_len > 0 ? s.training.seq_len : m.seq_len, fp8_gemms(s.training.precision, hw.device)};
  c.attention = hw.device.attention_kernel(s.training.attention_kernel);
  // Norms and residuals run on the sequence shard with SP; MoE layers need SP for tp > 1.
  c.t_sp = (s.parallel.sp || (m.moe && s.parallel.tp > 1)) ? c.tok.per_device / c.t : c.tok.per_device;
  const Recompute& rc = s.training.recompute;
  const double T = c.tok.per_device, h = m.hidden, vocab_shard = m.vocab / c.t;
  std::vector<Layer> layers;

  const bool fp8 = c.fp8;
  // TP ranks with sequence parallelism gather the GEMM inputs (MoE layers need SP with TP)
  const double sp_tp = (s.parallel.sp || m.moe.has_value()) && s.parallel.tp > 1 ? s.parallel.tp : 1;
  auto casts = [&](std::vector<Op>& ops) {
    if (fp8) add_fp8_casts(ops, s.training.fp8_recipe, sp_tp);
  };
  // Per-layer CUDA graphs capture a transformer layer's forward up to its first host
  // synchronisation (a dropless MoE layer's token counts: Megatron-Core captures attention,
  // router and dispatch preprocessing there, cuda_graph_scope attn moe_router
  // moe_preprocess); the backward kernels of the captured ops are graphed with them.
  // A kernel whose backward visits every causal tile under a sliding window
  // (backward_window: false) does the causal work of the window's layers there.
  auto unwindowed_backward = [&](std::vector<Op>& ops) {
    if (c.attention == nullptr || c.attention->backward_window || s.training.unfused_attention) return;
    const double kept = window_pair_fraction(m, c.seq);
    for (Op& op : ops) {
      if (op.kind == OpKind::Attention && op.phase == Phase::InputGrad && op.window > 0 && kept > 0) {
        op.flops /= kept;
        op.window = 0;
      }
    }
  };
  auto fused_mlp = [&](std::vector<Op>& ops) {
    if (s.moe.fused_mlp && m.moe) {
      fuse_grouped_mlp(ops, c.tok.per_expert_slowest * c.tok.experts_per_rank,
                       m.moe->expert_intermediate / static_cast<double>(s.parallel.etp));
    }
  };
  // A full-iteration graph (training.cuda_graphs: full) replays every kernel of the forward
  // and backward, and its static expert buffers leave nothing to wait for: the host sync goes.
  auto graph = [&](std::vector<Op>& ops) {
    if (s.training.cuda_graphs_full) {
      std::erase_if(ops, [](const Op& op) { return op.kind == OpKind::HostSync; });
      for (Op& op : ops) op.graphed = true;
      return;
    }
    if (!s.training.cuda_graphs) return;
    for (Op& op : ops) {
      if (op.kind == OpKind::HostSync) break;
      op.graphed = true;
    }
  };
  if (dense_layers(m) > 0) {
    Layer l{LayerKind::Dense, dense_layers(m), {}};
    add_transformer_layer(c, l.ops, false, "");
    casts(l.ops);
    graph(l.ops);
    add_backward(l.ops, rc, true);
    unwindowed_backward(l.ops);
    if (s.training.fp32_grad_add) add_grad_accumulation(l.ops, m, 0);
    layers.push_back(std::move(l));
  }
  if (moe_layers(m) > 0) {
    Layer l{LayerKind::Moe, moe_layers(m), {}};
    add_transformer_layer(c, l.ops, true, "");
    casts(l.ops);
    graph(l.ops);
    add_backward(l.ops, rc, true);
    unwindowed_backward(l.ops);
    fused_mlp(l.ops);
    if (s.training.fp32_grad_add) add_grad_accumulation(l.ops, m, 0);
    layers.push_back(std::move(l));
  }
  {
    // Vocab-parallel embedding lookup: write the token vectors; backward scatters the
    // gradient into the embedding's FP32 main grad.
    Layer l{LayerKind::Embedding, 1, {}};
    l.ops.push_back(memory("embedding_lookup", Module::Other, 2 * T * h * kAct, T * h * (kAct + 2 * kFp32),
                           MemClass::Copy));
    if (s.training.cuda_graphs_full) graph(l.ops);
    add_backward(l.ops, rc, false);
    if (s.training.fp32_grad_add) add_grad_accumulation(l.ops, m, vocab_shard * h);
    layers.push_back(std::move(l));
  }
  auto add_head = [&](std::vector<Op>& ops, const std::string& prefix) {
    ops.push_back(norm(c, prefix + "final_norm", c.t_sp, h));
    Op head = gemm(prefix + "lm_head", Module::Other, T, vocab_shard, h);
    // The output head stays in BF16 (DeepSeek-V3 sec. 3.3.1) unless training.fp8_head.
    head.low_precision = c.s.training.fp8_head;
    ops.push_back(head);
    // Fused softmax cross-entropy over the FP32 logits shard; its backward writes dlogits.
    // Vocab-parallel cross-entropy (Megatron): max, exp-sum and target-logit passes. Eager:
    // logits.float() (2 + 4 B), log_softmax (4 + 4 + a 4 B reduction pass), and a backward
    // of 4 + 4 + 4 and the BF16 cast (4 + 2): 18 B each way.
    if (c.s.training.eager_loss) {
      ops.push_back(memory(prefix + "cross_entropy", Module::Other, 18 * T * vocab_shard, 18 * T * vocab_shard,
                           MemClass::Reduction, 3, 2));
    } else if (c.s.training.unfused_loss) {
      // Megatron-Core's unfused vocab-parallel cross-entropy (megatron/core/tensor_parallel/
      // cross_entropy.py): forward .float() (2 + 4 B per logit), max (4), in-place subtract
      // (4 + 4), exp (4 + 4), sum (4), softmax divide (4 + 4) = 38 B in 6 kernels; backward
      // multiply by the loss gradient (4 + 4) and the cast back to BF16 (4 + 2) = 14 B in 2.
      ops.push_back(memory(prefix + "cross_entropy", Module::Other, 38 * T * vocab_shard, 14 * T * vocab_shard,
                           MemClass::Reduction, 6, 2));
    } else {
      ops.push_back(memory(prefix + "cross_entropy", Module::Other, T * vocab_shard * (kAct + kFp32),
                           T * vocab_shard * (kFp32 + kAct), MemClass::Reduction, 3, 1));
    }
  };
  {
    Layer l{LayerKind::Head, 1, {}};
    add_head(l.ops, "");
    casts(l.ops);  // an FP8 head's input and logit gradient (training.fp8_head)
    if (s.training.cuda_graphs_full) graph(l.ops);
    add_backward(l.ops, rc, false);
    // A tied output head on the embedding's rank (no pipeline) shares the table's gradient,
    // which the embedding layer counts.
    if (s.training.fp32_grad_add) add_grad_accumulation(l.ops, m, 0, !(m.tied_embeddings && s.parallel.pp == 1));
    layers.push_back(std::move(l));
  }
  if (m.mtp_depth > 0) {
    // DeepSeek-V3 MTP module (sec. 2.2): norm(h), norm(embedding), [.;.] -> h projection,
    // one transformer block, then the shared head on its own final norm.
    Layer l{LayerKind::Mtp, m.mtp_depth, {}};
    l.ops.push_back(norm(c, "mtp.hidden_norm", c.t_sp, h));
    l.ops.push_back(norm(c, "mtp.embedding_norm", c.t_sp, h));
    l.ops.push_back(gemm("mtp.eh_proj", Module::Other, T, h, 2 * h));
    add_transformer_layer(c, l.ops, m.moe.has_value(), "mtp.");
    std::vector<Op> head;
    add_head(head, "mtp.");
    l.ops.insert(l.ops.end(), head.begin(), head.end());
    casts(l.ops);
    if (s.training.cuda_graphs_full) graph(l.ops);
    add_backward(l.ops, rc, true);
    unwindowed_backward(l.ops);
    fused_mlp(l.ops);
    if (s.training.fp32_grad_add) add_grad_accumulation(l.ops, m, 0);
    layers.push_back(std::move(l));
  }
  return layers;
}

}  // namespace paraplan::model
