// Benchmark: strategy evaluations per second and the time and memory of a search.
//   build/bench/paraplan_bench [threads...]                      the default space
//   build/bench/paraplan_bench --space NAME|FILE [threads...]    another space: cold search,
//                                                                 evaluations/s, peak RSS
// Per thread count: the whole search time, its phases, and evaluations per second per core
// of the evaluation phase (the recombination of cached per-layer costs, rules included).

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
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
    if (std::strcmp(argv[i], "--space") == 0 && i + 1 < argc) {
      space_ref = argv[++i];
    } else {
      threads.push_back(std::stoi(argv[i]));
    }
  }
  if (threads.empty()) threads = {1, static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))};
  const paraplan::SpacePlan space = paraplan::load_space(space_ref);
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
    paraplan::SearchResult warmup = planner.search(space.space, opt);
    opt.top += 1;  // another question: not answered from the planner's cache
    paraplan::SearchResult r = planner.search(space.space, opt);
    std::printf("threads %d: %zu full evaluations (step time + memory, none pruned) in %.3f s: %.0f per second per core\n",
                r.threads, r.feasible, r.evaluate_seconds, r.feasible / (r.evaluate_seconds * r.threads));
    (void)warmup;
  }
  return 0;
}
