// Calibration from the user's own measured step: a per-op CSV or a Chrome trace, mapped to
// the op graph, fitted by least squares to one time multiplier per op class and pass and per
// tier (docs/calibration.md, "Calibrate from your profile").

#include <Eigen/Dense>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>

#include "calibrate/trace_json.hpp"
#include "cost/comm.hpp"
#include "config/builtin.hpp"
#include "config/reader.hpp"
#include "config/tree.hpp"
#include "paraplan/calibrate.hpp"
#include "paraplan/errors.hpp"
#include "paraplan/units.hpp"
#include "util/files.hpp"
#include "util/strings.hpp"

namespace paraplan {
namespace {

[[noreturn]] void fail(const std::string& file, int line, int col, std::string msg) {
  throw ConfigError({Diagnostic{file, line, col, std::move(msg)}});
}

std::string slurp(const std::string& path, std::uintmax_t max_bytes, const char* what) {
  util::FileText file = util::read_regular_file(path, max_bytes, what);
  if (!file.ok()) fail(path, 0, 0, file.message(path));
  return std::move(file.text);
}

bool phase_ok(const std::string& want, const std::string& have) { return want == "any" || have == "any" || want == have; }

bool known_phase(const std::string& p) { return p == "forward" || p == "backward" || p == "weight_grad" || p == "any"; }

// The layer pass a profile row's time belongs to: weight-gradient rows are backward time.
std::string row_pass(const std::string& phase) { return phase == "weight_grad" ? "backward" : phase; }

Profile read_csv_profile(const std::string& path, const std::string& text) {
  Profile p;
  p.file = path;
  std::istringstream in(text);
  std::string line;
  int no = 0;
  int c_name = -1, c_phase = -1, c_time = -1;
  double scale = 1e-3;
  std::vector<Diagnostic> diags;
  auto error = [&](int col, std::string msg) { diags.push_back({path, no, col, std::move(msg)}); };
  while (std::getline(in, line)) {
    ++no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string t(util::trim(line));
    if (t.empty() || t[0] == '#') continue;
    std::vector<std::string> cells;
    std::vector<int> cols;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= line.size(); ++i) {
      if (i == line.size() || line[i] == ',') {
        cells.emplace_back(util::trim(line.substr(start, i - start)));
        cols.push_back(static_cast<int>(start) + 1);
        start = i + 1;
      }
    }
    if (c_name < 0) {
      for (std::size_t i = 0; i < cells.size(); ++i) {
        const std::string& h = cells[i];
        if (h == "op" || h == "name" || h == "kernel") c_name = static_cast<int>(i);
        if (h == "phase" || h == "pass") c_phase = static_cast<int>(i);
        if (h == "time_ms") c_time = static_cast<int>(i), scale = 1e-3;
        if (h == "time_us") c_time = static_cast<int>(i), scale = 1e-6;
        if (h == "time_s") c_time = static_cast<int>(i), scale = 1.0;
      }
      if (c_name < 0 || c_time < 0) {
        fail(path, no, 1, "the header must name an op column (op) and a time column (time_ms, time_us or time_s)");
      }
      continue;
    }
    const auto need = static_cast<std::size_t>(std::max({c_name, c_phase, c_time}));
    if (cells.size() <= need) {
      error(1, "expected " + std::to_string(need + 1) + " columns");
      continue;
    }
    ProfileRow r;
    r.line = no;
    r.name = cells[static_cast<std::size_t>(c_name)];
    if (c_phase >= 0) r.phase = cells[static_cast<std::size_t>(c_phase)];
    if (!known_phase(r.phase)) {
      error(cols[static_cast<std::size_t>(c_phase)], "phase `" + r.phase + "`: expected forward, backward, weight_grad or any");
      continue;
    }
    const std::string& v = cells[static_cast<std::size_t>(c_time)];
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(x)) {
      error(cols[static_cast<std::size_t>(c_time)], "time `" + v + "` is not a number");
      continue;
    }
    if (x < 0) {
      error(cols[static_cast<std::size_t>(c_time)], "negative time " + v);
      continue;
    }
    r.time_s = x * scale;
    if (const units::Range range = units::accepted_range(units::Quantity::Time);
        r.time_s != 0 && (r.time_s < range.lo || r.time_s > range.hi)) {
      const bool low = r.time_s < range.lo;
      error(cols[static_cast<std::size_t>(c_time)],
            "time `" + v + "` is " + (low ? "below " : "above ") + units::format_time(low ? range.lo : range.hi) +
                ", the " + (low ? "smallest" : "largest") + " time accepted");
      continue;
    }
    p.rows.push_back(r);
  }
  if (!diags.empty()) throw ConfigError(diags);
  if (p.rows.empty()) fail(path, no, 0, "no rows");
  return p;
}

