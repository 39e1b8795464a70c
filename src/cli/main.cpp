// paraplan command-line tool. The only place that prints or picks exit codes:
// 0 success, 1 internal error, 2 bad input or arguments, 3 no feasible strategy.

#include <CLI/CLI.hpp>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "paraplan/paraplan.hpp"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitInfeasible = 3;

// An output path: not empty (which would silently write nothing), not a folder (which
// would write hidden files named `.md`, `.csv`, `.json` into it).
CLI::Validator output_path(const char* example) {
  return CLI::Validator(
      [example](std::string& v) -> std::string {
        if (v.empty()) return std::string("an empty name; give one, e.g. ") + example;
        if (v.back() == '/') return "`" + v + "` names a folder; give a file name in it, e.g. " + v + example;
        return {};
      },
      "PATH");
}

// A whole number in [lo, hi], said plainly (CLI::Range prints doubles with 300 digits).
CLI::Validator whole_in(long long lo, long long hi) {
  return CLI::Validator(
      [lo, hi](std::string& v) -> std::string {
        long long x = 0;
        std::size_t used = 0;
        try {
          x = std::stoll(v, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != v.size() || x < lo || x > hi) {
          return "`" + v + "` is not a whole number in " + std::to_string(lo) + ".." + std::to_string(hi);
        }
        return {};
      },
      "INT");
}

// A positive finite number (CLI::PositiveNumber accepts denormals and prints DBL_MAX).
CLI::Validator positive() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        double x = 0;
        std::size_t used = 0;
        try {
          x = std::stod(v, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != v.size() || !(x > 0) || !std::isfinite(x)) {
          return "`" + v + "` is not a positive number";
        }
        return {};
      },
      "NUMBER");
}

void print_diagnostics(const paraplan::ConfigError& e) {
  for (const paraplan::Diagnostic& d : e.diagnostics()) std::cerr << d.str() << '\n';
}

std::string_view heading(paraplan::FileKind kind) {
  switch (kind) {
    case paraplan::FileKind::Hardware: return "hardware";
    case paraplan::FileKind::Model: return "models";
    case paraplan::FileKind::Strategy: return "strategies";
    case paraplan::FileKind::Space: return "search spaces";
  }
  return "";
}

int cmd_list() {
  std::size_t width = 4;
  for (const paraplan::Preset& p : paraplan::presets()) width = std::max(width, p.name.size());
  paraplan::FileKind last{};
  bool first = true;
  for (const paraplan::Preset& p : paraplan::presets()) {
    if (first || p.kind != last) {
      std::cout << (first ? "" : "\n") << heading(p.kind) << ":\n";
      last = p.kind;
      first = false;
    }
    std::cout << "  " << p.name << std::string(width - p.name.size() + 2, ' ') << p.description
              << '\n';
  }
  std::cout << "\nUse a name wherever a file is expected (`paraplan check br166-ubbv2`), or\n"
               "start your own file with `extends: NAME`. Files: hardware/, models/, strategies/.\n";
  return kExitOk;
}

int cmd_check(const std::vector<std::string>& files, bool all, bool quiet) {
  std::vector<std::string> refs = files;
  if (all) {
    for (const paraplan::Preset& p : paraplan::presets()) refs.push_back(p.name);
  }
  if (refs.empty()) {
    std::cerr << "paraplan check: give files to check, or --all for every built-in preset\n";
    return kExitBadInput;
  }
  int failed = 0;
  for (const std::string& ref : refs) {
    try {
      paraplan::FileKind kind = paraplan::check_file(ref);
      if (!quiet) std::cout << "ok  " << paraplan::kind_name(kind) << "  " << ref << '\n';
    } catch (const paraplan::ConfigError& e) {
      print_diagnostics(e);
      ++failed;
    }
  }
  if (failed > 0) {
    std::cerr << failed << " of " << refs.size() << " file" << (refs.size() == 1 ? "" : "s")
              << " failed the check\n";
    return kExitBadInput;
  }
  return kExitOk;
}

using paraplan::Evaluation;

Evaluation evaluate_plan(const paraplan::Plan& plan) {
  return paraplan::Planner(plan.hardware, plan.model).explain(plan.strategy);
}

std::string detail_text(const Evaluation& ev, bool all_ops) { return paraplan::evaluation_text(ev, all_ops); }

// Writes `text` to `path`; false (and a message) when the file cannot be written.
bool write_text(const std::string& path, const std::string& text, const char* command) {
  std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) {
    std::cerr << "paraplan " << command << ": cannot write " << path << "\n";
    return false;
  }
  return true;
}

int cmd_evaluate(const std::string& ref, const std::vector<std::string>& sets, const std::string& format,
                 bool all_ops, const std::string& trace) {
  const paraplan::Plan plan = paraplan::load_plan(ref, sets);
  Evaluation ev = evaluate_plan(plan);
  if (!trace.empty()) {
    const paraplan::Timeline tl = paraplan::Planner(plan.hardware, plan.model).timeline(plan.strategy);
    if (!tl.ok) {
      std::cerr << "paraplan evaluate: no trace: " << tl.error << "\n";
      return kExitBadInput;
    }
    const std::string title = plan.strategy.name + ": " + plan.model.name + " on " + plan.hardware.name;
    if (!write_text(trace, paraplan::chrome_trace(tl, title), "evaluate")) return kExitBadInput;
    std::cerr << "wrote " << trace << " (" << tl.events.size() << " events on " << tl.stages
              << " stages; open in https://ui.perfetto.dev or chrome://tracing)\n";
  }
  if (format == "json") {
    std::cout << paraplan::evaluation_json(ev);
  } else {
    std::cout << detail_text(ev, all_ops);
  }
  return kExitOk;
}

std::string billions(std::int64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fB", static_cast<double>(n) / 1e9);
  return buf;
}

struct ImportArgs {
  std::string file, output, name;
  int seq_len = 0;
};

// A Hugging Face config.json -> a model file: printed, or written with -o. What was not
// mapped, and what the schema cannot say exactly, goes to stderr.
int cmd_import_hf(const ImportArgs& a, const std::string& command) {
  paraplan::HfImportOptions opt;
  opt.name = a.name;
  opt.seq_len = a.seq_len;
  opt.command = command;
  const paraplan::HfImport r = paraplan::import_hf_config(a.file, opt);
  // The file written must load as a model file, the same model: check before writing.
  const paraplan::ModelSpec again = paraplan::parse_model(
      r.yaml, a.output.empty() ? std::string("<import-hf output>") : a.output,
      a.output.empty() ? std::string() : std::filesystem::path(a.output).parent_path().string());
  const paraplan::ModelCounts c = paraplan::count_model(again);
  if (!r.unmapped.empty()) {
    std::string keys;
    for (const std::string& k : r.unmapped) keys += (keys.empty() ? "" : ", ") + k;
    std::cerr << "unmapped: " << keys << "\n";
  }
  for (const std::string& n : r.notes) std::cerr << "note: " << n << "\n";
  std::cerr << again.name << " (model_type " << r.model_type << "): " << billions(c.total_params) << " parameters, "
            << billions(c.active_params) << " active per token"
            << (c.mtp_params > 0 ? ", MTP " + billions(c.mtp_params) : std::string()) << "\n";
  if (a.output.empty()) {
    std::cout << r.yaml;
    return kExitOk;
  }
  if (!write_text(a.output, r.yaml, "import-hf")) return kExitBadInput;
  std::cout << "wrote " << a.output << " (`paraplan check " << a.output << "`)\n";
  return kExitOk;
}

std::optional<paraplan::LaunchTarget> launch_target(const std::string& name) {
  if (name == "megatron") return paraplan::LaunchTarget::Megatron;
  if (name == "torchtitan") return paraplan::LaunchTarget::Torchtitan;
  return std::nullopt;
}

int cmd_export(const std::string& ref, const std::vector<std::string>& sets, const std::string& to) {
  const paraplan::Plan plan = paraplan::load_plan(ref, sets);
  std::cout << paraplan::launch_settings(plan, *launch_target(to));
  return kExitOk;
}

// Side by side, like the seeds' EP16 vs EP32 operator tables: headline metrics, then the
// MoE (or dense) layer's ops forward and backward, communication included.
int cmd_topology(const std::string& ref, int nodes, bool nodes_given, const std::string& format) {
  const paraplan::HardwareSpec hw = paraplan::load_hardware(ref);
  if (!nodes_given) nodes = std::min(2, std::max(1, hw.max_nodes()));
  std::cout << (format == "json" ? paraplan::topology_json(hw, nodes) : paraplan::topology_text(hw, nodes));
  return kExitOk;
}

