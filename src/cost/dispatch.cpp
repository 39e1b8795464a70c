#include "cost/dispatch.hpp"

#include <algorithm>
#include <cmath>

#include "cost/queueing.hpp"
#include "model/op_graph.hpp"

namespace paraplan::cost {
namespace {

// Tokens per RDMA chunk of a pipelined dispatch (the seeds' 128-256 token granularity,
// SEED_DIGEST.md sec. 5.9; DeepEP also moves tokens in chunks of this order).
constexpr double kChunkTokens = 128;

const TierSpec& cluster_tier(const HardwareSpec& hw) { return hw.tiers.back(); }

// Extra inter-node bandwidth per rank from links between paired nodes (Port-10): the pair's
// traffic splits over both paths; with more nodes only 1 of nodes - 1 peers is paired.
double paired_bandwidth(const HardwareSpec& hw, int nodes, std::string* name) {
  double extra = 0;
  for (const ExtraLinkSpec& l : hw.extra_links) {
    if (l.between == LinkPairing::NodePairs && nodes >= 2) {
      extra += l.bw_bytes_per_s / (nodes - 1);
      *name += "+" + l.name;
    }
  }
  return extra;
}

// Which library moves a stage's bytes: the collective library (NCCL, SUCCL) or DeepEP.
enum class Library { Collectives, DeepEp };

// The tier's measured figure for a stage of `library` doing `op`: DeepEP's own (`deepep`),
// or the collective library's for that op.
const std::optional<CollectiveOverride>& measured_figure(const TierSpec& t, Library library, Collective op) {
  return library == Library::DeepEp ? t.deepep : t.collective(op);
}

Stage inter_stage(const HardwareSpec& hw, const EpLayout& ep, std::string name, double bytes,
                  Collective op = Collective::AllToAll, Library library = Library::Collectives) {
  Stage st;
  st.name = std::move(name);
  st.op = op;
  st.link = cluster_tier(hw).name;
  st.bytes = bytes;
  if (bytes <= 0) return st;
  // The dies of a device share its NIC (and its extra links). A measured figure of the
  // cluster tier (DeepEP's RDMA bottleneck bandwidth, `paraplan calibrate deepep`; NCCL's
  // all-to-all) is the rate of these bytes; otherwise the NIC at its size efficiency.
  const double sharers = ep.dies ? hw.device.dies : 1;
  const TierSpec& cluster = cluster_tier(hw);
  const auto& measured = measured_figure(cluster, library, op);
  const double nic = measured ? override_bandwidth(*measured, cluster, bytes * sharers) * ranks_fraction(*measured, ep.ep)
                              : tier_bandwidth(cluster, bytes * sharers);
  const LevelView level = level_view(cluster, ep.nodes);
  st.bw = (nic * level.bw_factor + paired_bandwidth(hw, ep.nodes, &st.link)) / sharers;
  st.time_s = bytes / st.bw * cluster.calibration[static_cast<std::size_t>(op)] + level.latency_s;
  st.engine = measured ? measured->engine : cluster.engine;
  st.compute_share = measured && measured->engine == Engine::Compute ? measured->compute_share : dma_compute_share(hw);
  return st;
}

Stage from_collective(std::string name, const CollectiveCost& c, const HardwareSpec& hw) {
  Stage st;
  st.name = std::move(name);
  st.link = c.tiers.empty() ? std::string("local") : c.tiers.back().tier;
  double moved = 0;
  for (const TierTraffic& t : c.tiers) moved = std::max(moved, t.bytes);
  st.bytes = moved;
  st.time_s = c.time_s;
  st.op = c.op;
  st.bw = c.time_s > 0 ? moved / c.time_s : 0;
  st.engine = c.engine;
  st.compute_share = c.compute_share;
  (void)hw;
  return st;
}

// Moving `bytes` per rank to other EP ranks of the own node (all-to-all pattern).
Stage intra_stage(const HardwareSpec& hw, const EpLayout& ep, std::string name, double bytes,
                  Library library = Library::Collectives) {
  if (bytes <= 0 || ep.ranks_per_node <= 1) {
    Stage st;
    st.name = std::move(name);
    st.link = "local";
    st.op = Collective::AllToAll;
    return st;
  }
  const int g = ep.ranks_per_node;
  GroupSpan node = place(hw, g, 1, ep.dies);
  // An all-to-all of size S moves (g - 1) / g x S; choose S so that it moves `bytes`.
  const double S = bytes * g / (g - 1);
  if (library == Library::DeepEp) {
    // DeepEP's kernels at their own measured rate where the tier has one, else the links'
    // (the collective library's figure is another kernel's).
    const TierSpec& t = hw.tiers[static_cast<std::size_t>(node.tier[static_cast<std::size_t>(node.outer())])];
    if (const auto& d = t.deepep) {
      return from_collective(std::move(name), measured_collective(hw, t, *d, Collective::AllToAll, S, g, 1.0, t.latency_s),
                             hw);
    }
    const Algorithm direct = Algorithm::Direct;
    return from_collective(std::move(name), collective(hw, Collective::AllToAll, S, node, &direct), hw);
  }
  return from_collective(std::move(name), collective(hw, Collective::AllToAll, S, node), hw);
}

Stage gather_stage(const HardwareSpec& hw, const EpLayout& ep, std::string name, Collective op,
                   double size, int group, bool whole_ep) {
  GroupSpan g = place(hw, group, 1, ep.dies);
  (void)whole_ep;
  return from_collective(std::move(name), collective(hw, op, size, g), hw);
}

// Inter-die layout conversion after the non-fused SUCCL API (SEED_DIGEST.md sec. 4.2: 1.75 GB
// at 200 GB/s): the gathered buffer once through the die-to-die path.
Stage reorder_stage(const HardwareSpec& hw, double bytes) {
  Stage st;
  st.name = "inter_die_reorder";
  st.link = "die";
  st.op = Collective::AllGather;  // part of the all-gather dispatch
  st.bytes = bytes;
  for (const TierSpec& t : hw.tiers) {
    if (t.name == "die") {
      st.bw = t.bw_bytes_per_s;
      st.engine = t.engine;
      st.compute_share = t.engine == Engine::Compute ? 1.0 : dma_compute_share(hw);
      st.time_s = bytes / st.bw * t.calibration[static_cast<std::size_t>(Collective::AllGather)];
    }
  }
  return st;
}

// The stages of a two-stage scheme for `scale` of a micro-batch's tokens (1: all of them;
// 1 / chunks: one chunk of the inter-node transfer and the intra-node work on it).
std::vector<Stage> two_stage(const HardwareSpec& hw, const EpLayout& ep, Dispatch scheme, bool combine, double scale) {
  const double B = combine ? ep.combine_bytes : ep.dispatch_bytes;
  const double T = ep.tokens * scale;
  const double L = ep.tokens * ep.load * scale;
  std::vector<Stage> stages;
  if (scheme == Dispatch::SendRecvAllGather) {
    // Every token to the same-index card of every other node ("P(a token needs the other
    // node) ~ 1, so send everything", sec. 5.9), then an intra-node all-gather of all
    // nodes' tokens, then the inter-die reorder on two-die devices.
    const double size = ep.ep * T * B;
    stages.push_back(inter_stage(hw, ep, "send_recv_same_index", T * B * (ep.nodes - 1), Collective::SendRecv));
    stages.push_back(gather_stage(hw, ep, combine ? "intra_node_reduce_scatter" : "intra_node_all_gather",
                                  combine ? Collective::ReduceScatter : Collective::AllGather, size,
                                  ep.ranks_per_node, false));
    if (ep.dies) stages.push_back(reorder_stage(hw, size));
  } else {
    // Every token to the same-index card of every other node, then DeepEP-style forwarding
    // of the local and the received tokens to the ranks of this node that need them.
    stages.push_back(inter_stage(hw, ep, "send_recv_same_index", T * B * (ep.nodes - 1), Collective::SendRecv));
    const double rpn = ep.ranks_per_node;
    stages.push_back(intra_stage(hw, ep, "intra_node_forward", ep.nodes * L * B * (rpn - 1) * ep.routing.p_rank,
                                 Library::DeepEp));
  }
  return stages;
}

void finish(ExchangeCost& x, const HardwareSpec& hw, const EpLayout& ep, double local_fraction) {
  double sum = 0, worst = 0, rest = 0;
  for (std::size_t i = 0; i < x.stages.size(); ++i) {
    const Stage& s = x.stages[i];
    sum += s.time_s;
    worst = std::max(worst, s.time_s);
    if (i > 0) rest += s.time_s;
    x.compute_s += s.time_s * s.compute_share;
  }
  switch (x.overlap) {
    case StageOverlap::Sequential: x.time_s = sum; break;
    case StageOverlap::Pipelined: x.time_s = worst; break;
    case StageOverlap::TwoStage: {
      // Stage 0 (inter-node) runs beside the part of the later stages that works on local
      // data; the part on received data follows (SEED_DIGEST.md sec. 5.8). In C chunks, the
      // intra-node stages take chunk i when it has arrived (i x one chunk's transfer) and
      // they are free: f_i = max(f_{i-1}, i t_inter,c) + (1 - local) t_rest,c, f_0 = local x
      // t_rest; C = 1 is the seeds' max(t_inter, local t_rest) + (1 - local) t_rest.
      const double first = x.stages.empty() ? 0.0 : x.stages[0].time_s;
      if (x.chunks <= 1 || x.chunk_stages.empty()) {
        x.time_s = std::max(first, local_fraction * rest) + (1 - local_fraction) * rest;
        break;
      }
      double rest_c = 0, rest_compute_c = 0, rest_compute = 0;
      for (std::size_t i = 1; i < x.chunk_stages.size(); ++i) {
        rest_c += x.chunk_stages[i].time_s;
        rest_compute_c += x.chunk_stages[i].time_s * x.chunk_stages[i].compute_share;
      }
      for (std::size_t i = 1; i < x.stages.size(); ++i) rest_compute += x.stages[i].time_s * x.stages[i].compute_share;
      const Stage& inter_c = x.chunk_stages[0];
      double f = local_fraction * rest;
      for (int i = 1; i <= x.chunks; ++i) f = std::max(f, i * inter_c.time_s) + (1 - local_fraction) * rest_c;
      x.time_s = f;
      x.compute_s = x.chunks * inter_c.time_s * inter_c.compute_share + local_fraction * rest_compute +
                    (1 - local_fraction) * x.chunks * rest_compute_c;
      break;
    }
  }
  // Queueing of pipelined chunks: when the NIC stage is the slower one, the chunks it emits
  // queue at the faster intra-node stage (Kingman, tandem queue). ca: chunk-size variability
  // from routing (binomial share of a chunk's tokens needing a node) and the NIC's service
  // variability; cs: the intra-node tier's. A chunk waits at most for the chunks before it.
  if (x.overlap != StageOverlap::Sequential && ep.nodes > 1 && x.stages.size() >= 2) {
    const double n = std::max(1.0, ep.tokens / kChunkTokens);
    const double up = x.stages[0].time_s / n;
    double down_total = 0;
    for (std::size_t i = 1; i < x.stages.size(); ++i) down_total += x.stages[i].time_s;
    const double down = down_total / n;
    const double p = std::clamp(ep.routing.p_node, 1e-9, 1.0);
    const double cv_route2 = (1 - p) / (kChunkTokens * p);
    const double cs_up = hw.tiers.back().service_cv;
    const double cs_down = hw.tiers.size() >= 2 ? hw.tiers[hw.tiers.size() - 2].service_cv : 0.0;
    if (up > 0 && down > 0 && down < up) {
      double w = pipeline_queueing(down, up, std::sqrt(cv_route2 + cs_up * cs_up), cs_down);
      x.queueing_s = std::min(w, (n - 1) * down);
    }
  }
}

}  // namespace

EpLayout ep_layout(const HardwareSpec& hw, const ModelSpec& m, const Strategy& s, double tokens_per_rank) {
  EpLayout ep;
  ep.ep = s.parallel.ep;
  ep.dies = s.ep_over_dies && hw.device.dies > 1;
  ep.tokens = tokens_per_rank;
  ep.chunks = s.moe.chunks;
  GroupSpan g = place(hw, ep.ep, s.parallel.etp, ep.dies);
  ep.ranks_per_node = g.members.size() >= 2 ? g.members[g.members.size() - 2] : ep.ep;
  ep.nodes = std::max(1, ep.ep / std::max(1, ep.ranks_per_node));
  const double h = m.hidden;
  // FP8 dispatch: one byte per element plus an FP32 scale per 128-element tile
  // (DeepSeek-V3 sec. 3.3.2); combine stays BF16.
  ep.dispatch_bytes = s.moe.fp8_dispatch && model::fp8_gemms(s.training.precision, hw.device)
                          ? h + 4 * std::ceil(h / 128)
                          : 2 * h;
  ep.combine_bytes = 2 * h;
  if (m.moe) {
    // Group-limited routing: the model's own expert groups limit every routing (the router
    // does it); without them, `node_limited` takes one group per node of the EP group.
    const bool limited = m.moe->expert_groups > 0 || s.moe.routing == Routing::NodeLimited;
    ep.routing = s.moe.routing == Routing::RoundRobin
                     ? round_robin_stats(m.moe->routed_experts, m.moe->top_k, ep.ep, ep.ranks_per_node)
                     : routing_stats(m.moe->routed_experts, m.moe->top_k, ep.ep, ep.ranks_per_node,
                                     limited ? m.moe->max_nodes_per_token : 0, m.moe->expert_groups);
    ep.top_k = m.moe->top_k;
  }
  return ep;
}

ExchangeCost exchange(const HardwareSpec& hw, const EpLayout& ep, Dispatch scheme, bool combine) {
  ExchangeCost x;
  x.name = combine ? "combine" : "dispatch";
  if (ep.ep <= 1) return x;
  const double B = combine ? ep.combine_bytes : ep.dispatch_bytes;
  const double T = ep.tokens;          // gathers and blind sends move every token
  const double L = ep.tokens * ep.load; // deduplicated copies: the busiest rank's share
  const RoutingStats& r = ep.routing;
  double local_fraction = 1.0;
  switch (scheme) {
    case Dispatch::AllGather: {
      // Every rank gathers every token of the EP group (output ep x T x B); the combine
      // reduce-scatters the same buffer after the local unpermute.
      const double size = ep.ep * T * B;
      x.stages.push_back(gather_stage(hw, ep, combine ? "reduce_scatter" : "all_gather",
                                      combine ? Collective::ReduceScatter : Collective::AllGather,
                                      size, ep.ep, true));
      x.overlap = StageOverlap::Sequential;
      break;
    }
    case Dispatch::AllToAll: {
      // One row per (token, routed expert) pair, not per destination rank: Megatron-Core's
      // alltoall dispatcher permutes tokens x top_k rows and splits them by the rank holding
      // each expert (NVIDIA/Megatron-LM@0014f137 megatron/core/transformer/moe/
      // token_dispatcher.py, MoEAlltoAllTokenDispatcher: num_out_tokens = tokens x topk,
      // input_splits = rows per rank), and the seeds' all2allv sends "(8 - 1)" copies with the
      // merge of copies bound for one rank "not applied" (SEED_DIGEST sec. 5.1). Each rank
      // holds E / ep experts, so k / ep of a token's rows go to each rank under every routing
      // (node-limited too, by symmetry). Intra-node and inter-node peers concurrently; the
      // busiest rank receives `load` x the mean.
      const double rows_per_rank = static_cast<double>(ep.top_k) / ep.ep;
      x.stages.push_back(inter_stage(hw, ep, "all_to_all_inter", L * B * rows_per_rank * (ep.ep - ep.ranks_per_node)));
      x.stages.push_back(intra_stage(hw, ep, "all_to_all_intra", L * B * rows_per_rank * (ep.ranks_per_node - 1)));
      x.overlap = StageOverlap::Pipelined;
      break;
    }
    case Dispatch::DeepEp: {
      // One RDMA copy per destination node (to the same-index rank), then forwarding inside
      // the node to every rank that needs the token, unless the same-index rank is the one.
      const double forwards = r.remote_ranks_same_node + r.remote_ranks_other_nodes -
                              (ep.nodes - 1) * r.p_rank;
      x.stages.push_back(inter_stage(hw, ep, "rdma_to_same_index_rank", L * B * r.remote_nodes,
                                     Collective::AllToAll, Library::DeepEp));
      x.stages.push_back(intra_stage(hw, ep, "intra_node_forward", L * B * forwards, Library::DeepEp));
      x.overlap = StageOverlap::Pipelined;
      break;
    }
    case Dispatch::SendRecvAllGather:
    case Dispatch::SendRecvDeepEp: {
      x.stages = two_stage(hw, ep, scheme, combine, 1.0);
      x.overlap = StageOverlap::TwoStage;
      local_fraction = 1.0 / ep.nodes;
      // In chunks: the same stages at one chunk's volume (its own latency and size efficiency).
      x.chunks = std::max(1, ep.chunks);
      if (x.chunks > 1) x.chunk_stages = two_stage(hw, ep, scheme, combine, 1.0 / x.chunks);
      break;
    }
  }
  finish(x, hw, ep, local_fraction);
  return x;
}

}  // namespace paraplan::cost
