// Reports of estimates and rankings: terminal tables, Markdown, CSV and JSON.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include "config/parse.hpp"
#include "paraplan/report.hpp"
#include "schedule/layout.hpp"
#include "util/strings.hpp"
#include "paraplan/units.hpp"
#include "report/memory_report.hpp"
#include "report/writers.hpp"

namespace paraplan {
namespace {

using util::fmt;

std::string pad(std::string s, std::size_t width, bool right = false) { return util::pad(std::move(s), width, right); }

std::string layout(const Strategy& s) { return report::layout_label(s); }

}  // namespace

std::string report::layout_label(const Strategy& s) {
  const Parallel& p = s.parallel;
  std::string out = "TP" + std::to_string(p.tp) + " PP" + std::to_string(p.pp) + " DP" + std::to_string(p.dp) +
                    " EP" + std::to_string(p.ep);
  if (p.dp_replicate > 1) out += " HSDP" + std::to_string(p.dp_replicate);
  if (p.etp > 1) out += " ETP" + std::to_string(p.etp);
  if (p.vpp > 1) out += " VPP" + std::to_string(p.vpp);
  if (p.cp > 1) {
    out += " CP" + std::to_string(p.cp);
    if (s.training.cp_comm != CpComm::P2p) out += " " + std::string(config::spelling(config::kCpCommNames, s.training.cp_comm));
  }
  if (p.sp) out += " SP";
  if (s.ep_over_dies) out += " die-EP";
  return out;
}

namespace {

// The rank table's column: a module list joined by '+', the longest names shortened, so the
// column keeps its width ("[layernorm, mla_up_proj, moe_act]" -> "norm+mla_up+moe_act").
std::string recompute_column(const Training& t) {
  const Recompute& r = t.recompute;
  std::string s = config::recompute_spelling(r);
  const std::string layers = t.recompute_layers > 0 ? " " + std::to_string(t.recompute_layers) + "/chunk" : "";
  if (r.mode != RecomputeMode::Modules) return s + layers;
  std::string out;
  for (char c : s) {
    if (c == '[' || c == ']' || c == ' ') continue;
    out += c == ',' ? '+' : c;
  }
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"layernorm", "norm"}, {"mla_up_proj", "mla_up"},
                                 {"shared_experts", "shared"}, {"core_attn", "attn"}}) {
    for (std::size_t at = out.find(from); at != std::string::npos; at = out.find(from, at + to.size())) {
      out.replace(at, from.size(), to);
    }
  }
  return out.size() > 25 ? out.substr(0, 24) + "~" : out;
}

std::string training_short(const Strategy& s) {
  std::string out = std::string(config::spelling(config::kOptimizerNames, s.training.optimizer));
  out += " Z" + std::to_string(s.training.zero);
  if (s.training.optimizer_offload) out += " optim@host";
  if (s.training.activation_offload) out += " act@host";
  if (s.training.precision == Precision::Fp8) out += s.training.fp8_params ? " fp8-params" : " fp8";
  return out;
}

std::string mem_short(const Estimate& e) {
  return fmt("%.1f", e.memory_bytes.total / 1e9) + "/" + fmt("%.1f", e.memory_bytes.capacity / 1e9) + " GB";
}

// The terms two estimates differ by most: why b loses to a.
std::string why_loses(const Estimate& a, const Estimate& b) {
  struct Term {
    const char* name;
    double a, b;
  };
  const Term terms[] = {{"compute", a.time_s.compute, b.time_s.compute},
                        {"EP comm", a.time_s.ep_comm, b.time_s.ep_comm},
                        {"TP/CP comm", a.time_s.tp_comm, b.time_s.tp_comm},
                        {"bubble", a.time_s.pp_bubble, b.time_s.pp_bubble},
                        {"PP comm", a.time_s.pp_comm, b.time_s.pp_comm},
                        {"DP comm", a.time_s.dp_comm, b.time_s.dp_comm},
                        {"optimizer", a.time_s.optimizer, b.time_s.optimizer},
                        {"offload", a.time_s.offload, b.time_s.offload},
                        {"queueing", a.time_s.queueing, b.time_s.queueing}};
  const Term* worst = &terms[0];
  for (const Term& t : terms) {
    if (t.b - t.a > worst->b - worst->a) worst = &t;
  }
  std::string out = fmt("%.1f%%", 100 * (1 - b.tokens_per_device_per_s / a.tokens_per_device_per_s)) +
                    " lower TGS: " + worst->name + " " + units::format_time(worst->b) + " vs " +
                    units::format_time(worst->a);
  if (b.strategy.nodes != a.strategy.nodes) {
    out += " (" + std::to_string(b.strategy.nodes) + " vs " + std::to_string(a.strategy.nodes) + " nodes)";
  }
  return out;
}

