// Evaluate one strategy and run a small search with the C++ API.
#include <paraplan/paraplan.hpp>

#include <cstdio>

int main() {
  try {
    // Specs from built-in presets (or files, or YAML text with parse_*).
    paraplan::Planner planner(paraplan::load_hardware("h800-ib"), paraplan::load_model("deepseek-v3"));

    // A strategy built in code, DeepSeek-V3's own layout: 256 nodes of 8 H800 (2048 GPUs),
    // PP16 x DP128, EP64 with DeepEP, DualPipe, its batch of 15360 sequences (120 micro-batches
    // per rank; DualPipe runs at least 2 x pp).
    paraplan::Strategy s;
    s.nodes = 256;
    s.parallel.pp = 16;
    s.parallel.dp = 128;
    s.parallel.ep = 64;
    s.training.micro_batch = 1;
    s.training.global_batch = 15360;
    s.training.precision = paraplan::Precision::Fp8;
    s.training.recompute.mode = paraplan::RecomputeMode::Full;
    s.moe.dispatch = paraplan::Dispatch::DeepEp;
    s.schedule = paraplan::Schedule::DualPipe;
    paraplan::Estimate e = planner.evaluate(s);
    for (const std::string& why : e.infeasible_reasons) std::printf("note: %s\n", why.c_str());
    std::printf("step %.2f s, %.0f tokens/s per GPU, MFU %.1f%%, %.1f GB of %.1f GB (%s)\n", e.step_time_s,
                e.tokens_per_device_per_s, 100 * e.mfu, e.memory_bytes.total / 1e9, e.memory_bytes.capacity / 1e9,
                e.feasible ? "fits" : "does not fit");

    // A small search: pipeline depth, EP size, micro-batch and dispatch scheme at 256 nodes.
    paraplan::SearchSpace space = paraplan::parse_search_space(
        "nodes: [256]\n"
        "parallel: {tp: 1, pp: [8, 16], ep: [32, 64]}\n"
        "training: {micro_batch: [1, 2], global_batch: 15360, recompute: [full], precision: fp8}\n"
        "moe: {dispatch: [alltoall, deepep]}\n"
        "schedule: [1f1b, dualpipe]\n",
        "space.yaml");
    paraplan::SearchOptions options;
    options.top = 3;
    paraplan::SearchResult r = planner.search(space, options);
    std::printf("%zu strategies evaluated, %zu fit; best: PP%d EP%d mb%d, %.0f tokens/s per GPU\n", r.evaluated,
                r.feasible, r.best.empty() ? 0 : r.best[0].strategy.parallel.pp,
                r.best.empty() ? 0 : r.best[0].strategy.parallel.ep,
                r.best.empty() ? 0 : r.best[0].strategy.training.micro_batch,
                r.best.empty() ? 0.0 : r.best[0].tokens_per_device_per_s);
    return r.best.empty() ? 3 : 0;
  } catch (const paraplan::ConfigError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