Profile read_trace_profile(const std::string& path, const std::string& text) {
  Profile p;
  p.file = path;
  p.trace = true;
  calibrate::TraceError err;
  const std::vector<calibrate::TraceEvent> events = calibrate::read_trace_events(text, err);
  if (!err.message.empty()) fail(path, err.line, err.col, err.message);
  std::map<std::string, std::size_t> at;
  // The host threads' busy time: each thread's cpu_op spans merged (nested ops count once).
  std::map<std::string, std::vector<std::pair<double, double>>> host;
  for (const calibrate::TraceEvent& e : events) {
    if (e.cat == "cpu_op" && e.ph == "X" && e.dur_us > 0) host[e.pid + "/" + e.tid].push_back({e.ts_us, e.ts_us + e.dur_us});
    if (e.cat != "kernel" || e.ph != "X") continue;
    ++p.launches;
    if (e.dur_us < 0) fail(path, e.line, 1, "kernel `" + e.name + "` has a negative duration");
    auto [it, fresh] = at.emplace(e.name, p.rows.size());
    if (fresh) p.rows.push_back(ProfileRow{e.name, "any", 0, e.line, 0});
    ProfileRow& r = p.rows[it->second];
    r.time_s += e.dur_us * 1e-6;
    ++r.count;
  }
  if (p.rows.empty()) fail(path, 1, 1, "no GPU kernels in the trace (events with \"cat\": \"kernel\", \"ph\": \"X\")");
  for (auto& [thread, spans] : host) {
    std::sort(spans.begin(), spans.end());
    double start = spans.front().first, end = spans.front().second;
    for (const auto& [a, b] : spans) {
      if (a > end) {
        p.host_busy_s += (end - start) * 1e-6;
        start = a;
      }
      end = std::max(end, b);
    }
    p.host_busy_s += (end - start) * 1e-6;
    ++p.host_threads;
  }
  return p;
}

// What the model says a layer does, item by item: one compute op or one communication op's
// share on one tier, with the multiplier (unknown) it belongs to.
struct Item {
  std::string name;
  int pass = 0;       // 0 forward, 1 backward (recompute counts as backward: it runs there)
  bool weight_grad = false;  // a weight-gradient kernel (backward pass)
  int unknown = -1;   // compute: class * 3 + pass of its kernels (forward, input grad, weight grad); tiers after; -1 = fixed
  double time_s = 0;
  bool comm = false;
  std::string op_class;  // kOpClassNames, comm or host
  std::string kind;      // gemm | grouped_gemm | attention | memory | comm | host_sync
  bool taken = false;
};

constexpr int kComputeUnknowns = kCalibrationPasses * kOpClassCount;

// Whether a map entry's or a profile row's phase takes this model item: `backward` takes the
// weight-gradient kernels too, `weight_grad` only them.
bool item_phase_ok(const std::string& want, const Item& it) {
  if (want == "any") return true;
  if (want == "weight_grad") return it.weight_grad;
  return want == (it.pass == 0 ? "forward" : "backward");
}

// The share of the compute units the layer's EP kernels hold while the layer computes: with EP
// overlapped (pp > 1) on a device whose communication kernels hold `comm_units` (DeepEP's
// SMs), the layer's kernels ran on the rest, as `evaluate` runs the overlapped layer
// (src/search/step.cpp, expose): a trace of that run shows them 1 / (1 - share) longer.
double held_share(const Plan& plan, const CommBreakdown& comm, const std::string& layer) {
  const Strategy& s = plan.strategy;
  if (!s.overlap.ep || s.parallel.pp <= 1 || cost::dma_compute_share(plan.hardware) <= 0) return 0;
  double share = 0;
  for (const LayerComm& lc : comm.layers) {
    if (lc.kind != layer) continue;
    for (const CommOpEstimate& op : lc.ops) {
      if (op.group != "ep") continue;
      for (const CommStageEstimate& st : op.stages) {
        if (st.compute_share > 0 && st.compute_share < 1) share = std::max(share, st.compute_share);
      }
    }
  }
  return std::min(share, 0.9);
}