const char* schedule_name(Schedule s) { return config::spelling(config::kScheduleNames, s).data(); }
const char* dispatch_name(Dispatch d) { return config::spelling(config::kDispatchNames, d).data(); }
// The scheme, and its chunk count when the inter-node transfer is chunked (moe.chunks).
std::string dispatch_name(const Strategy& s) {
  std::string n = dispatch_name(s.moe.dispatch);
  if (s.moe.chunks > 1) n += " x" + std::to_string(s.moe.chunks);
  return n;
}

}  // namespace

namespace report {

void write_estimate_fields(JsonWriter& w, const Estimate& e) {
  w.field("feasible", e.feasible);
  w.key("infeasible_reasons").begin_array();
  for (const std::string& r : e.infeasible_reasons) w.value(r);
  w.end_array();
  w.field("step_time_s", e.step_time_s);
  w.field("simulated", e.simulated)
      .field("simulation_failed", e.simulation_failed)
      .field("closed_form_step_s", e.closed_form_step_s);
  w.field("tokens_per_device_per_s", e.tokens_per_device_per_s);
  w.field("tokens_per_die_per_s", e.tokens_per_die_per_s);
  w.field("mfu", e.mfu).field("hfu", e.hfu);
  w.field("bottleneck", e.bottleneck);
  w.field("micro_batches", e.micro_batches).field("devices", e.devices);
  const TimeBreakdown& t = e.time_s;
  w.key("time_s").begin_object();
  w.field("compute", t.compute).field("tp_comm", t.tp_comm).field("ep_comm", t.ep_comm);
  w.field("pp_comm", t.pp_comm).field("dp_comm", t.dp_comm).field("pp_bubble", t.pp_bubble);
  w.field("optimizer", t.optimizer).field("queueing", t.queueing).field("offload", t.offload);
  w.field("exposed_comm", t.exposed_comm);
  w.end_object();
  w.key("stage_times_s").begin_object();
  w.field("forward", e.stage_f_s).field("input_grad", e.stage_b_s).field("weight_grad", e.stage_w_s);
  w.end_object();
}

namespace {

void write_memory_short(JsonWriter& w, const Estimate& e) {
  const MemoryBreakdown& m = e.memory_bytes;
  w.key("memory_bytes").begin_object();
  w.field("weights", m.weights).field("gradients", m.gradients);
  w.field("optimizer_states", m.optimizer_states).field("activations", m.activations);
  w.field("buffers", m.buffers).field("reserve", m.reserve).field("total", m.total);
  w.field("capacity", m.capacity).field("stage", m.stage).field("host_per_node", m.host_per_node);
  w.end_object();
}

void write_short_estimate(JsonWriter& w, const Estimate& e, const SpacePlan& space) {
  w.begin_object();
  Plan p{space.hardware, space.model, e.strategy};
  w.key("strategy");
  write_strategy_object(w, p);
  write_estimate_fields(w, e);
  write_memory_short(w, e);
  w.end_object();
}

}  // namespace
}  // namespace report

std::string estimate_json(const Plan& plan, const Estimate& e, const ComputeBreakdown& b,
                          const CommBreakdown& comm, const MemoryEstimate& mem) {
  report::JsonWriter w;
  w.begin_object();
  w.key("strategy");
  report::write_strategy_object(w, plan);
  report::write_estimate_fields(w, e);
  report::write_memory_fields(w, mem);
  report::write_breakdown_fields(w, plan, b, &comm);
  w.end_object();
  return w.str() + "\n";
}

std::string evaluation_json(const Evaluation& ev) {
  return estimate_json(ev.plan, ev.estimate, ev.compute, ev.comm, ev.memory);
}

std::string evaluation_text(const Evaluation& ev, bool all_ops) {
  return compute_text(ev.plan, ev.compute, all_ops, &ev.comm) + comm_text(ev.plan, ev.comm) + "\n" +
         memory_text(ev.plan, ev.memory) + estimate_text(ev.plan, ev.estimate);
}

