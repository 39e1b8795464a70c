#include "search/layer_costs.hpp"

#include <algorithm>

#include "cost/comm.hpp"
#include "cost/compute.hpp"
#include "paraplan/estimate.hpp"

namespace paraplan::search {

std::size_t LayerKeyHash::operator()(const LayerKey& k) const noexcept {
  std::size_t h = 1469598103934665603ull;
  auto mix = [&](std::size_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(static_cast<std::size_t>(k.tp));
  mix(static_cast<std::size_t>(k.cp));
  mix(static_cast<std::size_t>(k.ep));
  mix(static_cast<std::size_t>(k.etp));
  mix(static_cast<std::size_t>(k.micro_batch));
  mix(static_cast<std::size_t>(k.seq));
  mix((k.sp ? 1u : 0u) | (k.dies ? 2u : 0u) | (k.overlap_tp ? 4u : 0u) | (k.unfused_attention ? 8u : 0u) |
      (k.overlap_cp ? 16u : 0u) | (k.overlap_tp_async ? 32u : 0u) | (k.partial_recompute ? 64u : 0u));
  mix(static_cast<std::size_t>(k.recompute));
  mix(k.modules);
  mix(static_cast<std::size_t>(k.precision));
  mix(static_cast<std::size_t>(k.dispatch));
  mix(static_cast<std::size_t>(k.chunks));
  mix(static_cast<std::size_t>(k.routing));
  mix(std::hash<double>{}(k.imbalance));
  mix((k.fp8_dispatch ? 1u : 0u) | (k.gate_at_swiglu ? 2u : 0u) | (k.fp8_storage ? 4u : 0u));
  mix(static_cast<std::size_t>(k.algorithm));
  mix(std::hash<std::string>{}(k.attention_kernel));
  mix((k.eager_elementwise ? 1u : 0u) | (k.eager_loss ? 2u : 0u) | (k.unfused_loss ? 4u : 0u) |
      (k.repeat_kv ? 8u : 0u) | (k.cuda_graphs ? 16u : 0u) | (k.separate_linears ? 32u : 0u) |
      (k.fp32_grad_add ? 64u : 0u) | (k.cuda_graphs_full ? 128u : 0u) | (k.fp8_head ? 256u : 0u) |
      (k.fused_mlp ? 512u : 0u) | (k.unfused_rope ? 1024u : 0u));
  mix(static_cast<std::size_t>(k.cp_comm));
  mix(static_cast<std::size_t>(k.fp8_recipe));
  return h;
}

LayerKey key_of(const Strategy& s, int model_seq) {
  LayerKey k;
  k.tp = s.parallel.tp;
  k.cp = s.parallel.cp;
  k.ep = s.parallel.ep;
  k.etp = s.parallel.etp;
  k.micro_batch = s.training.micro_batch;
  k.seq = s.training.seq_len > 0 ? s.training.seq_len : model_seq;
  k.sp = s.parallel.sp;
  k.dies = s.ep_over_dies;
  k.recompute = s.training.recompute.mode;
  k.partial_recompute = s.training.partial_recompute();
  if (k.recompute == RecomputeMode::Modules) {
    for (int i = 0; i < kRecomputeModuleCount; ++i) {
      if (s.training.recompute.modules[static_cast<std::size_t>(i)]) k.modules |= static_cast<std::uint8_t>(1u << i);
    }
  }
  k.precision = s.training.precision;
  k.dispatch = s.moe.dispatch;
  k.chunks = s.moe.chunks;
  k.routing = s.moe.routing;
  k.imbalance = s.moe.imbalance;
  k.fp8_dispatch = s.moe.fp8_dispatch;
  k.gate_at_swiglu = s.moe.gate_at_swiglu;
  k.fp8_storage = s.training.fp8_storage;
  k.algorithm = s.collective_algorithm;
  k.overlap_tp = s.overlap.tp;
  k.overlap_tp_async = s.overlap.tp_async;
  k.overlap_cp = s.overlap.cp;
  k.unfused_attention = s.training.unfused_attention;
  k.attention_kernel = s.training.attention_kernel;
  k.eager_elementwise = s.training.eager_elementwise;
  k.eager_loss = s.training.eager_loss;
  k.unfused_loss = s.training.unfused_loss;
  k.repeat_kv = s.training.repeat_kv;
  k.cuda_graphs = s.training.cuda_graphs;
  k.cuda_graphs_full = s.training.cuda_graphs_full;
  k.fp8_head = s.training.fp8_head;
  k.unfused_rope = s.training.unfused_rope;
  k.fused_mlp = s.moe.fused_mlp;
  k.separate_linears = s.training.separate_linears;
  k.fp32_grad_add = s.training.fp32_grad_add;
  k.cp_comm = s.training.cp_comm;
  k.fp8_recipe = s.training.fp8_recipe;
  return k;
}

namespace {

KindCost& kind_of(LayerCosts& c, const std::string& kind) {
  if (kind == "dense") return c.dense;
  if (kind == "moe") return c.moe;
  if (kind == "mtp") return c.mtp;
  if (kind == "embedding") return c.embedding;
  return c.head;
}

}  // namespace

namespace {

// The costs of every layer kind as `s` runs it.
LayerCosts kind_costs(const HardwareSpec& hw, const ModelSpec& m, const Strategy& s) {
  Plan plan{hw, m, s};
  LayerCosts out;
  const CommBreakdown comm = estimate_comm(plan);
  out.rank_load = comm.routing.rank_load;
  const ComputeBreakdown compute = cost::compute_every_layer(plan, out.rank_load);
  out.model_flops_per_token = compute.model.flops_per_token + compute.model.mtp_flops_per_token;
  for (const LayerEstimate& l : compute.layers) {
    KindCost& k = kind_of(out, l.kind);
    k.f = l.forward_s;
    k.b = l.backward_s - l.weight_grad_s;
    k.w = l.weight_grad_s;
    for (const OpEstimate& op : l.ops) {
      if (op.phase == "recompute" && op.kind != "memory") k.recompute_flops += op.flops;
    }
  }
  out.ep_overlap = hw.calibration.ep_overlap;
  for (const LayerComm& l : comm.layers) {
    KindCost& k = kind_of(out, l.kind);
    const auto le = std::find_if(compute.layers.begin(), compute.layers.end(),
                                 [&](const LayerEstimate& c) { return c.kind == l.kind; });
    const bool found = le != compute.layers.end();
    const cost::EpTransfers ep = cost::ep_transfers(hw, l.ops, found && cost::ep_again(s, *le));
    k.ep_engine = ep.engine_s;
    k.ep_units = ep.units;
    k.ep_f = ep.forward_s;
    k.ep_b = ep.backward_s;
    for (const CommOpEstimate& op : l.ops) {
      if (op.group == "ep") k.queueing += op.queueing_s;
    }
    if (found) {
      const cost::CpExposed cp = cost::cp_exposed(s, l.ops, cost::attention_times(*le));
      k.cp_f = cp.forward_s;
      k.cp_b = cp.backward_s;
      const cost::TpExposed tp = cost::tp_exposed(hw, s, l.ops, *le);
      k.tp_f = tp.forward_s;
      k.tp_b = tp.backward_s;
    }
  }
  out.memory = cost::memory_inputs(plan, out.rank_load);
  return out;
}

}  // namespace

LayerCosts compute_layer_costs(const HardwareSpec& hw, const ModelSpec& m, const Strategy& s) {
  LayerCosts out = kind_costs(hw, m, s);
  out.dense_kept = out.dense;
  out.moe_kept = out.moe;
  if (s.training.partial_recompute()) {
    const LayerCosts k = kind_costs(hw, m, cost::without_recompute(s));
    out.dense_kept = k.dense;
    out.moe_kept = k.moe;
  }
  return out;
}

std::shared_ptr<const LayerCosts> LayerCostCache::get(const Strategy& s) const {
  const LayerKey key = key_of(s, model_.seq_len);
  {
    std::shared_lock lock(mutex_);
    auto it = map_.find(key);
    if (it != map_.end()) return it->second;
  }
  auto costs = std::make_shared<const LayerCosts>(compute_layer_costs(hw_, model_, s));
  std::unique_lock lock(mutex_);
  auto [it, inserted] = map_.emplace(key, costs);
  return it->second;
}

std::size_t LayerCostCache::size() const {
  std::shared_lock lock(mutex_);
  return map_.size();
}

}  // namespace paraplan::search