std::vector<Item> layer_items(const Plan& plan, const std::string& layer, std::vector<std::string>& tiers,
                              double* share_out) {
  const CommBreakdown comm = estimate_comm(plan);
  const double share = held_share(plan, comm, layer);
  if (share_out != nullptr) *share_out = share;
  const double load = balanced_load(plan.strategy.moe.routing) ? 1.0 : comm.routing.rank_load;
  const ComputeBreakdown cb = estimate_compute(plan, load);
  std::vector<Item> items;
  const LayerEstimate* le = nullptr;
  for (const LayerEstimate& l : cb.layers) {
    if (l.kind == layer) le = &l;
  }
  if (le == nullptr) throw ConfigError({Diagnostic{"", 0, 0, "the strategy's model has no `" + layer + "` layer"}});
  for (const OpEstimate& op : le->ops) {
    Item it;
    it.name = op.name;
    it.pass = op.phase == "forward" ? 0 : 1;
    it.weight_grad = op.phase == "weight_grad";
    const int kernel_pass = op.phase == "forward" || op.phase == "recompute" ? 0 : it.weight_grad ? 2 : 1;
    it.time_s = op.time_s / (1 - share);
    it.op_class = op.op_class;
    it.kind = op.kind;
    for (int c = 0; c < kOpClassCount; ++c) {
      if (op.op_class == kOpClassNames[c]) it.unknown = kCalibrationPasses * c + kernel_pass;
    }
    if (it.unknown < 0) it.op_class = "host";
    items.push_back(it);
  }
  for (const TierSpec& t : plan.hardware.tiers) tiers.push_back(t.name);
  for (const LayerComm& lc : comm.layers) {
    if (lc.kind != layer) continue;
    for (const CommOpEstimate& op : lc.ops) {
      double sum = 0;
      for (const CommStageEstimate& st : op.stages) sum += st.time_s;
      auto add = [&](double t, int unknown) {
        Item it;
        it.name = op.name;
        it.pass = op.phase == "forward" ? 0 : 1;
        it.time_s = t;
        it.comm = true;
        it.op_class = "comm";
        it.kind = "comm";
        it.unknown = unknown;
        items.push_back(it);
      };
      if (sum <= 0) {
        add(op.time_s, -1);
        continue;
      }
      // The op's time (after its own overlap) shared over the tiers its stages use.
      for (const CommStageEstimate& st : op.stages) {
        const std::string tier = st.link.substr(0, st.link.find('+'));
        int u = -1;
        for (std::size_t i = 0; i < tiers.size(); ++i) {
          for (int c = 0; c < kCollectiveCount; ++c) {
            if (tiers[i] == tier && st.collective == cost::name(static_cast<Collective>(c))) {
              u = kComputeUnknowns + static_cast<int>(i) * kCollectiveCount + c;
            }
          }
        }
        add(op.time_s * st.time_s / sum, u);
      }
    }
  }
  return items;
}

const ProfileMapEntry* entry_for(const ProfileMap& map, const ProfileRow& r) {
  for (const ProfileMapEntry& e : map.entries) {
    if (!phase_ok(e.phase, r.phase)) continue;
    if (e.regex) {
      if (std::regex_search(r.name, std::regex(e.match))) return &e;
    } else if (e.match == r.name) {
      return &e;
    }
  }
  return nullptr;
}

}  // namespace

Profile read_profile(const std::string& path) {
  const std::string text = slurp(path, util::kMaxDataBytes, "a profile or trace");
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) fail(path, 1, 1, "empty profile");
  if (text[first] == '{' || text[first] == '[') return read_trace_profile(path, text);
  return read_csv_profile(path, text);
}