std::string estimate_text(const Plan& plan, const Estimate& e) {
  const TimeBreakdown& t = e.time_s;
  std::string out;
  const int runs = schedule::pipeline_runs(plan.strategy);
  const std::string in_runs = runs > 1 ? ", in " + std::to_string(runs) + " runs of the schedule of " +
                                             std::to_string(schedule::run_micro_batches(plan.strategy)) + " each"
                                       : std::string();
  out += "\nStep (" + std::to_string(e.micro_batches) + " micro-batches per DP rank, " +
         std::string(schedule_name(plan.strategy.schedule)) + in_runs + "):\n";
  auto row = [&](const char* name, double v) {
    out += "  " + pad(name, 22) + pad(units::format_time(v), 12, true) +
           pad(fmt("%.1f%%", 100 * v / e.step_time_s), 9, true) + "\n";
  };
  row("compute", t.compute);
  row("EP dispatch/combine", t.ep_comm);
  row("TP/CP communication", t.tp_comm);
  row("pipeline bubble", t.pp_bubble);
  row("pipeline send/recv", t.pp_comm);
  row("DP gradient sync", t.dp_comm);
  row("optimizer step", t.optimizer);
  if (t.offload > 0) row("activation offload", t.offload);
  if (t.queueing > 0) row("queueing", t.queueing);
  out += "  " + pad("step time", 22) + pad(units::format_time(e.step_time_s), 12, true) + "\n";
  if (e.simulated) {
    out += "  (pipeline timed by the event simulation of the schedule; the closed form gives " +
           units::format_time(e.closed_form_step_s) + ", " +
           fmt("%+.1f%%", 100 * (e.closed_form_step_s / e.step_time_s - 1)) + ")\n";
  } else if (e.simulation_failed) {
    out += "  (pipeline timed by the closed form: the event simulation could not run this schedule; "
           "`evaluate --trace FILE` says why)\n";
  } else if (plan.strategy.parallel.pp > 1) {
    out += "  (pipeline timed by the closed form, the search's estimate)\n";
  }
  out += "\nthroughput  " + fmt("%.1f", e.tokens_per_device_per_s) + " tokens/s per device (TGS), " +
         fmt("%.1f", e.tokens_per_die_per_s) + " per die; MFU " + fmt("%.1f%%", 100 * e.mfu) + ", HFU " +
         fmt("%.1f%%", 100 * e.hfu) + " (model FLOP incl. MTP over the BF16 dense peak)\n";
  out += "memory      worst stage " + std::to_string(e.memory_bytes.stage) + ": " +
         units::format_size(e.memory_bytes.total) + " of " + units::format_size(e.memory_bytes.capacity) +
         (e.feasible ? " (fits)" : " (does not fit)") + "\n";
  for (const std::string& r : e.infeasible_reasons) out += "            " + r + "\n";
  out += "bottleneck  " + e.bottleneck + "\n";
  return out;
}

std::string rank_table(const SearchResult& r, std::size_t rows) {
  std::string out;
  // The layout column fits its longest label (CP schemes make some long).
  std::size_t lw = 33;
  for (std::size_t i = 0; i < std::min(rows, r.best.size()); ++i) lw = std::max(lw, layout(r.best[i].strategy).size() + 1);
  out += pad("#", 4) + pad("nodes", 6, true) + "  " + pad("layout", lw) + pad("mb", 4, true) + "  " +
         pad("recompute", 26) + pad("dispatch", 20) + pad("schedule", 12) + pad("training", 22) +
         pad("step", 10, true) + pad("TGS", 9, true) + pad("MFU", 7, true) + pad("memory", 17, true) +
         "  bottleneck\n";
  for (std::size_t i = 0; i < std::min(rows, r.best.size()); ++i) {
    const Estimate& e = r.best[i];
    const Strategy& s = e.strategy;
    out += pad(std::to_string(i + 1), 4) + pad(std::to_string(s.nodes), 6, true) + "  " + pad(layout(s), lw) +
           pad(std::to_string(s.training.micro_batch), 4, true) + "  " + pad(recompute_column(s.training), 26) +
           pad(s.parallel.ep > 1 ? dispatch_name(s) : "-", 20) + pad(schedule_name(s.schedule), 12) +
           pad(training_short(s), 22) + pad(fmt("%.2f s", e.step_time_s), 10, true) +
           pad(fmt("%.0f", e.tokens_per_device_per_s), 9, true) + pad(fmt("%.1f%%", 100 * e.mfu), 7, true) +
           pad(mem_short(e), 17, true) + "  " + e.bottleneck + "\n";
  }
  if (!r.best_per_nodes.empty()) {
    out += "\nBest at each node count:\n";
    for (const Estimate& e : r.best_per_nodes) {
      const Strategy& s = e.strategy;
      out += "  " + pad(std::to_string(s.nodes) + " nodes", 10) + pad(layout(s), 33) + " mb" +
             std::to_string(s.training.micro_batch) + ", " + config::recompute_label(s.training) + ", " +
             (s.parallel.ep > 1 ? std::string(dispatch_name(s)) : std::string("no EP")) + ", " +
             schedule_name(s.schedule) + ": TGS " + fmt("%.0f", e.tokens_per_device_per_s) + ", step " +
             units::format_time(e.step_time_s) + ", " + mem_short(e) + "\n";
    }
  }
  if (r.best.size() >= 2) {
    out += "\nWhy the runners-up lose: #2 " + why_loses(r.best[0], r.best[1]);
    if (r.best.size() >= 3) out += "; #3 " + why_loses(r.best[0], r.best[2]);
    out += "\n";
  }
  return out;
}