int cmd_compare(const std::vector<std::string>& refs, const std::string& format) {
  std::vector<Evaluation> evs;
  for (const std::string& r : refs) evs.push_back(evaluate_plan(paraplan::load_plan(r)));
  const bool md = format == "md";
  auto ms = [](double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", s * 1e3);
    return std::string(buf);
  };
  std::vector<std::string> header{"metric"};
  for (const Evaluation& ev : evs) header.push_back(ev.plan.strategy.name);
  std::vector<std::vector<std::string>> rows;
  auto add = [&](const std::string& name, auto value) {
    std::vector<std::string> row{name};
    for (const Evaluation& ev : evs) row.push_back(value(ev));
    rows.push_back(std::move(row));
  };
  char buf[64];
  add("nodes", [](const Evaluation& ev) { return std::to_string(ev.plan.strategy.nodes); });
  add("step time (s)", [&](const Evaluation& ev) {
    std::snprintf(buf, sizeof buf, "%.3f", ev.estimate.step_time_s);
    return std::string(buf);
  });
  add("TGS (tokens/s/device)", [&](const Evaluation& ev) {
    std::snprintf(buf, sizeof buf, "%.1f", ev.estimate.tokens_per_device_per_s);
    return std::string(buf);
  });
  add("MFU", [&](const Evaluation& ev) {
    std::snprintf(buf, sizeof buf, "%.1f%%", 100 * ev.estimate.mfu);
    return std::string(buf);
  });
  add("memory (GB, worst stage)", [&](const Evaluation& ev) {
    std::snprintf(buf, sizeof buf, "%.1f%s", ev.estimate.memory_bytes.total / 1e9, ev.estimate.feasible ? "" : " (over)");
    return std::string(buf);
  });
  add("bottleneck", [](const Evaluation& ev) { return ev.estimate.bottleneck; });
  // Hardware and the price of its extra links (Port-10): what a TGS change costs per node.
  add("hardware", [](const Evaluation& ev) { return ev.plan.hardware.name; });
  auto link_cost = [](const Evaluation& ev) {
    return paraplan::extra_link_cost_per_node(ev.plan.hardware, ev.plan.strategy.nodes);
  };
  const double base_tgs = evs.front().estimate.tokens_per_device_per_s;
  const double base_cost = link_cost(evs.front());
  bool priced = false;
  for (const Evaluation& ev : evs) priced = priced || link_cost(ev) > 0;
  if (evs.size() > 1) {
    add("TGS vs the first", [&](const Evaluation& ev) {
      std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * (ev.estimate.tokens_per_device_per_s / base_tgs - 1));
      return std::string(buf);
    });
  }
  if (priced) {
    add("extra links: cost per node", [&](const Evaluation& ev) {
      double links = 0;
      const double c = paraplan::extra_link_cost_per_node(ev.plan.hardware, ev.plan.strategy.nodes, &links);
      std::snprintf(buf, sizeof buf, "%.0f (%.0f links)", c, links);
      return std::string(buf);
    });
    add("TGS change per 1000 of link cost/node", [&](const Evaluation& ev) {
      const double dc = link_cost(ev) - base_cost;
      if (dc <= 0) return std::string("-");
      std::snprintf(buf, sizeof buf, "%+.2f%%", 100 * (ev.estimate.tokens_per_device_per_s / base_tgs - 1) / dc * 1000);
      return std::string(buf);
    });
  }
  // Per-op rows of the MoE layer (dense for dense models), in the first strategy's order.
  const std::string kind = evs.front().plan.model.moe ? "moe" : "dense";
  for (const char* phase : {"forward", "backward"}) {
    std::vector<std::string> names;
    for (const Evaluation& ev : evs) {
      for (const auto& l : ev.compute.layers) {
        if (l.kind != kind) continue;
        for (const auto& op : l.ops) {
          bool fwd = op.phase == "forward";
          if (fwd != (std::string(phase) == "forward")) continue;
          std::string base = op.name.substr(0, op.name.find('.', op.name.find("experts.") == 0 ? 8 : op.name.find("shared_experts.") == 0 ? 15 : 0));
          if (std::find(names.begin(), names.end(), base) == names.end()) names.push_back(base);
        }
      }
      for (const auto& l : ev.comm.layers) {
        if (l.kind != kind) continue;
        for (const auto& op : l.ops) {
          if (op.phase != phase) continue;
          if (std::find(names.begin(), names.end(), op.name) == names.end()) names.push_back(op.name);
        }
      }
    }
    double dummy = 0;
    (void)dummy;
    for (const std::string& name : names) {
      add(std::string(phase == std::string("forward") ? "fwd " : "bwd ") + name + " (ms)", [&](const Evaluation& ev) {
        double t = 0;
        bool found = false;
        for (const auto& l : ev.compute.layers) {
          if (l.kind != kind) continue;
          for (const auto& op : l.ops) {
            bool fwd = op.phase == "forward";
            if (fwd != (std::string(phase) == "forward")) continue;
            if (op.name == name || op.name.rfind(name + ".", 0) == 0) {
              t += op.time_s;
              found = true;
            }
          }
        }
        for (const auto& l : ev.comm.layers) {
          if (l.kind != kind) continue;
          for (const auto& op : l.ops) {
            if (op.phase == phase && op.name == name) {
              t += op.time_s;
              found = true;
            }
          }
        }
        return found ? ms(t) : std::string("-");
      });
    }
  }
  std::vector<std::size_t> width(header.size(), 0);
  for (std::size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out = md ? "| " : "";
    for (std::size_t c = 0; c < cells.size(); ++c) {
      std::string cell = cells[c];
      if (!md) cell += std::string(width[c] + 2 - cell.size(), ' ');
      out += cell + (md ? " | " : "");
    }
    return out + "\n";
  };
  std::cout << line(header);
  if (md) {
    std::string sep = "|---|";
    for (std::size_t c = 1; c < header.size(); ++c) sep += "---:|";
    std::cout << sep << "\n";
  }
  for (const auto& row : rows) std::cout << line(row);
  std::cout << (md ? "\n" : "") << "Per-op rows: one micro-batch through one " << kind
            << " layer on one device; communication before overlap with compute.\n";
  return kExitOk;
}

struct RankArgs {
  std::string hardware, model, space = "default", output, format = "table", objective, export_to;
  bool space_given = false;
  std::vector<int> nodes;
  std::vector<std::string> sets;
  int top = 0, threads = 0, resimulate = 64;
  double max_candidates = 0, budget = 0;
};

std::string summary(const paraplan::Strategy& s) {
  const paraplan::Parallel& p = s.parallel;
  std::string out = std::to_string(s.nodes) + " nodes TP" + std::to_string(p.tp) + " PP" + std::to_string(p.pp) +
                    " DP" + std::to_string(p.dp);
  if (p.ep > 1) out += " EP" + std::to_string(p.ep);
  if (p.vpp > 1) out += " VPP" + std::to_string(p.vpp);
  return out + " mb" + std::to_string(s.training.micro_batch);
}

// The first single change that brings `s` into memory, in the order a user would try them.
std::string memory_fix(const paraplan::Planner& planner, const paraplan::Strategy& s) {
  struct Knob {
    const char* what;
    std::function<void(paraplan::Strategy&)> apply;
  };
  const Knob knobs[] = {
      {"full recompute", [](paraplan::Strategy& x) { x.training.recompute = paraplan::Recompute{}; x.training.recompute.mode = paraplan::RecomputeMode::Full; }},
      {"micro-batch 1", [](paraplan::Strategy& x) { x.training.micro_batch = 1; }},
      {"optimizer offload", [](paraplan::Strategy& x) { x.training.optimizer_offload = true; }},
      {"ZeRO-3", [](paraplan::Strategy& x) { x.training.zero = 3; }},
      {"8-bit Adam", [](paraplan::Strategy& x) { x.training.optimizer = paraplan::Optimizer::Adam8bit; }},
  };
  // One change at a time, then the changes together in that order.
  for (const Knob& k : knobs) {
    paraplan::Strategy t = s;
    k.apply(t);
    const paraplan::Estimate e = planner.evaluate(t);
    if (e.valid && e.feasible) {
      return std::string("fits with ") + k.what + " (" + paraplan::units::format_size(e.memory_bytes.total) + ", TGS " +
             std::to_string(static_cast<long long>(e.tokens_per_device_per_s)) + ")";
    }
  }
  paraplan::Strategy t = s;
  std::string applied;
  for (const Knob& k : knobs) {
    k.apply(t);
    applied += (applied.empty() ? "" : " + ") + std::string(k.what);
    const paraplan::Estimate e = planner.evaluate(t);
    if (e.valid && e.feasible) {
      return "fits with " + applied + " (" + paraplan::units::format_size(e.memory_bytes.total) + ", TGS " +
             std::to_string(static_cast<long long>(e.tokens_per_device_per_s)) + ")";
    }
  }
  return "does not fit even with " + applied + ": more pipeline stages or nodes";
}

// The key of a `--set key=value` ("nodes" of " nodes =[16]").
std::string set_key(const std::string& set) {
  const std::string key = set.substr(0, set.find('='));
  const auto first = key.find_first_not_of(' '), last = key.find_last_not_of(' ');
  return first == std::string::npos ? std::string() : key.substr(first, last - first + 1);
}