ProfileMap load_profile_map(const std::string& ref) {
  std::string text, display = ref;
  bool builtin = false;
  if (std::error_code ec; std::filesystem::exists(ref, ec)) {
    text = slurp(ref, util::kMaxYamlBytes, "a YAML input");
  } else {
    const std::string path = "calibration/" + ref + ".map.yaml";
    for (const config::BuiltinFile& f : config::builtin_files()) {
      if (f.path == path) {
        text = std::string(f.text);
        display = "builtin:" + path;
        builtin = true;
      }
    }
    if (!builtin) {
      fail(ref, 0, 0, "no such map file, and no built-in map of that name (built-in: br166-seed-profile, nvidia-kernels)");
    }
  }
  config::Diags diags;
  auto source = std::make_shared<const config::Source>(config::Source{display, "", builtin, display});
  const config::Node root = config::parse_yaml(text, source, diags);
  diags.throw_if_any();
  ProfileMap map;
  map.file = display;
  config::MapReader r(&root, diags, "");
  (void)r.text("description");
  const config::Node* entries = r.get("entries", config::Need::Required);
  if (entries != nullptr && !entries->is_seq()) diags.error(entries->loc, "`entries` must be a list");
  if (entries != nullptr && entries->is_seq()) {
    for (std::size_t i = 0; i < entries->items.size(); ++i) {
      const config::Node& n = entries->items[i];
      config::MapReader e(&n, diags, "entries[" + std::to_string(i) + "]");
      ProfileMapEntry m;
      m.line = n.loc.line;
      if (auto v = e.text("match", config::Need::Required)) m.match = *v;
      if (auto v = e.boolean("regex")) m.regex = *v;
      if (auto v = e.text("phase")) {
        m.phase = *v;
        if (!known_phase(m.phase)) {
          diags.error(e.get("phase")->loc, "phase `" + m.phase + "`: expected forward, backward, weight_grad or any");
        }
      }
      m.ops = e.text_list("ops");
      m.comm = e.text_list("comm");
      if (auto v = e.text("class")) {
        // One class, or several joined by | (kernels the names cannot tell apart).
        m.op_class = *v;
        static const char* const known[] = {"gemm", "grouped_gemm", "attention", "memory", "elementwise", "norm", "cast",
                                            "permute", "softmax", "reduction", "copy", "comm", "ignore"};
        std::istringstream parts(m.op_class);
        for (std::string c; std::getline(parts, c, '|');) {
          if (std::find(std::begin(known), std::end(known), c) == std::end(known)) {
            diags.error(e.get("class")->loc, "class `" + c + "`: expected gemm, grouped_gemm, attention, memory (or one memory-bound class), comm or ignore (joined by | for several)");
          }
        }
      }
      if (auto v = e.text("passes")) {
        m.passes = *v;
        if (m.passes != "forward" && m.passes != "backward") diags.error(e.get("passes")->loc, "passes: forward or backward");
      }
      if (m.regex) {
        try {
          (void)std::regex(m.match);
        } catch (const std::regex_error& x) {
          diags.error(e.get("match")->loc, "bad regular expression: " + std::string(x.what()));
        }
      }
      if (m.ops.empty() && m.comm.empty() && m.op_class.empty()) {
        diags.error(n.loc, "an entry needs `ops`, `comm` or `class`");
      }
      e.finish();
      map.entries.push_back(std::move(m));
    }
  }
  r.finish();
  diags.throw_if_any();
  return map;
}

LaunchEstimate estimate_launches(const Profile& profile, const Plan& plan, const std::string& layer,
                                 double forward_passes, double backward_passes) {
  LaunchEstimate l;
  if (!profile.trace) return l;
  l.launches = profile.launches;
  // The graph's kernels per pass: forward; recomputed forward, input and weight gradients.
  double forward = 0, backward = 0;
  for (const LayerEstimate& le : estimate_compute(plan).layers) {
    if (le.kind != layer) continue;
    for (const OpEstimate& op : le.ops) (op.phase == "forward" ? forward : backward) += op.kernels;
  }
  l.graph_kernels = forward * forward_passes + backward * backward_passes;
  if (l.graph_kernels > 0) l.launches_per_kernel = l.launches / l.graph_kernels;
  l.host_busy_s = profile.host_busy_s;
  l.host_threads = profile.host_threads;
  if (l.launches > 0 && l.host_busy_s > 0) l.host_issue_s = l.host_busy_s / l.launches;
  return l;
}

