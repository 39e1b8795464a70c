// A toy scheduler: a queue of jobs (model, node counts the cluster can give), and for each
// the best strategy. One Planner per (hardware, model) pair, kept across jobs: the first
// query for a pair pays for the per-layer costs, a repeated question is answered from the
// planner's cache. Prints the time of every query.
//
//   build/examples/paraplan_scheduler [hardware]

#include <paraplan/paraplan.hpp>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Job {
  std::string model;
  std::vector<int> nodes;  // node counts the cluster could give this job now
  int global_batch;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string hardware = argc > 1 ? argv[1] : "h800-ib";
  const std::vector<Job> queue = {
      {"deepseek-v3", {16, 32}, 1024}, {"llama3-70b", {4, 8}, 256},      {"mixtral-8x7b", {2, 4}, 512},
      {"deepseek-v3", {16, 32}, 1024}, {"llama3-70b", {4, 8}, 256},      {"deepseek-v3", {32}, 1024},
      {"mixtral-8x7b", {2, 4}, 512},   {"deepseek-v3", {16, 32}, 1024},
  };
  try {
    const paraplan::HardwareSpec hw = paraplan::load_hardware(hardware);
    std::map<std::string, std::unique_ptr<paraplan::Planner>> planners;
    for (const Job& job : queue) {
      const auto start = std::chrono::steady_clock::now();
      auto& planner = planners[job.model];
      if (!planner) planner = std::make_unique<paraplan::Planner>(hw, paraplan::load_model(job.model));
      paraplan::SearchSpace space;
      space.nodes.values = job.nodes;
      space.tp.values = {1, 2, 4, 8};
      space.pp.auto_values = true;
      space.dp.auto_values = true;
      space.ep.auto_values = true;
      space.vpp.values = {1};
      space.micro_batch.values = {1, 2};
      space.global_batch.values = {job.global_batch};
      space.recompute.values = {paraplan::Recompute{}};
      space.recompute.values.push_back(paraplan::Recompute{paraplan::RecomputeMode::Full, {}});
      space.zero.values = {1};
      space.schedule.values = {paraplan::Schedule::OneFOneB};
      space.sp.values = {true};
      paraplan::SearchOptions options;
      options.top = 1;
      paraplan::SearchResult r = planner->search(space, options);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (r.best.empty()) {
        std::printf("%-13s nodes %-7s no strategy fits (%zu evaluated)            %8.3f ms%s\n", job.model.c_str(),
                    std::to_string(job.nodes.back()).c_str(), r.evaluated, ms, r.from_cache ? " (cached)" : "");
        continue;
      }
      const paraplan::Estimate& e = r.best.front();
      const paraplan::Parallel& p = e.strategy.parallel;
      std::printf("%-13s %2d nodes TP%d PP%d DP%d EP%d mb%d: %6.0f tokens/s per device  %8.3f ms%s\n",
                  job.model.c_str(), e.strategy.nodes, p.tp, p.pp, p.dp, p.ep, e.strategy.training.micro_batch,
                  e.tokens_per_device_per_s, ms, r.from_cache ? " (cached)" : "");
    }
    return 0;
  } catch (const paraplan::ConfigError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
