// The HTML report of a search: one self-contained file (inline SVG, no scripts, no network)
// with the plots a person would rather look at than read.

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "paraplan/report.hpp"
#include "paraplan/units.hpp"
#include "paraplan/version.hpp"
#include "report/writers.hpp"
#include "util/strings.hpp"

namespace paraplan {
namespace {

using util::fmt;

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// A categorical palette readable on white (Tableau 10).
const char* colour(std::size_t i) {
  static const char* p[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                            "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return p[i % 10];
}

// "Nice" axis ticks for [0, hi].
std::vector<double> ticks(double hi, int want = 5) {
  if (!(hi > 0) || !std::isfinite(hi)) return {0, 1};
  const double raw = hi / want, mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = m * mag;
    if (raw <= step) break;
  }
  std::vector<double> t;
  for (double v = 0; v <= hi * 1.0001 + step; v += step) {
    t.push_back(v);
    if (v >= hi) break;
  }
  return t;
}

std::string tick_label(double v) {
  if (v == 0) return "0";
  if (std::fabs(v) >= 1e4 || std::fabs(v) < 1e-2) return fmt("%.3g", v);
  return fmt("%.4g", v);
}

// A chart: an SVG with a plot area, axes and a legend; x and y map data to pixels.
struct Chart {
  double width = 820, height = 340, left = 70, right = 250, top = 30, bottom = 50;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  bool log_x = false;
  std::ostringstream body;
  std::vector<std::pair<std::string, std::string>> legend;  // colour, label

  double px(double x) const {
    const double a = log_x ? std::log2(x) : x, lo = log_x ? std::log2(x0) : x0, hi = log_x ? std::log2(x1) : x1;
    return left + (hi > lo ? (a - lo) / (hi - lo) : 0.5) * (width - left - right);
  }
  double py(double y) const { return height - bottom - (y1 > y0 ? (y - y0) / (y1 - y0) : 0.5) * (height - top - bottom); }

  void axes(const std::string& title, const std::string& xlabel, const std::string& ylabel,
            const std::vector<double>& xt, const std::vector<std::string>& xtl, const std::vector<double>& yt) {
    std::ostringstream a;
    a << "<text x='" << left << "' y='18' class='t'>" << esc(title) << "</text>\n";
    a << "<line x1='" << left << "' y1='" << py(y0) << "' x2='" << width - right << "' y2='" << py(y0)
      << "' class='ax'/>\n<line x1='" << left << "' y1='" << top << "' x2='" << left << "' y2='" << py(y0)
      << "' class='ax'/>\n";
    for (double v : yt) {
      a << "<line x1='" << left << "' y1='" << py(v) << "' x2='" << width - right << "' y2='" << py(v)
        << "' class='grid'/><text x='" << left - 6 << "' y='" << py(v) + 4 << "' class='yl'>" << tick_label(v)
        << "</text>\n";
    }
    for (std::size_t i = 0; i < xt.size(); ++i) {
      a << "<text x='" << px(xt[i]) << "' y='" << py(y0) + 16 << "' class='xl'>" << esc(xtl[i]) << "</text>\n";
    }
    a << "<text x='" << (left + width - right) / 2 << "' y='" << height - 8 << "' class='xl'>" << esc(xlabel)
      << "</text>\n<text transform='translate(14," << (top + height - bottom) / 2 << ") rotate(-90)' class='xl'>"
      << esc(ylabel) << "</text>\n";
    axes_ = a.str();
  }
  std::string svg() const {
    std::ostringstream s;
    s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height << "' viewBox='0 0 "
      << width << " " << height << "'>\n" << axes_ << body.str();
    double y = top + 4;
    for (const auto& [c, label] : legend) {
      s << "<rect x='" << width - right + 12 << "' y='" << y << "' width='12' height='12' fill='" << c
        << "'/><text x='" << width - right + 30 << "' y='" << y + 10 << "' class='lg'>" << esc(label) << "</text>\n";
      y += 18;
    }
    s << "</svg>\n";
    return s.str();
  }

