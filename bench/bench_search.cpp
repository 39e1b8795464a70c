// Benchmark: strategy evaluations per second and the time and memory of a search.
//   build/bench/paraplan_bench [threads...]                      the default space
//   build/bench/paraplan_bench --space NAME|FILE [threads...]    another space: cold search,
//                                                                 evaluations/s, peak RSS
// Per thread count: the whole search time, its phases, and evaluations per second per core
// of the evaluation phase (the recombination of cached per-layer costs, rules included).

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "paraplan/paraplan.hpp"

namespace {

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;  // Linux: kilobytes
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads;
  std::string space_ref = "default";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("usage: paraplan_bench [--space NAME|FILE] [threads...]\n");
      return 0;
    }
    if (std::strcmp(argv[i], "--space") == 0 && i + 1 < argc) {
      space_ref = argv[++i];
    } else {
      char* end = nullptr;
      const long n = std::strtol(argv[i], &end, 10);
      if (end == argv[i] || *end != '\0' || n < 1 || n > 1024) {
        std::fprintf(stderr,
                     "usage: paraplan_bench [--space NAME|FILE] [threads...]\n"
                     "error: `%s` is not a thread count (1-1024)\n",
                     argv[i]);
        return 2;
      }
      threads.push_back(static_cast<int>(n));
    }
  }
  if (threads.empty()) threads = {1, static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))};
  paraplan::SpacePlan space;
  try {
    space = paraplan::load_space(space_ref);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  std::printf("%s search: %s on %s\n", space_ref.c_str(), space.model.name.c_str(), space.hardware.name.c_str());
  for (int t : threads) {
    // A fresh planner each time: the first search pays for the per-layer costs.
    paraplan::Planner planner(space.hardware, space.model);
    paraplan::SearchOptions opt;
    opt.threads = t;
    opt.top = space.space.top;
    paraplan::SearchResult cold = planner.search(space.space, opt);
    // A repeated question (a scheduler's): the mean of many, with and without the best
    // plan's timeline events.
    auto warm = [&](bool timeline) {
      paraplan::SearchOptions o = opt;
      o.timeline = timeline;
      constexpr int kRepeats = 200;
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kRepeats; ++i) (void)planner.search(space.space, o);
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / kRepeats;
    };
    const double warm_all = warm(true), warm_ranking = warm(false);
    const double per_core = cold.evaluated / (cold.evaluate_seconds * cold.threads);
    std::printf(
        "threads %d: cold search %.3f s (enumerate %.3f, %zu layer keys %.3f, evaluate %.3f); warm search %.1f us "
        "(%.1f us without the %zu timeline events); %zu candidates, %zu evaluated (%zu of them pruned by the bound), "
        "%.0f evaluations/s per core; peak RSS %.0f MB\n",
        cold.threads, cold.seconds, cold.enumerate_seconds, cold.layer_keys, cold.layer_seconds, cold.evaluate_seconds,
        warm_all * 1e6, warm_ranking * 1e6, cold.best_timeline.events.size(), cold.candidates, cold.evaluated,
        cold.pruned, per_core, peak_rss_mb());
  }
  if (space_ref != "default") return 0;
  // Full evaluations: with memory no object, no candidate is pruned before its step time.
  paraplan::HardwareSpec roomy = space.hardware;
  roomy.device.memory_bytes *= 1000;
  roomy.host.memory_bytes *= 1000;
  for (int t : threads) {
    paraplan::Planner planner(roomy, space.model);
    paraplan::SearchOptions opt;
    opt.threads = t;
    opt.prune = false;  // every candidate timed
    (void)planner.search(space.space, opt);  // warm-up: the per-layer costs
    // Repeated until a second of evaluation has passed; this machine is shared, so the
    // median of the repeats is the figure and the fastest one is shown beside it.
    std::vector<double> rates;
    double total = 0;
    std::size_t full = 0;
    int used_threads = t;
    while (total < 1.0 || rates.size() < 5) {
      opt.top += 1;  // another question: not answered from the planner's cache
      const paraplan::SearchResult r = planner.search(space.space, opt);
      used_threads = r.threads;
      full = r.feasible;
      total += r.evaluate_seconds;
      rates.push_back(r.feasible / (r.evaluate_seconds * r.threads));
    }
    std::sort(rates.begin(), rates.end());
    std::printf(
        "threads %d: %zu full evaluations (step time + memory, none pruned) per search, %zu searches: %.0f per second "
        "per core (median; fastest %.0f)\n",
        used_threads, full, rates.size(), rates[rates.size() / 2], rates.back());
  }
  return 0;
}
