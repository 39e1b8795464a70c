// Readers and fits for the kernel micro-benchmarks of bench/gpu: flash attention by pass,
// sequence and mask; memory-bound kernels by class; host issue and synchronisation costs.

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "calibrate/csv_table.hpp"
#include "cost/fit.hpp"
#include "cost/kernels.hpp"
#include "paraplan/calibrate.hpp"
#include "paraplan/units.hpp"
#include "util/strings.hpp"

namespace paraplan {
namespace {

constexpr MemClass kMemClasses[] = {MemClass::Elementwise, MemClass::Norm,      MemClass::Cast, MemClass::Permute,
                                    MemClass::Softmax,     MemClass::Reduction, MemClass::Copy};

// A measured time within the range input files accept; a located error otherwise.
bool time_in_range(calib::CsvTable& t, const calib::CsvTable::Row& row, int col, double seconds) {
  const units::Range r = units::accepted_range(units::Quantity::Time);
  if (seconds > 0 && seconds >= r.lo && seconds <= r.hi) return true;
  t.error(row.line, t.at(row, col),
          "time `" + row.cells[static_cast<std::size_t>(col)] + "` is outside " + units::format(r.lo, units::Quantity::Time) +
              " .. " + units::format(r.hi, units::Quantity::Time));
  return false;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

const char* mem_class_name(MemClass c) {
  switch (c) {
    case MemClass::Elementwise: return "elementwise";
    case MemClass::Norm: return "norm";
    case MemClass::Cast: return "cast";
    case MemClass::Permute: return "permute";
    case MemClass::Softmax: return "softmax";
    case MemClass::Reduction: return "reduction";
    case MemClass::Copy: return "copy";
  }
  return "elementwise";
}

std::vector<AttentionRow> read_attention_rows(const std::string& path, double peak,
                                              std::vector<std::string>* notes, const std::string& dtype) {
  const bool bf16 = dtype == "bf16" || dtype == "bfloat16";
  calib::CsvTable t = calib::read_csv_table(path, "an attention benchmark");
  // bench/gpu/attention.py's names first, then cudnn-frontend's sdpa_benchmark_training ones.
  const int ck = t.column({"kernel", "backend"}), cp = t.column({"pass", "profile_pass"});
  const int cc = t.column({"causal"}), cm = t.column({"attn_mask"}), cb = t.column({"batch", "batch_size"});
  const int ch = t.column({"heads", "num_q_heads"}), cd = t.column({"head_dim", "head_dim_qk"});
  const int cs = t.column({"seq", "seq_len", "q_seqlen"}), ckv = t.column({"kv_seqlen"});
  const int cv = t.column({"v_head_dim", "head_dim_vo"});  // optional: a value head dim of its own (MLA)
  const int cw = t.column({"window", "sliding_window_size"});  // optional: a causal sliding window
  const int ct = t.column({"data_type"}), cdet = t.column({"deterministic_bwd"}), cok = t.column({"success"});
  const calib::TimeColumn tc = calib::time_column(t);
  // cudnn-frontend's older layout times both passes in one row (profile_pass `both`).
  const int cft = t.column({"fwd_time_ms"}), cbt = t.column({"bwd_time_ms"});
  const bool split = tc.col < 0 && cft >= 0 && cbt >= 0;
  if (ck < 0 || cp < 0 || (cc < 0 && cm < 0) || cb < 0 || ch < 0 || cd < 0 || cs < 0 || (tc.col < 0 && !split)) {
    t.error(t.header_line, 1,
            "the header must name kernel, pass, causal, batch, heads, head_dim, seq and time_us (or time_ms / "
            "time_s), or be cudnn-frontend's sdpa benchmark CSV");
    t.throw_if_any();
  }
  auto cell = [](const calib::CsvTable::Row& row, int col) -> const std::string* {
    return col >= 0 && static_cast<std::size_t>(col) < row.cells.size() ? &row.cells[static_cast<std::size_t>(col)]
                                                                        : nullptr;
  };
  int failed = 0, other_type = 0, deterministic = 0, unequal = 0;
  std::vector<AttentionRow> rows;
  for (const calib::CsvTable::Row& row : t.rows) {
    // cudnn-frontend's rows this model does not time: failed runs, other data types than the
    // one asked for, the deterministic backward (another algorithm), queries and keys of
    // different lengths.
    if (const std::string* ok = cell(row, cok); ok && (*ok == "False" || *ok == "false" || *ok == "0")) {
      ++failed;
      continue;
    }
    if (const std::string* dt = cell(row, ct); bf16 ? dt && *dt != "bfloat16" && *dt != "bf16" : !dt || *dt != dtype) {
      ++other_type;
      continue;
    }
    if (const std::string* det = cell(row, cdet); det && (*det == "True" || *det == "true" || *det == "1")) {
      ++deterministic;
      continue;
    }
    AttentionRow r;
    r.line = row.line;
    const std::size_t before = t.diags.size();
    const bool numbers = t.number(row, cb, "batch", r.batch) & t.number(row, ch, "heads", r.heads) &
                         t.number(row, cd, "head_dim", r.head_dim) & t.number(row, cs, "seq", r.seq);
    if (!numbers) continue;
    if (ckv >= 0) {
      double kv = 0;
      if (!t.number(row, ckv, "kv_seqlen", kv)) continue;
      if (kv != r.seq) {
        ++unequal;
        continue;
      }
    }
    r.v_head_dim = r.head_dim;
    if (cv >= 0 && !t.number(row, cv, "v_head_dim", r.v_head_dim)) continue;
    if (!(r.v_head_dim >= 1 && r.v_head_dim <= 1e8 && r.v_head_dim == std::floor(r.v_head_dim))) {
      t.error(row.line, t.at(row, cv), "`v_head_dim` must be a whole number in 1 .. 1e8");
    }
    if (const std::string* w = cell(row, cw); w && !w->empty()) {
      if (!t.number(row, cw, "window", r.window)) continue;
      if (!(r.window >= 1 && r.window <= 1e8 && r.window == std::floor(r.window))) {
        t.error(row.line, t.at(row, cw), "`window` must be a whole number of keys in 1 .. 1e8 (empty: none)");
      }
    }
    if (static_cast<std::size_t>(std::max({ck, cp, cc, cm})) >= row.cells.size()) {
      t.error(row.line, static_cast<int>(row.text.size()) + 1, "missing columns");
      continue;
    }
    r.kernel = row.cells[static_cast<std::size_t>(ck)] + (bf16 ? "" : "_" + dtype);
    r.fp8 = !bf16;
    const std::string& pass = row.cells[static_cast<std::size_t>(cp)];
    if (r.kernel.empty()) t.error(row.line, t.at(row, ck), "empty kernel name");
    // The passes this row times: (backward, time column, its factor to seconds).
    std::vector<std::tuple<bool, int, double>> passes;
    const bool fwd = pass == "forward" || pass == "fwd", bwd = pass == "backward" || pass == "bwd";
    if (split && (fwd || pass == "both")) passes.emplace_back(false, cft, 1e-3);
    if (split && (bwd || pass == "both")) passes.emplace_back(true, cbt, 1e-3);
    if (!split && (fwd || bwd)) passes.emplace_back(bwd, tc.col, tc.to_seconds);
    if (passes.empty()) {
      t.error(row.line, t.at(row, cp),
              "pass `" + pass + "` is not forward or backward" + (split ? " (or both)" : ""));
    }
    if (cc >= 0) {
      const std::string& causal = row.cells[static_cast<std::size_t>(cc)];
      if (causal == "1" || causal == "true" || causal == "True") {
        r.causal = true;
      } else if (causal == "0" || causal == "false" || causal == "False") {
        r.causal = false;
      } else {
        t.error(row.line, t.at(row, cc), "causal `" + causal + "` is not 0 / 1 / true / false");
      }
    } else {
      // cudnn-frontend's masks: top_left / bottom_right causal (alike when the lengths are
      // equal), no_mask not.
      const std::string& mask = row.cells[static_cast<std::size_t>(cm)];
      if (mask == "top_left" || mask == "bottom_right" || mask == "causal") {
        r.causal = true;
      } else if (mask == "no_mask" || mask == "none") {
        r.causal = false;
      } else {
        t.error(row.line, t.at(row, cm), "attn_mask `" + mask + "` is not top_left, bottom_right or no_mask");
      }
    }
    if (r.window > 0 && !r.causal) t.error(row.line, t.at(row, cw), "a sliding window is modelled on causal rows only");
    for (auto [col, v, what] : {std::tuple{cb, r.batch, "batch"}, std::tuple{ch, r.heads, "heads"},
                                std::tuple{cd, r.head_dim, "head_dim"}, std::tuple{cs, r.seq, "seq"}}) {
      if (!(v >= 1 && v <= 1e8 && v == std::floor(v))) {
        t.error(row.line, t.at(row, col), std::string("`") + what + "` must be a whole number in 1 .. 1e8");
      }
    }
    if (t.diags.size() > before) continue;
    // FlashAttention's convention (Dao 2023; Shah et al. 2024): 4 b h s^2 d forward (2 b h s^2
    // (d + dv) with a value head dim of its own), half of it under a causal mask, 2.5 x that
    // backward (its five GEMMs to the forward's two). A causal window of w < s keys keeps
    // s w - w^2 / 2 of the pairs (cudnn-frontend counts them so).
    const double pairs = r.window > 0 && r.window < r.seq ? r.seq * r.window - r.window * r.window / 2
                         : r.causal                       ? r.seq * r.seq / 2
                                                          : r.seq * r.seq;
    for (const auto& [backward, col, to_seconds] : passes) {
      double time = 0;
      if (!t.number(row, col, "time", time)) continue;
      AttentionRow p = r;
      p.backward = backward;
      p.time_s = time * to_seconds;
      if (!time_in_range(t, row, col, p.time_s)) continue;
      p.flops = 2 * p.batch * p.heads * pairs * (p.head_dim + p.v_head_dim) * (p.backward ? 2.5 : 1.0);
      p.efficiency = p.flops / (p.time_s * peak);
      if (!(p.efficiency <= 1.0)) {
        t.error(row.line, t.at(row, col),
                "achieved " + util::fmt("%.4g", p.flops / p.time_s / 1e12) + " TFLOP/s exceeds the " +
                    (bf16 ? "BF16" : "FP8") + " peak " + util::fmt("%.4g", peak / 1e12) +
                    " TFLOP/s: wrong hardware or columns?");
        continue;
      }
      rows.push_back(p);
    }
  }
  if (t.diags.empty() && rows.empty()) t.error(0, 0, "no attention rows found");
  t.throw_if_any();
  if (notes) {
    auto note = [&](int n, const char* why) {
      if (n > 0) notes->push_back(path + ": " + std::to_string(n) + (n == 1 ? " row" : " rows") + " left out (" + why + ")");
    };
    note(failed, "the benchmark's run failed");
    note(other_type, bf16 ? "not BF16 (--dtype fp8 / mxfp8 reads those)" : ("not " + dtype).c_str());
    note(deterministic, "the deterministic backward, another algorithm");
    note(unequal, "queries and keys of different lengths");
  }
  return rows;
}

std::vector<AttentionFit> calibrate_attention(const std::vector<AttentionRow>& rows, int units, double block) {
  // Rows by kernel and pass, in the order they first appear.
  std::vector<std::pair<std::string, bool>> order;
  std::map<std::pair<std::string, bool>, std::vector<const AttentionRow*>> groups;
  for (const AttentionRow& r : rows) {
    const auto key = std::make_pair(r.kernel, r.backward);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&r);
  }
  std::vector<AttentionFit> fits;
  for (const auto& key : order) {
    const auto& g = groups[key];
    AttentionFit best;
    best.kernel = key.first;
    best.backward = key.second;
    best.block = block;
    best.fp8 = g.front()->fp8;
    best.rows = static_cast<int>(g.size());
    // The reference head dim: 128 where the rows have it, else the first row's; a row's head
    // dim is the mean of its query-key and value dims (the op graph's). With one head dim
    // only there is no head-dim term to fit.
    auto mean_dim = [](const AttentionRow* r) { return (r->head_dim + r->v_head_dim) / 2; };
    std::vector<double> dims;
    for (const AttentionRow* r : g) {
      if (std::find(dims.begin(), dims.end(), mean_dim(r)) == dims.end()) dims.push_back(mean_dim(r));
    }
    best.head_dim = std::find(dims.begin(), dims.end(), 128.0) != dims.end() ? 128.0 : mean_dim(g.front());
    best.head_dims = static_cast<int>(dims.size());
    // e, the per-tile overhead and the small-head term from the rows at or below the
    // reference; the wide-head exponent after, from the wider rows with those held.
    std::vector<const AttentionRow*> base, wide;
    for (const AttentionRow* r : g) (mean_dim(r) > best.head_dim ? wide : base).push_back(r);
    best.wide_rows = static_cast<int>(wide.size());
    bool smaller = false;
    for (const AttentionRow* r : base) smaller = smaller || mean_dim(r) < best.head_dim;
    const double softmax_max = smaller ? 1024 : 0;
    auto spec_for = [&](double e, double overhead, double softmax, double wide_head) {
      AttentionKernelSpec spec;
      spec.forward = spec.backward = e;
      spec.block = block;
      spec.forward_overhead = spec.backward_overhead = overhead;
      spec.head_dim = best.head_dim;
      spec.forward_softmax = spec.backward_softmax = softmax;
      spec.forward_wide_head = spec.backward_wide_head = wide_head;
      return spec;
    };
    auto model = [&](const AttentionKernelSpec& spec, const AttentionRow& r) {
      return cost::attention_efficiency(spec, r.backward, units, r.batch * r.heads, r.seq, r.seq, r.causal, r.window,
                                        mean_dim(&r));
    };
    double best_cost = -1;
    std::vector<double> shape(base.size());
    for (double softmax = 0; softmax <= softmax_max; softmax += 4) {
      for (double overhead = 0; overhead <= 4096; overhead += 4) {
        // The model's efficiency with e = 1 (its shape factor), then e in closed form for the
        // least squares of the relative errors: e = sum(x) / sum(x^2), x = shape / measured.
        const AttentionKernelSpec spec = spec_for(1.0, overhead, softmax, 0);
        double sx = 0, sxx = 0;
        for (std::size_t i = 0; i < base.size(); ++i) {
          shape[i] = model(spec, *base[i]);
          const double x = shape[i] / base[i]->efficiency;
          sx += x;
          sxx += x * x;
        }
        const double e = std::clamp(sx / sxx, 1e-6, 1.0);
        double cost = 0;
        for (std::size_t i = 0; i < base.size(); ++i) {
          const double rel = e * shape[i] / base[i]->efficiency - 1;
          cost += rel * rel;
        }
        if (best_cost < 0 || cost < best_cost - 1e-15) {
          best_cost = cost;
          best.efficiency = e;
          best.overhead = overhead;
          best.softmax = softmax;
        }
      }
    }
    if (!wide.empty()) {
      double wide_cost = -1;
      for (int step = 0; step <= 200; ++step) {
        const AttentionKernelSpec spec = spec_for(best.efficiency, best.overhead, best.softmax, 0.01 * step);
        double cost = 0;
        for (const AttentionRow* r : wide) {
          const double rel = model(spec, *r) / r->efficiency - 1;
          cost += rel * rel;
        }
        if (wide_cost < 0 || cost < wide_cost - 1e-15) {
          wide_cost = cost;
          best.wide_head = 0.01 * step;
        }
      }
    }
    const AttentionKernelSpec spec = spec_for(best.efficiency, best.overhead, best.softmax, best.wide_head);
    double sum = 0;
    for (const AttentionRow* r : g) {
      const double err = std::fabs(model(spec, *r) - r->efficiency) / r->efficiency;
      sum += err;
      best.worst_error = std::max(best.worst_error, err);
    }
    best.mean_error = sum / static_cast<double>(g.size());
    fits.push_back(best);
  }
  return fits;
}

std::vector<MemoryKernelRow> read_memory_rows(const std::string& path) {
  calib::CsvTable t = calib::read_csv_table(path, "a memory-bound kernel benchmark");
  const int co = t.column({"op"}), cc = t.column({"class"}), cb = t.column({"bytes"});
  const calib::TimeColumn tc = calib::time_column(t);
  if (co < 0 || cc < 0 || cb < 0 || tc.col < 0) {
    t.error(t.header_line, 1, "the header must name op, class, bytes and time_us (or time_ms / time_s)");
    t.throw_if_any();
  }
  std::vector<MemoryKernelRow> rows;
  for (const calib::CsvTable::Row& row : t.rows) {
    MemoryKernelRow r;
    r.line = row.line;
    double time = 0;
    if (!(t.number(row, cb, "bytes", r.bytes) & t.number(row, tc.col, "time", time))) continue;
    if (static_cast<std::size_t>(std::max(co, cc)) >= row.cells.size()) {
      t.error(row.line, static_cast<int>(row.text.size()) + 1, "missing columns");
      continue;
    }
    r.op = row.cells[static_cast<std::size_t>(co)];
    const std::string& cls = row.cells[static_cast<std::size_t>(cc)];
    bool known = false;
    for (MemClass c : kMemClasses) {
      if (cls == mem_class_name(c)) {
        r.mem_class = c;
        known = true;
      }
    }
    if (!known) {
      t.error(row.line, t.at(row, cc),
              "class `" + cls + "` is not one of elementwise, norm, cast, permute, softmax, reduction, copy");
      continue;
    }
    if (!(r.bytes >= 1 && r.bytes <= 1e15)) {
      t.error(row.line, t.at(row, cb), "`bytes` must be in 1 .. 1e15");
      continue;
    }
    r.time_s = time * tc.to_seconds;
    if (!time_in_range(t, row, tc.col, r.time_s)) continue;
    rows.push_back(r);
  }
  if (t.diags.empty() && rows.empty()) t.error(0, 0, "no kernel rows found");
  t.throw_if_any();
  return rows;
}

MemoryCalibration calibrate_memory(const std::vector<MemoryKernelRow>& rows, double memory_bw_bytes_per_s) {
  MemoryCalibration out;
  std::vector<double> fixed;
  for (MemClass c : kMemClasses) {
    std::vector<cost::TimedTransfer> pts;
    for (const MemoryKernelRow& r : rows) {
      if (r.mem_class == c) pts.push_back({r.bytes, r.time_s});
    }
    bool sizes = false;
    for (const auto& p : pts) sizes = sizes || p.bytes != pts.front().bytes;
    if (pts.empty()) continue;
    if (!sizes) {
      out.warnings.push_back(std::string(mem_class_name(c)) + ": one size only, not fitted (the script times several)");
      continue;
    }
    const cost::AlphaBeta ab = cost::fit_alpha_beta(pts);
    MemoryClassFit f;
    f.mem_class = c;
    f.rows = static_cast<int>(pts.size());
    f.fixed_s = ab.alpha_s;
    f.r2 = ab.r2;
    f.worst_error = ab.worst_relative;
    f.fraction = ab.beta_bytes_per_s / memory_bw_bytes_per_s;
    // A line that misses a row by more than a quarter, or a bandwidth below 1% of HBM, is no
    // measurement of the class's bandwidth (sizes too small to leave the launch cost, noise).
    if (!(f.fraction >= 0.01) || !std::isfinite(f.fraction) || !std::isfinite(f.fixed_s) || f.worst_error > 0.25) {
      out.warnings.push_back(std::string(mem_class_name(c)) + ": t = fixed + bytes / bandwidth does not fit its rows (" +
                             util::fmt("%.3g", f.fraction) + " of HBM, worst row " +
                             util::fmt("%.0f", 100 * f.worst_error) + "%: sizes too small?); not fitted");
      continue;
    }
    if (f.fraction > 1.0) {
      out.warnings.push_back(std::string(mem_class_name(c)) + ": " + util::fmt("%.3g", f.fraction) +
                             " of the datasheet bandwidth (sizes that fit in cache?); written as 1");
      f.fraction = 1.0;
    }
    fixed.push_back(f.fixed_s);
    out.classes.push_back(f);
  }
  out.kernel_overhead_s = std::max(0.0, median(fixed));
  return out;
}

LaunchCalibration read_launch(const std::string& path) {
  calib::CsvTable t = calib::read_csv_table(path, "a launch benchmark");
  const int cq = t.column({"quantity"});
  const calib::TimeColumn tc = calib::time_column(t);
  if (cq < 0 || tc.col < 0) {
    t.error(t.header_line, 1, "the header must name quantity and time_us (or time_ms / time_s)");
    t.throw_if_any();
  }
  std::vector<double> issue, sync;
  for (const calib::CsvTable::Row& row : t.rows) {
    double time = 0;
    if (static_cast<std::size_t>(cq) >= row.cells.size()) {
      t.error(row.line, static_cast<int>(row.text.size()) + 1, "missing `quantity`");
      continue;
    }
    if (!t.number(row, tc.col, "time", time)) continue;
    const std::string& q = row.cells[static_cast<std::size_t>(cq)];
    if (q != "host_issue" && q != "host_sync") {
      t.error(row.line, t.at(row, cq), "quantity `" + q + "` is not host_issue or host_sync");
      continue;
    }
    if (!time_in_range(t, row, tc.col, time * tc.to_seconds)) continue;
    (q == "host_issue" ? issue : sync).push_back(time * tc.to_seconds);
  }
  if (t.diags.empty() && issue.empty() && sync.empty()) t.error(0, 0, "no host_issue or host_sync rows found");
  t.throw_if_any();
  LaunchCalibration l;
  l.host_issue_s = median(issue);
  l.host_sync_s = median(sync);
  l.rows = static_cast<int>(issue.size() + sync.size());
  return l;
}

}  // namespace paraplan
