// Communication of each layer kind under a strategy: TP all-reduce or all-gather /
// reduce-scatter (sequence parallel), CP key/value exchange, EP dispatch and combine, and
// the pipeline send of one micro-batch's activations.

#include <algorithm>

#include "cost/comm.hpp"
#include "cost/dispatch.hpp"
#include "cost/fit.hpp"
#include "cost/routing.hpp"
#include "model/op_graph.hpp"
#include "model/params.hpp"
#include "paraplan/estimate.hpp"

namespace paraplan {
namespace {

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
      auto ag = cost::collective(hw, Collective::AllGather, act_bytes, g, fixed);
      auto rs = cost::collective(hw, Collective::ReduceScatter, act_bytes, g, fixed);
      tp_block.push_back(from_collective("tp_all_gather", "forward", "tp", ag));
      tp_block.push_back(from_collective("tp_reduce_scatter", "forward", "tp", rs));
      tp_block.push_back(from_collective("tp_all_gather", "backward", "tp", ag));
      tp_block.push_back(from_collective("tp_reduce_scatter", "backward", "tp", rs));
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
  // CP: every rank gathers the keys and values of the other cp - 1 chunks (ring attention),
  // forward; backward gathers them again and reduce-scatters their gradients.
  std::vector<CommOpEstimate> cp_ops;
  if (p.cp > 1) {
    const double heads = m.attention.heads / static_cast<double>(p.tp);
    const double kv_heads = m.attention.kind == AttentionKind::Gqa
                                ? std::max(1.0, m.attention.kv_heads / static_cast<double>(p.tp))
                                : heads;
    const double kv = tok.per_device * kv_heads * (model::qk_head_dim(m) + model::v_head_dim(m)) * 2;
    cost::GroupSpan g = cost::place(hw, p.cp, p.tp, false);
    auto ag = cost::collective(hw, Collective::AllGather, kv * p.cp, g, fixed);
    auto rs = cost::collective(hw, Collective::ReduceScatter, kv * p.cp, g, fixed);
    cp_ops.push_back(from_collective("cp_kv_all_gather", "forward", "cp", ag));
    cp_ops.push_back(from_collective("cp_kv_all_gather", "backward", "cp", ag));
    cp_ops.push_back(from_collective("cp_kv_grad_reduce_scatter", "backward", "cp", rs));
  }
  // EP: dispatch and combine forward; backward moves the same volumes the other way.
  std::vector<CommOpEstimate> ep_ops;
  if (m.moe && p.ep > 1) {
    cost::EpLayout probe = cost::ep_layout(hw, m, s, tok.per_rank_moe);
    // Forced-balanced routing has no statistical imbalance: every rank gets its mean share.
    cost::LoadFactors lf = s.moe.routing == Routing::Balanced
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
