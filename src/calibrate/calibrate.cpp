// Parsers and fits for benchmark output (nccl-tests, size/bandwidth CSV, GEMM sweeps, DeepEP).

#include "paraplan/calibrate.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>

#include "cost/fit.hpp"
#include "cost/gemm_efficiency.hpp"
#include "paraplan/errors.hpp"
#include "paraplan/units.hpp"
#include "util/files.hpp"
#include "util/strings.hpp"

namespace paraplan {
namespace {

struct Lines {
  std::string file;
  std::vector<std::string> lines;
  std::vector<Diagnostic> diags;
  void error(int line, int col, std::string msg) { diags.push_back({file, line, col, std::move(msg)}); }
  void throw_if_any() {
    if (!diags.empty()) throw ConfigError(diags);
  }
};

Lines read_lines(const std::string& path) {
  Lines l;
  l.file = path;
  util::FileText file = util::read_regular_file(path, util::kMaxDataBytes, "a measurement file");
  if (!file.ok()) {
    l.error(0, 0, file.message(path));
    l.throw_if_any();
  }
  std::istringstream in(std::move(file.text));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    l.lines.push_back(line);
  }
  return l;
}

std::vector<std::string> split_ws(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

std::vector<std::string> split_csv(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      out.emplace_back(util::trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.emplace_back(util::trim(cur));
  return out;
}

bool number(std::string_view t, double& v) {
  t = util::trim(t);
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  return ec == std::errc() && p == t.data() + t.size() && std::isfinite(v);
}

// A measured quantity outside the range input files accept (units::accepted_range): why,
// or "" when it is inside. Absurd figures (a time of 1e-300 s) would calibrate a hardware
// file no one can load, or one whose numbers divide to infinity.
std::string out_of_range(double value, units::Quantity kind) {
  const units::Range r = units::accepted_range(kind);
  if (value >= r.lo && value <= r.hi) return {};
  const bool low = value < r.lo;
  return std::string(low ? "below " : "above ") + units::format(low ? r.lo : r.hi, kind) + ", the " +
         (low ? "smallest " : "largest ") + std::string(units::name(kind)) + " accepted";
}

// The smallest efficiency a calibration writes (the loader's smallest fraction).
constexpr double kMinEfficiency = 1e-6;

int column_of(const std::string& line, const std::string& token) {
  std::size_t pos = line.find(token);
  return pos == std::string::npos ? 1 : static_cast<int>(pos) + 1;
}

bool op_from_text(const std::string& text, Collective& op) {
  static const std::pair<const char*, Collective> names[] = {
      {"all_reduce", Collective::AllReduce},      {"allreduce", Collective::AllReduce},
      {"all_gather", Collective::AllGather},      {"allgather", Collective::AllGather},
      {"reduce_scatter", Collective::ReduceScatter}, {"reducescatter", Collective::ReduceScatter},
      {"alltoall", Collective::AllToAll},         {"all_to_all", Collective::AllToAll},
      {"sendrecv", Collective::SendRecv},         {"send_recv", Collective::SendRecv},
      {"broadcast", Collective::Broadcast}};
  for (const auto& [name, c] : names) {
    if (text.find(name) != std::string::npos) {
      op = c;
      return true;
    }
  }
  return false;
}

}  // namespace

CollectiveLog parse_collective_log(const std::string& path, const std::string& op_name) {
  Lines in = read_lines(path);
  CollectiveLog log;
  log.file = path;
  bool op_known = !op_name.empty() && op_from_text(op_name, log.op);
  if (!op_name.empty() && !op_known) in.error(0, 0, "unknown collective `" + op_name + "`");
  int time_col = -1, busbw_col = -1, min_tokens = 0;
  bool csv = false;
  for (std::size_t i = 0; i < in.lines.size(); ++i) {
    const std::string& line = in.lines[i];
    const int ln = static_cast<int>(i) + 1;
    std::string_view t = util::trim(line);
    if (t.empty()) continue;
    if (t.front() == '#') {
      if (!op_known && line.find("Collective test starting") != std::string::npos) op_known = op_from_text(line, log.op);
      if (line.find("Rank") != std::string::npos && line.find("Group") != std::string::npos) ++log.ranks;
      auto toks = split_ws(std::string(t.substr(1)));
      if (time_col < 0 && std::find(toks.begin(), toks.end(), "size") != toks.end() &&
          std::find(toks.begin(), toks.end(), "busbw") != toks.end()) {
        for (std::size_t c = 0; c < toks.size(); ++c) {
          if (toks[c] == "time" && time_col < 0) time_col = static_cast<int>(c);
          if (toks[c] == "busbw" && busbw_col < 0) busbw_col = static_cast<int>(c);
        }
        min_tokens = std::max(time_col, busbw_col) + 1;
      }
      continue;
    }
    if (time_col < 0 && (t.find(',') != std::string_view::npos || csv)) {
      // Two-column CSV: size (bytes or with a unit), bandwidth in GB/s; a header is skipped.
      csv = true;
      auto f = split_csv(std::string(t));
      double bytes = 0, gbps = 0;
      if (f.size() < 2) {
        in.error(ln, 1, "expected `size, GB/s`");
        continue;
      }
      if (!number(f[0], bytes)) {
        units::Parsed p = units::parse(f[0], units::Quantity::Size);
        if (!p.ok()) {
          if (log.samples.empty() && !number(f[1], gbps)) continue;  // a header line
          in.error(ln, 1, "size: " + p.error);
          continue;
        }
        bytes = p.value;
      }
      if (!number(f[1], gbps) || gbps <= 0 || bytes <= 0) {
        in.error(ln, column_of(line, f[1]), "expected a positive bandwidth in GB/s, got `" + f[1] + "`");
        continue;
      }
      if (auto why = out_of_range(bytes, units::Quantity::Size); !why.empty()) {
        in.error(ln, 1, "size `" + f[0] + "` is " + why);
        continue;
      }
      if (auto why = out_of_range(gbps * 1e9, units::Quantity::Rate); !why.empty()) {
        in.error(ln, column_of(line, f[1]), "bandwidth `" + f[1] + "` GB/s is " + why);
        continue;
      }
      if (auto why = out_of_range(bytes / (gbps * 1e9), units::Quantity::Time); !why.empty()) {
        in.error(ln, column_of(line, f[1]), "the time it gives, size / bandwidth, is " + why);
        continue;
      }
      log.samples.push_back({bytes, bytes / (gbps * 1e9), gbps * 1e9});
      continue;
    }
    // nccl-tests data row.
    if (time_col < 0) {
      in.error(ln, 1, "a data row before the nccl-tests column header (`#  size  count  type ... time  algbw  busbw`)");
      break;
    }
    auto toks = split_ws(line);
    if (static_cast<int>(toks.size()) < min_tokens) {
      in.error(ln, 1, "expected at least " + std::to_string(min_tokens) + " columns, got " + std::to_string(toks.size()));
      continue;
    }
    double bytes = 0, us = 0, busbw = 0;
    if (!number(toks[0], bytes) || bytes < 0) {
      in.error(ln, column_of(line, toks[0]), "size `" + toks[0] + "` is not a number of bytes");
      continue;
    }
    if (!number(toks[static_cast<std::size_t>(time_col)], us) || !number(toks[static_cast<std::size_t>(busbw_col)], busbw)) {
      const std::string& bad = !number(toks[static_cast<std::size_t>(time_col)], us) ? toks[static_cast<std::size_t>(time_col)]
                                                                                      : toks[static_cast<std::size_t>(busbw_col)];
      in.error(ln, column_of(line, bad), "`" + bad + "` is not a number");
      continue;
    }
    if (bytes <= 0 || us <= 0) continue;
    const std::string& time_text = toks[static_cast<std::size_t>(time_col)];
    const std::string& busbw_text = toks[static_cast<std::size_t>(busbw_col)];
    if (auto why = out_of_range(bytes, units::Quantity::Size); !why.empty()) {
      in.error(ln, column_of(line, toks[0]), "size `" + toks[0] + "` is " + why);
      continue;
    }
    if (auto why = out_of_range(us * 1e-6, units::Quantity::Time); !why.empty()) {
      in.error(ln, column_of(line, time_text), "time `" + time_text + "` us is " + why);
      continue;
    }
    // nccl-tests prints 0.00 GB/s for the smallest sizes; anything else must be a real rate.
    if (busbw < 0 || (busbw > 0 && !out_of_range(busbw * 1e9, units::Quantity::Rate).empty())) {
      in.error(ln, column_of(line, busbw_text),
               "busbw `" + busbw_text + "` GB/s is " +
                   (busbw < 0 ? std::string("negative") : out_of_range(busbw * 1e9, units::Quantity::Rate)));
      continue;
    }
    log.samples.push_back({bytes, us * 1e-6, busbw * 1e9});
  }
  if (!op_known && !csv) op_known = op_from_text(path, log.op);
  if (!op_known && csv) {
    log.op = Collective::SendRecv;  // the seeds' table
    op_known = op_from_text(path, log.op) || true;
  }
  if (!op_known) in.error(0, 0, "cannot tell which collective this log measures: name it (--op all_reduce)");
  if (in.diags.empty() && log.samples.size() < 2) in.error(0, 0, "fewer than two measurements found");
  if (in.diags.empty() && std::none_of(log.samples.begin(), log.samples.end(),
                                       [](const CollectiveSample& x) { return x.busbw > 0; })) {
    in.error(0, 0, "no row has a positive busbw: nothing to calibrate a bandwidth from");
  }
  in.throw_if_any();
  std::sort(log.samples.begin(), log.samples.end(),
            [](const CollectiveSample& a, const CollectiveSample& b) { return a.bytes < b.bytes; });
  return log;
}

CollectiveCalibration calibrate_collective(const CollectiveLog& log) {
  CollectiveCalibration c;
  c.op = log.op;
  std::vector<cost::TimedTransfer> rows;
  for (const CollectiveSample& s : log.samples) {
    rows.push_back({s.bytes, s.time_s});
    c.peak_busbw = std::max(c.peak_busbw, s.busbw);
  }
  cost::AlphaBeta f = cost::fit_alpha_beta(rows);
  c.alpha_s = f.alpha_s;
  c.beta_bytes_per_s = f.beta_bytes_per_s;
  c.r2 = f.r2;
  c.worst_relative = f.worst_relative;
  if (!(c.peak_busbw > 0) || !std::isfinite(c.peak_busbw) || !std::isfinite(c.alpha_s) ||
      !std::isfinite(c.beta_bytes_per_s) || !std::isfinite(c.r2) || !std::isfinite(c.worst_relative)) {
    // parse_collective_log's bounds rule this out; a log built in code may not have them.
    throw ConfigError({Diagnostic{log.file, 0, 0,
                                  "the measurements give no finite fit (a zero busbw, or times out of range)"}});
  }
  // busbw / peak at up to 12 sizes, evenly spaced in log2 over the range where the link
  // moves at least 1% of its peak (below it latency rules, and the tier's latency models it).
  std::vector<CollectiveSample> useful;
  for (const CollectiveSample& s : log.samples) {
    if (s.busbw >= 0.01 * c.peak_busbw) useful.push_back(s);
  }
  if (useful.empty()) useful = log.samples;
  if (useful.size() <= 12) {
    for (const CollectiveSample& s : useful) {
      c.size_efficiency.push_back({s.bytes, std::clamp(s.busbw / c.peak_busbw, 1e-4, 1.0)});
    }
    return c;
  }
  const double lo = std::log2(useful.front().bytes), hi = std::log2(useful.back().bytes);
  const int n = std::min<int>(12, static_cast<int>(useful.size()));
  double last = -1;
  for (int i = 0; i < n; ++i) {
    const double target = n == 1 ? lo : lo + (hi - lo) * i / (n - 1);
    const CollectiveSample* best = &useful.front();
    for (const CollectiveSample& s : useful) {
      if (std::fabs(std::log2(s.bytes) - target) < std::fabs(std::log2(best->bytes) - target)) best = &s;
    }
    if (best->bytes <= last || c.peak_busbw <= 0) continue;
    last = best->bytes;
    c.size_efficiency.push_back({best->bytes, std::clamp(best->busbw / c.peak_busbw, 1e-4, 1.0)});
  }
  return c;
}

std::vector<GemmRow> read_gemm_rows(const std::string& path, double peak) {
  Lines in = read_lines(path);
  int cm = -1, cn = -1, ck = -1, ct = -1, cf = -1, ce = -1, cp = -1, cg = -1;
  double time_scale = 1;
  std::vector<GemmRow> rows;
  for (std::size_t i = 0; i < in.lines.size(); ++i) {
    const int ln = static_cast<int>(i) + 1;
    std::string_view t = util::trim(in.lines[i]);
    if (t.empty() || t.front() == '#') continue;
    auto f = split_csv(std::string(t));
    if (cm < 0) {
      for (std::size_t c = 0; c < f.size(); ++c) {
        std::string h = f[c];
        std::transform(h.begin(), h.end(), h.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        const int col = static_cast<int>(c);
        if (h == "m") cm = col;
        if (h == "n") cn = col;
        if (h == "k") ck = col;
        if (h == "tflops") cf = col;
        if (h == "efficiency") ce = col;
        if (h == "pass" || h == "layout") cp = col;
        if (h == "groups") cg = col;
        if (h == "time_us" || h == "time_ms" || h == "time_s") {
          ct = col;
          time_scale = h == "time_us" ? 1e-6 : h == "time_ms" ? 1e-3 : 1.0;
        }
      }
      if (cm < 0 || cn < 0 || ck < 0 || (ct < 0 && cf < 0 && ce < 0)) {
        in.error(ln, 1, "the header must name m, n, k and time_us / time_ms / time_s, tflops or efficiency");
        break;
      }
      continue;
    }
    double m = 0, n = 0, k = 0, v = 0, groups = 1;
    const int need = std::max({cm, cn, ck, ct, cf, ce, cp, cg}) + 1;
    if (static_cast<int>(f.size()) < need) {
      in.error(ln, 1, "expected " + std::to_string(need) + " columns, got " + std::to_string(f.size()));
      continue;
    }
    const int vc = ce >= 0 ? ce : cf >= 0 ? cf : ct;
    if (!number(f[static_cast<std::size_t>(cm)], m) || !number(f[static_cast<std::size_t>(cn)], n) ||
        !number(f[static_cast<std::size_t>(ck)], k) || !number(f[static_cast<std::size_t>(vc)], v) || m < 1 || n < 1 ||
        k < 1 || v <= 0 ||
        (cg >= 0 && (!number(f[static_cast<std::size_t>(cg)], groups) || groups < 1 || groups > 1e6))) {
      in.error(ln, 1, "expected positive numbers for m, n, k, groups (at most 1e6) and the measurement");
      continue;
    }
    GemmRow r{m, n, k, static_cast<int>(groups), "forward", 0};
    if (cp >= 0) {
      // cuBLAS layouts of a Linear layer: TN forward, NN input gradient, NT weight gradient.
      std::string pass = f[static_cast<std::size_t>(cp)];
      if (pass == "TN" || pass == "forward" || pass == "fwd") {
        r.pass = "forward";
      } else if (pass == "NN" || pass == "dgrad") {
        r.pass = "dgrad";
      } else if (pass == "NT" || pass == "wgrad") {
        r.pass = "wgrad";
      } else {
        in.error(ln, 1, "pass `" + pass + "` is not forward / dgrad / wgrad (or TN / NN / NT)");
        continue;
      }
    }
    if (ct >= 0 && ce < 0 && cf < 0) {
      if (auto why = out_of_range(v * time_scale, units::Quantity::Time); !why.empty()) {
        in.error(ln, column_of(in.lines[i], f[static_cast<std::size_t>(ct)]),
                 "time `" + f[static_cast<std::size_t>(ct)] + "` is " + why);
        continue;
      }
    }
    const double flops = 2 * m * n * k * r.groups;
    const double achieved = ce >= 0 ? v * peak : cf >= 0 ? v * 1e12 : flops / (v * time_scale);
    r.efficiency = achieved / peak;
    if (!(r.efficiency >= kMinEfficiency)) {
      // 1e-320 TFLOPS would be written as a denormal efficiency no time can be divided by.
      in.error(ln, 1, "achieved " + util::fmt("%.4g", achieved / 1e12) + " TFLOPS is below " +
                          util::fmt("%g", kMinEfficiency) + " of the peak " + util::fmt("%.4g", peak / 1e12) +
                          " TFLOPS: wrong units or columns?");
      continue;
    }
    if (r.efficiency > 1.0) {
      in.error(ln, 1, "achieved " + util::fmt("%.4g", achieved / 1e12) + " TFLOPS exceeds the peak " +
                          util::fmt("%.4g", peak / 1e12) + " TFLOPS: wrong dtype or peak?");
      continue;
    }
    rows.push_back(r);
  }
  if (in.diags.empty() && rows.empty()) in.error(0, 0, "no GEMM rows found");
  in.throw_if_any();
  return rows;
}

GemmCalibration calibrate_gemm(const std::string& path, double peak) {
  GemmCalibration g;
  const std::vector<GemmRow> rows = read_gemm_rows(path, peak);
  for (const GemmRow& r : rows) {
    if (r.pass == "forward") g.table.points.push_back(GemmPoint{r.m, r.n, r.k, r.efficiency});
  }
  if (g.table.points.empty()) {
    throw ConfigError({Diagnostic{path, 0, 0, "no forward GEMM rows (a table holds forward shapes)"}});
  }
  g.table.default_efficiency = g.table.points.front().efficiency;
  g.rows = static_cast<int>(g.table.points.size());
  cost::GemmEfficiency surface(g.table);
  std::vector<double> errors;
  for (const GemmPoint& p : g.table.points) errors.push_back(std::fabs(surface.at(p.m, p.n, p.k) - p.efficiency) / p.efficiency);
  std::sort(errors.begin(), errors.end());
  g.median_error = errors[errors.size() / 2];
  g.worst_error = errors.back();
  return g;
}

DeepEpCalibration parse_deepep_log(const std::string& path) {
  Lines in = read_lines(path);
  DeepEpCalibration d;
  // The number before "GB/s (RDMA)" / "GB/s (NVL)" on a line, 0 when absent.
  auto before = [](const std::string& line, const std::string& tag) {
    std::size_t at = line.find(tag);
    if (at == std::string::npos) return 0.0;
    std::size_t end = line.rfind("GB/s", at);
    if (end == std::string::npos) return 0.0;
    std::size_t start = end;
    while (start > 0 && line[start - 1] == ' ') --start;
    std::size_t stop = start;
    while (start > 0 && (std::isdigit(static_cast<unsigned char>(line[start - 1])) || line[start - 1] == '.')) --start;
    double v = 0;
    return number(std::string_view(line).substr(start, stop - start), v) ? v : 0.0;
  };
  // The number after a label's colon and before "GB/s" (HybridEP's kernel lines), 0 when absent.
  auto after = [](const std::string& line, std::size_t colon) {
    std::size_t end = line.find("GB/s", colon);
    if (end == std::string::npos) return 0.0;
    std::string_view v = std::string_view(line).substr(colon + 1, end - colon - 1);
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
    double x = 0;
    return number(v, x) ? x : 0.0;
  };
  auto in_range = [&](double gbps, std::size_t i) {
    if (auto why = out_of_range(gbps * 1e9, units::Quantity::Rate); !why.empty()) {
      in.error(static_cast<int>(i) + 1, 1, util::fmt("%g", gbps) + " GB/s is " + why);
      return false;
    }
    return true;
  };
  // HybridEP (tests/test_hybrid_ep.py): the kernel benchmark's non-fused lines, "dispatch
  // kernel (BF16)(NVL): X GB/s, avg_t=..." and "combine kernel(NVL): ...", RDMA likewise; the
  // ranks from the "=== Kernel Benchmark (BF16, N ranks) ===" header above them.
  bool in_kernel = false;
  for (std::size_t i = 0; i < in.lines.size(); ++i) {
    const std::string& line = in.lines[i];
    if (line.find("=== ") != std::string::npos) {
      in_kernel = line.find("Kernel Benchmark") != std::string::npos;
      if (in_kernel) {
        const std::size_t comma = line.find(", "), r = line.find(" ranks");
        double n = 0;
        if (comma != std::string::npos && r != std::string::npos && r > comma &&
            number(std::string_view(line).substr(comma + 2, r - comma - 2), n) && n >= 1) {
          d.ranks = static_cast<int>(n);
        } else {
          in.error(static_cast<int>(i) + 1, 1, "a `Kernel Benchmark` header without its `N ranks`");
        }
      }
      continue;
    }
    if (!in_kernel) continue;
    std::size_t lead = line.find_first_not_of(' ');
    if (lead == std::string::npos) continue;
    const std::string_view body = std::string_view(line).substr(lead);
    const bool dispatch = body.starts_with("dispatch kernel"), combine = body.starts_with("combine kernel");
    if (!dispatch && !combine) continue;  // the fused permute kernels and the legend
    const bool nvl = body.find("(NVL):") != std::string_view::npos, rdma = body.find("(RDMA):") != std::string_view::npos;
    if (!nvl && !rdma) continue;
    const double gbps = after(line, line.find("):") + 1);
    if (gbps <= 0) {
      in.error(static_cast<int>(i) + 1, 1, "a HybridEP kernel line without its `GB/s` figure");
      continue;
    }
    if (!in_range(gbps, i)) continue;
    double& slot = dispatch ? (nvl ? d.dispatch_nvl : d.dispatch_rdma) : (nvl ? d.combine_nvl : d.combine_rdma);
    if (slot == 0) slot = gbps * 1e9;  // the first (BF16 before FP8 when a log holds both)
    d.hybrid = true;
  }
  if (d.hybrid) {
    if (d.ranks == 0) in.error(0, 0, "HybridEP kernel lines without a `Kernel Benchmark (..., N ranks)` header");
    in.throw_if_any();
    return d;
  }
  bool any = false;
  for (std::size_t i = 0; i < in.lines.size(); ++i) {
    const std::string& line = in.lines[i];
    const bool dispatch = line.find("Best dispatch") != std::string::npos;
    const bool combine = line.find("Best combine") != std::string::npos;
    if (!dispatch && !combine) continue;
    const double r = before(line, "GB/s (RDMA)"), v = before(line, "GB/s (NVL)");
    if (r <= 0 && v <= 0) {
      in.error(static_cast<int>(i) + 1, 1, "a `Best` line without `GB/s (RDMA)` or `GB/s (NVL)`");
      continue;
    }
    bool bad = false;
    for (const double gbps : {r, v}) {
      if (gbps > 0 && !in_range(gbps, i)) bad = true;
    }
    if (bad) continue;
    any = true;
    double& rr = dispatch ? d.dispatch_rdma : d.combine_rdma;
    double& vv = dispatch ? d.dispatch_nvl : d.combine_nvl;
    rr = std::max(rr, r * 1e9);
    vv = std::max(vv, v * 1e9);
  }
  if (in.diags.empty() && !any) {
    in.error(0, 0, "no `Best dispatch` / `Best combine` lines (DeepEP) or `Kernel Benchmark` lines (HybridEP) found");
  }
  in.throw_if_any();
  return d;
}

namespace {

// The rate a `deepep` entry writes for one link: HybridEP's harmonic mean of dispatch and
// combine, DeepEP's lower one.
double deepep_rate(const DeepEpCalibration& d, bool nvl) {
  const double a = nvl ? d.dispatch_nvl : d.dispatch_rdma, b = nvl ? d.combine_nvl : d.combine_rdma;
  if (a <= 0 || b <= 0) return std::max(a, b);
  // HybridEP: one rate moves dispatch and combine (equal bytes each way), so the two take
  // the time of their harmonic mean; DeepEP: the lower one, as its README's bottleneck.
  return d.hybrid ? 2.0 / (1.0 / a + 1.0 / b) : std::min(a, b);
}

}  // namespace

DeepEpCalibration parse_deepep_logs(const std::vector<std::string>& paths) {
  std::vector<DeepEpCalibration> runs;
  for (const std::string& p : paths) runs.push_back(parse_deepep_log(p));
  if (runs.size() == 1) return runs.front();
  std::vector<Diagnostic> diags;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].hybrid) {
      diags.push_back({paths[i], 0, 0, "several logs make one figure only as HybridEP runs at different rank counts; this is DeepEP's (calibrate it alone)"});
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (runs[i].hybrid && runs[j].hybrid && runs[i].ranks == runs[j].ranks) {
        diags.push_back({paths[i], 0, 0, "a second HybridEP run at " + std::to_string(runs[i].ranks) + " ranks (" + paths[j] + " has them)"});
      }
    }
  }
  if (!diags.empty()) throw ConfigError(diags);
  std::sort(runs.begin(), runs.end(), [](const DeepEpCalibration& a, const DeepEpCalibration& b) { return a.ranks < b.ranks; });
  DeepEpCalibration out = runs.front();
  for (const bool nvl : {true, false}) {
    const double base = deepep_rate(out, nvl);
    if (base <= 0) continue;
    std::vector<SizePoint>& curve = nvl ? out.nvl_ranks : out.rdma_ranks;
    for (const DeepEpCalibration& r : runs) {
      const double rate = deepep_rate(r, nvl);
      if (rate > 0) curve.push_back(SizePoint{static_cast<double>(r.ranks), std::min(1.0, rate / base)});
    }
  }
  return out;
}

}  // namespace paraplan

