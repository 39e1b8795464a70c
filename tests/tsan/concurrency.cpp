// The library's concurrent use, as a scheduler embeds it, under ThreadSanitizer
// (./build.sh tsan): one Planner shared by several threads that evaluate, explain, time and
// search at once (its layer-cost cache, answer cache and the search's own workers), beside
// planners of their own and the C API. Exits non-zero when results differ between threads;
// ThreadSanitizer reports any data race and fails the run.

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "paraplan/paraplan.h"
#include "paraplan/paraplan.hpp"

int main() {
  const paraplan::Plan plan = paraplan::load_plan("br166-ep16-mb2");
  paraplan::SpacePlan space = paraplan::load_space("default");
  space.space.nodes.values = {16};
  const paraplan::Planner shared(plan.hardware, plan.model);
  const double expected = paraplan::Planner(plan.hardware, plan.model).evaluate(plan.strategy).step_time_s;
  std::atomic<int> wrong{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t) {
    pool.emplace_back([&, t] {
      for (int i = 0; i < 3; ++i) {
        paraplan::Strategy s = plan.strategy;
        s.training.micro_batch = 1 + (t + i) % 2;
        const paraplan::Estimate e = shared.evaluate(s);
        if (s.training.micro_batch == plan.strategy.training.micro_batch && e.step_time_s != expected) ++wrong;
        (void)shared.explain(s);
        (void)shared.timeline(s);
        paraplan::SearchOptions o;
        o.threads = 2;
        o.top = 5 + (t % 2);  // two questions, each asked twice: the answer cache too
        const paraplan::SearchResult r = shared.search(space.space, o);
        if (r.best.empty()) ++wrong;
      }
      paraplan_planner* p = nullptr;
      char* error = nullptr;
      if (paraplan_planner_load("br166-ubbv2", "deepseek-v3", &p, &error) == PARAPLAN_OK) {
        char* json = nullptr;
        char* err = nullptr;
        if (paraplan_evaluate(p, "nodes: 16\nparallel: {tp: 1, pp: 16, dp: 8, ep: 16}\nep_over_dies: true\n"
                                 "training: {micro_batch: 2, global_batch: 960, recompute: full}\n",
                              &json, &err) != PARAPLAN_OK) {
          // a rule or a key the text lacks: still a status, not a crash
        }
        paraplan_free(json);
        paraplan_free(err);
        paraplan_planner_free(p);
      }
      paraplan_free(error);
    });
  }
  for (auto& th : pool) th.join();
  std::printf("concurrency: 4 threads x (evaluate, explain, timeline, search) on one planner, C API beside: %s\n",
              wrong == 0 ? "consistent" : "INCONSISTENT");
  return wrong == 0 ? 0 : 1;
}
