// `paraplan validate`: each case's measurement next to the same quantity computed by the tool.

#include "paraplan/validate.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "cost/comm.hpp"
#include "cost/dispatch.hpp"
#include "model/op_graph.hpp"
#include "paraplan/estimate.hpp"
#include "paraplan/model.hpp"
#include "paraplan/planner.hpp"
#include "util/strings.hpp"

namespace paraplan {

const char* metric_name(Metric m) {
  switch (m) {
    case Metric::StepTime: return "step_time_s";
    case Metric::Tgs: return "tokens_per_device_per_s";
    case Metric::ModelTflops: return "model_tflops_per_device";
    case Metric::MegatronTflops: return "megatron_tflops_per_device";
    case Metric::MoeLayerForwardMs: return "moe_layer_forward_ms";
    case Metric::MoeLayerBackwardMs: return "moe_layer_backward_ms";
    case Metric::LayerForwardMs: return "layer_forward_ms";
    case Metric::LayerBackwardMs: return "layer_backward_ms";
    case Metric::CollectiveUs: return "collective_time_us";
    case Metric::RdmaBandwidth: return "rdma_bandwidth_gbps";
    case Metric::MemoryGib: return "memory_per_device_gib";
  }
  return "?";
}

namespace {

using util::fmt;

// Ops of the MoE block (router through combine), as the Megatron-Core MoE layer benchmark
// times MoELayer: no attention, no norms.
bool in_moe_block(const std::string& name) {
  for (const char* p : {"router", "permute", "unpermute", "experts.", "shared_experts."}) {
    if (name.rfind(p, 0) == 0) return true;
  }
  return false;
}

std::string step_breakdown(const Estimate& e) {
  const TimeBreakdown& t = e.time_s;
  auto pct = [&](double v) { return fmt("%.0f%%", 100 * v / e.step_time_s); };
  return "compute " + pct(t.compute) + ", bubble " + pct(t.pp_bubble) + ", EP " + pct(t.ep_comm) + ", TP/CP " +
         pct(t.tp_comm) + ", DP " + pct(t.dp_comm) + ", PP " + pct(t.pp_comm) + ", optimizer " + pct(t.optimizer);
}

}  // namespace

CaseResult run_case(const ValidationCase& c) {
  // A kernel or layer timed in isolation (seconds of load) runs at the short-burst rates the
  // kernel model is anchored on, not at the sustained training clock.
  if (c.isolated && c.plan.hardware.calibration.sustained != 1) {
    ValidationCase burst = c;
    burst.plan.hardware.calibration.sustained = 1;
    return run_case(burst);
  }
  CaseResult r;
  r.name = c.name;
  r.category = c.category;
  r.metric = metric_name(c.metric);
  r.measured = c.measured;
  r.bound_pct = c.bound_pct;
  r.calibration = c.calibration;
  const HardwareSpec& hw = c.plan.hardware;
  if (c.is_collective) {
    const CollectiveCase& k = c.collective;
    cost::CollectiveCost cc = cost::collective(hw, k.op, k.bytes, cost::place(hw, k.ranks, k.stride, false));
    r.predicted = cc.time_s * 1e6;
    r.breakdown = std::string(cc.measured ? "measured busbw of the tier" : cost::name(cc.algorithm));
  } else {
    const Plan& plan = c.plan;
    const Strategy& s = plan.strategy;
    switch (c.metric) {
      case Metric::StepTime:
      case Metric::Tgs:
      case Metric::ModelTflops:
      case Metric::MegatronTflops: {
        Planner planner(hw, plan.model);
        Estimate e = planner.evaluate(s);
        r.breakdown = step_breakdown(e) + (e.feasible ? "" : "; does not fit in memory");
        const double seq = s.training.seq_len > 0 ? s.training.seq_len : plan.model.seq_len;
        const double tokens = static_cast<double>(s.training.global_batch) * seq;
        if (c.metric == Metric::StepTime) {
          r.predicted = e.step_time_s;
        } else if (c.metric == Metric::Tgs) {
          r.predicted = e.tokens_per_device_per_s;
        } else if (c.metric == Metric::ModelTflops) {
          const ModelCounts counts = count_model(plan.model, static_cast<int>(seq));
          r.predicted = (counts.flops_per_token + counts.mtp_flops_per_token) * tokens / e.step_time_s / e.devices / 1e12;
        } else {
          // Narayanan et al. 2021 eq. 3: 96 B s l h^2 (1 + s / 6h + V / 16 l h) per iteration.
          const double B = s.training.global_batch, l = plan.model.layers, h = plan.model.hidden,
                       V = plan.model.vocab;
          const double F = 96 * B * seq * l * h * h * (1 + seq / (6 * h) + V / (16 * l * h));
          r.predicted = F / e.step_time_s / e.devices / 1e12;
        }
        break;
      }
      case Metric::MoeLayerForwardMs:
      case Metric::MoeLayerBackwardMs:
      case Metric::LayerForwardMs:
      case Metric::LayerBackwardMs: {
        const bool moe = c.metric == Metric::MoeLayerForwardMs || c.metric == Metric::MoeLayerBackwardMs;
        const bool fwd = c.metric == Metric::MoeLayerForwardMs || c.metric == Metric::LayerForwardMs;
        CommBreakdown comm = estimate_comm(plan);
        const double load = balanced_load(s.moe.routing) ? 1.0 : comm.routing.rank_load;
        ComputeBreakdown b = estimate_compute(plan, load);
        const std::string kind = moe ? "moe" : "dense";
        double compute = 0, communication = 0;
        for (const LayerEstimate& l : b.layers) {
          if (l.kind != kind) continue;
          for (const OpEstimate& op : l.ops) {
            if ((op.phase == "forward") != fwd) continue;
            if (!c.ops.empty()) {
              if (std::none_of(c.ops.begin(), c.ops.end(),
                               [&](const std::string& g) { return util::glob_match(g, op.name); })) {
                continue;
              }
            } else if (moe && !in_moe_block(op.name)) {
              continue;
            }
            compute += op.time_s;
          }
        }
        for (const LayerComm& l : comm.layers) {
          if (l.kind != kind) continue;
          for (const CommOpEstimate& op : l.ops) {
            if ((op.phase == "forward") != fwd) continue;
            if (moe && op.group != "ep") continue;
            communication += op.time_s;
          }
        }
        r.predicted = (compute + communication) * 1e3;
        r.breakdown = "compute " + fmt("%.2f", compute * 1e3) + " ms, communication " +
                      fmt("%.2f", communication * 1e3) + " ms";
        break;
      }
      case Metric::RdmaBandwidth: {
        const model::Tokens tok = model::tokens_of(plan.model, s, hw, 1.0);
        cost::EpLayout ep = cost::ep_layout(hw, plan.model, s, tok.per_rank_moe);
        cost::ExchangeCost x = cost::exchange(hw, ep, s.moe.dispatch, false);
        if (!x.stages.empty() && x.stages[0].time_s > 0) r.predicted = x.stages[0].bytes / x.stages[0].time_s / 1e9;
        r.breakdown = "RDMA " + fmt("%.1f", x.stages.empty() ? 0.0 : x.stages[0].bytes / 1e6) + " MB per rank";
        break;
      }
      case Metric::MemoryGib: {
        Planner planner(hw, plan.model);
        const MemoryBreakdown m = planner.evaluate(s).memory_bytes;
        const double gib = 1024.0 * 1024 * 1024;
        r.predicted = m.total / gib;
        auto g = [&](double b) { return fmt("%.1f", b / gib); };
        r.breakdown = "stage " + std::to_string(m.stage) + ": weights " + g(m.weights) + ", gradients " + g(m.gradients) +
                      ", optimizer " + g(m.optimizer_states) + ", activations " + g(m.activations) + ", buffers " +
                      g(m.buffers) + ", reserve " + g(m.reserve) + " GiB" +
                      (m.total > m.capacity ? "; does not fit" : "");
        break;
      }
      case Metric::CollectiveUs: break;
    }
  }
  r.error_pct = 100 * (r.predicted / r.measured - 1);
  // A time or a memory figure below the measurement is the model promising more; a rate
  // above it is, too. The bias is taken over this sign, so that a too-fast time and a
  // too-high throughput do not cancel.
  switch (c.metric) {
    case Metric::Tgs:
    case Metric::ModelTflops:
    case Metric::MegatronTflops:
    case Metric::RdmaBandwidth: r.optimism_pct = r.error_pct; break;
    case Metric::StepTime:
    case Metric::MoeLayerForwardMs:
    case Metric::MoeLayerBackwardMs:
    case Metric::LayerForwardMs:
    case Metric::LayerBackwardMs:
    case Metric::CollectiveUs:
    case Metric::MemoryGib: r.optimism_pct = -r.error_pct; break;
  }
  r.within = std::fabs(r.error_pct) <= r.bound_pct;
  return r;
}

ValidationReport validate(const std::vector<ValidationCase>& cases) {
  ValidationReport rep;
  for (const ValidationCase& c : cases) {
    rep.results.push_back(run_case(c));
    if (!rep.results.back().within) ++rep.failed;
  }
  auto summarise = [&](const std::string& category) {
    ValidationSummary s;
    s.category = category;
    for (const CaseResult& r : rep.results) {
      if (r.calibration || (category != "all" && r.category != category)) continue;
      if (category == "all" && r.category == "memory") continue;
      ++s.cases;
      s.mape += std::fabs(r.error_pct);
      s.bias += r.optimism_pct;
      if (std::fabs(r.error_pct) >= s.worst) {
        s.worst = std::fabs(r.error_pct);
        s.worst_case = r.name;
      }
    }
    if (s.cases > 0) {
      s.mape /= s.cases;
      s.bias /= s.cases;
      rep.summaries.push_back(s);
    }
  };
  // Step times and memory are different quantities: "all" is the time figures; memory apart.
  for (const char* cat : {"all", "dense", "moe", "micro", "memory"}) summarise(cat);
  return rep;
}

std::string validation_text(const ValidationReport& rep) {
  std::size_t w = 4;
  for (const CaseResult& r : rep.results) w = std::max(w, r.name.size());
  std::string out = util::pad("case", w + 2, false) + util::pad("metric", 28, false) +
                    util::pad("measured", 12, true) + util::pad("predicted", 12, true) +
                    util::pad("error", 9, true) + util::pad("bound", 8, true) + "  largest terms\n";
  for (const CaseResult& r : rep.results) {
    out += util::pad(r.name, w + 2, false) + util::pad(r.metric, 28, false) + util::pad(fmt("%.4g", r.measured), 12, true) +
           util::pad(fmt("%.4g", r.predicted), 12, true) + util::pad(fmt("%+.1f%%", r.error_pct), 9, true) +
           util::pad(fmt("%.0f%%", r.bound_pct), 8, true) + (r.within ? "  " : " !") + " " + r.breakdown +
           (r.calibration ? " [calibration]" : "") + "\n";
  }
  out += "\nHeld-out summary (the cases no calibration was fitted to; bias + = the model promises more than\n"
         "measured: a shorter time, more throughput, less memory):\n";
  for (const ValidationSummary& s : rep.summaries) {
    out += "  " + util::pad(s.category, 6, false) + util::pad(std::to_string(s.cases) + " cases", 10, true) +
           "  mean |error| " + fmt("%.1f%%", s.mape) + ", bias " + fmt("%+.1f%%", s.bias) + ", worst " +
           fmt("%.1f%%", s.worst) + " (" + s.worst_case + ")\n";
  }
  // Cases whose measurement a hardware file was calibrated from (marked [calibration]):
  // their error shows the fit, not the model.
  int fitted = 0;
  double sum = 0;
  for (const CaseResult& r : rep.results) {
    if (!r.calibration) continue;
    ++fitted;
    sum += std::fabs(r.error_pct);
  }
  if (fitted > 0) {
    out += "Fitted cases (their hardware was calibrated on their measurement): " + std::to_string(fitted) +
           " cases, mean |error| " + fmt("%.1f%%", sum / fitted) + "\n";
  }
  out += rep.failed == 0 ? std::string("\nEvery case is within its bound.\n")
                         : "\n" + std::to_string(rep.failed) + " case(s) over their bound (marked !).\n";
  return out;
}

}  // namespace paraplan