 private:
  std::string axes_;
};

// 1. TGS against node count, one line per layout (the best of each at each node count).
std::string tgs_by_nodes(const SearchResult& r) {
  std::map<std::string, std::map<int, double>> best;  // layout -> nodes -> TGS
  std::map<std::string, double> top;
  const std::vector<Estimate>& pool = r.all.empty() ? r.best : r.all;
  for (const Estimate& e : pool) {
    if (!e.feasible) continue;
    const std::string l = report::layout_label(e.strategy);
    double& v = best[l][e.strategy.nodes];
    v = std::max(v, e.tokens_per_device_per_s);
    top[l] = std::max(top[l], e.tokens_per_device_per_s);
  }
  std::vector<std::pair<double, std::string>> order;
  for (const auto& [l, t] : top) order.emplace_back(-t, l);
  std::sort(order.begin(), order.end());
  if (order.size() > 8) order.resize(8);
  Chart c;
  std::set<int> nodes;
  double hi = 0;
  for (const auto& [neg, l] : order) {
    for (const auto& [n, t] : best[l]) {
      nodes.insert(n);
      hi = std::max(hi, t);
    }
  }
  if (nodes.empty()) return "<p>No feasible strategy to plot.</p>\n";
  c.log_x = true;
  c.x0 = *nodes.begin() / (nodes.size() > 1 ? 1.2 : 2.0);
  c.x1 = *nodes.rbegin() * (nodes.size() > 1 ? 1.2 : 2.0);
  const std::vector<double> yt = ticks(hi * 1.05);
  c.y1 = yt.back();
  std::vector<double> xt;
  std::vector<std::string> xtl;
  for (int n : nodes) {
    xt.push_back(n);
    xtl.push_back(std::to_string(n));
  }
  c.axes("Best TGS per layout and node count (the 8 best layouts)", "nodes", "tokens / s per device", xt, xtl, yt);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const std::string& l = order[i].second;
    std::string pts;
    for (const auto& [n, t] : best[l]) {
      pts += fmt("%.1f", c.px(n)) + "," + fmt("%.1f", c.py(t)) + " ";
      c.body << "<circle cx='" << c.px(n) << "' cy='" << c.py(t) << "' r='3.5' fill='" << colour(i) << "'><title>"
             << esc(l) << ", " << n << " nodes: TGS " << fmt("%.0f", t) << "</title></circle>\n";
    }
    c.body << "<polyline points='" << pts << "' fill='none' stroke='" << colour(i) << "' stroke-width='2'/>\n";
    c.legend.emplace_back(colour(i), l);
  }
  return c.svg();
}

// 2. Memory per pipeline stage of the best plan, stacked by kind, against the capacity.
std::string memory_by_stage(const MemoryEstimate& m) {
  if (m.stages.empty()) return "<p>No memory breakdown.</p>\n";
  Chart c;
  const double gb = 1e9;
  double hi = m.capacity / gb;
  for (const StageMemory& s : m.stages) hi = std::max(hi, s.total / gb);
  const std::vector<double> yt = ticks(hi * 1.05);
  c.y1 = yt.back();
  c.x0 = -0.5;
  c.x1 = static_cast<double>(m.stages.size()) - 0.5;
  std::vector<double> xt;
  std::vector<std::string> xtl;
  const std::size_t every = std::max<std::size_t>(1, m.stages.size() / 16);
  for (std::size_t i = 0; i < m.stages.size(); i += every) {
    xt.push_back(static_cast<double>(i));
    xtl.push_back(std::to_string(i));
  }
  c.axes("Memory per device of the best plan, by pipeline stage", "pipeline stage", "GB", xt, xtl, yt);
  const char* names[] = {"weights", "gradients", "optimizer", "activations", "buffers", "reserve"};
  const double bar = std::max(2.0, 0.7 * (c.px(1) - c.px(0)));
  for (std::size_t i = 0; i < m.stages.size(); ++i) {
    const StageMemory& s = m.stages[i];
    const double parts[] = {s.weights, s.gradients, s.optimizer_states, s.activations, s.buffers, s.reserve};
    double base = 0;
    for (int k = 0; k < 6; ++k) {
      const double v = parts[k] / gb;
      c.body << "<rect x='" << c.px(static_cast<double>(i)) - bar / 2 << "' y='" << c.py(base + v) << "' width='" << bar
             << "' height='" << std::max(0.0, c.py(base) - c.py(base + v)) << "' fill='" << colour(static_cast<std::size_t>(k))
             << "'><title>stage " << i << " " << names[k] << ": " << fmt("%.2f", v) << " GB</title></rect>\n";
      base += v;
    }
  }
  c.body << "<line x1='" << c.left << "' y1='" << c.py(m.capacity / gb) << "' x2='" << c.width - c.right << "' y2='"
         << c.py(m.capacity / gb) << "' stroke='#c00' stroke-width='2' stroke-dasharray='6,4'><title>capacity "
         << fmt("%.1f", m.capacity / gb) << " GB</title></line>\n";
  for (int k = 0; k < 6; ++k) c.legend.emplace_back(colour(static_cast<std::size_t>(k)), names[k]);
  c.legend.emplace_back("#c00", "capacity " + fmt("%.1f", m.capacity / gb) + " GB");
  return c.svg();
}

// 3. Where the step time of the best plans goes.
std::string time_breakdown(const SearchResult& r) {
  if (r.best.empty()) return "<p>No feasible strategy to plot.</p>\n";
  const std::size_t n = std::min<std::size_t>(10, r.best.size());
  Chart c;
  c.height = 60 + 26.0 * static_cast<double>(n) + 50;
  c.left = 230;
  double hi = 0;
  for (std::size_t i = 0; i < n; ++i) hi = std::max(hi, r.best[i].step_time_s);
  const std::vector<double> xt = ticks(hi * 1.02);
  c.x1 = xt.back();
  c.y0 = 0;
  c.y1 = static_cast<double>(n);
  std::vector<std::string> xtl;
  for (double v : xt) xtl.push_back(tick_label(v));
  c.axes("Step time of the best plans, by component", "seconds per step", "", xt, xtl, {});
  const char* names[] = {"compute", "TP/CP comm", "EP comm", "PP comm", "DP comm", "bubble", "optimizer", "queueing", "offload"};
  for (std::size_t i = 0; i < n; ++i) {
    const Estimate& e = r.best[i];
    const TimeBreakdown& t = e.time_s;
    const double parts[] = {t.compute, t.tp_comm, t.ep_comm, t.pp_comm, t.dp_comm, t.pp_bubble, t.optimizer, t.queueing, t.offload};
    const double y = c.py(static_cast<double>(n - i)) + 3, h = 20;
    c.body << "<text x='" << c.left - 6 << "' y='" << y + 14 << "' class='yl'>#" << i + 1 << " " << e.strategy.nodes
           << "n " << esc(report::layout_label(e.strategy)) << "</text>\n";
    double x = 0;
    for (int k = 0; k < 9; ++k) {
      if (parts[k] <= 0) continue;
      c.body << "<rect x='" << c.px(x) << "' y='" << y << "' width='" << c.px(x + parts[k]) - c.px(x) << "' height='" << h
             << "' fill='" << colour(static_cast<std::size_t>(k)) << "'><title>" << names[k] << ": "
             << units::format_time(parts[k]) << "</title></rect>\n";
      x += parts[k];
    }
  }
  for (int k = 0; k < 9; ++k) c.legend.emplace_back(colour(static_cast<std::size_t>(k)), names[k]);
  return c.svg();
}

// 4. Every feasible plan: TGS against memory, the Pareto front drawn over them.
std::string pareto(const SearchResult& r) {
  const std::vector<Estimate>& pool = r.all.empty() ? r.best : r.all;
  double hx = 0, hy = 0;
  std::size_t shown = 0;
  for (const Estimate& e : pool) {
    if (!e.feasible) continue;
    hx = std::max(hx, e.memory_bytes.total / 1e9);
    hy = std::max(hy, e.tokens_per_device_per_s);
  }
  for (const Estimate& e : r.pareto) {
    hx = std::max(hx, e.memory_bytes.total / 1e9);
    hy = std::max(hy, e.tokens_per_device_per_s);
  }
  if (hy <= 0) return "<p>No feasible strategy to plot.</p>\n";
  Chart c;
  const std::vector<double> xt = ticks(hx * 1.05), yt = ticks(hy * 1.05);
  c.x1 = xt.back();
  c.y1 = yt.back();
  std::vector<std::string> xtl;
  for (double v : xt) xtl.push_back(tick_label(v));
  c.axes("Feasible plans: throughput against memory (red: not dominated in TGS, memory and nodes)", "memory per device, GB (worst stage)",
         "tokens / s per device", xt, xtl, yt);
  // At most 4000 background points: a regular sample keeps the file small.
  std::size_t feasible = 0;
  for (const Estimate& e : pool) feasible += e.feasible ? 1 : 0;
  const std::size_t step = std::max<std::size_t>(1, feasible / 4000);
  std::size_t k = 0;
  for (const Estimate& e : pool) {
    if (!e.feasible || (k++ % step) != 0) continue;
    c.body << "<circle cx='" << fmt("%.1f", c.px(e.memory_bytes.total / 1e9)) << "' cy='"
           << fmt("%.1f", c.py(e.tokens_per_device_per_s)) << "' r='2' fill='#9aa' fill-opacity='0.5'/>\n";
    ++shown;
  }
  std::vector<const Estimate*> front;
  for (const Estimate& e : r.pareto) front.push_back(&e);
  std::sort(front.begin(), front.end(), [](const Estimate* a, const Estimate* b) {
    return a->memory_bytes.total < b->memory_bytes.total;
  });
  for (const Estimate* e : front) {
    c.body << "<circle cx='" << c.px(e->memory_bytes.total / 1e9) << "' cy='" << c.py(e->tokens_per_device_per_s)
           << "' r='4.5' fill='#d62728'><title>" << e->strategy.nodes << " nodes " << esc(report::layout_label(e->strategy))
           << ": TGS " << fmt("%.0f", e->tokens_per_device_per_s) << ", " << fmt("%.1f", e->memory_bytes.total / 1e9)
           << " GB</title></circle>\n";
  }
  c.legend.emplace_back("#9aa", std::to_string(shown) + " feasible plans");
  c.legend.emplace_back("#d62728", std::to_string(front.size()) + " on the Pareto front");
  return c.svg();
}

// 5. The simulated step of the best plan: one row per pipeline stage.
std::string timeline(const Timeline& tl) {
  if (!tl.ok || tl.events.empty()) return "<p>No simulated timeline.</p>\n";
  Chart c;
  c.height = 60 + 18.0 * tl.stages + 50;
  double hi = 0;
  for (const TimelineEvent& e : tl.events) hi = std::max(hi, e.end_s);
  const std::vector<double> xt = ticks(hi);
  c.x1 = xt.back();
  c.y1 = tl.stages;
  std::vector<std::string> xtl;
  for (double v : xt) xtl.push_back(tick_label(v));
  c.axes("Simulated step of the best plan (" + std::to_string(tl.stages) + " stages, " +
             std::to_string(tl.micro_batches) + " micro-batches)",
         "seconds", "stage", xt, xtl, {});
  std::map<std::string, std::size_t> kinds = {{"F", 0}, {"B", 1}, {"W", 2}, {"send", 3}, {"sync", 4}, {"optimizer", 5}};
  for (const TimelineEvent& e : tl.events) {
    const auto it = kinds.find(e.kind);
    const std::size_t k = it == kinds.end() ? 6 : it->second;
    const double y = c.py(tl.stages - e.stage) + (e.stream == "compute" ? 1 : 11);
    const double h = e.stream == "compute" ? 10 : 5;
    c.body << "<rect x='" << fmt("%.2f", c.px(e.start_s)) << "' y='" << y << "' width='"
           << fmt("%.2f", std::max(0.5, c.px(e.end_s) - c.px(e.start_s))) << "' height='" << h << "' fill='" << colour(k)
           << "'/>\n";
  }
  for (int s = 0; s < tl.stages; s += std::max(1, tl.stages / 16)) {
    c.body << "<text x='" << c.left - 6 << "' y='" << c.py(tl.stages - s) + 11 << "' class='yl'>" << s << "</text>\n";
  }
  for (const auto& [index, label] : std::map<std::size_t, std::string>{
           {0, "forward"}, {1, "backward (input)"}, {2, "backward (weight)"}, {3, "PP send"}, {4, "DP sync"}, {5, "optimizer"}}) {
    c.legend.emplace_back(colour(index), label);
  }
  return c.svg();
}

}  // namespace

