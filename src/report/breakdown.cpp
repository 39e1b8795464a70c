#include <algorithm>
#include <cstdio>
#include <string>

#include "config/parse.hpp"
#include "cost/comm.hpp"
#include "paraplan/report.hpp"
#include "util/strings.hpp"
#include "paraplan/units.hpp"
#include "report/json.hpp"
#include "report/writers.hpp"

namespace paraplan {
namespace {

void write_strategy(report::JsonWriter& w, const Plan& plan) {
  using namespace config;
  const Strategy& s = plan.strategy;
  w.begin_object();
  w.field("name", s.name);
  w.field("hardware", plan.hardware.name);
  w.field("model", plan.model.name);
  w.field("nodes", s.nodes);
  w.field("devices", s.nodes * plan.hardware.devices_per_node());
  w.key("parallel").begin_object();
  w.field("tp", s.parallel.tp).field("pp", s.parallel.pp).field("dp", s.parallel.dp);
  w.field("ep", s.parallel.ep).field("etp", s.parallel.etp).field("vpp", s.parallel.vpp);
  w.field("cp", s.parallel.cp).field("sp", s.parallel.sp).field("dp_replicate", s.parallel.dp_replicate);
  w.end_object();
  w.field("ep_over_dies", s.ep_over_dies);
  w.key("training").begin_object();
  w.field("micro_batch", s.training.micro_batch).field("global_batch", s.training.global_batch);
  w.field("seq_len", s.training.seq_len > 0 ? s.training.seq_len : plan.model.seq_len);
  w.field("precision", spelling(kPrecisionNames, s.training.precision));
  w.field("recompute", recompute_spelling(s.training.recompute));
  w.field("zero", s.training.zero);
  w.field("optimizer", spelling(kOptimizerNames, s.training.optimizer));
  w.field("optimizer_offload", s.training.optimizer_offload);
  w.field("activation_offload", s.training.activation_offload);
  w.field("offload_layers", s.training.offload_layers);
  w.field("recompute_layers", s.training.recompute_layers);
  w.field("elementwise", s.training.eager_elementwise ? "eager" : "fused");
  w.field("loss", s.training.eager_loss ? "eager" : s.training.unfused_loss ? "unfused" : "fused");
  w.field("attention", s.training.unfused_attention ? std::string("unfused")
                       : s.training.attention_kernel.empty() ? std::string("flash")
                                                             : s.training.attention_kernel);
  w.field("repeat_kv", s.training.repeat_kv);
  w.field("linears", s.training.separate_linears ? "separate" : "fused");
  w.field("cuda_graphs", s.training.cuda_graphs);
  w.field("cuda_graphs_full", s.training.cuda_graphs_full);
  w.field("fp8_head", s.training.fp8_head);
  w.field("rope", s.training.unfused_rope ? "unfused" : "fused");
  w.field("pipeline_runs", s.training.pipeline_runs);
  w.field("cp_comm", spelling(kCpCommNames, s.training.cp_comm));
  w.field("fp8_recipe", spelling(kFp8RecipeNames, s.training.fp8_recipe));
  w.end_object();
  w.key("moe").begin_object();
  w.field("dispatch", spelling(kDispatchNames, s.moe.dispatch));
  w.field("chunks", s.moe.chunks);
  w.field("routing", spelling(kRoutingNames, s.moe.routing));
  w.field("imbalance", s.moe.imbalance);
  w.field("dispatch_precision", s.moe.fp8_dispatch ? "fp8" : "bf16");
  w.field("gate_at", s.moe.gate_at_swiglu ? "swiglu" : "combine");
  w.field("fused_mlp", s.moe.fused_mlp);
  w.field("fp8_storage", s.training.fp8_storage);
  w.field("fp8_params", s.training.fp8_params);
  w.field("grad_precision", s.training.bf16_grads ? "bf16" : "fp32");
  w.field("grad_sync", s.training.grad_sync_micro_batch ? "micro_batch" : "run");
  w.field("grad_accumulation", s.training.fp32_grad_add ? "fp32_add" : "fused");
  w.field("grad_reduce", s.training.grad_all_reduce || s.training.zero == 0 ? "all_reduce" : "reduce_scatter");
  w.end_object();
  w.field("schedule", spelling(kScheduleNames, s.schedule));
  w.field("collective_algorithm", spelling(kCollectiveAlgorithmNames, s.collective_algorithm));
  w.key("overlap").begin_object();
  w.field("ep", s.overlap.ep).field("dp", s.overlap.dp).field("tp", s.overlap.tp).field("pp", s.overlap.pp);
  w.field("cp", s.overlap.cp).field("pp_lockstep", s.overlap.pp_lockstep).field("tp_async", s.overlap.tp_async);
  w.end_object();
  w.end_object();
}

using util::fmt;

std::string pad(std::string s, std::size_t width, bool right = false) { return util::pad(std::move(s), width, right); }

std::string ms(double seconds) { return fmt("%.3f", seconds * 1e3); }

}  // namespace

std::string strategy_json(const Plan& plan) {
  report::JsonWriter w;
  write_strategy(w, plan);
  return w.str();
}

void write_comm_op(report::JsonWriter& w, const CommOpEstimate& op) {
  w.begin_object();
  w.field("name", op.name).field("phase", op.phase).field("kind", "comm");
  w.field("group", op.group).field("algorithm", op.algorithm);
  w.field("time_s", op.time_s).field("compute_s", op.compute_s).field("queueing_s", op.queueing_s);
  w.key("stages").begin_array();
  for (const CommStageEstimate& st : op.stages) {
    w.begin_object();
    w.field("name", st.name).field("link", st.link).field("engine", st.engine);
    w.field("bytes", st.bytes).field("bandwidth_bytes_per_s", st.bandwidth).field("time_s", st.time_s);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

std::string compute_json(const Plan& plan, const ComputeBreakdown& b, const CommBreakdown* comm) {
  report::JsonWriter w;
  w.begin_object();
  w.key("strategy");
  write_strategy(w, plan);
  report::write_breakdown_fields(w, plan, b, comm);
  w.end_object();
  return w.str() + "\n";
}

}  // namespace paraplan

namespace paraplan::report {

LayerTimes executed_layer(const Plan& plan, const LayerEstimate& l, const LayerComm* comm) {
  const Strategy& s = plan.strategy;
  LayerTimes t{l.forward_s, l.backward_s};
  if (comm == nullptr) return t;
  const cost::TpExposed tp = cost::tp_exposed(plan.hardware, s, comm->ops, l);
  t.forward_s += tp.forward_s;
  t.backward_s += tp.backward_s;
  // EP as the step runs it (cost::ep_exposed, over the layer's compute of both passes),
  // shared between the passes as their transfers are.
  const cost::EpTransfers ep = cost::ep_transfers(plan.hardware, comm->ops, cost::ep_again(s, l));
  const double ep_f = ep.forward_s, ep_b = ep.backward_s;
  if (ep_f + ep_b > 0) {
    const double exposed = cost::ep_exposed(ep, l.forward_s + l.backward_s, cost::ep_overlapped(s),
                                            plan.hardware.calibration.ep_overlap);
    t.forward_s += exposed * ep_f / (ep_f + ep_b);
    t.backward_s += exposed * ep_b / (ep_f + ep_b);
  }
  const cost::CpExposed cp = cost::cp_exposed(s, comm->ops, cost::attention_times(l));
  t.forward_s += cp.forward_s;
  t.backward_s += cp.backward_s;
  return t;
}

void write_strategy_object(JsonWriter& w, const Plan& plan) { write_strategy(w, plan); }

void write_breakdown_fields(JsonWriter& w, const Plan& plan, const ComputeBreakdown& b,
                            const CommBreakdown* comm) {
  w.key("model").begin_object();
  w.field("total_params", static_cast<long long>(b.model.total_params));
  w.field("active_params", static_cast<long long>(b.model.active_params));
  w.field("flops_per_token", b.model.flops_per_token);
  w.field("attention_flops_per_token", b.model.attention_flops_per_token);
  w.field("mtp_params", static_cast<long long>(b.model.mtp_params));
  w.field("mtp_flops_per_token", b.model.mtp_flops_per_token);
  w.end_object();
  w.key("tokens").begin_object();
  w.field("per_device_per_micro_batch", b.tokens_per_device);
  w.field("per_expert", b.tokens_per_expert);
  w.field("per_expert_slowest", b.tokens_per_expert_slowest);
  w.field("experts_per_rank", b.experts_per_rank);
  w.end_object();
  w.key("layers").begin_array();
  for (const LayerEstimate& l : b.layers) {
    const LayerComm* lcomm = nullptr;
    if (comm != nullptr) {
      for (const LayerComm& lc : comm->layers) {
        if (lc.kind == l.kind) lcomm = &lc;
      }
    }
    // forward_s / backward_s: as executed, with the layer's TP / EP communication under the
    // strategy's overlap settings (DESIGN.md sec. 5); the compute alone beside them.
    const LayerTimes x = executed_layer(plan, l, lcomm);
    w.begin_object();
    w.field("kind", l.kind).field("count", l.count).field("recompute_skipped", l.recompute_skipped);
    w.field("forward_s", x.forward_s).field("backward_s", x.backward_s);
    w.field("compute_forward_s", l.forward_s).field("compute_backward_s", l.backward_s);
    w.field("recompute_s", l.recompute_s).field("weight_grad_s", l.weight_grad_s);
    w.key("ops").begin_array();
    for (const OpEstimate& op : l.ops) {
      w.begin_object();
      w.field("name", op.name).field("phase", op.phase).field("kind", op.kind);
      w.field("time_s", op.time_s).field("flops", op.flops).field("bytes", op.bytes);
      if (op.kind != "memory" && op.kind != "host_sync") {
        w.key("shape").begin_array().value(op.m).value(op.n).value(op.k).end_array();
        w.field("groups", op.groups).field("efficiency", op.efficiency);
        if (op.m_sd > 0) w.field("m_sd", op.m_sd);
      }
      w.field("kernels", op.kernels);
      if (op.kind == "memory") {
        w.field("achieved_bytes_per_s", op.achieved);
      } else if (op.kind != "host_sync") {
        w.field("achieved_flop_per_s", op.achieved);
      }
      w.field("bound", op.bound);
      w.field("per_die", op.per_die);
      w.end_object();
    }
    if (comm != nullptr) {
      for (const LayerComm& lc : comm->layers) {
        if (lc.kind != l.kind) continue;
        for (const CommOpEstimate& op : lc.ops) write_comm_op(w, op);
      }
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  if (comm != nullptr) {
    const RoutingEstimate& r = comm->routing;
    w.key("routing").begin_object();
    w.field("ep", r.ep).field("ep_over_dies", r.ep_over_dies);
    w.field("ranks_per_node", r.ranks_per_node).field("nodes", r.nodes);
    w.field("p_rank", r.p_rank).field("p_node", r.p_node);
    w.field("ranks_per_token", r.ranks_per_token).field("nodes_per_token", r.nodes_per_token);
    w.field("expert_load", r.expert_load).field("rank_load", r.rank_load);
    w.field("dispatch_bytes_per_token", r.dispatch_bytes_per_token);
    w.field("combine_bytes_per_token", r.combine_bytes_per_token);
    w.end_object();
    if (plan.strategy.parallel.pp > 1) {
      w.key("pp_send");
      write_comm_op(w, comm->pp_send);
    }
  }
}

}  // namespace paraplan::report

namespace paraplan {

std::string compute_text(const Plan& plan, const ComputeBreakdown& b, bool all_ops, const CommBreakdown* comm) {
  const Strategy& s = plan.strategy;
  const Parallel& p = s.parallel;
  std::string out;
  out += "strategy  " + s.name + ": " + plan.model.name + " on " + plan.hardware.name + ", " +
         std::to_string(s.nodes) + " nodes, TP" + std::to_string(p.tp) + " PP" + std::to_string(p.pp) +
         " DP" + std::to_string(p.dp) +
         (p.dp_replicate > 1 ? " (" + std::to_string(p.dp_replicate) + " replicas)" : "") + " EP" + std::to_string(p.ep) +
         (s.ep_over_dies ? " (over dies)" : "") + ", micro-batch " + std::to_string(s.training.micro_batch) +
         ", recompute " + config::recompute_label(s.training) + "\n";
  out += "model     " + fmt("%.2f", b.model.total_params / 1e9) + " B parameters (" +
         fmt("%.2f", b.model.active_params / 1e9) + " B active per token";
  if (b.model.mtp_params > 0) out += ", MTP " + fmt("%.2f", b.model.mtp_params / 1e9) + " B more";
  out += "), " + fmt("%.1f", b.model.flops_per_token / 1e9) + " GFLOP per token for training (" +
         fmt("%.1f", b.model.attention_flops_per_token / 1e9) + " GFLOP of it causal attention)\n";
  out += "tokens    " + fmt("%.0f", b.tokens_per_device) + " per device per micro-batch";
  if (b.experts_per_rank > 0) {
    out += "; " + std::to_string(b.experts_per_rank) + " experts per rank, " +
           fmt("%.0f", b.tokens_per_expert) + " tokens per expert (slowest rank " +
           fmt("%.0f", b.tokens_per_expert_slowest) + ")";
  }
  out += "\n\nPer layer, one micro-batch: compute, and with the layer's TP / EP communication as the\n"
         "overlap settings run it:\n";
  out += pad("layer", 11) + pad("count", 7, true) + pad("forward ms", 13, true) +
         pad("backward ms", 13, true) + pad("of it recompute", 17, true) + pad("fwd w/ comm", 13, true) +
         pad("bwd w/ comm", 13, true) + "\n";
  for (const LayerEstimate& l : b.layers) {
    const LayerComm* lcomm = nullptr;
    if (comm != nullptr) {
      for (const LayerComm& lc : comm->layers) {
        if (lc.kind == l.kind) lcomm = &lc;
      }
    }
    const report::LayerTimes x = report::executed_layer(plan, l, lcomm);
    out += pad(l.kind + (l.recompute_skipped ? "*" : ""), 11) + pad(std::to_string(l.count), 7, true) + pad(ms(l.forward_s), 13, true) +
           pad(ms(l.backward_s), 13, true) + pad(ms(l.recompute_s), 17, true) +
           pad(comm != nullptr ? ms(x.forward_s) : "-", 13, true) + pad(comm != nullptr ? ms(x.backward_s) : "-", 13, true) +
           "\n";
  }
  if (std::any_of(b.layers.begin(), b.layers.end(), [](const LayerEstimate& l) { return l.recompute_skipped; }))
    out += "* " + config::recompute_label(plan.strategy.training) +
           ": these layers do not recompute (training.recompute_layers).\n";
  for (const LayerEstimate& l : b.layers) {
    // A kind's layers left out of the recompute run the same forward ops.
    if (l.recompute_skipped && !all_ops) continue;
    out += "\n" + l.kind + (l.recompute_skipped ? " layer ops, not recomputed" : " layer ops") +
           (all_ops ? "" : " (forward)") + ":\n";
    out += pad("op", 38) + pad("phase", 12) + pad("m x n x k", 30) + pad("eff", 6, true) + pad("kern", 6, true) +
           pad("achieved", 14, true) + pad("bound", 9, true) + pad("ms", 10, true) + "\n";
    for (const OpEstimate& op : l.ops) {
      if (!all_ops && op.phase != "forward") continue;
      std::string shape, achieved;
      if (op.kind == "memory") {
        shape = units::format_size(op.bytes);
        achieved = units::format_rate(op.achieved);
      } else if (op.kind != "host_sync") {
        shape = fmt("%.0f", op.m) + (op.m_sd > 0 ? "+-" + fmt("%.0f", op.m_sd) : std::string()) + " x " +
                fmt("%.0f", op.n) + " x " + fmt("%.0f", op.k);
        if (op.groups > 1) shape = std::to_string(op.groups) + " x (" + shape + ")";
        achieved = units::format_flops(op.achieved);
      }
      out += pad(op.name + (op.per_die ? " [die]" : ""), 38) + pad(op.phase, 12) + pad(shape, 30) +
             pad(op.kind == "memory" || op.kind == "host_sync" ? "" : fmt("%.2f", op.efficiency), 6, true) +
             pad(std::to_string(op.kernels), 6, true) + pad(achieved, 14, true) + pad(op.bound, 9, true) +
             pad(ms(op.time_s), 10, true) + "\n";
    }
  }
  return out;
}

std::string comm_text(const Plan& plan, const CommBreakdown& c) {
  std::string out;
  const RoutingEstimate& r = c.routing;
  if (r.ep > 1) {
    // The dispatch model's "node" is everything below the cluster tier: on a hardware file
    // whose scale-up domain joins several nodes (GB200 NVL72) it is that domain.
    const auto& hw = plan.hardware;
    const bool domain = hw.devices_per_domain() > hw.devices_per_node();  // then at least two tiers
    const std::string unit = domain ? hw.tiers[hw.tiers.size() - 2].name + " domain" : "node";
    out += "routing   EP" + std::to_string(r.ep) + (r.ep_over_dies ? " over dies" : "") + ", " +
           std::to_string(r.ranks_per_node) + " EP ranks per " + unit + ", " + std::to_string(r.nodes) +
           " " + unit + (r.nodes == 1 ? "" : "s") + "; a token needs a given rank with p = " +
           fmt("%.4f", r.p_rank) + ", a given " + unit + " with p = " + fmt("%.4f", r.p_node) + "; " +
           fmt("%.2f", r.ranks_per_token) + " ranks and " + fmt("%.2f", r.nodes_per_token) + " " + unit +
           "s per token\n";
    out += "load      busiest expert " + fmt("%.3f", r.expert_load) + "x the mean, busiest rank " +
           fmt("%.3f", r.rank_load) + "x (" +
           (balanced_load(plan.strategy.moe.routing)
                ? std::string(plan.strategy.moe.routing == Routing::RoundRobin ? "round-robin routing"
                                                                               : "forced-balanced routing")
                : std::string(config::spelling(config::kRoutingNames, plan.strategy.moe.routing)) +
                      " routing, load from random top-k statistics") +
           "), strategy imbalance " +
           fmt("%.2f", plan.strategy.moe.imbalance) + "x\n";
  }
  out += "\nCommunication per layer, one micro-batch (before overlap with compute):\n";
  for (const LayerComm& l : c.layers) {
    if (l.ops.empty()) continue;
    out += "\n" + l.kind + " layer: forward " + ms(l.forward_s) + " ms, backward " + ms(l.backward_s) +
           " ms" + (l.queueing_s > 0 ? ", queueing " + ms(l.queueing_s) + " ms" : std::string()) + "\n";
    for (const CommOpEstimate& op : l.ops) {
      out += "  " + pad(op.name, 22) + pad(op.phase, 10) + pad(op.algorithm, 20) +
             pad(ms(op.time_s), 9, true) + " ms" +
             (op.compute_s > 0 ? "  (compute busy " + ms(op.compute_s) + " ms)" : std::string()) + "\n";
      for (const CommStageEstimate& st : op.stages) {
        out += "      " + pad(st.name, 28) + pad(st.link, 16) + pad(st.engine, 9) +
               pad(units::format_size(st.bytes), 11, true) + pad(units::format_rate(st.bandwidth), 12, true) +
               pad(ms(st.time_s), 9, true) + " ms\n";
      }
    }
  }
  for (const LinkFit& f : c.link_fits) {
    out += "\nlink fit  " + f.tier + " size table: t = " + units::format_time(f.alpha_s) + " + bytes / " +
           units::format_rate(f.beta_bytes_per_s) + " (least squares, R^2 " + fmt("%.3f", f.r2) +
           ", worst row " + fmt("%.0f", f.worst_relative * 100) + "%)\n";
  }
  if (plan.strategy.parallel.pp > 1) {
    out += "\npipeline  send/recv of one micro-batch's activations: " +
           units::format_size(c.pp_send.stages.empty() ? 0 : c.pp_send.stages[0].bytes) + ", " +
           ms(c.pp_send.time_s) + " ms\n";
  }
  return out;
}

}  // namespace paraplan