namespace paraplan {

std::string hardware_overlay_yaml(const HardwareOverlay& o) {
  std::ostringstream y;
  auto size = [](double b) { return units::format_size_binary(b); };
  y << "# Written by `paraplan calibrate` on " << o.date << ": extends " << o.base
    << " and overrides only the calibrated\n# fields below (tiers merge by name). Each number names its source.\n";
  y << "extends: " << o.base << "\nname: " << o.name << "\n";
  y << "description: " << o.base << " calibrated from measurements (" << o.date << ")\n";
  y << "sources:\n";
  for (const auto& [c, src] : o.collectives) y << "  - \"" << src << " (" << o.date << ")\"\n";
  if (!o.gemm_table.empty() || o.gemm_model) y << "  - \"" << o.gemm_source << " (" << o.date << ")\"\n";
  if (!o.deepep_source.empty()) y << "  - \"" << o.deepep_source << " (" << o.date << ")\"\n";
  if (o.sustained) y << "  - \"" << o.sustained_command << " (" << o.date << ")\"\n";
  for (const std::string* src : {&o.attention_source, &o.memory_source, &o.launch_source}) {
    if (!src->empty()) y << "  - \"" << *src << " (" << o.date << ")\"\n";
  }
  // The kernel micro-benchmarks' fields (a command writes one kind of overlay at a time).
  if (!o.attention.empty() || o.memory || o.launch) {
    y << "device:\n";
    if (!o.attention.empty()) {
      y << "  # fitted by `paraplan calibrate attention` to " << o.attention_source
        << " (efficiency = e x the tiles' work / their span, per pass)\n  attention:\n";
      std::vector<std::string> done;
      for (const AttentionFit& f : o.attention) {
        if (std::find(done.begin(), done.end(), f.kernel) != done.end()) continue;
        done.push_back(f.kernel);
        y << "    - name: " << f.kernel << "\n      block: " << util::fmt("%.4g", f.block) << "\n";
        if (f.fp8) y << "      precision: fp8  # fractions of the FP8 peak; FP8 inputs, quantized before it\n";
        if (f.head_dims > 1) y << "      head_dim: " << util::fmt("%.4g", f.head_dim) << "  # the reference\n";
        for (const AttentionFit& g : o.attention) {
          if (g.kernel != f.kernel) continue;
          const char* pass = g.backward ? "backward" : "forward";
          y << "      # " << pass << ": " << g.rows << " rows, mean |error| " << util::fmt("%.1f", 100 * g.mean_error)
            << "%, worst " << util::fmt("%.1f", 100 * g.worst_error) << "%\n";
          y << "      " << pass << ": " << util::fmt("%.4g", g.efficiency) << "\n";
          y << "      " << pass << "_overhead: " << util::fmt("%.4g", g.overhead) << "\n";
          if (g.head_dims > 1) {
            y << "      # " << pass << ": " << g.head_dims << " head dims; the non-matmul work per score is worth "
              << util::fmt("%.4g", g.softmax) << " of them\n";
            y << "      " << pass << "_softmax: " << util::fmt("%.4g", g.softmax) << "\n";
          }
          if (g.wide_rows > 0) {
            y << "      # " << pass << ": " << g.wide_rows << " rows of wider heads: (reference / d)^"
              << util::fmt("%.3g", g.wide_head) << "\n";
            y << "      " << pass << "_wide_head: " << util::fmt("%.3g", g.wide_head) << "\n";
          }
        }
      }
    }
    if (o.memory) {
      y << "  # fitted by `paraplan calibrate memory` to " << o.memory_source
        << ": t = fixed + bytes / (fraction x HBM) per class\n";
      if (!o.memory_fit.classes.empty()) y << "  memory_bound:\n";
      for (const MemoryClassFit& c : o.memory_fit.classes) {
        y << "    # " << c.rows << " rows, fixed " << units::format_time(c.fixed_s) << ", R^2 " << util::fmt("%.4f", c.r2)
          << ", worst row " << util::fmt("%.1f", 100 * c.worst_error) << "%\n";
        y << "    " << mem_class_name(c.mem_class) << ": " << util::fmt("%.4g", c.fraction) << "\n";
      }
      if (o.memory_fit.kernel_overhead_s > 0) {
        y << "  # the median fixed time of the classes: launch and tail of one kernel\n";
        y << "  kernel_overhead: " << units::format_time(o.memory_fit.kernel_overhead_s) << "\n";
      }
    }
    if (o.launch) {
      y << "  # measured by bench/gpu/launch.py (" << o.launch_source << "), medians\n";
      if (o.launch_fit.host_issue_s > 0) y << "  host_issue: " << units::format_time(o.launch_fit.host_issue_s) << "\n";
      if (o.launch_fit.host_sync_s > 0) y << "  host_sync: " << units::format_time(o.launch_fit.host_sync_s) << "\n";
    }
  }
  if (o.gemm_model) {
    const GemmModelCalibration& f = o.kernel_fit;
    const GemmKernelSpec& g = f.kernel;
    static const char* dtypes[] = {"bf16", "fp16", "fp8", "fp32", "tf32"};
    y << "device:\n";
    if (o.write_units) y << "  # the sweep's GPU\n  compute_units: " << f.units << "\n";
    y << "  gemm_kernel:\n";
    y << "    # fitted by `" << o.gemm_command << "`\n";
    y << "    # to " << f.rows << " GEMMs on " << f.units << " compute units: mean |error| "
      << util::fmt("%.1f", 100 * f.mean_error) << "%, median " << util::fmt("%.1f", 100 * f.median_error)
      << "%, worst " << util::fmt("%.1f", 100 * f.worst_error) << "%, bias " << util::fmt("%+.1f", 100 * f.bias)
      << "%,\n    # with a fixed " << units::format_time(f.fixed_s) << " per kernel (device.kernel_overhead covers it)\n";
    y << "    peak_fraction: {" << dtypes[static_cast<int>(f.dtype)] << ": "
      << util::fmt("%.4g", g.peak_fraction[static_cast<int>(f.dtype)]) << "}\n";
    // --fraction-only keeps the base's tiles, k overhead and pass factors: nothing more to write.
    if (!f.fraction_only) {
      y << "    tiles: [";
      for (std::size_t i = 0; i < g.tiles.size(); ++i) {
        y << (i ? ", " : "") << "[" << g.tiles[i].m << ", " << g.tiles[i].n << ", " << util::fmt("%.4g", g.tiles[i].efficiency) << "]";
      }
      y << "]\n";
      y << "    k_overhead: " << util::fmt("%.4g", g.k_overhead) << "\n    max_split_k: " << g.max_split_k << "\n";
      if (f.fitted_dgrad) y << "    dgrad: " << util::fmt("%.4g", g.dgrad) << "\n";
      if (f.fitted_wgrad) y << "    wgrad: " << util::fmt("%.4g", g.wgrad) << "\n";
      y << "    grouped: " << (g.grouped_loop ? "loop" : "persistent") << "\n";
    }
  }
  if (o.sustained) {
    const SustainedCalibration& f = o.sustained_fit;
    y << "calibration:\n";
    y << "  # measured by `" << o.sustained_command << "`:\n";
    y << "  # " << f.rows << " GEMMs timed back to back (at the power limit) and after idle; total time "
      << util::fmt("%.4g", f.factor) << " x,\n  # per row median " << util::fmt("%.4g", f.median) << " x (" << util::fmt("%.3g", f.low)
      << " .. " << util::fmt("%.3g", f.high) << ")\n";
    y << (o.sustained_fp8 ? "  fp8_gemm: " : "  sustained: ") << util::fmt("%.4g", f.factor) << "\n";
  }
  if (!o.gemm_table.empty()) {
    y << "device:\n  gemm_efficiency:\n    " << o.gemm_table << ":\n";
    y << "      # " << o.gemm_source << ": " << o.gemm.rows << " rows, achieved / peak; the surface reproduces them\n"
      << "      # with median error " << util::fmt("%.2f", 100 * o.gemm.median_error) << "%, worst "
      << util::fmt("%.2f", 100 * o.gemm.worst_error) << "%\n";
    y << "      default: " << util::fmt("%.4g", o.gemm.table.default_efficiency) << "\n      points:\n";
    for (const GemmPoint& p : o.gemm.table.points) {
      y << "        - [" << util::fmt("%.0f", p.m) << ", " << util::fmt("%.0f", p.n) << ", " << util::fmt("%.0f", p.k)
        << ", " << util::fmt("%.4g", p.efficiency) << "]\n";
    }
  }
  const bool has_deepep = !o.deepep_source.empty();
  if (!o.collectives.empty() || has_deepep) {
    y << "network:\n  tiers:\n";
    static const char* names[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv", "broadcast"};
    if (!o.collectives.empty()) {
      y << "    - name: " << o.tier << "\n      collectives:\n";
      for (const auto& [c, src] : o.collectives) {
        y << "        # " << src << ": peak busbw; least squares t = " << units::format_time(c.alpha_s) << " + bytes / "
          << units::format_rate(c.beta_bytes_per_s) << " (R^2 " << util::fmt("%.4f", c.r2) << ", worst row "
          << util::fmt("%.1f", 100 * c.worst_relative) << "%)\n";
        y << "        " << names[static_cast<int>(c.op)] << ": {bandwidth: " << util::fmt("%.4g", c.peak_busbw / 1e9)
          << " GB/s}\n";
      }
      if (o.size_curve_from_first && !o.collectives.empty()) {
        const auto& [c, src] = o.collectives.front();
        y << "      # busbw / peak busbw by message size, " << src << "\n      size_efficiency:\n";
        for (const SizePoint& p : c.size_efficiency) {
          y << "        - [" << size(p.bytes) << ", " << util::fmt("%.4g", p.efficiency) << "]\n";
        }
      }
    }
    if (has_deepep) {
      const DeepEpCalibration& d = o.deepep;
      auto entry = [&](const std::string& tier, bool nvl, const char* what) {
        const double dispatch = nvl ? d.dispatch_nvl : d.dispatch_rdma, combine = nvl ? d.combine_nvl : d.combine_rdma;
        if (dispatch <= 0 && combine <= 0) return;
        const double bw = deepep_rate(d, nvl);
        y << "    - name: " << tier << "\n";
        if (!d.hybrid) {
          y << "      # " << o.deepep_source << ": DeepEP " << what << " bottleneck bandwidth, dispatch "
            << util::fmt("%.4g", dispatch / 1e9) << " / combine " << util::fmt("%.4g", combine / 1e9)
            << " GB/s (the lower one); SM-driven, so engine compute\n";
          y << "      deepep: {bandwidth: " << util::fmt("%.4g", bw / 1e9) << " GB/s, engine: compute}\n";
          return;
        }
        const std::vector<SizePoint>& curve = nvl ? d.nvl_ranks : d.rdma_ranks;
        y << "      # " << o.deepep_source << ": HybridEP " << what << " kernel-only algorithm bandwidth at "
          << d.ranks << " ranks, dispatch " << util::fmt("%.4g", dispatch / 1e9) << " / combine "
          << util::fmt("%.4g", combine / 1e9) << " GB/s (their harmonic mean: one rate moves both)";
        if (!curve.empty()) y << ", and by rank count as the runs at " << curve.size() << " counts measured it";
        y << "; the token copies its Torch API adds are the model's permute ops; its SMs count in the device's comm_units\n";
        // NVLink: received bytes, own copies included, over the time (algbw); RDMA: the bytes
        // sent across nodes, which the model's inter-node stage moves at the figure as it is.
        y << "      deepep: {bandwidth: " << util::fmt("%.4g", bw / 1e9) << " GB/s" << (nvl ? ", convention: algbw" : "");
        if (!curve.empty()) {
          y << ", ranks_efficiency: [";
          for (std::size_t i = 0; i < curve.size(); ++i) {
            y << (i ? ", " : "") << "[" << util::fmt("%.0f", curve[i].bytes) << ", " << util::fmt("%.4g", curve[i].efficiency) << "]";
          }
          y << "]";
        }
        y << "}\n";
      };
      entry(o.cluster_tier, false, "RDMA");
      entry(o.node_tier, true, "NVLink");
    }
  }
  return y.str();
}

}  // namespace paraplan
