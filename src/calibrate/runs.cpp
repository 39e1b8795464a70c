// `paraplan calibrate runs`: a few global knobs, at most one per mechanism, fitted to measured
// end-to-end runs (validation cases), with the leave-one-out error beside the in-sample one.

#include <algorithm>
#include <cmath>
#include <sstream>

#include "paraplan/calibrate.hpp"
#include "paraplan/errors.hpp"
#include "util/strings.hpp"

namespace paraplan {
namespace {

// The mechanisms a knob may scale, each a time multiplier (1 = the model as derived).
struct KnobSpec {
  const char* name;
  const char* what;
};
constexpr KnobSpec kKnobs[] = {
    {"gemm", "GEMM and grouped-GEMM kernel time (1 / the achieved GEMM fraction)"},
    {"fp8_gemm", "FP8 GEMM and grouped-GEMM kernel time (1 / the achieved FP8 GEMM fraction)"},
    {"sustained", "BF16 GEMM and grouped-GEMM kernel time in a sustained training step (against the short-burst measurements the kernel model is anchored on)"},
    {"attention", "attention kernel time"},
    {"memory", "memory-bound kernel time (norms, elementwise, casts, permutes, copies)"},
    {"communication", "collective and dispatch transfer time on every tier"},
    {"host", "per-kernel launch overhead and host issue time"},
    {"host_issue", "the host's time to issue one kernel (device.host_issue) alone: the framework's host work per launch"},
    {"ep_overlap", "the share of the EP transfer time the paired compute could hide that it hides (overlap.ep runs); at most 1"},
    {"allocator", "memory the caching allocator reserves per byte of a step's transient tensors (activations, buffers); memory cases only"},
};

const KnobSpec* find_knob(const std::string& name) {
  for (const KnobSpec& k : kKnobs) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

void apply(HardwareSpec& hw, const std::string& knob, double x) {
  auto& c = hw.calibration.compute;
  if (knob == "gemm") {
    for (int cls : {0, 1}) {
      for (double& v : c[static_cast<std::size_t>(cls)]) v *= x;
    }
  } else if (knob == "fp8_gemm") {
    hw.calibration.fp8_gemm *= x;
  } else if (knob == "sustained") {
    hw.calibration.sustained *= x;
  } else if (knob == "attention") {
    for (double& v : c[2]) v *= x;
  } else if (knob == "memory") {
    for (int cls = 3; cls < kOpClassCount; ++cls) {
      for (double& v : c[static_cast<std::size_t>(cls)]) v *= x;
    }
  } else if (knob == "communication") {
    for (TierSpec& t : hw.tiers) {
      for (double& f : t.calibration) f *= x;
    }
  } else if (knob == "host") {
    hw.device.kernel_overhead_s *= x;
    hw.device.host_sync_s *= x;
    hw.device.host_issue_s *= x;
  } else if (knob == "host_issue") {
    hw.device.host_issue_s *= x;
  } else if (knob == "ep_overlap") {
    hw.calibration.ep_overlap = std::min(1.0, hw.calibration.ep_overlap * x);
  } else if (knob == "allocator") {
    hw.calibration.allocator *= x;
  }
}

// Log-space errors of the cases under knob values `x` (cases[i] with every knob applied).
struct RunsObjective {
  const std::vector<ValidationCase>& cases;
  const std::vector<std::string>& knobs;
  /// Per knob, the runs it moves (empty: all). A search along one knob sums only those: the
  /// others' errors do not change along it, so the minimum is the same.
  std::vector<std::vector<bool>> moves;

  CaseResult run(const ValidationCase& c, const std::vector<double>& x) const {
    ValidationCase k = c;
    for (std::size_t j = 0; j < knobs.size(); ++j) apply(k.plan.hardware, knobs[j], x[j]);
    return run_case(k);
  }
  double operator()(const std::vector<double>& x, int skip, int along = -1) const {
    double sum = 0;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      if (static_cast<int>(i) == skip) continue;
      if (along >= 0 && !moves.empty() && !moves[static_cast<std::size_t>(along)][i]) continue;
      const CaseResult r = run(cases[i], x);
      const double e = std::log(std::max(r.predicted, 1e-300) / r.measured);
      sum += e * e;
    }
    return sum;
  }
};

// Coordinate descent over log x in [ln 1/4, ln 4] (the same bounds `calibrate profile` keeps
// its multipliers in): per knob a scan of 25 points, then a golden-section search between
// the best point's neighbours. The scan first because a case's prediction is not smooth in a
// knob (a pipeline's critical path, a host-bound phase, a recompute choice can switch), so
// the objective can hold several minima and a golden section alone may settle in a worse
// one (b200-sxm-ib's three runs did: x 0.937 at a higher sum than x 1).
std::vector<double> fit_knobs(const RunsObjective& f, int skip) {
  const std::size_t n = f.knobs.size();
  std::vector<double> x(n, 1.0);
  const double g = (std::sqrt(5.0) - 1) / 2;
  const int sweeps = n == 1 ? 1 : 4;
  for (int s = 0; s < sweeps; ++s) {
    for (std::size_t j = 0; j < n; ++j) {
      const double lo = std::log(0.25), hi = std::log(4.0);
      auto at = [&](double u) {
        std::vector<double> y = x;
        y[j] = std::exp(u);
        return f(y, skip, static_cast<int>(j));
      };
      constexpr int kScan = 25;
      const double step = (hi - lo) / (kScan - 1);
      double best_u = std::log(x[j]), best_f = at(best_u);
      for (int i = 0; i < kScan; ++i) {
        const double u = lo + step * i;
        const double fu = at(u);
        if (fu < best_f) {
          best_f = fu;
          best_u = u;
        }
      }
      double a = std::max(lo, best_u - step), b = std::min(hi, best_u + step);
      double c = b - g * (b - a), d = a + g * (b - a);
      double fc = at(c), fd = at(d);
      for (int it = 0; it < 36; ++it) {  // interval shrinks to 0.618^36 x ln 16 ~ 1e-7
        if (fc < fd) {
          b = d;
          d = c;
          fd = fc;
          c = b - g * (b - a);
          fc = at(c);
        } else {
          a = c;
          c = d;
          fc = fd;
          d = a + g * (b - a);
          fd = at(d);
        }
      }
      // the bracket's middle, unless the scan's point is still the better one
      const double mid = 0.5 * (a + b);
      x[j] = std::exp(at(mid) <= best_f ? mid : best_u);
    }
  }
  return x;
}

// "gemm, fp8_gemm, ...": the knobs in words, for messages.
std::string knob_list() {
  std::string out;
  for (const KnobSpec& k : kKnobs) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

}  // namespace

RunsFit calibrate_runs(const std::vector<ValidationCase>& cases, const std::vector<std::string>& knobs) {
  std::vector<Diagnostic> errors;
  if (knobs.empty()) errors.push_back({"--knobs", 0, 0, "no knob to fit; choose among " + knob_list()});
  for (std::size_t i = 0; i < knobs.size(); ++i) {
    if (find_knob(knobs[i]) == nullptr) {
      errors.push_back({"--knobs", 0, 0,
                        "unknown knob `" + knobs[i] + "`; the knobs are " + knob_list()});
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (knobs[j] == knobs[i]) errors.push_back({"--knobs", 0, 0, "knob `" + knobs[i] + "` given twice: one knob per mechanism"});
    }
  }
  const std::size_t most = cases.size() / 3;
  if (knobs.size() > most) {
    errors.push_back({"--knobs", 0, 0,
                      std::to_string(cases.size()) + " runs support at most " + std::to_string(most) +
                          " knob(s) (one per 3 runs); " + std::to_string(knobs.size()) + " asked"});
  }
  // A knob must move some run: the allocator only memory cases, the time knobs only the others.
  std::size_t memory_runs = 0;
  for (const ValidationCase& c : cases) memory_runs += c.metric == Metric::MemoryGib ? 1 : 0;
  for (const std::string& k : knobs) {
    if (find_knob(k) == nullptr) continue;
    if (k == "allocator" && memory_runs == 0) {
      errors.push_back({"--knobs", 0, 0, "knob `allocator` scales memory: it needs memory_per_device_gib cases, and none is given"});
    } else if (k != "allocator" && memory_runs == cases.size() && !cases.empty()) {
      errors.push_back({"--knobs", 0, 0, "knob `" + k + "` scales time, and every case given measures memory"});
    }
  }
  for (const ValidationCase& c : cases) {
    if (c.plan.hardware.name != cases.front().plan.hardware.name) {
      errors.push_back({c.file, 0, 0,
                        "runs on `" + c.plan.hardware.name + "`, but `" + cases.front().name + "` on `" +
                            cases.front().plan.hardware.name + "`: one fit calibrates one hardware file"});
    }
  }
  if (!errors.empty()) throw ConfigError(errors);

  RunsObjective f{cases, knobs, {}};
  RunsFit out;
  out.hardware = cases.front().plan.hardware.name;
  out.knobs = knobs;
  // Which runs each knob moves, at either end of its range (x 1/4 and x 4; ep_overlap, a
  // share, stops at 1): a knob no run answers to cannot be fitted, one that few runs answer
  // to is fitted to those few whatever the total count, and the search along a knob need
  // only run those.
  const std::vector<double> ones(knobs.size(), 1.0);
  std::vector<double> base(cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) base[i] = f.run(cases[i], ones).predicted;
  for (std::size_t j = 0; j < knobs.size(); ++j) {
    std::vector<bool>& moves = f.moves.emplace_back(cases.size(), false);
    for (const double end : {0.25, 4.0}) {
      std::vector<double> probe = ones;
      probe[j] = end;
      for (std::size_t i = 0; i < cases.size(); ++i) {
        if (!moves[i]) moves[i] = std::fabs(f.run(cases[i], probe).predicted - base[i]) > 1e-9 * std::fabs(base[i]);
      }
    }
    const int moved = static_cast<int>(std::count(moves.begin(), moves.end(), true));
    out.moved.push_back(moved);
    if (moved == 0) {
      errors.push_back({"--knobs", 0, 0,
                        "knob `" + knobs[j] + "` moves none of the runs (" + find_knob(knobs[j])->what + ")"});
    }
  }
  if (!errors.empty()) throw ConfigError(errors);
  out.values = fit_knobs(f, -1);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    RunsFit::Row row;
    row.name = cases[i].name;
    row.metric = metric_name(cases[i].metric);
    row.measured = cases[i].measured;
    row.before = base[i];
    row.after = f.run(cases[i], out.values).predicted;
    // Leave this run out: fit on the others, predict it.
    const std::vector<double> loo = fit_knobs(f, static_cast<int>(i));
    row.loo = f.run(cases[i], loo).predicted;
    out.rows.push_back(row);
  }
  auto mean = [&](double RunsFit::Row::*field) {
    double s = 0;
    for (const RunsFit::Row& r : out.rows) s += std::fabs(r.*field / r.measured - 1);
    return 100 * s / static_cast<double>(out.rows.size());
  };
  out.mean_before_pct = mean(&RunsFit::Row::before);
  out.mean_after_pct = mean(&RunsFit::Row::after);
  out.mean_loo_pct = mean(&RunsFit::Row::loo);
  return out;
}

std::string runs_fit_text(const RunsFit& fit) {
  using util::fmt;
  using util::pad;
  std::size_t w = 4;
  for (const RunsFit::Row& r : fit.rows) w = std::max(w, r.name.size());
  std::ostringstream out;
  out << fit.rows.size() << " runs on " << fit.hardware << ", " << fit.knobs.size() << " knob(s):\n";
  for (std::size_t j = 0; j < fit.knobs.size(); ++j) {
    const KnobSpec* k = find_knob(fit.knobs[j]);
    out << "  " << pad(fit.knobs[j], 14, false) << " x " << fmt("%.4f", fit.values[j]) << "  (" << (k ? k->what : "")
        << ")" << (fit.values[j] <= 0.2501 || fit.values[j] >= 3.999 ? "  at its bound" : "") << "\n";
    if (j < fit.moved.size()) {
      const int n = fit.moved[j];
      out << "  " << pad("", 14, false) << "   moves " << n << " of " << fit.rows.size() << " runs"
          << (n < 3 ? ": fewer than 3, fitted to those alone (their left-out errors show it)" : "") << "\n";
    }
  }
  out << "\n" << pad("run", w + 2, false) << pad("metric", 26, false) << pad("measured", 11, true)
      << pad("model", 11, true) << pad("error", 9, true) << pad("fitted", 11, true) << pad("error", 9, true)
      << pad("left out", 11, true) << pad("error", 9, true) << "\n";
  for (const RunsFit::Row& r : fit.rows) {
    auto err = [&](double v) { return fmt("%+.1f%%", 100 * (v / r.measured - 1)); };
    out << pad(r.name, w + 2, false) << pad(r.metric, 26, false) << pad(fmt("%.4g", r.measured), 11, true)
        << pad(fmt("%.4g", r.before), 11, true) << pad(err(r.before), 9, true) << pad(fmt("%.4g", r.after), 11, true)
        << pad(err(r.after), 9, true) << pad(fmt("%.4g", r.loo), 11, true) << pad(err(r.loo), 9, true) << "\n";
  }
  out << "\nmean |error|: model " << fmt("%.1f%%", fit.mean_before_pct) << ", fitted (in sample) "
      << fmt("%.1f%%", fit.mean_after_pct) << ", leave-one-out " << fmt("%.1f%%", fit.mean_loo_pct)
      << " (each run predicted by a fit to the others: the figure to quote)\n";
  return out.str();
}

std::string runs_overlay_yaml(const RunsFit& fit, const HardwareSpec& base_hw, const std::string& base,
                              const std::string& name, const std::string& command, const std::string& date) {
  using util::fmt;
  std::ostringstream y;
  y << "# Written by `paraplan calibrate runs` on " << date << ":\n#   " << command << "\n";
  y << "# Knobs fitted to " << fit.rows.size() << " measured runs (declare them `calibration: true` in their\n"
    << "# case files when validating against this file):\n";
  for (const RunsFit::Row& r : fit.rows) y << "#   " << r.name << "\n";
  y << "# mean |error|: model " << fmt("%.1f", fit.mean_before_pct) << "%, fitted " << fmt("%.1f", fit.mean_after_pct)
    << "%, leave-one-out " << fmt("%.1f", fit.mean_loo_pct) << "%.\n";
  for (std::size_t j = 0; j < fit.knobs.size() && j < fit.moved.size(); ++j) {
    y << "# " << fit.knobs[j] << " moves " << fit.moved[j] << " of the " << fit.rows.size() << " runs.\n";
  }
  y << "extends: " << base << "\nname: " << name << "\n";
  y << "description: " << base << " calibrated to measured runs (" << date << ")\n";
  y << "sources:\n  - \"" << command << " (" << date << ")\"\n";
  HardwareSpec hw = base_hw;
  for (std::size_t j = 0; j < fit.knobs.size(); ++j) apply(hw, fit.knobs[j], fit.values[j]);
  const auto fitted = [&](const char* knob) { return std::find(fit.knobs.begin(), fit.knobs.end(), knob) != fit.knobs.end(); };
  if (fitted("host")) {
    y << "device:\n";
    y << "  kernel_overhead: " << fmt("%.4g", hw.device.kernel_overhead_s * 1e6) << " us\n";
    y << "  host_sync: " << fmt("%.4g", hw.device.host_sync_s * 1e6) << " us\n";
    y << "  host_issue: " << fmt("%.4g", hw.device.host_issue_s * 1e6) << " us\n";
  } else if (fitted("host_issue")) {
    y << "device:\n";
    y << "  host_issue: " << fmt("%.4g", hw.device.host_issue_s * 1e6) << " us\n";
  }
  y << "calibration:\n  source: \"" << command << " (" << date << ")\"\n";
  if (hw.calibration.fp8_gemm != 1) y << "  fp8_gemm: " << fmt("%.6g", hw.calibration.fp8_gemm) << "\n";
  if (hw.calibration.sustained != 1) y << "  sustained: " << fmt("%.6g", hw.calibration.sustained) << "\n";
  if (hw.calibration.allocator != 1) y << "  allocator: " << fmt("%.6g", hw.calibration.allocator) << "\n";
  if (hw.calibration.ep_overlap != 1) y << "  ep_overlap: " << fmt("%.6g", hw.calibration.ep_overlap) << "\n";
  y << "  compute:\n";
  for (int c = 0; c < kOpClassCount; ++c) {
    const auto& v = hw.calibration.compute[static_cast<std::size_t>(c)];
    y << "    " << kOpClassNames[c] << ": {forward: " << fmt("%.6g", v[0]) << ", backward: " << fmt("%.6g", v[1])
      << ", weight_grad: " << fmt("%.6g", v[2]) << "}\n";
  }
  if (std::find(fit.knobs.begin(), fit.knobs.end(), "communication") != fit.knobs.end()) {
    static const char* names[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv", "broadcast"};
    y << "  communication:\n";
    for (const TierSpec& t : hw.tiers) {
      y << "    " << t.name << ":\n";
      for (int op = 0; op < kCollectiveCount; ++op) {
        y << "      " << names[op] << ": " << fmt("%.6g", t.calibration[static_cast<std::size_t>(op)]) << "\n";
      }
    }
  }
  return y.str();
}

}  // namespace paraplan
