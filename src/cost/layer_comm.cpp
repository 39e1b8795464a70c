// Communication of each layer kind under a strategy: TP all-reduce or all-gather /
// reduce-scatter (sequence parallel), CP key/value exchange, EP dispatch and combine, and
// the pipeline send of one micro-batch's activations.

#include <algorithm>
#include <string>
#include <vector>

#include "cost/comm.hpp"
#include "cost/compute.hpp"
#include "cost/dispatch.hpp"
#include "cost/fit.hpp"
#include "cost/routing.hpp"
#include "model/op_graph.hpp"
#include "model/params.hpp"
#include "paraplan/estimate.hpp"

namespace paraplan {
namespace {

constexpr const char* kCpKvRing = "cp_kv_ring";
constexpr const char* kCpKvGradRing = "cp_kv_grad_ring";
constexpr const char* kCpKvAllGather = "cp_kv_all_gather";
constexpr const char* kCpKvGradReduceScatter = "cp_kv_grad_reduce_scatter";
constexpr const char* kCpQkvAllToAll = "cp_qkv_all_to_all";
constexpr const char* kCpOutAllToAll = "cp_out_all_to_all";

const char* engine_name(Engine e) { return e == Engine::Dma ? "dma" : "compute"; }

CommOpEstimate from_collective(std::string name, std::string phase, std::string group,
                               const cost::CollectiveCost& c) {
  CommOpEstimate op;
  op.name = std::move(name);
  op.phase = std::move(phase);
  op.group = std::move(group);
  op.algorithm = c.measured ? std::string("measured") : cost::name(c.algorithm);
  op.time_s = c.time_s;
  op.compute_s = c.time_s * c.compute_share;
  for (const cost::TierTraffic& t : c.tiers) {
    op.stages.push_back(CommStageEstimate{std::string(cost::name(c.op)), t.tier, engine_name(c.engine),
                                          t.bytes, t.time_s > 0 ? t.bytes / t.time_s : 0, t.time_s,
                                          cost::name(c.op), c.compute_share});
  }
  return op;
}

CommOpEstimate from_exchange(const cost::ExchangeCost& x, const char* phase, Dispatch scheme) {
  static const char* names[] = {"allgather", "alltoall", "deepep", "sendrecv_allgather", "sendrecv_deepep"};
  CommOpEstimate op;
  op.name = "ep_" + x.name;
  op.phase = phase;
  op.group = "ep";
  op.algorithm = names[static_cast<int>(scheme)];
  if (x.chunks > 1) op.algorithm += " x" + std::to_string(x.chunks);  // in that many chunks
  op.time_s = x.time_s;
  op.compute_s = x.compute_s;
  op.queueing_s = x.queueing_s;
  for (const cost::Stage& s : x.stages) {
    op.stages.push_back(CommStageEstimate{s.name, s.link, engine_name(s.engine), s.bytes, s.bw, s.time_s, cost::name(s.op),
                                          s.compute_share});
  }
  return op;
}

}  // namespace

CommBreakdown estimate_comm(const Plan& plan) {
  const HardwareSpec& hw = plan.hardware;
  const ModelSpec& m = plan.model;
  const Strategy& s = plan.strategy;
  const Parallel& p = s.parallel;
  CommBreakdown out;
  model::Tokens tok = model::tokens_of(m, s, hw, 1.0);
  const double h = m.hidden;
  const double act_bytes = tok.per_device * h * 2;  // one micro-batch's hidden states, BF16

  // TP (Korthikanti et al. 2022): see the blocks below.
  // The strategy may fix the algorithm of TP / CP collectives; otherwise the fastest.
  cost::Algorithm fixed_algo = cost::Algorithm::Ring;
  const cost::Algorithm* fixed = nullptr;
  switch (s.collective_algorithm) {
    case CollectiveAlgorithm::Auto: break;
    case CollectiveAlgorithm::Ring: fixed_algo = cost::Algorithm::Ring; fixed = &fixed_algo; break;
    case CollectiveAlgorithm::Hierarchical: fixed_algo = cost::Algorithm::Hierarchical; fixed = &fixed_algo; break;
    case CollectiveAlgorithm::HalvingDoubling: fixed_algo = cost::Algorithm::HalvingDoubling; fixed = &fixed_algo; break;
    case CollectiveAlgorithm::Tree: fixed_algo = cost::Algorithm::Tree; fixed = &fixed_algo; break;
  }
  // One pair of TP collectives per tensor-parallel block, forward and backward: with SP an
  // all-gather before the block and a reduce-scatter after it (the backward mirrors them),
  // without SP an all-reduce after it (forward) and one of the input gradient (backward).
  std::vector<CommOpEstimate> tp_block;
  if (p.tp > 1) {
    cost::GroupSpan g = cost::place(hw, p.tp, 1, false);
    const bool sp = p.sp || m.moe.has_value();
    if (sp) {
      // With FP8 GEMMs the all-gathered tensors are the GEMMs' quantized inputs: the norm
      // output forward and the output gradient backward, 1 B per element (Transformer Engine
      // gathers through the input and grad-output quantizers, TransformerEngine@d0067d0
      // transformer_engine/pytorch/module/layernorm_linear.py and base.py,
      // grad_output_preprocess; torchao's Float8ColwiseParallel / Float8RowwiseParallel cast
      // before the redistribute). The per-block scales (at most 1/32 more) are left out. The
      // reduce-scatters carry the GEMMs' BF16 outputs. A device without FP8 runs its GEMMs,
      // and gathers their inputs, in BF16 (model::fp8_gemms). Each backward op is its forward
      // op's gradient: the all-gather's a reduce-scatter of the BF16 input gradient, the
      // reduce-scatter's an all-gather of the (quantized) output gradient.
      const double ag_bytes = model::fp8_gemms(s.training.precision, hw.device) ? act_bytes / 2 : act_bytes;
      auto ag = cost::collective(hw, Collective::AllGather, ag_bytes, g, fixed);
      auto rs = cost::collective(hw, Collective::ReduceScatter, act_bytes, g, fixed);
      tp_block.push_back(from_collective("tp_all_gather", "forward", "tp", ag));
      tp_block.push_back(from_collective("tp_reduce_scatter", "forward", "tp", rs));
      tp_block.push_back(from_collective("tp_all_gather", "backward", "tp", rs));
      tp_block.push_back(from_collective("tp_reduce_scatter", "backward", "tp", ag));
    } else {
      auto ar = cost::collective(hw, Collective::AllReduce, act_bytes, g, fixed);
      tp_block.push_back(from_collective("tp_all_reduce", "forward", "tp", ar));
      tp_block.push_back(from_collective("tp_all_reduce", "backward", "tp", ar));
    }
  }
  // The TP blocks of a layer (Megatron-LM): attention, and the MLP of a dense layer or the
  // shared experts of a MoE layer (Megatron-Core's SharedExpertMLP gathers its own input);
  // routed experts move tokens through the EP exchange instead.
  auto tp_ops_of = [&](bool moe) {
    std::vector<CommOpEstimate> ops;
    auto add_block = [&](const char* block) {
      for (CommOpEstimate op : tp_block) {
        op.name = std::string(block) + "." + op.name;
        ops.push_back(std::move(op));
      }
    };
    add_block("attention");
    if (!moe) add_block("mlp");
    if (moe && m.moe->shared_experts > 0) add_block("shared_experts");
    return ops;
  };
  // CP (cost::cp_exposed says how much of it the attention hides): one rank's keys and
  // values are a chunk; how chunks move depends on training.cp_comm.
  std::vector<CommOpEstimate> cp_ops;
  if (p.cp > 1) {
    const double heads = m.attention.heads / static_cast<double>(p.tp);
    const double chunk = tok.per_device * model::attention_kv_heads(m, s) * (model::qk_head_dim(m) + model::v_head_dim(m)) * 2;
    cost::GroupSpan g = cost::place(hw, p.cp, p.tp, false);
    // A ring step is as slow as its slowest hop: when the group spans several nodes (or any
    // unit), some hop crosses between its two halves.
    const long long ring_span = static_cast<long long>(p.tp) * std::max(1, p.cp / 2);
    auto ring = [&](const char* name, const char* phase, double bytes, int steps) {
      CommOpEstimate op = from_collective(name, phase, "cp", cost::send_recv(hw, bytes, ring_span, false));
      op.algorithm = "ring";
      op.steps = steps;
      op.time_s *= steps;
      op.compute_s *= steps;
      for (CommStageEstimate& st : op.stages) {
        st.time_s *= steps;
        st.bytes *= steps;
      }
      return op;
    };
    auto ag = cost::collective(hw, Collective::AllGather, chunk * p.cp, g, fixed);
    switch (s.training.cp_comm) {
      case CpComm::P2p:
        // Transformer Engine's ring: cp - 1 steps pass K/V on; backward passes K/V and the
        // BF16 dK/dV (the last hop returns each chunk's gradient to its owner).
        cp_ops.push_back(ring(kCpKvRing, "forward", chunk, p.cp - 1));
        cp_ops.push_back(ring(kCpKvRing, "backward", chunk, p.cp - 1));
        cp_ops.push_back(ring(kCpKvGradRing, "backward", chunk, p.cp));
        break;
      case CpComm::AllGather: {
        // TE all_gather: gathered before the attention and reduce-scattered after it.
        auto rs = cost::collective(hw, Collective::ReduceScatter, chunk * p.cp, g, fixed);
        cp_ops.push_back(from_collective(kCpKvAllGather, "forward", "cp", ag));
        cp_ops.push_back(from_collective(kCpKvAllGather, "backward", "cp", ag));
        cp_ops.push_back(from_collective(kCpKvGradReduceScatter, "backward", "cp", rs));
        break;
      }
      case CpComm::TorchAllGather:
        // torch: gathered in each pass; the gradients go round the ring in FP32
        // (_ContextParallelOptions.convert_to_f32), one all-to-all permute per step.
        cp_ops.push_back(from_collective(kCpKvAllGather, "forward", "cp", ag));
        cp_ops.push_back(from_collective(kCpKvAllGather, "backward", "cp", ag));
        cp_ops.push_back(ring(kCpKvGradRing, "backward", 2 * chunk, p.cp));
        break;
      case CpComm::A2a: {
        // Ulysses: Q, K, V to a head split before the attention, the output back after it;
        // backward moves their gradients the opposite way (each rank's tensors, BF16).
        const double q = tok.per_device * heads * model::qk_head_dim(m) * 2;
        const double out = tok.per_device * heads * model::v_head_dim(m) * 2;
        // (collective_algorithm names algorithms of the reducing collectives, not all-to-all's)
        auto qkv = cost::collective(hw, Collective::AllToAll, q + chunk, g);
        auto o = cost::collective(hw, Collective::AllToAll, out, g);
        cp_ops.push_back(from_collective(kCpQkvAllToAll, "forward", "cp", qkv));
        cp_ops.push_back(from_collective(kCpOutAllToAll, "forward", "cp", o));
        cp_ops.push_back(from_collective(kCpOutAllToAll, "backward", "cp", o));
        cp_ops.push_back(from_collective(kCpQkvAllToAll, "backward", "cp", qkv));
        break;
      }
    }
  }
  // EP: dispatch and combine forward; backward moves the same volumes the other way.
  std::vector<CommOpEstimate> ep_ops;
  if (m.moe && p.ep > 1) {
    cost::EpLayout probe = cost::ep_layout(hw, m, s, tok.per_rank_moe);
    // Forced-balanced routing has no statistical imbalance: every rank gets its mean share.
    cost::LoadFactors lf = balanced_load(s.moe.routing)
                               ? cost::LoadFactors{}
                               : cost::load_factors(tok.per_rank_moe * p.ep * p.etp, m.moe->routed_experts,
                                                    m.moe->top_k, p.ep);
    // The busiest rank receives rank_load x the mean: its exchange sets the pace.
    cost::EpLayout ep = probe;
    ep.load = lf.rank * s.moe.imbalance;
    RoutingEstimate& r = out.routing;
    r.ep = ep.ep;
    r.ranks_per_node = ep.ranks_per_node;
    r.nodes = ep.nodes;
    r.ep_over_dies = ep.dies;
    r.p_rank = probe.routing.p_rank;
    r.p_node = probe.routing.p_node;
    r.ranks_per_token = probe.routing.ranks_per_token;
    r.nodes_per_token = probe.routing.nodes_per_token;
    r.expert_load = lf.expert;
    r.rank_load = lf.rank;
    r.dispatch_bytes_per_token = ep.dispatch_bytes;
    r.combine_bytes_per_token = ep.combine_bytes;
    const auto dispatch = cost::exchange(hw, ep, s.moe.dispatch, false);
    const auto combine = cost::exchange(hw, ep, s.moe.dispatch, true);
    ep_ops.push_back(from_exchange(dispatch, "forward", s.moe.dispatch));
    ep_ops.push_back(from_exchange(combine, "forward", s.moe.dispatch));
    CommOpEstimate dispatch_bwd = from_exchange(combine, "backward", s.moe.dispatch);
    dispatch_bwd.name = "ep_dispatch_grad";  // the combine's backward moves dispatch volumes
    CommOpEstimate combine_bwd = from_exchange(dispatch, "backward", s.moe.dispatch);
    combine_bwd.name = "ep_combine_grad";
    ep_ops.push_back(combine_bwd);
    ep_ops.push_back(dispatch_bwd);
  }
  auto layer = [&](const char* kind, bool moe) {
    LayerComm l;
    l.kind = kind;
    l.ops = tp_ops_of(moe);
    l.ops.insert(l.ops.end(), cp_ops.begin(), cp_ops.end());
    if (moe) l.ops.insert(l.ops.end(), ep_ops.begin(), ep_ops.end());
    for (const CommOpEstimate& op : l.ops) {
      (op.phase == "forward" ? l.forward_s : l.backward_s) += op.time_s;
      l.queueing_s += op.queueing_s;
    }
    out.layers.push_back(std::move(l));
  };
  if (model::dense_layers(m) > 0) layer("dense", false);
  if (model::moe_layers(m) > 0) layer("moe", true);
  if (m.mtp_depth > 0) layer("mtp", m.moe.has_value());

  // PP: one micro-batch's activations (sequence-sharded with SP) to the next stage, which
  // sits tp x cp x dp devices further in the rank order.
  if (p.pp > 1) {
    const bool sp = p.sp || (m.moe.has_value() && p.tp > 1);
    const double bytes = act_bytes / (sp ? p.tp : 1);
    auto c = cost::send_recv(hw, bytes, static_cast<long long>(p.tp) * p.cp * p.dp, false);
    out.pp_send = from_collective("pp_send_recv", "forward", "pp", c);
  }
  // Tiers with a measured size table: the alpha-beta view of the same measurements.
  for (const TierSpec& t : hw.tiers) {
    if (t.size_efficiency.size() < 2) continue;
    std::vector<cost::TimedTransfer> rows;
    for (const SizePoint& sp : t.size_efficiency) {
      rows.push_back({sp.bytes, sp.bytes / (t.bw_bytes_per_s * sp.efficiency)});
    }
    cost::AlphaBeta f = cost::fit_alpha_beta(rows);
    out.link_fits.push_back(LinkFit{t.name, f.alpha_s, f.beta_bytes_per_s, f.r2, f.worst_relative});
  }
  return out;
}

}  // namespace paraplan