std::string rank_html(const SpacePlan& space, const SearchResult& r, const MemoryEstimate& best_memory) {
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>\n<title>paraplan: " << esc(space.model.name)
    << " on " << esc(space.hardware.name) << "</title>\n<style>\n"
    << "body{font-family:sans-serif;margin:24px;color:#222;max-width:1000px}"
    << "h1{font-size:20px}h2{font-size:16px;margin-top:28px}"
    << "svg text{font-family:sans-serif;font-size:11px}.t{font-size:13px;font-weight:bold}"
    << ".xl{text-anchor:middle}.yl{text-anchor:end}.lg{font-size:11px}"
    << ".ax{stroke:#333}.grid{stroke:#e4e4e4}table{border-collapse:collapse;font-size:12px}"
    << "td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}\n</style></head><body>\n";
  h << "<h1>" << esc(space.model.name) << " on " << esc(space.hardware.name) << "</h1>\n<p>" << esc(space.space.description)
    << "</p>\n<p>" << esc(rank_summary(r)) << "</p>\n";
  if (!r.best.empty()) {
    const Estimate& b = r.best.front();
    h << "<p><b>Best:</b> " << b.strategy.nodes << " nodes, " << esc(report::layout_label(b.strategy)) << ": TGS "
      << fmt("%.0f", b.tokens_per_device_per_s) << " tokens/s per device, step " << units::format_time(b.step_time_s)
      << ", MFU " << fmt("%.1f", 100 * b.mfu) << "%, memory " << fmt("%.1f", b.memory_bytes.total / 1e9) << " of "
      << fmt("%.1f", b.memory_bytes.capacity / 1e9) << " GB.</p>\n";
    h << "<table><tr><th>#</th><th>nodes</th><th style='text-align:left'>layout</th><th>mb</th><th>step</th>"
      << "<th>TGS</th><th>MFU</th><th>memory GB</th></tr>\n";
    for (std::size_t i = 0; i < std::min<std::size_t>(10, r.best.size()); ++i) {
      const Estimate& e = r.best[i];
      h << "<tr><td>" << i + 1 << "</td><td>" << e.strategy.nodes << "</td><td style='text-align:left'>"
        << esc(report::layout_label(e.strategy)) << "</td><td>" << e.strategy.training.micro_batch << "</td><td>"
        << units::format_time(e.step_time_s) << "</td><td>" << fmt("%.0f", e.tokens_per_device_per_s) << "</td><td>"
        << fmt("%.1f%%", 100 * e.mfu) << "</td><td>" << fmt("%.1f", e.memory_bytes.total / 1e9) << "</td></tr>\n";
    }
    h << "</table>\n";
  }
  h << "<h2>Throughput against cluster size</h2>\n" << tgs_by_nodes(r);
  h << "<h2>Memory of the best plan</h2>\n" << memory_by_stage(best_memory);
  h << "<h2>Where the time goes</h2>\n" << time_breakdown(r);
  h << "<h2>Throughput against memory</h2>\n" << pareto(r);
  h << "<h2>Pipeline timeline of the best plan</h2>\n" << timeline(r.best_timeline);
  h << "<p style='color:#777;font-size:11px'>paraplan " << esc(version()) << "</p>\n</body></html>\n";
  return h.str();
}

}  // namespace paraplan