std::string rank_summary(const SearchResult& r) {
  std::string out = std::to_string(r.candidates) + " combinations, " + std::to_string(r.evaluated) +
                    " valid and evaluated, " + std::to_string(r.feasible) + " fit in memory" +
                    (r.pruned > 0 ? ", " + std::to_string(r.pruned) + " of them pruned by the step-time bound" : "") +
                    " (" + fmt("%.3f s", r.seconds) + ")";
  if (!r.rejected.empty()) {
    out += "; rejected by rule:";
    for (const RuleCount& c : r.rejected) out += " " + c.rule + " " + std::to_string(c.count);
  }
  return out + "\n";
}

std::string rank_csv(const std::vector<Estimate>& all) {
  std::ostringstream out;
  out << "nodes,tp,pp,dp,ep,etp,vpp,cp,sp,ep_over_dies,micro_batch,global_batch,recompute,zero,optimizer,"
         "optimizer_offload,activation_offload,precision,dispatch,routing,schedule,feasible,step_time_s,"
         "tokens_per_device_per_s,tokens_per_die_per_s,mfu,hfu,compute_s,tp_comm_s,ep_comm_s,pp_comm_s,"
         "dp_comm_s,pp_bubble_s,optimizer_s,queueing_s,offload_s,weights_bytes,gradients_bytes,"
         "optimizer_states_bytes,activations_bytes,buffers_bytes,reserve_bytes,total_bytes,capacity_bytes,chunks,"
         "fp8_params,recompute_layers\n";
  for (const Estimate& e : all) {
    const Strategy& s = e.strategy;
    const Parallel& p = s.parallel;
    out << s.nodes << ',' << p.tp << ',' << p.pp << ',' << p.dp << ',' << p.ep << ',' << p.etp << ',' << p.vpp
        << ',' << p.cp << ',' << p.sp << ',' << s.ep_over_dies << ',' << s.training.micro_batch << ','
        << s.training.global_batch << ",\"" << config::recompute_spelling(s.training.recompute) << "\"," << s.training.zero
        << ',' << config::spelling(config::kOptimizerNames, s.training.optimizer) << ','
        << s.training.optimizer_offload << ',' << s.training.activation_offload << ','
        << config::spelling(config::kPrecisionNames, s.training.precision) << ',' << dispatch_name(s.moe.dispatch)
        << ',' << config::spelling(config::kRoutingNames, s.moe.routing) << ',' << schedule_name(s.schedule) << ','
        << e.feasible << ',' << e.step_time_s << ',' << e.tokens_per_device_per_s << ','
        << e.tokens_per_die_per_s << ',' << e.mfu << ',' << e.hfu << ',' << e.time_s.compute << ','
        << e.time_s.tp_comm << ',' << e.time_s.ep_comm << ',' << e.time_s.pp_comm << ',' << e.time_s.dp_comm << ','
        << e.time_s.pp_bubble << ',' << e.time_s.optimizer << ',' << e.time_s.queueing << ',' << e.time_s.offload
        << ',' << e.memory_bytes.weights << ',' << e.memory_bytes.gradients << ','
        << e.memory_bytes.optimizer_states << ',' << e.memory_bytes.activations << ',' << e.memory_bytes.buffers
        << ',' << e.memory_bytes.reserve << ',' << e.memory_bytes.total << ',' << e.memory_bytes.capacity << ','
        << s.moe.chunks << ',' << s.training.fp8_params << ',' << s.training.recompute_layers << '\n';
  }
  return out.str();
}