namespace paraplan::cost {

AttentionTimes attention_times(const LayerEstimate& layer) {
  AttentionTimes t;
  for (const OpEstimate& op : layer.ops) {
    if (op.kind != "attention") continue;
    if (op.phase == "forward") t.forward_s += op.time_s;
    if (op.phase == "input_grad") t.backward_s += op.time_s;
    if (op.phase == "recompute") t.recomputed = true;
  }
  return t;
}

CpExposed cp_exposed(const Strategy& s, const std::vector<CommOpEstimate>& ops, const AttentionTimes& attn) {
  CpExposed e;
  const int cp = s.parallel.cp;
  if (cp <= 1) return e;
  const double step_f = attn.forward_s / cp, step_b = attn.backward_s / cp;
  double kv_f = 0, kv_b = 0, grad = 0, other_f = 0, other_b = 0;
  int grad_steps = 1;
  for (const CommOpEstimate& op : ops) {
    if (op.group != "cp") continue;
    const bool fwd = op.phase == "forward";
    if (op.name == kCpKvRing || op.name == kCpKvAllGather) {
      (fwd ? kv_f : kv_b) += op.time_s;
    } else if (op.name == kCpKvGradRing) {
      grad += op.time_s;
      grad_steps = op.steps;
    } else {
      (fwd ? other_f : other_b) += op.time_s;  // TE's gradient reduce-scatter; Ulysses' all-to-alls
    }
  }
  if (!s.overlap.cp) {
    // Each exchange waited on where it is issued: all of it adds to the attention.
    e.forward_s = kv_f + other_f;
    e.backward_s = kv_b + grad + other_b;
    if (attn.recomputed) e.backward_s += e.forward_s;
    return e;
  }
  switch (s.training.cp_comm) {
    case CpComm::P2p: {
      const double hop_f = kv_f / (cp - 1), hop_b = kv_b / (cp - 1), hop_g = grad / grad_steps;
      e.forward_s = (cp - 1) * std::max(0.0, hop_f - step_f);
      e.backward_s = (cp - 1) * std::max(0.0, hop_b + hop_g - step_b) + hop_g;
      break;
    }
    case CpComm::AllGather:
      e.forward_s = kv_f;
      e.backward_s = kv_b + other_b;
      break;
    case CpComm::A2a:
      // before and after the attention, nothing to hide behind
      e.forward_s = other_f;
      e.backward_s = other_b;
      break;
    case CpComm::TorchAllGather: {
      const double hop_g = grad / grad_steps;
      e.forward_s = std::max(0.0, kv_f - step_f);
      e.backward_s = std::max(0.0, kv_b - step_b) + (grad_steps - 1) * std::max(0.0, hop_g - step_b) + hop_g;
      break;
    }
  }
  if (attn.recomputed) e.backward_s += e.forward_s;
  return e;
}

TpExposed tp_exposed(const HardwareSpec& hw, const Strategy& s, const std::vector<CommOpEstimate>& ops,
                     const LayerEstimate& layer) {
  TpExposed e;
  // The share of the units a pipelined or bulk exchange's kernels hold: Transformer Engine's
  // 16 SMs (num_sm of its default pipeline and bulk methods, TransformerEngine@d0067d0
  // transformer_engine/pytorch/module/base.py, initialize_ub) on a device whose
  // communication runs on its compute units (comm_units); none elsewhere.
  constexpr double kOverlapUnits = 16;
  const double units = hw.device.compute_units;
  const bool on_units = dma_compute_share(hw) > 0;
  const double u = on_units && units > 0 ? std::min(kOverlapUnits / units, 0.9) : 0.0;
  // One exchange: the part that can hide (DMA stages) and the part that adds (stages on all
  // the compute units; on a device without comm_units, the op's busy time).
  struct Part {
    double dma = 0, fixed = 0;
    [[nodiscard]] double total() const { return dma + fixed; }  // waited on whole
  };
  auto part_of = [&](const CommOpEstimate& op) {
    Part p;
    if (on_units) {
      for (const CommStageEstimate& st : op.stages) {
        if (st.compute_share >= 1) p.fixed += st.time_s;
      }
      p.fixed = std::min(p.fixed, op.time_s);
    } else {
      p.fixed = std::min(op.compute_s, op.time_s);
    }
    p.dma = op.time_s - p.fixed;
    return p;
  };
  struct Block {
    std::string name;
    Part ag_f, rs_f, grad_out, grad_in;  // the backward: the output gradient's all-gather, the input gradient's reduce-scatter
    double all_reduce_f = 0, all_reduce_b = 0;
  };
  std::vector<Block> blocks;
  for (const CommOpEstimate& op : ops) {
    if (op.group != "tp") continue;
    const bool fwd = op.phase == "forward";
    const std::size_t dot = op.name.find('.');
    const std::string block = dot == std::string::npos ? std::string() : op.name.substr(0, dot);
    const std::string what = dot == std::string::npos ? op.name : op.name.substr(dot + 1);
    auto it = std::find_if(blocks.begin(), blocks.end(), [&](const Block& b) { return b.name == block; });
    if (it == blocks.end()) {
      blocks.push_back(Block{block, {}, {}, {}, {}, 0, 0});
      it = blocks.end() - 1;
    }
    // The backward mirrors the forward: the reduce-scatter's gradient is an all-gather of the
    // output gradient, the all-gather's a reduce-scatter of the input gradient.
    if (what == "tp_all_gather") {
      (fwd ? it->ag_f : it->grad_in) = part_of(op);
    } else if (what == "tp_reduce_scatter") {
      (fwd ? it->rs_f : it->grad_out) = part_of(op);
    } else {
      (fwd ? it->all_reduce_f : it->all_reduce_b) += op.time_s;
    }
  }
  const std::vector<TpBlockGemms> gemms = tp_block_gemms(layer);
  for (const Block& b : blocks) {
    // The block's GEMMs: the row-parallel one is its last forward GEMM. A block whose forward
    // runs again whole in the backward (its first and its last GEMM recomputed: full
    // recompute, or a recompute module holding the block, mlp or shared_experts) exchanges
    // again there as its forward did; torchtitan's op policy takes the collectives' outputs
    // from the forward's cache (model::add_op_policy_recompute), and MLA's up-projections
    // (mla_up_proj) are recomputed from the gathered latents.
    std::string first, row;
    for (const TpBlockGemms& g : gemms) {
      if (g.block == b.name) {
        first = g.first;
        row = g.row;
      }
    }
    // One pass over the block's ops: what runs again in the backward, and the GEMM times the
    // exchanges can hide under (each also as run in chunks, `split`).
    bool first_again = false, row_again = false, any_again = false, row_fp8 = false;
    double col_r = 0, col_r_split = 0;  // the block's recomputed column-parallel GEMMs
    double col_f = 0, col_f_split = 0, row_f = 0, row_f_split = 0, row_d = 0, row_d_split = 0, col_d = 0, col_w = 0;
    double col_d_split = 0;
    for (const OpEstimate& op : layer.ops) {
      if (op.block.empty() || op.block != b.name) continue;
      const double split = op.split_s > 0 ? op.split_s : op.time_s;
      if (op.phase == "recompute") {
        any_again = true;
        first_again = first_again || op.name == first;
        row_again = row_again || op.name == row;
        if (op.kind == "gemm" && op.name != row) {
          col_r += op.time_s;
          col_r_split += split;
        }
      } else if (op.phase == "forward") {
        (op.name == row ? row_f : col_f) += op.time_s;
        (op.name == row ? row_f_split : col_f_split) += split;
        if (op.name == row) row_fp8 = op.fp8;
      } else if (op.phase == "input_grad") {
        if (op.name == row + ".dgrad") {
          row_d += op.time_s;
          row_d_split += split;
        } else {
          col_d += op.time_s;
          col_d_split += split;
        }
      } else if (op.phase == "weight_grad" && op.name != row + ".wgrad") {
        col_w += op.time_s;
      }
    }
    const bool op_policy = s.training.recompute.mode == RecomputeMode::Op;
    const bool recomputed = !op_policy && first_again && row_again;
    // torchtitan's op policy keeps the reduce-scatter's output but not the all-gather's
    // (`_save_list`: mm, SDPA, reduce_scatter_tensor, max; pytorch/torchtitan@820504e
    // torchtitan/models/llama3/parallelize_llama.py): the gathered input, which the recomputed
    // column GEMM (wk, w3) and the column GEMMs' weight gradients read, is gathered again when
    // the block's forward runs again. Without sequence parallelism the all-reduce is left out
    // here: only what the backward reads runs again, and that is not settled per block.
    const bool gathered_again = op_policy && any_again;
    if (!s.overlap.tp) {
      const double fwd = b.all_reduce_f + b.ag_f.total() + b.rs_f.total();
      e.forward_s += fwd;
      e.backward_s += b.all_reduce_b + b.grad_out.total() + b.grad_in.total() +
                      (recomputed ? fwd : 0.0) + (gathered_again ? b.ag_f.total() : 0.0);
      continue;
    }
    if (b.all_reduce_f + b.all_reduce_b > 0) {  // without sequence parallelism, nothing splits
      e.forward_s += b.all_reduce_f;
      e.backward_s += b.all_reduce_b + (recomputed ? b.all_reduce_f : 0.0);
      continue;
    }
    if (row.empty()) {  // no GEMM to hide under
      const double fwd = b.ag_f.total() + b.rs_f.total();
      e.forward_s += fwd;
      e.backward_s += b.grad_out.total() + b.grad_in.total() + (recomputed ? fwd : 0.0);
      continue;
    }
    const int tp = std::max(2, s.parallel.tp);
    // Ring exchange: tp chunk GEMMs (`split`, side by side on TE's streams), the first on the
    // local chunk, each later one once the copy engine has brought its chunk: the chunks'
    // time, or the whole transfer and the last chunk.
    auto ring = [&](double base, double split, const Part& x) {
      return std::max(split, x.dma + split / tp) - base + x.fixed;
    };
    // Pipeline of 4 chunks on the units the transfer's kernels leave: each chunk's
    // reduce-scatter after its GEMM, one at a time; the last one after all GEMMs.
    auto pipeline = [&](double base, double split, const Part& x) {
      constexpr int kChunks = 4;
      const double gemm = split / (1 - u);
      return std::max(gemm + x.dma / kChunks, gemm / kChunks + x.dma) - base + x.fixed;
    };
    // Bulk: the transfer's kernels beside the whole GEMM, which keeps all the units
    // (set_sm_margin off in Megatron-Bridge's tuned configurations,
    // NVIDIA-NeMo/Megatron-Bridge@067f987 src/megatron/bridge/training/comm_overlap.py) and
    // loses the share they hold while they run.
    auto bulk = [&](double base, const Part& x) { return std::max(base + u * x.dma, x.dma) - base + x.fixed; };
    // Under the op policy the gathered input comes again beside the recomputed column GEMM
    // (torch's micro-pipelined all-gather matmul), or stands alone where none runs again.
    const double again = !gathered_again ? 0.0
                         : col_r > 0     ? ring(col_r, col_r_split, b.ag_f)
                                         : b.ag_f.total();
    if (s.overlap.tp_async) {
      // torch's AsyncTP: the forward's all-gather and reduce-scatter, and in backward the
      // output gradient's all-gather, are ring exchanges (copy-engine pulls beside the
      // matmul's tp chunks); the staging copy and the partials' sum are ops of the block
      // (model::add_tp_async). Inductor fuses a reduce-scatter only with the one matmul that
      // produces its input (torch/_inductor/fx_passes/micro_pipeline_tp.py,
      // fuse_matmul_reduce_scatter): the input gradient of separate linears (q, k, v or gate,
      // up: training.linears separate) is a sum, its reduce-scatter waited on whole; a fused
      // projection's rings beside its dgrad. The weight gradients read the forward's gathered
      // input (kept, or gathered again with the recomputed forward), no second gather beside
      // the dgrad as Transformer Engine's.
      const double fwd = ring(col_f, col_f_split, b.ag_f) + ring(row_f, row_f_split, b.rs_f);
      const double grad_in = s.training.separate_linears ? b.grad_in.total() : ring(col_d, col_d_split, b.grad_in);
      e.forward_s += fwd;
      e.backward_s += ring(row_d, row_d_split, b.grad_out) + grad_in + (recomputed ? fwd : 0.0) + again;
      continue;
    }
    const double fwd = ring(col_f, col_f_split, b.ag_f) +
                       (row_fp8 ? ring(row_f, row_f_split, b.rs_f) : pipeline(row_f, row_f_split, b.rs_f));
    e.forward_s += fwd;
    // The input is gathered again for the weight gradient (TE keeps its local shard) beside
    // the column-parallel dgrad: the forward's all-gather once more.
    e.backward_s += ring(row_d, row_d_split, b.grad_out) + bulk(col_d, b.ag_f) + bulk(col_w, b.grad_in) +
                    (recomputed ? fwd : 0.0) + again;
  }
  return e;
}

}  // namespace paraplan::cost