ProfileFit calibrate_profile(const Profile& profile, const ProfileMap& map, const Plan& plan, const std::string& layer,
                             double forward_passes, double backward_passes) {
  ProfileFit fit;
  std::vector<std::string> tiers;
  std::vector<Item> items = layer_items(plan, layer, tiers, &fit.held_share);
  const int unknowns = kComputeUnknowns + static_cast<int>(tiers.size()) * kCollectiveCount;

  // Rows: measured time, and the model's time per multiplier plus a fixed part.
  struct Row {
    std::string name, phase, what;
    double y = 0, fixed = 0;
    std::vector<double> c;
  };
  std::vector<Row> rows;

  double passes[2] = {1, 1};
  if (profile.trace) {
    // Kernels aggregate by op class and pass (a kernel split in parts is one measurement);
    // the entries marked `passes` count the layer passes.
    std::map<std::string, std::pair<const ProfileMapEntry*, Row>> by_class;
    double counted[2] = {0, 0};
    for (const ProfileRow& r : profile.rows) {
      const ProfileMapEntry* e = entry_for(map, r);
      if (e == nullptr) {
        fit.unmatched_rows.push_back(r);
        continue;
      }
      if (e->passes == "forward") counted[0] += r.count;
      if (e->passes == "backward") counted[1] += r.count;
      if (e->op_class == "ignore") {
        bool found = false;
        for (auto& [n, t] : fit.ignored_s) {
          if (n == e->match) t += r.time_s, found = true;
        }
        if (!found) fit.ignored_s.push_back({e->match, r.time_s});
        continue;
      }
      auto& [first, row] = by_class[e->op_class + " " + e->phase];
      if (first == nullptr || e->line < first->line) first = e;
      row.name = e->op_class;
      row.phase = e->phase;
      row.y += r.time_s;
    }
    passes[0] = forward_passes > 0 ? forward_passes : counted[0];
    passes[1] = backward_passes > 0 ? backward_passes : counted[1];
    if (passes[0] <= 0 && passes[1] <= 0) {
      throw ConfigError({Diagnostic{profile.file, 0, 0,
                                    "cannot tell how many layer passes the trace holds: no kernel matched an entry "
                                    "with `passes` (attention); give --passes FORWARD,BACKWARD"}});
    }
    // A model op goes to one row: the first in the map's order that takes it, as a kernel
    // goes to the first entry that matches it (weight-gradient GEMMs to their own entry,
    // not again to the GEMM entry after it).
    std::vector<std::pair<const ProfileMapEntry*, Row>*> ordered;
    for (auto& kv : by_class) ordered.push_back(&kv.second);
    std::sort(ordered.begin(), ordered.end(), [](const auto* a, const auto* b) { return a->first->line < b->first->line; });
    for (auto* slot_ptr : ordered) {
      const ProfileMapEntry* e = slot_ptr->first;
      Row& row = slot_ptr->second;
      row.c.assign(static_cast<std::size_t>(unknowns), 0.0);
      for (Item& it : items) {
        if (it.taken || !item_phase_ok(e->phase, it)) continue;
        const std::string cls = "|" + e->op_class + "|";
        // `memory` in a map takes every memory-bound class.
        if (cls.find("|" + it.op_class + "|") == std::string::npos &&
            !(it.kind == "memory" && cls.find("|memory|") != std::string::npos)) {
          continue;
        }
        it.taken = true;
        const double t = it.time_s * passes[it.pass];
        if (it.unknown >= 0) {
          row.c[static_cast<std::size_t>(it.unknown)] += t;
        } else {
          row.fixed += t;
        }
      }
      row.what = e->op_class;
      if (row.fixed + [&] { double s = 0; for (double v : row.c) s += v; return s; }() > 0) rows.push_back(row);
    }
  } else {
    // Rows one entry takes in one pass are one measurement (a kernel the profiler split in
    // stages, as the seeds' permutation).
    struct Group {
      const ProfileMapEntry* e;
      ProfileRow r;
    };
    std::vector<Group> groups;
    // A per-op table names each op once, by hand: a row no map entry knows is a typo or a
    // gap in the map, and fitting without it would spread its time over the others. (A
    // trace's unknown kernels are listed instead: a framework launches many.)
    std::vector<Diagnostic> unknown;
    for (const ProfileRow& r : profile.rows) {
      const ProfileMapEntry* e = entry_for(map, r);
      if (e == nullptr) {
        unknown.push_back(Diagnostic{profile.file, r.line, 1,
                                     "op `" + r.name + "` (" + r.phase + "): no entry of the map (" + map.file +
                                         ") matches it; fix the name or give a map that has it (--map)"});
        continue;
      }
      auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) { return x.e == e && x.r.phase == r.phase; });
      if (g == groups.end()) {
        groups.push_back({e, r});
      } else {
        g->r.name += " + " + r.name;
        g->r.time_s += r.time_s;
        g->r.count += r.count;
      }
    }
    for (const auto& [e, r] : groups) {
      Row row;
      row.name = r.name;
      row.phase = r.phase;
      row.y = r.time_s;
      row.c.assign(static_cast<std::size_t>(unknowns), 0.0);
      std::vector<std::string> names;
      for (Item& it : items) {
        if (it.taken || !item_phase_ok(r.phase, it)) continue;
        const auto& pats = it.comm ? e->comm : e->ops;
        if (std::none_of(pats.begin(), pats.end(), [&](const std::string& p) { return util::glob_match(p, it.name); })) continue;
        it.taken = true;
        if (std::find(names.begin(), names.end(), it.name) == names.end()) names.push_back(it.name);
        if (it.unknown >= 0) {
          row.c[static_cast<std::size_t>(it.unknown)] += it.time_s;
        } else {
          row.fixed += it.time_s;
        }
      }
      for (const std::string& n : names) row.what += (row.what.empty() ? "" : " ") + n;
      if (names.empty()) {
        throw ConfigError({Diagnostic{profile.file, r.line, 1,
                                      "row `" + r.name + "` (" + r.phase + ") maps to no op of the strategy's " + layer +
                                          " layer (map " + map.file + " line " + std::to_string(e->line) +
                                          "): is the strategy the one the profile ran?"}});
      }
      rows.push_back(row);
    }
    if (!unknown.empty()) throw ConfigError(std::move(unknown));
  }
  if (rows.empty()) {
    throw ConfigError({Diagnostic{profile.file, 0, 0, "no row of the profile matched the map (" + map.file + ")"}});
  }
  fit.forward_passes = passes[0];
  fit.backward_passes = passes[1];

  // Least squares on relative residuals, each multiplier pulled weakly towards 1 (it stays
  // 1 where no row determines it) on a log scale.
  std::vector<int> used;
  for (int u = 0; u < unknowns; ++u) {
    if (std::any_of(rows.begin(), rows.end(), [&](const Row& r) { return r.c[static_cast<std::size_t>(u)] > 0; })) used.push_back(u);
  }
  // The layer per pass as a whole weighs as much as three rows: it is what the step adds up.
  std::vector<Row> fitted_rows = rows;
  for (const char* pass : {"forward", "backward"}) {
    Row total;
    total.c.assign(static_cast<std::size_t>(unknowns), 0.0);
    for (const Row& r : rows) {
      if (row_pass(r.phase) != pass) continue;
      total.y += r.y;
      total.fixed += r.fixed;
      for (int u = 0; u < unknowns; ++u) total.c[static_cast<std::size_t>(u)] += r.c[static_cast<std::size_t>(u)];
    }
    if (total.y > 0) {
      for (int k = 0; k < 3; ++k) fitted_rows.push_back(total);
    }
  }

  // Multipliers outside [1/4, 4] mean the model misses a mechanism, not a constant: they are
  // held at the bound and the rest refitted (an active set).
  const double lambda = 1e-2, lo = 0.25, hi = 4.0;
  std::vector<double> factor(static_cast<std::size_t>(unknowns), 1.0);
  std::vector<int> free_set = used;
  for (int round = 0; round < 8 && !free_set.empty(); ++round) {
    const auto n = static_cast<Eigen::Index>(free_set.size());
    Eigen::MatrixXd A = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(fitted_rows.size()) + n, n);
    Eigen::VectorXd b = Eigen::VectorXd::Zero(A.rows());
    for (std::size_t i = 0; i < fitted_rows.size(); ++i) {
      const Row& r = fitted_rows[i];
      const double w = r.y > 0 ? 1.0 / r.y : 0.0;
      double held = r.fixed;  // the multipliers at a bound count as known
      for (int u : used) {
        if (std::find(free_set.begin(), free_set.end(), u) == free_set.end()) held += factor[static_cast<std::size_t>(u)] * r.c[static_cast<std::size_t>(u)];
      }
      for (Eigen::Index j = 0; j < n; ++j) A(static_cast<Eigen::Index>(i), j) = w * r.c[static_cast<std::size_t>(free_set[static_cast<std::size_t>(j)])];
      b(static_cast<Eigen::Index>(i)) = w * (r.y - held);
    }
    // The pull towards 1 is on ln(multiplier): x2 and x0.5 are equally far from the model
    // (a pull on multiplier - 1 would hold a x4 sixteen times harder than a x0.25 and so
    // keep a model that is too fast too fast). Gauss-Newton on it: about the current g,
    // ln f ~ ln g + (f - g) / g.
    Eigen::VectorXd f = Eigen::VectorXd::Ones(n);
    for (Eigen::Index j = 0; j < n; ++j) f(j) = factor[static_cast<std::size_t>(free_set[static_cast<std::size_t>(j)])];
    for (int it = 0; it < 50; ++it) {
      const Eigen::VectorXd g = f.cwiseMax(lo).cwiseMin(hi);
      for (Eigen::Index j = 0; j < n; ++j) {
        A(static_cast<Eigen::Index>(fitted_rows.size()) + j, j) = std::sqrt(lambda) / g(j);
        b(static_cast<Eigen::Index>(fitted_rows.size()) + j) = std::sqrt(lambda) * (1 - std::log(g(j)));
      }
      f = A.colPivHouseholderQr().solve(b);
      if ((f.cwiseMax(lo).cwiseMin(hi) - g).cwiseAbs().maxCoeff() < 1e-9) break;
    }
    bool clamped = false;
    std::vector<int> next;
    for (Eigen::Index j = 0; j < n; ++j) {
      const int u = free_set[static_cast<std::size_t>(j)];
      const double v = f(j);
      if (v < lo || v > hi) {
        factor[static_cast<std::size_t>(u)] = std::clamp(v, lo, hi);
        clamped = true;
      } else {
        factor[static_cast<std::size_t>(u)] = v;
        next.push_back(u);
      }
    }
    free_set = next;
    if (!clamped) break;
  }
  for (int u : used) {
    const double v = factor[static_cast<std::size_t>(u)];
    if (v <= lo || v >= hi) fit.at_bound.push_back(u);
  }

  // Report: rows before and after, the multipliers, the layer as a whole.
  auto class_of = [&](int u) -> std::string {
    if (u < kComputeUnknowns) return kOpClassNames[u / kCalibrationPasses];
    const int t = (u - kComputeUnknowns) / kCollectiveCount;
    return std::string(cost::name(static_cast<Collective>((u - kComputeUnknowns) % kCollectiveCount))) + " on " +
           tiers[static_cast<std::size_t>(t)];
  };
  auto class_row = [&](const std::string& name) -> ProfileFitClass& {
    auto it = std::find_if(fit.classes.begin(), fit.classes.end(), [&](const ProfileFitClass& x) { return x.name == name; });
    if (it != fit.classes.end()) return *it;
    fit.classes.push_back({name, 0, 0, 0});
    return fit.classes.back();
  };
  double err_before = 0, err_after = 0;
  for (const Row& r : rows) {
    double before = r.fixed, after = r.fixed;
    for (int u = 0; u < unknowns; ++u) {
      before += r.c[static_cast<std::size_t>(u)];
      after += factor[static_cast<std::size_t>(u)] * r.c[static_cast<std::size_t>(u)];
    }
    // A row's measured time goes to its classes in proportion to the fitted model there.
    for (int u = 0; u < unknowns; ++u) {
      const double c = r.c[static_cast<std::size_t>(u)];
      if (c <= 0) continue;
      ProfileFitClass& k = class_row(class_of(u));
      const double a = factor[static_cast<std::size_t>(u)] * c;
      k.before_s += c;
      k.after_s += a;
      if (after > 0) k.measured_s += r.y * a / after;
    }
    if (r.fixed > 0) {
      ProfileFitClass& k = class_row("other");
      k.before_s += r.fixed;
      k.after_s += r.fixed;
      if (after > 0) k.measured_s += r.y * r.fixed / after;
    }
    fit.rows.push_back({r.name, r.phase, r.y, before, after, r.what});
    if (profile.trace) {
      fit.rows_before_s += before;
      fit.rows_after_s += after;
    }
    if (r.y > 0) {
      err_before += std::fabs(before - r.y) / r.y;
      err_after += std::fabs(after - r.y) / r.y;
    }
  }
  std::stable_sort(fit.classes.begin(), fit.classes.end(),
                   [](const ProfileFitClass& a, const ProfileFitClass& b) { return a.measured_s > b.measured_s; });
  fit.mean_error_before = err_before / static_cast<double>(rows.size());
  fit.mean_error_after = err_after / static_cast<double>(rows.size());
  for (const Item& it : items) {
    const double f_it = it.unknown >= 0 ? factor[static_cast<std::size_t>(it.unknown)] : 1.0;
    (it.pass == 0 ? fit.before_forward_s : fit.before_backward_s) += it.time_s * passes[it.pass];
    (it.pass == 0 ? fit.after_forward_s : fit.after_backward_s) += f_it * it.time_s * passes[it.pass];
    if (!it.taken && it.time_s > 0) fit.unmatched_ops.push_back({it.name + (it.pass == 0 ? " (forward)" : " (backward)"), it.time_s});
  }
  for (const Row& r : rows) {
    if (profile.trace) {
      fit.measured_total_s += r.y;
    } else if (r.phase == "forward") {
      fit.measured_forward_s += r.y;
    } else if (row_pass(r.phase) == "backward") {
      fit.measured_backward_s += r.y;
    }
  }
  const CalibrationSpec& base = plan.hardware.calibration;
  fit.calibration = base;
  for (int c = 0; c < kOpClassCount; ++c) {
    for (int p = 0; p < kCalibrationPasses; ++p) {
      const int u = kCalibrationPasses * c + p;
      if (std::find(used.begin(), used.end(), u) == used.end()) continue;
      const int n = static_cast<int>(std::count_if(rows.begin(), rows.end(), [&](const Row& r) { return r.c[static_cast<std::size_t>(u)] > 0; }));
      fit.calibration.compute[static_cast<std::size_t>(c)][static_cast<std::size_t>(p)] *= factor[static_cast<std::size_t>(u)];
      const bool bound = std::find(fit.at_bound.begin(), fit.at_bound.end(), u) != fit.at_bound.end();
      static const char* const pass_names[kCalibrationPasses] = {" forward", " backward", " weight_grad"};
      fit.fitted.push_back(std::string(kOpClassNames[c]) + pass_names[p] + ": x" +
                           util::fmt("%.3f", factor[static_cast<std::size_t>(u)]) + " (" + std::to_string(n) + " rows)" +
                           (bound ? "  at the bound: the model misses something here" : ""));
    }
  }
  for (std::size_t t = 0; t < tiers.size(); ++t) {
    for (int c = 0; c < kCollectiveCount; ++c) {
      const int u = kComputeUnknowns + static_cast<int>(t) * kCollectiveCount + c;
      if (std::find(used.begin(), used.end(), u) == used.end()) continue;
      const double old = plan.hardware.tiers[t].calibration[static_cast<std::size_t>(c)];
      fit.comm.push_back({tiers[t], cost::name(static_cast<Collective>(c)), old * factor[static_cast<std::size_t>(u)]});
      const bool bound = std::find(fit.at_bound.begin(), fit.at_bound.end(), u) != fit.at_bound.end();
      fit.fitted.push_back(std::string(cost::name(static_cast<Collective>(c))) + " on " + tiers[t] + ": x" +
                           util::fmt("%.3f", factor[static_cast<std::size_t>(u)]) +
                           (bound ? "  at the bound: the model misses something here" : ""));
    }
  }
  return fit;
}

}  // namespace paraplan
