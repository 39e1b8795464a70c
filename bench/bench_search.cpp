// Benchmark: strategy evaluations per second and the time of the default search.
//   build/bench/paraplan_bench [threads...]
// Prints, per thread count, the whole search time, its phases, and evaluations per second
// per core of the evaluation phase (the pure recombination of cached per-layer costs).

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "paraplan/paraplan.hpp"

int main(int argc, char** argv) {
  std::vector<int> threads;
  for (int i = 1; i < argc; ++i) threads.push_back(std::stoi(argv[i]));
  if (threads.empty()) threads = {1, static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))};
  const paraplan::SpacePlan space = paraplan::load_space("default");
  std::printf("default search: %s on %s\n", space.model.name.c_str(), space.hardware.name.c_str());
  for (int t : threads) {
    // A fresh planner each time: the first search pays for the per-layer costs.
    paraplan::Planner planner(space.hardware, space.model);
    paraplan::SearchOptions opt;
    opt.threads = t;
    opt.top = space.space.top;
    paraplan::SearchResult cold = planner.search(space.space, opt);
    paraplan::SearchResult warm = planner.search(space.space, opt);
    const double per_core = cold.evaluated / (cold.evaluate_seconds * cold.threads);
    std::printf(
        "threads %d: cold search %.3f s (enumerate %.3f, %zu layer keys %.3f, evaluate %.3f); "
        "warm search %.3f s; %zu evaluations, %.0f evaluations/s per core\n",
        cold.threads, cold.seconds, cold.enumerate_seconds, cold.layer_keys, cold.layer_seconds,
        cold.evaluate_seconds, warm.seconds, cold.evaluated, per_core);
  }
  // Full evaluations: with memory no object, no candidate is pruned before its step time.
  paraplan::HardwareSpec roomy = space.hardware;
  roomy.device.memory_bytes *= 1000;
  roomy.host.memory_bytes *= 1000;
  for (int t : threads) {
    paraplan::Planner planner(roomy, space.model);
    paraplan::SearchOptions opt;
    opt.threads = t;
    paraplan::SearchResult warmup = planner.search(space.space, opt);
    paraplan::SearchResult r = planner.search(space.space, opt);
    std::printf("threads %d: %zu full evaluations (step time + memory, none pruned) in %.3f s: %.0f per second per core\n",
                r.threads, r.feasible, r.evaluate_seconds, r.feasible / (r.evaluate_seconds * r.threads));
    (void)warmup;
  }
  return 0;
}