int cmd_rank(const RankArgs& a) {
  if (!a.export_to.empty() && (a.format == "json" || a.format == "csv")) {
    std::cerr << "paraplan rank: --export prints launch settings after the table; use it with --format table or md\n";
    return kExitBadInput;
  }
  // An option and a --set of the same key: one would silently win over the other.
  const std::pair<const char*, bool> shortcuts[] = {{"hardware", !a.hardware.empty()},
                                                    {"model", !a.model.empty()},
                                                    {"nodes", !a.nodes.empty()},
                                                    {"objective", !a.objective.empty()}};
  for (const auto& [key, given] : shortcuts) {
    if (!given) continue;
    for (const std::string& set : a.sets) {
      if (set_key(set) == key) {
        const std::string option = std::string(key) == "hardware" ? "-H/--hardware"
                                   : std::string(key) == "model"  ? "-m/--model"
                                                                  : "--" + std::string(key);
        std::cerr << "paraplan rank: both " << option << " and --set " << set << " were given; use one\n";
        return kExitBadInput;
      }
    }
  }
  std::vector<std::string> sets = a.sets;
  if (!a.hardware.empty()) sets.push_back("hardware=" + a.hardware);
  if (!a.model.empty()) sets.push_back("model=" + a.model);
  if (!a.nodes.empty()) {
    std::string list = "nodes=[";
    for (std::size_t i = 0; i < a.nodes.size(); ++i) list += (i ? "," : "") + std::to_string(a.nodes[i]);
    sets.push_back(list + "]");
  }
  if (!a.objective.empty()) sets.push_back("objective=" + a.objective);
  paraplan::SpacePlan space = paraplan::load_space(a.space, sets);
  if (!a.space_given && (!a.hardware.empty() || !a.model.empty())) {
    // The default space holds the seeds' choices (BR166, their batch); another hardware and
    // model pair with a built-in space of its own is searched in that one.
    for (const paraplan::Preset& pr : paraplan::presets()) {
      if (pr.kind != paraplan::FileKind::Space || pr.name == a.space) continue;
      const paraplan::SpacePlan own = paraplan::load_space(pr.name);
      if (own.hardware.name != space.hardware.name || own.model.name != space.model.name) continue;
      std::cerr << "paraplan rank: searching the built-in space " << pr.name << " (" << space.model.name << " on "
                << space.hardware.name << "); -s default searches the default space instead\n";
      space = paraplan::load_space(pr.name, sets);
      break;
    }
  }
  paraplan::Planner planner(space.hardware, space.model);
  paraplan::SearchOptions opt;
  opt.threads = a.threads;
  opt.top = a.top > 0 ? a.top : space.space.top;
  opt.objective = space.space.objective;
  opt.keep_all = !a.output.empty() || a.format == "csv";
  opt.resimulate = a.resimulate;
  opt.max_candidates = static_cast<std::size_t>(a.max_candidates);
  opt.budget_seconds = a.budget;
  const bool tty = isatty(STDERR_FILENO) != 0;
  const auto start = std::chrono::steady_clock::now();
  bool drew = false;
  opt.progress = [&](std::size_t done, std::size_t total) {
    if (!tty) return;
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed < 1.0 && !drew) return;
    drew = true;
    int filled = total > 0 ? static_cast<int>(30.0 * done / total) : 30;
    const double rate = elapsed > 0 ? done / elapsed : 0;
    const double eta = rate > 0 && total > done ? (total - done) / rate : 0;
    std::fprintf(stderr, "\r[%s%s] %zu/%zu candidates, %.0f/s, ETA %.0f s  ",
                 std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(30 - filled), ' ').c_str(), done, total, rate, eta);
    if (done >= total) std::fprintf(stderr, "\n");
  };
  paraplan::SearchResult r = planner.search(space.space, opt);
  if (drew) std::fprintf(stderr, "\n");
  if (r.left_out > 0) {
    std::cerr << "paraplan rank: stopped by " << (a.budget > 0 ? "--budget" : "--max-candidates") << ": "
              << r.left_out << " of " << r.candidates << " candidates were not evaluated (the ranking covers the "
              << "first layouts of the enumeration)\n";
  }
  // Nothing passed the rules only because of the cluster's size: a bad argument, said
  // before any (empty) table.
  if (r.evaluated == 0 && !r.rejected.empty() &&
      std::all_of(r.rejected.begin(), r.rejected.end(),
                  [](const paraplan::RuleCount& c) { return c.rule == "nodes_cluster"; })) {
    std::cerr << "paraplan rank: every node count asked for exceeds " << space.hardware.name
              << "'s cluster (" << space.hardware.max_nodes() << " nodes at most)\n";
    return kExitBadInput;
  }

  std::string best_detail;
  paraplan::MemoryEstimate best_memory;
  if (!r.best.empty()) {
    paraplan::Plan best{space.hardware, space.model, r.best.front().strategy};
    best.strategy.name = "best";
    const Evaluation ev = evaluate_plan(best);
    best_detail = detail_text(ev, false);
    best_memory = ev.memory;
  }
  if (!a.output.empty()) {
    std::filesystem::path base(a.output);
    if (!write_text(base.string() + ".md", paraplan::rank_markdown(space, r, best_detail), "rank") ||
        !write_text(base.string() + ".html", paraplan::rank_html(space, r, best_memory), "rank") ||
        !write_text(base.string() + ".csv", paraplan::rank_csv(r.all), "rank") ||
        !write_text(base.string() + ".json", paraplan::rank_json(space, r), "rank")) {
      return kExitBadInput;
    }
  }
  if (a.format == "json") {
    std::cout << paraplan::rank_json(space, r);
  } else if (a.format == "csv") {
    std::cout << paraplan::rank_csv(r.all);
  } else if (a.format == "md") {
    std::cout << paraplan::rank_markdown(space, r, best_detail);
  } else {
    std::cout << space.model.name << " on " << space.hardware.name << ": " << paraplan::rank_summary(r) << "\n";
    std::cout << paraplan::rank_table(r, static_cast<std::size_t>(opt.top));
    if (!a.output.empty()) {
      std::cout << "\nReports: " << a.output << ".md, " << a.output << ".html, " << a.output << ".csv, " << a.output
                << ".json\n";
    }
  }
  if (!a.export_to.empty() && !r.best.empty()) {
    paraplan::Plan best{space.hardware, space.model, r.best.front().strategy};
    best.strategy.name = "the best plan (#1)";
    std::cout << "\n" << paraplan::launch_settings(best, *launch_target(a.export_to));
  }
  if (r.best.empty()) {
    if (r.evaluated == 0) {
      // Nothing passed the rules: say which (the cluster's size alone was said above).
      std::string rules;
      for (const paraplan::RuleCount& c : r.rejected) {
        rules += (rules.empty() ? "" : ", ") + c.rule + " " + std::to_string(c.count);
      }
      std::cerr << "paraplan rank: no strategy of the space passes the rules (rejected: " << rules << ")\n";
      return kExitInfeasible;
    }
    std::cerr << "paraplan rank: no strategy of the space fits (" << r.evaluated << " evaluated)";
    if (!r.closest.empty()) std::cerr << "; the closest:";
    std::cerr << "\n";
    std::vector<std::string> shown;
    for (const paraplan::Estimate& e : r.closest) {
      if (std::find(shown.begin(), shown.end(), summary(e.strategy)) != shown.end() || shown.size() >= 5) continue;
      shown.push_back(summary(e.strategy));
      const double over = e.memory_bytes.total - e.memory_bytes.capacity;
      std::cerr << "  " << summary(e.strategy) << ": "
                << paraplan::units::format_size(e.memory_bytes.total) << " of "
                << paraplan::units::format_size(e.memory_bytes.capacity) << ", over by "
                << paraplan::units::format_size(std::max(0.0, over)) << "; " << memory_fix(planner, e.strategy) << "\n";
    }
    return kExitInfeasible;
  }
  return kExitOk;
}

int cmd_validate(const std::string& dir) {
  std::vector<paraplan::ValidationCase> cases = paraplan::load_cases(dir);
  paraplan::ValidationReport rep = paraplan::validate(cases);
  std::cout << paraplan::validation_text(rep);
  return rep.failed == 0 ? kExitOk : kExitInternal;
}

