// paraplan command-line tool. The only place that prints or picks exit codes:
// 0 success, 1 internal error, 2 bad input or arguments, 3 no feasible strategy.

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "paraplan/paraplan.hpp"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;

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

int cmd_evaluate(const std::string& ref, const std::string& format, bool all_ops) {
  paraplan::Plan plan = paraplan::load_plan(ref);
  paraplan::CommBreakdown comm = paraplan::estimate_comm(plan);
  paraplan::ComputeBreakdown b = paraplan::estimate_compute(plan, comm.routing.rank_load);
  if (format == "json") {
    std::cout << paraplan::compute_json(plan, b, &comm);
  } else {
    std::cout << paraplan::compute_text(plan, b, all_ops) << paraplan::comm_text(plan, comm);
  }
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "paraplan: analytical performance planner and parallelism-strategy advisor for training\n"
      "large models (dense and MoE) on GPU and accelerator clusters.",
      "paraplan"};
  app.set_version_flag("--version", std::string("paraplan ") + paraplan::version());
  app.require_subcommand(1);
  app.footer(
      "Examples:\n"
      "  paraplan list\n"
      "  paraplan check hardware/br166-ubbv2.yaml my-strategy.yaml\n"
      "\nExit codes: 0 success, 1 internal error, 2 bad input or arguments, 3 no feasible strategy.\n"
      "Input schemas: docs/inputs.md\n");

  auto* list = app.add_subcommand("list", "List the built-in hardware, models and strategies");
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
  std::string eval_format = "table";
  bool eval_all_ops = false;
  auto* evaluate = app.add_subcommand(
      "evaluate", "One strategy in detail: parameter and FLOP counts, per-layer and per-op times");
  evaluate->add_option("strategy", eval_ref, "Strategy YAML file or built-in strategy name")->required();
  evaluate->add_option("--format", eval_format, "Output format")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  evaluate->add_flag("--all-ops", eval_all_ops,
                     "Table: list backward and recompute ops too, not only forward ones");
  evaluate->footer(
      "Times are for one micro-batch through one layer of each kind on one device, from the\n"
      "hardware's GEMM efficiency tables and memory bandwidth (compute only for now).\n"
      "Examples:\n"
      "  paraplan evaluate br166-ep16-mb2\n"
      "  paraplan evaluate strategies/br166-ep32-32n-mb1.yaml --all-ops\n"
      "  paraplan evaluate my-strategy.yaml --format json > estimate.json\n");

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
    if (evaluate->parsed()) return cmd_evaluate(eval_ref, eval_format, eval_all_ops);
  } catch (const paraplan::ConfigError& e) {
    print_diagnostics(e);
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "paraplan: internal error: " << e.what() << '\n';
    return kExitInternal;
  }
  return kExitInternal;
}
