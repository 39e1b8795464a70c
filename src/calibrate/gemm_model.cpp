// The kernel-level GEMM model fitted to a measured sweep (paraplan calibrate gemm --model).

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "cost/kernels.hpp"
#include "paraplan/calibrate.hpp"
#include "paraplan/errors.hpp"

namespace paraplan {
namespace {

cost::GemmPass pass_of(const std::string& p) {
  return p == "dgrad" ? cost::GemmPass::Dgrad : p == "wgrad" ? cost::GemmPass::Wgrad : cost::GemmPass::Forward;
}

struct Trial {
  GemmKernelSpec kernel;
  double fraction = 0, fixed_s = 0, mean = 1e300;
  std::vector<double> errors;  // signed relative errors per row
};

struct Fit {
  const std::vector<GemmRow>& rows;
  int units;
  double peak, roofline, input_bytes, rate;
  bool keep_passes;  // dgrad / wgrad from the kernel given, not fitted
};

// For fixed tiles, k overhead and per-kernel time: the fraction and pass factors in closed
// form (means of log residuals per pass, forward rows setting the fraction), then the rows'
// errors. A row's modelled time is max(FLOP / (peak x efficiency), bytes / roofline) + fixed.
Trial evaluate(const GemmKernelSpec& g, double fixed_s, const Fit& f) {
  Trial t;
  t.kernel = g;
  t.fixed_s = fixed_s;
  GemmKernelSpec plain = g;
  plain.dgrad = plain.wgrad = 1.0;
  std::array<double, 3> sum{}, count{};
  std::vector<double> shape(f.rows.size());
  for (std::size_t i = 0; i < f.rows.size(); ++i) {
    const GemmRow& r = f.rows[i];
    shape[i] = cost::gemm_model_efficiency(plain, 1.0, f.units, r.m, r.n, r.k, r.groups, cost::GemmPass::Forward,
                                           f.rate);
    // The efficiency the compute part must have for the measured time, less the fixed part.
    const double flops = 2 * r.m * r.n * r.k * r.groups;
    const double busy = flops / (f.peak * r.efficiency) - fixed_s;
    if (busy <= 0) return t;  // the fixed time alone exceeds this row: not a candidate
    // Rows whose time their HBM traffic explains say nothing about the compute fraction.
    const double bytes = ((r.m * r.k + r.k * r.n) * f.input_bytes + r.m * r.n * 2.0) * r.groups;
    if (f.roofline > 0 && busy < 1.25 * bytes / f.roofline) continue;
    const std::size_t pi = static_cast<std::size_t>(pass_of(r.pass));
    sum[pi] += std::log(flops / (f.peak * busy) / shape[i]);
    count[pi] += 1;
  }
  std::size_t base = 0;
  while (base < 3 && count[base] == 0) ++base;
  if (base == 3) return t;  // every row memory-bound: nothing to fit
  const double log_fraction = sum[base] / count[base];
  t.fraction = std::min(1.0, std::exp(log_fraction));
  if (!f.keep_passes) {
    t.kernel.dgrad = count[1] > 0 && base == 0 ? std::min(1.0, std::exp(sum[1] / count[1] - log_fraction)) : 1.0;
    t.kernel.wgrad = count[2] > 0 && base == 0 ? std::min(1.0, std::exp(sum[2] / count[2] - log_fraction)) : 1.0;
  }
  // The log-mean fraction, refined by a scan of +-12% for the smallest mean |error| (the
  // log mean is the least-squares optimum, not the least-absolute one).
  const double closed = t.fraction;
  std::vector<double> errors(f.rows.size());
  for (int step = -12; step <= 12; ++step) {
    const double fraction = std::min(1.0, closed * (1 + 0.01 * step));
    double abs_sum = 0;
    for (std::size_t i = 0; i < f.rows.size(); ++i) {
      const GemmRow& r = f.rows[i];
      const cost::GemmPass p = pass_of(r.pass);
      const double e = fraction * shape[i] *
                       (p == cost::GemmPass::Dgrad ? t.kernel.dgrad : p == cost::GemmPass::Wgrad ? t.kernel.wgrad : 1.0);
      const double flops = 2 * r.m * r.n * r.k * r.groups;
      double time = flops / (f.peak * e);
      if (f.roofline > 0) {
        const double bytes = ((r.m * r.k + r.k * r.n) * f.input_bytes + r.m * r.n * 2.0) * r.groups;
        time = std::max(time, bytes / f.roofline);
      }
      errors[i] = (flops / (f.peak * (time + fixed_s)) - r.efficiency) / r.efficiency;
      abs_sum += std::fabs(errors[i]);
    }
    const double mean = abs_sum / static_cast<double>(f.rows.size());
    if (mean < t.mean) {
      t.mean = mean;
      t.fraction = fraction;
      t.errors = errors;
    }
  }
  return t;
}

}  // namespace

GemmModelCalibration calibrate_gemm_model(const std::vector<GemmRow>& rows, const GemmKernelSpec& start,
                                          int units, Dtype dtype, double peak, double roofline_bytes_per_s,
                                          double input_bytes, double rate, bool fraction_only) {
  if (rows.empty()) throw Error("calibrate gemm --model: no rows to fit");
  if (units <= 0) throw Error("calibrate gemm --model: the GPU's compute units are unknown (--units N)");
  GemmKernelSpec g = start;
  if (fraction_only && g.tiles.empty()) {
    throw Error("calibrate gemm --fraction-only: the hardware has no device.gemm_kernel tiles to keep");
  }
  if (g.tiles.empty()) g.tiles = {GemmTile{128, 256, 1.0}, GemmTile{256, 128, 1.0}, GemmTile{128, 128, 1.0}};
  // Only the tile shapes come from the start: every relative speed is refitted from 1, so
  // the result does not depend on what the hardware file held before.
  if (!fraction_only) {
    for (GemmTile& t : g.tiles) t.efficiency = 1.0;
  }
  if (g.max_split_k < 2) g.max_split_k = 8;
  const Fit fit{rows, units, peak, roofline_bytes_per_s, input_bytes, rate, fraction_only};
  // Grid: k overhead (in elements of k at the BF16 rate) in steps of 8 up to 1024, a fixed
  // time per kernel of 0..6 us, and each other tile's relative speed in steps of 0.025 from
  // 0.7 to 1, one tile at a time (coordinate passes), twice.
  Trial best;
  auto consider = [&](const GemmKernelSpec& cand, double fixed_s) {
    Trial t = evaluate(cand, fixed_s, fit);
    if (t.mean < best.mean - 1e-12) best = std::move(t);
  };
  // --fraction-only: the tiles and k overhead stay; only the fixed time per kernel is searched.
  if (fraction_only) {
    for (int us = 0; us <= 6; ++us) consider(g, us * 1e-6);
  } else {
    for (int round = 0; round < 2; ++round) {
      const GemmKernelSpec base = best.mean < 1e300 ? best.kernel : g;
      for (int us = 0; us <= 6; ++us) {
        for (int k0 = 0; k0 <= 1024; k0 += 8) {
          GemmKernelSpec cand = base;
          cand.k_overhead = k0;
          consider(cand, us * 1e-6);
        }
      }
      if (best.mean >= 1e300) break;
      for (std::size_t ti = 1; ti < g.tiles.size(); ++ti) {
        for (int step = 0; step <= 12; ++step) {
          GemmKernelSpec cand = best.kernel;
          cand.tiles[ti].efficiency = 0.7 + 0.025 * step;
          consider(cand, best.fixed_s);
        }
      }
    }
  }
  if (best.mean >= 1e300) throw Error("calibrate gemm --model: no model fits these rows");
  GemmModelCalibration c;
  c.kernel = best.kernel;
  c.kernel.peak_fraction = {};
  c.kernel.peak_fraction[static_cast<int>(dtype)] = best.fraction;
  c.dtype = dtype;
  c.units = units;
  c.rows = static_cast<int>(rows.size());
  c.mean_error = best.mean;
  std::vector<double> a;
  for (double e : best.errors) a.push_back(std::fabs(e));
  std::sort(a.begin(), a.end());
  c.median_error = a[a.size() / 2];
  c.worst_error = a.back();
  c.bias = std::accumulate(best.errors.begin(), best.errors.end(), 0.0) / static_cast<double>(best.errors.size());
  c.fixed_s = best.fixed_s;
  c.fraction_only = fraction_only;
  for (const GemmRow& r : rows) {
    c.fitted_dgrad = c.fitted_dgrad || (r.pass == "dgrad" && !fraction_only);
    c.fitted_wgrad = c.fitted_wgrad || (r.pass == "wgrad" && !fraction_only);
  }
  return c;
}

SustainedCalibration calibrate_sustained(const std::vector<GemmRow>& burst, const std::vector<GemmRow>& capped,
                                         const std::string& burst_path, const std::string& capped_path) {
  auto same = [](const GemmRow& a, const GemmRow& b) {
    return a.m == b.m && a.n == b.n && a.k == b.k && a.groups == b.groups && a.pass == b.pass;
  };
  // Time at a common peak: 2 m n k groups / efficiency (the peak cancels in the ratio).
  auto time = [](const GemmRow& r) { return 2 * r.m * r.n * r.k * r.groups / r.efficiency; };
  SustainedCalibration c;
  double sum_burst = 0, sum_capped = 0;
  std::vector<double> ratios;
  std::vector<bool> used(capped.size(), false);
  for (const GemmRow& b : burst) {
    bool found = false;
    for (std::size_t i = 0; i < capped.size() && !found; ++i) {
      if (used[i] || !same(b, capped[i])) continue;
      used[i] = found = true;
      sum_burst += time(b);
      sum_capped += time(capped[i]);
      ratios.push_back(time(capped[i]) / time(b));
    }
    if (!found) ++c.unmatched;
  }
  for (bool u : used) c.unmatched += u ? 0 : 1;
  if (ratios.empty()) {
    throw ConfigError({Diagnostic{capped_path, 0, 0,
                                  "no row (m, n, k, groups, pass) is also in " + burst_path +
                                      ": time the same sweep twice (bench/gpu/gemm.py --burst S, then without)"}});
  }
  std::sort(ratios.begin(), ratios.end());
  c.rows = static_cast<int>(ratios.size());
  c.factor = sum_capped / sum_burst;
  c.median = ratios[ratios.size() / 2];
  c.low = ratios.front();
  c.high = ratios.back();
  return c;
}

MamfCalibration calibrate_mamf(const GemmKernelSpec& kernel, int units, double rate, double mamf_fraction, int lo,
                               int hi, int step, double peak, double roofline_bytes_per_s, double input_bytes) {
  if (!(mamf_fraction > 0 && mamf_fraction <= 1)) {
    throw ConfigError({Diagnostic{"--mamf", 0, 0, "the MAMF figure must be above 0 and at most the peak"}});
  }
  if (step <= 0 || hi < lo || hi <= 0 || static_cast<double>((hi - lo) / step + 1) > 400) {
    throw ConfigError({Diagnostic{"--range", 0, 0, "the MAMF grid must run from lo to hi > 0 in at most 400 steps"}});
  }
  // Per shape: the model's shape factor and its roofline ceiling (FLOP / peak over the time
  // its inputs and BF16 output take through HBM), as a fraction of the peak.
  struct Shape {
    double factor, roof;
    int m, n, k;
  };
  std::vector<Shape> shapes;
  const int first = std::max(step, lo);  // mamf-finder skips the zero size
  for (int m = first; m <= hi; m += step) {
    for (int n = first; n <= hi; n += step) {
      for (int k = first; k <= hi; k += step) {
        const double f = cost::gemm_model_efficiency(kernel, 1.0, units, m, n, k, 1, cost::GemmPass::Forward, rate);
        double roof = 1e300;
        if (peak > 0 && roofline_bytes_per_s > 0) {
          const double bytes = input_bytes * (static_cast<double>(m) * k + static_cast<double>(k) * n) +
                               2.0 * static_cast<double>(m) * n;
          roof = 2.0 * m * n * k / peak / (bytes / roofline_bytes_per_s);
        }
        shapes.push_back({f, roof, m, n, k});
      }
    }
  }
  // The best shape's efficiency, min(fraction x factor, roof), rises with the fraction:
  // bisect for the fraction at which it equals the MAMF figure.
  auto best = [&](double fraction, const Shape** at) {
    double b = 0;
    for (const Shape& x : shapes) {
      const double e = std::min(fraction * x.factor, x.roof);
      if (e > b) {
        b = e;
        if (at != nullptr) *at = &x;
      }
    }
    return b;
  };
  double lo_f = 0, hi_f = 4;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo_f + hi_f);
    (best(mid, nullptr) < mamf_fraction ? lo_f : hi_f) = mid;
  }
  MamfCalibration c;
  c.mamf_fraction = mamf_fraction;
  c.peak_fraction = 0.5 * (lo_f + hi_f);
  c.shapes = static_cast<int>(shapes.size());
  const Shape* at = nullptr;
  (void)best(c.peak_fraction, &at);
  if (at != nullptr) {
    c.best_shape_factor = at->factor;
    c.m = at->m;
    c.n = at->n;
    c.k = at->k;
  }
  return c;
}

}  // namespace paraplan