std::string rank_json(const SpacePlan& space, const SearchResult& r) {
  report::JsonWriter w;
  w.begin_object();
  w.field("hardware", space.hardware.name).field("model", space.model.name);
  w.key("results").begin_array();
  for (const Estimate& e : r.best) report::write_short_estimate(w, e, space);
  w.end_array();
  w.key("pareto").begin_array();
  for (const Estimate& e : r.pareto) report::write_short_estimate(w, e, space);
  w.end_array();
  w.field("candidates", static_cast<long long>(r.candidates));
  w.field("evaluated", static_cast<long long>(r.evaluated));
  w.field("feasible", static_cast<long long>(r.feasible));
  w.field("pruned", static_cast<long long>(r.pruned));
  w.key("rejected").begin_object();
  for (const RuleCount& c : r.rejected) w.field(c.rule, static_cast<long long>(c.count));
  w.end_object();
  w.field("seconds", r.seconds);
  w.end_object();
  return w.str() + "\n";
}

std::string rank_markdown(const SpacePlan& space, const SearchResult& r, const std::string& best_detail) {
  std::ostringstream out;
  out << "# paraplan ranking: " << space.model.name << " on " << space.hardware.name << "\n\n";
  out << space.space.description << "\n\n";
  out << rank_summary(r) << "\n";
  out << "## Best strategies (objective: " << config::spelling(config::kObjectiveNames, space.space.objective)
      << ")\n\n";
  out << "| # | nodes | layout | mb | recompute | dispatch | schedule | training | step (s) | TGS | MFU | memory | bottleneck |\n";
  out << "|---|---:|---|---:|---|---|---|---|---:|---:|---:|---:|---|\n";
  for (std::size_t i = 0; i < r.best.size(); ++i) {
    const Estimate& e = r.best[i];
    const Strategy& s = e.strategy;
    out << "| " << i + 1 << " | " << s.nodes << " | " << layout(s) << " | " << s.training.micro_batch << " | "
        << config::recompute_label(s.training) << " | " << (s.parallel.ep > 1 ? dispatch_name(s) : "-")
        << " | " << schedule_name(s.schedule) << " | " << training_short(s) << " | " << fmt("%.3f", e.step_time_s)
        << " | " << fmt("%.0f", e.tokens_per_device_per_s) << " | " << fmt("%.1f%%", 100 * e.mfu) << " | "
        << mem_short(e) << " | " << e.bottleneck << " |\n";
  }
  if (r.best.size() >= 2) {
    out << "\n## Why the runners-up lose\n\n";
    for (std::size_t i = 1; i < std::min<std::size_t>(r.best.size(), 6); ++i) {
      out << "- #" << i + 1 << ": " << why_loses(r.best[0], r.best[i]) << "\n";
    }
  }
  if (!r.best_per_nodes.empty()) {
    out << "\n## Best at each node count\n\n| nodes | layout | mb | recompute | dispatch | schedule | step (s) | TGS | memory |\n"
           "|---:|---|---:|---|---|---|---:|---:|---:|\n";
    for (const Estimate& e : r.best_per_nodes) {
      const Strategy& s = e.strategy;
      out << "| " << s.nodes << " | " << layout(s) << " | " << s.training.micro_batch << " | "
          << config::recompute_label(s.training) << " | " << (s.parallel.ep > 1 ? dispatch_name(s) : "-")
          << " | " << schedule_name(s.schedule) << " | " << fmt("%.3f", e.step_time_s) << " | "
          << fmt("%.0f", e.tokens_per_device_per_s) << " | " << mem_short(e) << " |\n";
    }
  }
  if (!r.pareto.empty()) {
    out << "\n## Pareto front (TGS, memory headroom, nodes)\n\n| nodes | layout | mb | dispatch | TGS | memory |\n|---:|---|---:|---|---:|---:|\n";
    for (const Estimate& e : r.pareto) {
      out << "| " << e.strategy.nodes << " | " << layout(e.strategy) << " | " << e.strategy.training.micro_batch
          << " | " << (e.strategy.parallel.ep > 1 ? dispatch_name(e.strategy) : "-") << " | "
          << fmt("%.0f", e.tokens_per_device_per_s) << " | " << mem_short(e) << " |\n";
    }
  }
  out << "\n## Rejected combinations by rule\n\n| rule | count |\n|---|---:|\n";
  for (const RuleCount& c : r.rejected) out << "| " << c.rule << " | " << c.count << " |\n";
  if (!r.best.empty()) {
    out << "\n## Best strategy in detail\n\n```\n" << best_detail << "```\n\n";
    if (r.best_timeline.ok && !r.best_timeline.events.empty()) {
      out << "### Pipeline timeline\n\n" << gantt(r.best_timeline, r.best_timeline.stages + 2);
    }
  }
  return out.str();
}

}  // namespace paraplan