std::string today() {
  std::time_t t = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

std::string stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

struct CalibrateArgs {
  std::vector<std::string> files;
  std::string op, tier = "node", hardware, into, dtype = "bf16", name;
  bool grouped = false;
  bool model = false;  ///< calibrate gemm: fit device.gemm_kernel instead of a table
  bool fraction_only = false;  ///< calibrate gemm --model: fit only the peak fraction
  int units = 0;       ///< calibrate gemm --model: compute units of the GPU the sweep ran on
  std::string strategy, map, layer = "moe";  ///< calibrate profile
  std::vector<double> passes;                ///< calibrate profile --passes F,B
  bool launches = false;                     ///< calibrate profile --launches
  double mamf_tflops = 0;                    ///< calibrate mamf
  std::vector<std::string> knobs;            ///< calibrate runs
  std::vector<int> range = {256, 20480, 256};  ///< calibrate mamf --range LO,HI,STEP
};

paraplan::HardwareOverlay overlay_for(const CalibrateArgs& a, const paraplan::HardwareSpec& hw) {
  paraplan::HardwareOverlay o;
  o.base = a.hardware;
  o.name = !a.name.empty() ? a.name : a.into.empty() ? hw.name + "-calibrated" : stem(a.into);
  o.date = today();
  o.tier = a.tier;
  o.node_tier = hw.tiers.size() >= 2 ? hw.tiers[hw.tiers.size() - 2].name : "node";
  o.cluster_tier = hw.tiers.empty() ? "cluster" : hw.tiers.back().name;
  return o;
}

// A calibrated hardware file must load before it is printed or written over anything: the
// loader's bounds are the last guard against a number no one can use (-nan, a denormal).
bool overlay_loads(const std::string& yaml, const std::string& into) {
  try {
    (void)paraplan::parse_hardware(yaml, into.empty() ? std::string("(calibrated hardware)") : into,
                                   std::filesystem::path(into).parent_path().string());
    return true;
  } catch (const paraplan::ConfigError& e) {
    std::cerr << "paraplan calibrate: the calibrated hardware would not load, so it is not "
              << (into.empty() ? "printed" : "written") << ":\n";
    print_diagnostics(e);
    return false;
  }
}

int write_overlay(const CalibrateArgs& a, const paraplan::HardwareOverlay& o) {
  const std::string yaml = paraplan::hardware_overlay_yaml(o);
  if (!overlay_loads(yaml, a.into)) return kExitBadInput;
  if (a.into.empty()) {
    std::cout << "\n" << yaml;
    return kExitOk;
  }
  if (!write_text(a.into, yaml, "calibrate")) return kExitBadInput;
  std::cout << "\nwrote " << a.into << " (extends " << a.hardware << "; `paraplan check " << a.into << "`)\n";
  return kExitOk;
}

int cmd_calibrate_collective(const CalibrateArgs& a) {
  const paraplan::HardwareSpec hw = paraplan::load_hardware(a.hardware);
  bool tier_found = false;
  for (const auto& t : hw.tiers) tier_found = tier_found || t.name == a.tier;
  if (!tier_found) {
    std::cerr << "paraplan calibrate: " << a.hardware << " has no tier `" << a.tier << "`\n";
    return kExitBadInput;
  }
  paraplan::HardwareOverlay o = overlay_for(a, hw);
  for (const std::string& f : a.files) {
    paraplan::CollectiveLog log = paraplan::parse_collective_log(f, a.op);
    paraplan::CollectiveCalibration c = paraplan::calibrate_collective(log);
    static const char* names[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv", "broadcast"};
    std::cout << f << ": " << names[static_cast<int>(c.op)] << ", " << log.samples.size() << " sizes"
              << (log.ranks > 0 ? ", " + std::to_string(log.ranks) + " ranks" : std::string()) << "\n"
              << "  peak busbw " << paraplan::units::format_rate(c.peak_busbw) << "\n"
              << "  least squares t = " << paraplan::units::format_time(c.alpha_s) << " + bytes / "
              << paraplan::units::format_rate(c.beta_bytes_per_s) << "  (R^2 " << c.r2 << ", worst row "
              << 100 * c.worst_relative << "%)\n";
    o.collectives.push_back({c, f});
  }
  return write_overlay(a, o);
}

int cmd_calibrate_mamf(const CalibrateArgs& a) {
  const paraplan::HardwareSpec hw = paraplan::load_hardware(a.hardware);
  const paraplan::Dtype dtype = a.dtype == "fp8" ? paraplan::Dtype::Fp8 : paraplan::Dtype::Bf16;
  const double peak = hw.device.peak(dtype);
  const double bf16 = hw.device.peak(paraplan::Dtype::Bf16);
  if (peak <= 0 || bf16 <= 0 || !hw.device.gemm_kernel.present() || hw.device.compute_units <= 0) {
    std::cerr << "paraplan calibrate mamf: " << a.hardware << " needs a " << a.dtype
              << " peak, `device.gemm_kernel` and `device.compute_units`\n";
    return kExitBadInput;
  }
  if (!(a.mamf_tflops * 1e12 >= 1e-6 * peak)) {
    std::cerr << "paraplan calibrate mamf: " << a.mamf_tflops << " TFLOP/s is below 1e-06 of the " << a.dtype
              << " peak (" << paraplan::units::format_flops(peak) << "); is the figure in TFLOP/s?\n";
    return kExitBadInput;
  }
  if (!(a.mamf_tflops * 1e12 <= peak)) {
    std::cerr << "paraplan calibrate mamf: " << a.mamf_tflops << " TFLOP/s is above the " << a.dtype << " peak ("
              << paraplan::units::format_flops(peak) << ")\n";
    return kExitBadInput;
  }
  const paraplan::MamfCalibration c =
      paraplan::calibrate_mamf(hw.device.gemm_kernel, hw.device.compute_units, peak / bf16, a.mamf_tflops * 1e12 / peak,
                               a.range[0], a.range[1], a.range[2], peak,
                               hw.device.memory_bw_bytes_per_s * hw.device.memory_bound_efficiency,
                               dtype == paraplan::Dtype::Fp8 ? 1.0 : 2.0);
  if (c.peak_fraction > 1) {
    std::cerr << "paraplan calibrate mamf: no shape of the grid reaches " << a.mamf_tflops
              << " TFLOP/s under the kernel model and the HBM roofline; check the figure, the dtype and --range\n";
    return kExitBadInput;
  }
  std::cout << "MAMF " << a.mamf_tflops << " TFLOP/s = " << c.mamf_fraction << " of the " << a.dtype << " peak ("
            << paraplan::units::format_flops(peak) << ")\n"
            << "kernel model of " << a.hardware << " on " << hw.device.compute_units << " compute units (HBM roofline at "
            << paraplan::units::format_rate(hw.device.memory_bw_bytes_per_s * hw.device.memory_bound_efficiency)
            << "): best shape factor "
            << c.best_shape_factor << " at " << c.m << " x " << c.n << " x " << c.k << " (" << c.shapes
            << " shapes, " << a.range[0] << ".." << a.range[1] << " step " << a.range[2] << ")\n"
            << "device.gemm_kernel.peak_fraction." << a.dtype << ": " << c.peak_fraction << "\n";
  return kExitOk;
}

int cmd_calibrate_gemm(const CalibrateArgs& a) {
  const paraplan::HardwareSpec hw = paraplan::load_hardware(a.hardware);
  const paraplan::Dtype dtype = a.dtype == "fp8" ? paraplan::Dtype::Fp8 : paraplan::Dtype::Bf16;
  const double peak = hw.device.peak(dtype);
  if (peak <= 0) {
    std::cerr << "paraplan calibrate: " << a.hardware << " has no " << a.dtype << " peak\n";
    return kExitBadInput;
  }
  paraplan::HardwareOverlay o = overlay_for(a, hw);
  if (a.model) {
    const int units = a.units > 0 ? a.units : hw.device.compute_units;
    if (units <= 0) {
      std::cerr << "paraplan calibrate: " << a.hardware
                << " has no `device.compute_units`; give the sweep GPU's with --units N\n";
      return kExitBadInput;
    }
    const auto rows = paraplan::read_gemm_rows(a.files.front(), peak);
    const double roofline = hw.device.memory_bw_bytes_per_s * hw.device.memory_bound_efficiency;
    const double bf16 = hw.device.peak(paraplan::Dtype::Bf16);
    o.kernel_fit = paraplan::calibrate_gemm_model(rows, hw.device.gemm_kernel, units, dtype, peak, roofline,
                                                  dtype == paraplan::Dtype::Fp8 ? 1.0 : 2.0,
                                                  bf16 > 0 ? peak / bf16 : 1.0, a.fraction_only);
    o.gemm_model = true;
    o.write_units = hw.device.compute_units <= 0;
    o.gemm_source = a.files.front();
    o.gemm_command = "paraplan calibrate gemm " + a.files.front() + " --model -H " + a.hardware + " --dtype " +
                     a.dtype + (a.units > 0 ? " --units " + std::to_string(a.units) : std::string()) +
                     (a.fraction_only ? " --fraction-only" : "");
    const paraplan::GemmModelCalibration& f = o.kernel_fit;
    std::cout << a.files.front() << ": " << f.rows << " GEMMs on " << units << " compute units, kernel model fitted:\n"
              << "  peak fraction " << f.kernel.peak_fraction[static_cast<int>(dtype)] << ", k overhead "
              << f.kernel.k_overhead << ", dgrad " << f.kernel.dgrad << ", wgrad " << f.kernel.wgrad << "\n"
              << "  fixed time per kernel " << paraplan::units::format_time(f.fixed_s)
              << " (device.kernel_overhead covers it)\n"
              << "  mean |error| " << 100 * f.mean_error << "%, median " << 100 * f.median_error << "%, worst "
              << 100 * f.worst_error << "%, bias " << 100 * f.bias << "%\n";
    return write_overlay(a, o);
  }
  o.gemm = paraplan::calibrate_gemm(a.files.front(), peak);
  o.gemm_table = (a.grouped ? "grouped_" : "") + a.dtype;
  o.gemm_source = a.files.front();
  std::cout << a.files.front() << ": " << o.gemm.rows << " GEMMs against " << paraplan::units::format_flops(peak)
            << " (" << a.dtype << "); the efficiency surface reproduces them with median error "
            << 100 * o.gemm.median_error << "%, worst " << 100 * o.gemm.worst_error << "%\n";
  return write_overlay(a, o);
}

// printf-style formatting of one number, for the calibration summaries.
std::string num(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

int cmd_calibrate_deepep(const CalibrateArgs& a) {
  const paraplan::HardwareSpec hw = paraplan::load_hardware(a.hardware);
  paraplan::HardwareOverlay o = overlay_for(a, hw);
  o.deepep = paraplan::parse_deepep_logs(a.files);
  for (const std::string& f : a.files) o.deepep_source += (o.deepep_source.empty() ? "" : " ") + f;
  const auto& d = o.deepep;
  std::cout << o.deepep_source << ": " << (d.hybrid ? "HybridEP kernels at " + std::to_string(d.ranks) + " ranks, " : "")
            << "dispatch " << paraplan::units::format_rate(d.dispatch_rdma) << " RDMA, "
            << paraplan::units::format_rate(d.dispatch_nvl) << " NVLink; combine "
            << paraplan::units::format_rate(d.combine_rdma) << " RDMA, " << paraplan::units::format_rate(d.combine_nvl)
            << " NVLink";
  for (std::size_t i = 0; i < d.nvl_ranks.size(); ++i) {
    std::cout << (i == 0 ? "; NVLink by ranks:" : ",") << " " << d.nvl_ranks[i].bytes << " x " << num("%.3f", d.nvl_ranks[i].efficiency);
  }
  std::cout << "\n";
  return write_overlay(a, o);
}

int cmd_calibrate_attention(const CalibrateArgs& a) {
  const paraplan::HardwareSpec hw = paraplan::load_hardware(a.hardware);
  const bool fp8 = a.dtype != "bf16";
  const double peak = hw.device.peak(fp8 ? paraplan::Dtype::Fp8 : paraplan::Dtype::Bf16);
  if (peak <= 0 || hw.device.compute_units <= 0) {
    std::cerr << "paraplan calibrate attention: " << a.hardware << " needs " << (fp8 ? "an FP8" : "a BF16")
              << " peak and `device.compute_units` (the model spreads tiles over them)\n";
    return kExitBadInput;
  }
  // Several files (one head dim each, say) are one fit: their rows together.
  std::vector<paraplan::AttentionRow> rows;
  std::string sources;
  std::vector<std::string> notes;
  for (const std::string& f : a.files) {
    for (paraplan::AttentionRow& r : paraplan::read_attention_rows(f, peak, &notes, a.dtype)) {
      rows.push_back(std::move(r));
    }
    sources += (sources.empty() ? "" : " ") + f;
  }
  for (const std::string& n : notes) std::cout << n << "\n";
  paraplan::HardwareOverlay o = overlay_for(a, hw);
  o.attention = paraplan::calibrate_attention(rows, hw.device.compute_units);
  o.attention_source = sources;
  std::cout << sources << ": " << rows.size() << " rows, efficiency of the " << (fp8 ? "FP8" : "BF16") << " peak ("
            << paraplan::units::format_flops(peak) << ") on " << hw.device.compute_units << " compute units\n";
  for (const paraplan::AttentionFit& f : o.attention) {
    bool known = false;
    for (const auto& k : hw.device.attention) known = known || k.name == f.kernel;
    std::cout << "  " << f.kernel << (f.backward ? " backward" : " forward") << ": efficiency "
              << num("%.3f", f.efficiency) << ", overhead " << num("%.0f", f.overhead)
              << " per tile; " << f.rows << " rows, mean |error| " << num("%.1f", 100 * f.mean_error)
              << "%, worst " << num("%.1f", 100 * f.worst_error) << "%"
              << (known ? "" : " (a kernel " + a.hardware + " does not list: added)") << "\n";
    if (f.head_dims > 1) {
      std::cout << "    " << f.head_dims << " head dims: non-matmul work per score worth " << num("%.0f", f.softmax)
                << " head dims (efficiency at head dim d = e x [d / (d + " << num("%.0f", f.softmax) << ")] / ["
                << num("%.0f", f.head_dim) << " / (" << num("%.0f", f.head_dim) << " + " << num("%.0f", f.softmax)
                << ")])\n";
    }
    if (f.wide_rows > 0) {
      std::cout << "    " << f.wide_rows << " rows of heads wider than " << num("%.0f", f.head_dim) << ": x ("
                << num("%.0f", f.head_dim) << " / d)^" << num("%.2f", f.wide_head) << "\n";
    }
  }
  return write_overlay(a, o);
}

int cmd_calibrate_memory(const CalibrateArgs& a) {
  const paraplan::HardwareSpec hw = paraplan::load_hardware(a.hardware);
  const auto rows = paraplan::read_memory_rows(a.files.front());
  paraplan::HardwareOverlay o = overlay_for(a, hw);
  o.memory = true;
  o.memory_fit = paraplan::calibrate_memory(rows, hw.device.memory_bw_bytes_per_s);
  o.memory_source = a.files.front();
  std::cout << a.files.front() << ": " << rows.size() << " rows against "
            << paraplan::units::format_rate(hw.device.memory_bw_bytes_per_s) << " of HBM\n";
  for (const paraplan::MemoryClassFit& c : o.memory_fit.classes) {
    std::cout << "  " << paraplan::mem_class_name(c.mem_class) << ": " << num("%.3f", c.fraction)
              << " of HBM, fixed " << paraplan::units::format_time(c.fixed_s) << " per kernel (" << c.rows
              << " rows, R^2 " << num("%.4f", c.r2) << ")\n";
  }
  for (const std::string& w : o.memory_fit.warnings) std::cout << "  note: " << w << "\n";
  if (o.memory_fit.classes.empty()) {
    std::cerr << "paraplan calibrate memory: no class could be fitted (the notes say why); nothing to write\n";
    return kExitBadInput;
  }
  std::cout << "  kernel overhead (median fixed time): " << paraplan::units::format_time(o.memory_fit.kernel_overhead_s)
            << "\n";
  return write_overlay(a, o);
}

int cmd_calibrate_launch(const CalibrateArgs& a) {
  const paraplan::HardwareSpec hw = paraplan::load_hardware(a.hardware);
  paraplan::HardwareOverlay o = overlay_for(a, hw);
  o.launch = true;
  o.launch_fit = paraplan::read_launch(a.files.front());
  o.launch_source = a.files.front();
  std::cout << a.files.front() << ": " << o.launch_fit.rows << " rows; host issue per kernel "
            << (o.launch_fit.host_issue_s > 0 ? paraplan::units::format_time(o.launch_fit.host_issue_s) : "not measured")
            << " (" << a.hardware << ": " << paraplan::units::format_time(hw.device.host_issue_s) << "), host sync "
            << (o.launch_fit.host_sync_s > 0 ? paraplan::units::format_time(o.launch_fit.host_sync_s) : "not measured")
            << " (" << paraplan::units::format_time(hw.device.host_sync_s) << ")\n";
  return write_overlay(a, o);
}

int cmd_calibrate_sustained(const CalibrateArgs& a) {
  const paraplan::HardwareSpec hw = paraplan::load_hardware(a.hardware);
  const double peak = hw.device.peak(a.dtype == "fp8" ? paraplan::Dtype::Fp8 : paraplan::Dtype::Bf16);
  if (peak <= 0) {
    std::cerr << "paraplan calibrate: " << a.hardware << " has no " << a.dtype << " peak\n";
    return kExitBadInput;
  }
  paraplan::HardwareOverlay o = overlay_for(a, hw);
  const std::string& burst = a.files.at(0);
  const std::string& capped = a.files.at(1);
  o.sustained = true;
  o.sustained_fp8 = a.dtype == "fp8";
  o.sustained_fit = paraplan::calibrate_sustained(paraplan::read_gemm_rows(burst, peak),
                                                  paraplan::read_gemm_rows(capped, peak), burst, capped);
  o.sustained_command = "paraplan calibrate sustained " + burst + " " + capped + " -H " + a.hardware +
                        (a.dtype == "fp8" ? " --dtype fp8" : "");
  const paraplan::SustainedCalibration& f = o.sustained_fit;
  // FP8 GEMMs take fp8_gemm instead of `sustained`.
  const char* field = o.sustained_fp8 ? "fp8_gemm" : "sustained";
  const double current = o.sustained_fp8 ? hw.calibration.fp8_gemm : hw.calibration.sustained;
  std::cout << capped << " against " << burst << ": " << f.rows << " GEMMs in both";
  if (f.unmatched > 0) std::cout << " (" << f.unmatched << " in one only, left out)";
  std::cout << "\n  back to back they take " << num("%.4g", f.factor) << " x the time after idle (per row: median "
            << num("%.4g", f.median) << " x, " << num("%.3g", f.low) << " .. " << num("%.3g", f.high) << ")\n"
            << "  calibration." << field << ": " << num("%.4g", f.factor) << " (" << a.hardware << ": "
            << num("%.4g", current)
            << (o.sustained_fp8 ? "; a fit to runs holds the FP8 recipe's own cost beside the power limit" : "") << ")\n";
  return write_overlay(a, o);
}

int cmd_calibrate_runs(const CalibrateArgs& a) {
  std::vector<paraplan::ValidationCase> cases;
  for (const std::string& f : a.files) {
    for (paraplan::ValidationCase& c : paraplan::load_cases(f)) cases.push_back(std::move(c));
  }
  std::cerr << "calibrate runs: fitting " << a.knobs.size() << " knob(s) to " << cases.size()
            << " runs, then each run left out once...\n";
  const paraplan::RunsFit fit = paraplan::calibrate_runs(cases, a.knobs);
  std::cout << paraplan::runs_fit_text(fit);
  std::string cmd = "paraplan calibrate runs";
  for (const std::string& f : a.files) cmd += " " + f;
  cmd += " --knobs ";
  for (std::size_t i = 0; i < a.knobs.size(); ++i) cmd += (i ? "," : "") + a.knobs[i];
  const std::string base = fit.hardware;
  const std::string name = !a.name.empty() ? a.name : a.into.empty() ? base + "-runs" : stem(a.into);
  const std::string yaml =
      paraplan::runs_overlay_yaml(fit, cases.front().plan.hardware, base, name, cmd, today());
  if (!overlay_loads(yaml, a.into)) return kExitBadInput;
  if (a.into.empty()) {
    std::cout << "\n" << yaml;
    return kExitOk;
  }
  if (!write_text(a.into, yaml, "calibrate")) return kExitBadInput;
  std::cout << "\nwrote " << a.into << " (extends " << base << "; `paraplan check " << a.into << "`)\n";
  return kExitOk;
}

int cmd_calibrate_profile(const CalibrateArgs& a) {
  paraplan::Plan plan = paraplan::load_plan(a.strategy, a.hardware.empty() ? std::vector<std::string>{}
                                                                           : std::vector<std::string>{"hardware=" + a.hardware});
  const std::string base = a.hardware.empty() ? plan.hardware.name : a.hardware;
  const paraplan::Profile profile = paraplan::read_profile(a.files.front());
  const std::string map_ref = !a.map.empty() ? a.map : profile.trace ? "nvidia-kernels" : "br166-seed-profile";
  const paraplan::ProfileMap map = paraplan::load_profile_map(map_ref);
  const double fp = a.passes.size() >= 1 ? a.passes[0] : 0, bp = a.passes.size() >= 2 ? a.passes[1] : 0;
  paraplan::ProfileFit fit = paraplan::calibrate_profile(profile, map, plan, a.layer, fp, bp);
  // A trace's launches against the graph's kernels for the passes it holds; --launches fits
  // with them (they change every op's launch time) and writes them.
  const paraplan::LaunchEstimate launches =
      paraplan::estimate_launches(profile, plan, a.layer, fit.forward_passes, fit.backward_passes);
  const bool adopt = a.launches && launches.launches_per_kernel > 0;
  if (a.launches && !adopt) {
    std::cerr << "error: --launches needs a trace (GPU kernels of whole layer passes); " << a.files.front()
              << " is a per-op table\n";
    return kExitBadInput;
  }
  // Against the hardware's own figures, before --launches replaces them.
  const std::string launch_text =
      paraplan::launch_estimate_text(launches, plan, fit.forward_passes, fit.backward_passes, adopt);
  if (adopt) {
    if (launches.launches_per_kernel < 0.01 || launches.launches_per_kernel > 100) {
      std::cerr << "error: " << a.files.front() << ": " << launches.launches << " kernels for "
                << launches.graph_kernels << " graph kernels is not a whole layer's launches; --launches needs a "
                   "trace of whole layer passes\n";
      return kExitBadInput;
    }
    plan.hardware.device.launches_per_kernel = launches.launches_per_kernel;
    if (launches.host_issue_s > 0) plan.hardware.device.host_issue_s = launches.host_issue_s;
    fit = paraplan::calibrate_profile(profile, map, plan, a.layer, fp, bp);
  }

  std::cout << paraplan::profile_fit_text(profile, map, fit, plan, a.layer, !a.passes.empty());
  std::cout << launch_text;
  std::string cmd = "paraplan calibrate profile " + a.files.front() + " -s " + a.strategy;
  if (!a.hardware.empty()) cmd += " -H " + a.hardware;
  if (!a.map.empty()) cmd += " --map " + a.map;
  if (a.layer != "moe") cmd += " --layer " + a.layer;
  if (adopt) cmd += " --launches";
  const std::string name = !a.name.empty() ? a.name : a.into.empty() ? base + "-calibrated" : stem(a.into);
  const std::string yaml = paraplan::profile_overlay_yaml(fit, base, name, cmd, today(), adopt ? &launches : nullptr);
  if (!overlay_loads(yaml, a.into)) return kExitBadInput;
  if (a.into.empty()) {
    std::cout << "\n" << yaml;
    return kExitOk;
  }
  if (!write_text(a.into, yaml, "calibrate")) return kExitBadInput;
  std::cout << "\nwrote " << a.into << " (extends " << base << "; `paraplan evaluate " << a.strategy << " --set hardware="
            << a.into << "`)\n";
  return kExitOk;
}

}  // namespace

namespace {

int run(int argc, char** argv) {
  CLI::App app{
      "paraplan: analytical performance planner and parallelism-strategy advisor for training\n"
      "large models (dense and MoE) on GPU and accelerator clusters.",
      "paraplan"};
  app.set_version_flag("--version", std::string("paraplan ") + paraplan::version());
  app.require_subcommand(1);
  app.footer(
      "Examples:\n"
      "  paraplan rank                       # DeepSeek-V3 on br166-ubbv2 at 16/32/64 nodes\n"
      "  paraplan evaluate br166-ep16-mb2\n"
      "  paraplan compare br166-ep16-mb2 br166-ep32-32n-mb1\n"
      "  paraplan check hardware/br166-ubbv2.yaml my-strategy.yaml\n"
      "  paraplan import-hf tests/data/hf/deepseek-v3/config.json -o my-models/deepseek-v3.yaml\n"
      "  paraplan export deepseek-v3-h800 --to megatron\n"
      "\nExit codes: 0 success, 1 internal error, 2 bad input or arguments, 3 no feasible strategy.\n"
      "Input schemas: docs/inputs.md\n");

  auto* list = app.add_subcommand("list", "List the built-in hardware, models, strategies and search spaces");
  list->footer("Example:\n  paraplan list\n");

  std::vector<std::string> check_files;
  bool check_all = false;
  bool check_quiet = false;
  auto* check = app.add_subcommand(
      "check", "Validate input files (hardware, model, strategy, search space); exit 0 or 2");
  check->add_option("files", check_files, "YAML files or built-in preset names");
  check->add_flag("--all", check_all, "Also check every built-in preset");
  check->add_flag("-q,--quiet", check_quiet, "Print only problems");
  check->footer(
      "Each problem is printed as `file:line:col: error: message`; all problems of a file are\n"
      "reported together.\n"
      "Examples:\n"
      "  paraplan check strategies/br166-ep16-mb2.yaml\n"
      "  paraplan check br166-ubbv2 deepseek-v3\n"
      "  paraplan check --all\n");

  std::string eval_ref;
  std::vector<std::string> eval_sets;
  std::string eval_format = "table";
  bool eval_all_ops = false;
  std::string eval_trace;
  auto* evaluate = app.add_subcommand(
      "evaluate", "One strategy in full: step time, TGS, MFU, memory per stage, every op and transfer");
  evaluate->add_option("strategy", eval_ref, "Strategy YAML file or built-in strategy name")->required();
  evaluate->add_option("--set", eval_sets, "Override a strategy key, e.g. --set parallel.ep=32 (repeatable)");
  evaluate->add_option("--format", eval_format, "Output format")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  evaluate->add_flag("--all-ops", eval_all_ops, "Table: list backward and recompute ops too");
  evaluate->add_option("--trace", eval_trace,
                       "Write the simulated step as Chrome trace JSON (one track per stage and stream)")
      ->check(output_path("step.json"));
  evaluate->footer(
      "Per-op times are one micro-batch through one layer of each kind on one device; the step\n"
      "combines them with the pipeline schedule, overlap rules, DP sync and the optimizer.\n"
      "Examples:\n"
      "  paraplan evaluate br166-ep16-mb2\n"
      "  paraplan evaluate br166-ep16-mb2 --set moe.dispatch=deepep --set training.micro_batch=1\n"
      "  paraplan evaluate my-strategy.yaml --format json > estimate.json\n"
      "  paraplan evaluate br166-ep16-mb2 --trace step.json\n");

  std::vector<std::string> compare_refs;
  std::string compare_format = "table";
  auto* compare = app.add_subcommand("compare", "Strategies side by side: metrics and per-op times");
  compare->add_option("strategies", compare_refs, "Strategy files or built-in names")->required()->expected(2, 16);
  compare->add_option("--format", compare_format, "Output format")
      ->check(CLI::IsMember({"table", "md"}))
      ->capture_default_str();
  compare->footer(
      "Example (the seeds' EP16 vs EP32 operator table):\n"
      "  paraplan compare br166-ep16-mb2 br166-ep32-32n-mb1 br166-ep64-64n-mb1 --format md\n");

  std::string topo_hw;
  int topo_nodes = 2;
  std::string topo_format = "table";
  auto* topology = app.add_subcommand(
      "topology", "The device graph of a hardware file: link kinds, each device's neighbours, hops between devices");
  topology->add_option("-H,--hardware", topo_hw, "Hardware (name or file)")->required();
  auto* topo_nodes_opt =
      topology->add_option("--nodes", topo_nodes, "Nodes in the graph (default 2; 1 for a one-node cluster)");
  topology->add_option("--format", topo_format, "Output format")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  topology->footer(
      "Devices are cards (the dies of a card share it). Paths take the fewest hops, then the widest\n"
      "bottleneck; with extra links (Port-10) the hops without them are shown beside.\n"
      "Examples (SEED_DIGEST sec. 1.5's UBBv2 neighbour table, with and without Port-10):\n"
      "  paraplan topology -H br166-ubbv2-port10\n"
      "  paraplan topology -H br166-ubbv2 --nodes 4\n"
      "  paraplan topology -H h100-sxm-ib --format json\n");

  RankArgs rank_args;
  auto* rank = app.add_subcommand("rank", "Search every valid strategy of a space and rank them");
  rank->add_option("-H,--hardware", rank_args.hardware, "Hardware (name or file); default: the space's");
  rank->add_option("-m,--model", rank_args.model, "Model (name, YAML file or Hugging Face config.json); default: the space's");
  rank->add_option("-s,--space", rank_args.space,
                   "Search space (name or file); default: `default`, or with -H / -m the built-in space of that "
                   "hardware and model when there is one")
      ->capture_default_str()
      ->each([&rank_args](const std::string&) { rank_args.space_given = true; });
  rank->add_option("--nodes", rank_args.nodes, "Node counts, e.g. --nodes 16,32,64")->delimiter(',');
  rank->add_option("--top", rank_args.top, "How many strategies to show (default: the space's top)")
      ->check(whole_in(1, 1000000));
  rank->add_option("--objective", rank_args.objective, "tgs | step_time | mfu | memory")
      ->check(CLI::IsMember({"tgs", "step_time", "mfu", "memory"}));
  rank->add_option("--set", rank_args.sets, "Override a space key, e.g. --set training.micro_batch=[1,2]");
  rank->add_option("-o,--output", rank_args.output,
                   "Write NAME.md, NAME.csv and NAME.json, e.g. reports/default (a base name, not a folder)")
      ->check(output_path("default"));
  rank->add_option("--format", rank_args.format, "Terminal output format")
      ->check(CLI::IsMember({"table", "md", "csv", "json"}))
      ->capture_default_str();
  rank->add_option("--threads", rank_args.threads, "Worker threads (default: all cores)")->check(whole_in(0, 4096));
  rank->add_option("--max-candidates", rank_args.max_candidates,
                   "Stop after about N candidates (whole layouts); says how many were left out")
      ->check(CLI::Range(1.0, 1e15));
  rank->add_option("--budget", rank_args.budget, "Stop evaluating after about SECONDS; says how many were left out")
      ->check(CLI::Range(0.001, 1e7));
  rank->add_option("--export", rank_args.export_to, "Print the best plan's launch settings: megatron | torchtitan")
      ->check(CLI::IsMember({"megatron", "torchtitan"}));
  rank->add_option("--resimulate", rank_args.resimulate,
                   "Re-time the best K of the closed form by the event simulation and rank by it (0: off)")
      ->check(whole_in(0, 1000000))
      ->capture_default_str();
  rank->footer(
      "With no arguments: DeepSeek-V3 on br166-ubbv2 at 16, 32 and 64 nodes (strategies/\n"
      "default.space.yaml). Exit 3 when nothing fits, naming the closest candidates, how far\n"
      "over capacity each is and the change that makes it fit. -o takes a base name: -o out/run1\n"
      "writes out/run1.md, .csv and .json; an empty name or one ending in `/` is exit 2. An option\n"
      "and a --set of the same key (--nodes and --set nodes=...) is exit 2.\n"
      "Examples:\n"
      "  paraplan rank\n"
      "  paraplan rank -o reports/default\n"
      "  paraplan rank -H h800-ib --nodes 32,64 --top 10\n"
      "  paraplan rank -s my.space.yaml --format json > ranking.json\n");

  ImportArgs import_args;
  auto* import_hf = app.add_subcommand(
      "import-hf", "A Hugging Face config.json -> a model file (models/ schema), each value naming its key");
  import_hf->add_option("config", import_args.file, "The model's config.json")->required();
  import_hf->add_option("-o,--output", import_args.output, "Write the model file here instead of printing it");
  import_hf->add_option("--name", import_args.name,
                        "Model name (default: the folder of .../NAME/config.json, else the file's stem)");
  import_hf->add_option("--seq-len", import_args.seq_len,
                        "Sequence length (default: max_position_embeddings, the longest context)")
      ->check(CLI::Range(1, 1 << 28));
  import_hf->footer(
      "Reads model_type deepseek_v2, deepseek_v3, gpt_neox, gpt_oss, llama, mistral, mixtral, qwen3 and qwen3_moe. Keys\n"
      "not mapped are listed on stderr (`unmapped: ...`), with notes on what the schema cannot say\n"
      "exactly. A config.json also works directly wherever a model is expected: `rank -m`,\n"
      "`--set model=...`, a strategy's `model:` (docs/interop.md).\n"
      "Examples (from the source folder):\n"
      "  paraplan import-hf tests/data/hf/deepseek-v3/config.json --seq-len 4096\n"
      "  paraplan import-hf tests/data/hf/qwen3-235b-a22b/config.json -o my-models/qwen3-235b-a22b.yaml\n"
      "  paraplan rank -m tests/data/hf/deepseek-v3/config.json --set training.seq_len=4096 --nodes 32\n");

  std::string export_ref, export_to;
  std::vector<std::string> export_sets;
  auto* export_cmd = app.add_subcommand(
      "export", "A strategy's launch settings for Megatron-LM (arguments) or torchtitan (job TOML)");
  export_cmd->add_option("strategy", export_ref, "Strategy YAML file or built-in strategy name")->required();
  export_cmd->add_option("--to", export_to, "megatron | torchtitan")
      ->required()
      ->check(CLI::IsMember({"megatron", "torchtitan"}));
  export_cmd->add_option("--set", export_sets, "Override a strategy key, e.g. --set parallel.ep=32 (repeatable)");
  export_cmd->footer(
      "Settings the framework cannot express are printed as `# not expressible: ...` comments,\n"
      "with the nearest setting where there is one (docs/interop.md).\n"
      "Examples:\n"
      "  paraplan export deepseek-v3-h800 --to megatron\n"
      "  paraplan export br166-ep16-mb2 --to torchtitan\n"
      "  paraplan rank -s llama3-70b-h100 --nodes 64 --top 3 --export megatron\n");

  CalibrateArgs cal;
  auto* calibrate = app.add_subcommand("calibrate", "Hardware numbers from benchmark output, with the fit shown");
  calibrate->require_subcommand(1);
  auto* cal_coll = calibrate->add_subcommand(
      "collective", "nccl-tests logs or size,GB/s tables -> a tier's measured busbw and size curve");
  cal_coll->add_option("files", cal.files, "nccl-tests output (all_reduce_perf ...) or CSV size,GB/s")->required();
  cal_coll->add_option("--op", cal.op, "Collective, when the log does not say (all_reduce, send_recv, ...)");
  cal_coll->add_option("--tier", cal.tier, "Tier the measurement belongs to")->capture_default_str();
  auto* cal_gemm = calibrate->add_subcommand("gemm", "A GEMM sweep CSV (m,n,k,time_us or tflops) -> gemm_efficiency");
  cal_gemm->add_option("file", cal.files, "CSV with a header naming m, n, k and time_us/time_ms/time_s or tflops")
      ->required()
      ->expected(1);
  cal_gemm->add_option("--dtype", cal.dtype, "bf16 | fp8")->check(CLI::IsMember({"bf16", "fp8"}))->capture_default_str();
  cal_gemm->add_flag("--grouped", cal.grouped, "Grouped (expert) GEMMs: m is tokens per expert");
  cal_gemm->add_flag("--model", cal.model,
                     "Fit the kernel-level GEMM model (device.gemm_kernel: peak fraction, tiles, k overhead,\n"
                     "dgrad / wgrad factors) instead of writing the rows as a table");
  cal_gemm->add_option("--units", cal.units, "--model: compute units (SMs) of the GPU the sweep ran on")
      ->check(CLI::Range(1, 1 << 20));
  cal_gemm->add_flag("--fraction-only", cal.fraction_only,
                     "--model: keep the hardware's tiles, k overhead and dgrad / wgrad (fitted on another\n"
                     "sweep) and fit only this dtype's peak fraction")
      ->needs("--model");
  auto* cal_mamf = calibrate->add_subcommand(
      "mamf", "A Maximum Achievable Matmul FLOPS figure (mamf-finder.py) -> gemm_kernel.peak_fraction");
  cal_mamf->add_option("tflops", cal.mamf_tflops, "The MAMF figure in TFLOP/s (the best shape's mean)")
      ->required()
      ->check(positive());
  cal_mamf->add_option("--dtype", cal.dtype, "bf16 | fp8")->check(CLI::IsMember({"bf16", "fp8"}))->capture_default_str();
  cal_mamf->add_option("--range", cal.range, "The finder's --m_range (= n, k ranges): LO,HI,STEP")
      ->delimiter(',')
      ->expected(3)
      ->capture_default_str();
  cal_mamf->add_option("-H,--hardware", cal.hardware, "Hardware whose gemm_kernel is anchored (name or file)")->required();
  cal_mamf->footer(
      "MAMF is the best any shape of the finder's grid reached, so the kernel model must reach it\n"
      "at its own best shape of that grid (tiles, waves, k overhead, HBM roofline) and exceed it\n"
      "nowhere. Example (gemm_mamf_bf16_fp8, H100 SXM FP8 through cuBLAS):\n"
      "  paraplan calibrate mamf 1402.6 --dtype fp8 -H h100-sxm-ib\n");
  // --into and --name: where a calibrate command writes its hardware file.
  auto output_options = [&](CLI::App* sub, const std::string& into_help) {
    sub->add_option("--into", cal.into, into_help)->check(output_path("my-hardware.yaml"));
    sub->add_option("--name", cal.name, "Name of the written hardware (default: the file's stem)");
  };
  auto* cal_runs = calibrate->add_subcommand(
      "runs", "Measured end-to-end runs (validation case files) -> a few global knobs, with leave-one-out error");
  cal_runs->add_option("cases", cal.files, "Case files or folders of them (validation/ schema, docs/validation.md)")
      ->required();
  cal_runs->add_option("--knobs", cal.knobs, "Comma-separated, at most one per 3 runs: gemm, fp8_gemm, sustained,\n"
                                             "attention, memory, communication, host, host_issue, ep_overlap,\n"
                                             "allocator")
      ->delimiter(',')
      ->required();
  output_options(cal_runs, "Write a hardware file that extends the runs' hardware with the knobs");
  cal_runs->footer(
      "Each knob scales one mechanism in the model, a time multiplier unless said:\n"
      "  gemm         GEMM and grouped-GEMM kernels\n"
      "  fp8_gemm     the same, FP8 ones only\n"
      "  sustained    BF16 GEMM kernels in a training step (not in an `isolated: true` case)\n"
      "  attention    attention kernels\n"
      "  memory       memory-bound kernels\n"
      "  communication  every tier's transfers\n"
      "  host         launch overhead, host sync and host issue time\n"
      "  host_issue   the host's issue time per launch alone\n"
      "  ep_overlap   a share, at most 1: of the EP transfer time that could hide, what hides\n"
      "  allocator    a memory multiplier of a step's transient tensors (activations, buffers)\n"
      "               in memory_per_device_gib cases: what the caching allocator reserves\n"
      "A knob must move at least one run; the report says how many each moves.\n"
      "The fit minimises the squared log error over the runs; each run is also\n"
      "predicted by a fit to the others, and that leave-one-out error is the one to quote.\n"
      "Example:\n"
      "  paraplan calibrate runs validation/nemo2407-llama2-7b.yaml validation/nemo2407-llama2-13b.yaml \\\n"
      "      validation/nemo2407-llama2-70b.yaml --knobs gemm\n");
  auto* cal_deepep = calibrate->add_subcommand("deepep", "DeepEP / HybridEP test output -> dispatch bandwidths (deepep)");
  cal_deepep->add_option("file", cal.files,
                         "Output of DeepEP's test_intranode.py / test_internode.py, or of HybridEP's\n"
                         "test_hybrid_ep.py (several HybridEP runs at different rank counts: one rate and its\n"
                         "ranks_efficiency curve)")
      ->required()
      ->expected(1, 16);
  auto* cal_attention = calibrate->add_subcommand(
      "attention", "Flash-attention timings (bench/gpu/attention.py) -> device.attention efficiency and overhead");
  cal_attention->add_option("files", cal.files,
                            "CSV: kernel,pass,causal,batch,heads,head_dim,seq,time_us (several: one fit over all, the\n"
                            "head-dim term too where they hold two or more head dims)")
      ->required()
      ->expected(1, 16);
  cal_attention->add_option("--dtype", cal.dtype,
                            "The rows of this data type (cudnn-frontend's data_type column: bfloat16, fp8, mxfp8;\n"
                            "bf16 = bfloat16). FP8 ones fit kernel `BACKEND_DTYPE` at FP8 (`precision: fp8`),\n"
                            "as a fraction of the FP8 peak")
      ->check(CLI::IsMember({"bf16", "fp8", "mxfp8"}))
      ->capture_default_str();
  auto* cal_memory = calibrate->add_subcommand(
      "memory", "Memory-bound kernel timings (bench/gpu/memory_bound.py) -> device.memory_bound, kernel_overhead");
  cal_memory->add_option("file", cal.files, "CSV: op,class,bytes,time_us")->required()->expected(1);
  auto* cal_launch = calibrate->add_subcommand(
      "launch", "Host costs (bench/gpu/launch.py) -> device.host_issue, host_sync");
  cal_launch->add_option("file", cal.files, "CSV: quantity,time_us")->required()->expected(1);
  auto* cal_sustained = calibrate->add_subcommand(
      "sustained", "One GEMM sweep timed after idle and back to back -> calibration.sustained (fp8_gemm\n"
                   "for an FP8 sweep): the power limit's cost");
  cal_sustained->add_option("files", cal.files,
                            "BURST.csv (bench/gpu/gemm.py --burst 0.3) and CAPPED.csv (bench/gpu/gemm.py), same shapes")
      ->required()
      ->expected(2);
  cal_sustained->add_option("--dtype", cal.dtype,
                            "bf16 | fp8: the sweeps' precision (their rates' peak; fp8 writes fp8_gemm)")
      ->check(CLI::IsMember({"bf16", "fp8"}))
      ->capture_default_str();
  auto* cal_profile = calibrate->add_subcommand(
      "profile", "A measured per-op profile (CSV or Chrome/PyTorch trace) -> time multipliers per op class");
  cal_profile->add_option("file", cal.files, "op,phase,time_ms CSV (one layer) or trace JSON (GPU kernels)")
      ->required()
      ->expected(1);
  cal_profile->add_option("-s,--strategy", cal.strategy, "The strategy the profile ran (file or built-in name)")
      ->required();
  cal_profile->add_option("-H,--hardware", cal.hardware, "Hardware (default: the strategy's)");
  cal_profile->add_option("--map", cal.map,
                          "Row / kernel names -> op graph (YAML, or built-in: br166-seed-profile for CSVs,\n"
                          "nvidia-kernels for traces; the default by format)");
  cal_profile->add_option("--layer", cal.layer, "Layer kind the profile shows")
      ->check(CLI::IsMember({"moe", "dense"}))
      ->capture_default_str();
  cal_profile->add_option("--passes", cal.passes, "Trace: layer passes it holds, FORWARD,BACKWARD (default: counted)")
      ->delimiter(',')
      ->expected(2);
  cal_profile->add_flag("--launches", cal.launches,
                        "Trace: take device.launches_per_kernel (its kernels over the graph's for its passes) and\n"
                        "device.host_issue (its host threads' busy time per kernel) from it, fit with them, write them");
  output_options(cal_profile, "Write a hardware file that extends it with the fitted multipliers");
  for (CLI::App* sub : {cal_coll, cal_gemm, cal_deepep, cal_attention, cal_memory, cal_launch, cal_sustained}) {
    sub->add_option("-H,--hardware", cal.hardware, "Hardware the measurements belong to (name or file)")->required();
    output_options(sub, "Write a hardware file that extends it with the calibrated fields");
  }
  calibrate->footer(
      "Each command prints the fit and, with --into, writes a hardware file that `extends:` the\n"
      "given one and overrides only the calibrated fields, with source and date in comments.\n"
      "Examples:\n"
      "  paraplan calibrate collective all_reduce_perf.log -H h100-sxm-ib --tier node --into hardware/my-h100.yaml\n"
      "  paraplan calibrate collective sendrecv.csv --op send_recv -H br166-ubbv2 --tier cluster\n"
      "  paraplan calibrate gemm sweep.csv --dtype bf16 -H h100-sxm-ib --into hardware/my-h100.yaml\n"
      "  paraplan calibrate gemm hardware/calibration/a100-pcie-gemm-simumax.csv --model -H a100-sxm-ib\n"
      "  paraplan calibrate mamf 1402.6 --dtype fp8 -H h100-sxm-ib\n"
      "  paraplan calibrate sustained hardware/calibration/h100-sxm-gemm-bf16-burst.csv \\\n"
      "      hardware/calibration/h100-sxm-gemm-bf16-capped.csv -H h100-sxm-ib\n"
      "  paraplan calibrate deepep test_internode.log -H h800-ib\n"
      "  paraplan calibrate deepep hybrid_ep8.log hybrid_ep16.log hybrid_ep36.log -H gb200-nvl72\n"
      "  paraplan calibrate attention attention.csv -H h100-sxm-ib --into hardware/my-h100.yaml\n"
      "  paraplan calibrate memory memory.csv -H h100-sxm-ib\n"
      "  paraplan calibrate launch launch.csv -H h100-sxm-ib\n"
      "  paraplan calibrate runs validation/nemo2407-llama2-7b.yaml validation/nemo2407-llama2-13b.yaml \\\n"
      "      validation/nemo2407-llama2-70b.yaml --knobs gemm\n"
      "  paraplan calibrate profile br166-ep16-profile.csv -s br166-ep16-profile.strategy.yaml --into hardware/my-br166.yaml\n"
      "  paraplan calibrate profile train.json -s deepseek-v3-h800 --into hardware/my-h800.yaml\n"
      "GEMM sweep on your GPU: python3 bench/gpu/gemm.py > sweep.csv (bench/gpu/README.md lists the rest)\n");

  std::string validate_dir = "validation";
  auto* validate = app.add_subcommand(
      "validate", "Predicted vs measured for the published cases; exit 1 when a case exceeds its bound");
  validate->add_option("dir", validate_dir, "Folder of case files")->capture_default_str();
  validate->footer(
      "Each case names its source, its metric as the source defines it, and an error bound\n"
      "(docs/validation.md). Summary: mean |error|, bias and worst case, overall and per category.\n"
      "Example:\n"
      "  paraplan validate validation\n");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitBadInput;
  }

  try {
    if (list->parsed()) return cmd_list();
    if (check->parsed()) return cmd_check(check_files, check_all, check_quiet);
    if (evaluate->parsed()) return cmd_evaluate(eval_ref, eval_sets, eval_format, eval_all_ops, eval_trace);
    if (compare->parsed()) return cmd_compare(compare_refs, compare_format);
    if (topology->parsed()) return cmd_topology(topo_hw, topo_nodes, topo_nodes_opt->count() > 0, topo_format);
    if (rank->parsed()) return cmd_rank(rank_args);
    if (import_hf->parsed()) {
      std::string command = "paraplan import-hf " + import_args.file;
      if (!import_args.name.empty()) command += " --name " + import_args.name;
      if (import_args.seq_len > 0) command += " --seq-len " + std::to_string(import_args.seq_len);
      return cmd_import_hf(import_args, command);
    }
    if (export_cmd->parsed()) return cmd_export(export_ref, export_sets, export_to);
    if (validate->parsed()) return cmd_validate(validate_dir);
    if (cal_coll->parsed()) return cmd_calibrate_collective(cal);
    if (cal_gemm->parsed()) return cmd_calibrate_gemm(cal);
    if (cal_mamf->parsed()) return cmd_calibrate_mamf(cal);
    if (cal_runs->parsed()) return cmd_calibrate_runs(cal);
    if (cal_deepep->parsed()) return cmd_calibrate_deepep(cal);
    if (cal_profile->parsed()) return cmd_calibrate_profile(cal);
    if (cal_attention->parsed()) return cmd_calibrate_attention(cal);
    if (cal_memory->parsed()) return cmd_calibrate_memory(cal);
    if (cal_launch->parsed()) return cmd_calibrate_launch(cal);
    if (cal_sustained->parsed()) return cmd_calibrate_sustained(cal);
  } catch (const paraplan::ConfigError& e) {
    print_diagnostics(e);
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "paraplan: internal error: " << e.what() << '\n';
    return kExitInternal;
  }
  return kExitInternal;
}

}  // namespace

int main(int argc, char** argv) {
#if defined(__GLIBC__)
  // Each evaluation builds and frees its schedule and per-op tables (a few MB at most); with
  // glibc's defaults the freed top of the heap goes back to the system and the next
  // evaluation page-faults it in again, which made `calibrate runs` over 26 cases spend as
  // long in the kernel as in the model. Keep up to 256 MiB of it and serve blocks of up to
  // 64 MiB from the heap. The library itself leaves the allocator to its caller.
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
#endif
  const int rc = run(argc, argv);
  // What went to standard output must have arrived (a full disk, a closed pipe): a result
  // that was not written is not a success.
  std::cout.flush();
  errno = 0;
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::cerr << "paraplan: cannot write to standard output" << (errno != 0 ? std::string(": ") + std::strerror(errno) : "")
              << '\n';
    return rc == 0 || rc == kExitInfeasible ? kExitBadInput : rc;
  }
  return rc;
}
