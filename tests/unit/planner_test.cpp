// Step time, schedules, overlap rules, metrics, and the search: hand-derived on synthetic
// per-layer costs, and properties on the real presets.

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "cost/comm.hpp"
#include "paraplan/config.hpp"
#include "paraplan/errors.hpp"
#include "paraplan/estimate.hpp"
#include "paraplan/planner.hpp"
#include "paraplan/report.hpp"
#include "search/layer_costs.hpp"
#include "search/step.hpp"

using namespace paraplan;

namespace {

// A dense model of `layers` layers on one 8-device node per stage; costs per layer set by
// the test (embedding and head free).
struct Synthetic {
  HardwareSpec hw = load_hardware("h100-sxm-ib");
  ModelSpec m = load_model("llama3-70b");
  Strategy s;
  search::LayerCosts c;

  Synthetic(int layers, int pp, int micro_batches, Schedule schedule, int vpp = 1) {
    m.layers = layers;
    s.nodes = pp;
    s.parallel.tp = 8;
    s.parallel.pp = pp;
    s.parallel.dp = 1;
    s.parallel.vpp = vpp;
    s.schedule = schedule;
    s.training.micro_batch = 1;
    s.training.global_batch = micro_batches;
    c.dense.f = 1.0;
    c.dense.b = 2.0;
    c.dense.w = 1.0;
  }
  Estimate run() const {
    return search::evaluate_step(hw, m, s, c, MemoryEstimate{}, search::StrategyComm{});
  }
};

}  // namespace

TEST_SUITE("search.step") {
  TEST_CASE("1F1B: m (F + B + W) + (pp - 1)(F + B + W)") {
    Synthetic x(4, 4, 8, Schedule::OneFOneB);  // one layer per rank: F = 1, B = 2, W = 1
    Estimate e = x.run();
    CHECK(e.time_s.compute == doctest::Approx(8 * 4.0));
    CHECK(e.time_s.pp_bubble == doctest::Approx(3 * 4.0));
    CHECK(e.step_time_s == doctest::Approx(44.0));
  }

  TEST_CASE("interleaved: the 1F1B bubble divided by vpp") {
    Synthetic x(8, 4, 8, Schedule::Interleaved, 2);  // two chunks of one layer per rank
    Estimate e = x.run();
    // per rank per micro-batch F = 2, B = 4, W = 2; bubble (pp - 1)(F + B + W) / vpp = 12
    CHECK(e.time_s.compute == doctest::Approx(8 * 8.0));
    CHECK(e.time_s.pp_bubble == doctest::Approx(3 * 8.0 / 2));
  }

  TEST_CASE("zero bubble (ZB-H1): (pp - 1)(F + B - W)") {
    // Qi et al. 2023 sec. 2.1: ZB-H1's bubble is a third of 1F1B's when F = B = W, i.e.
    // (p - 1)(F + B - W); here 3 (1 + 2 - 1) = 6.
    Synthetic x(4, 4, 8, Schedule::ZeroBubble);
    CHECK(x.run().time_s.pp_bubble == doctest::Approx(3 * (1 + 2 - 1.0)));
  }

  TEST_CASE("DualPipe: (pp/2 - 1)(F&B + B - 3W), a micro-batch runs one of a rank's two chunks") {
    Synthetic x(8, 8, 16, Schedule::DualPipe);  // ranks hold chunks r and 7 - r, one layer each
    Estimate e = x.run();
    // per micro-batch: one chunk, F = 1, B = 2, W = 1. The DualPipe README's B is the whole
    // backward, B + W = 3, and F&B = F + B + W = 4: (8/2 - 1)(4 + 3 - 3) = 12.
    CHECK(e.time_s.compute == doctest::Approx(16 * 4.0));
    CHECK(e.time_s.pp_bubble == doctest::Approx((8 / 2 - 1) * (4 + 3 - 3.0)));
  }

  TEST_CASE("EP overlap: DMA communication hides under compute, compute-engine communication adds") {
    Synthetic x(4, 4, 8, Schedule::OneFOneB);
    x.c.dense.ep_f = 1.0;  // 1 s forward, 1 s backward, all DMA: hidden under 4 s of compute
    x.c.dense.ep_b = 1.0;
    CHECK(x.run().time_s.ep_comm == doctest::Approx(0.0));
    x.c.dense.ep_engine = 0.5;  // half a second of it runs on the compute units: adds
    CHECK(x.run().time_s.ep_comm == doctest::Approx(8 * 0.5));
    // The DMA transfers' kernels hold 20% of the units for the window they hide under: the
    // 4 s of compute take 4 / 0.8 = 5 s, 1 s more, and 1.5 s of DMA hide in it.
    x.c.dense.ep_units = 0.2;
    CHECK(x.run().time_s.ep_comm == doctest::Approx(8 * (0.5 + 1.0)));
    x.c.dense.ep_f = 5.0;  // DMA 5.5 s vs the 5 s window: 0.5 s exposed past it
    CHECK(x.run().time_s.ep_comm == doctest::Approx(8 * (0.5 + 1.0 + 0.5)));
    // calibration.ep_overlap 0.8: of what could hide, min(5.5 s of DMA, the 5 s window) = 5 s,
    // 0.8 hides and 1 s waits: 0.5 + 1.0 + 0.5 + 1.0.
    x.c.ep_overlap = 0.8;
    CHECK(x.run().time_s.ep_comm == doctest::Approx(8 * (0.5 + 1.0 + 0.5 + 1.0)));
    x.c.dense.ep_f = 1.0;  // 1.5 s of DMA inside the window: 0.2 x 1.5 = 0.3 s of it waits
    CHECK(x.run().time_s.ep_comm == doctest::Approx(8 * (0.5 + 1.0 + 0.3)));
    x.c.dense.ep_f = 5.0;
    x.s.overlap.ep = false;  // without overlap the whole of it: 5 + 1
    CHECK(x.run().time_s.ep_comm == doctest::Approx(8 * 6.0));
  }

  TEST_CASE("calibration.ep_overlap: a share from 0.05 to 1, read from the hardware file") {
    CHECK(parse_hardware("extends: h800-ib\ncalibration:\n  ep_overlap: 0.7\n", "h.yaml").calibration.ep_overlap ==
          doctest::Approx(0.7));
    CHECK(load_hardware("h800-ib").calibration.ep_overlap == 1.0);  // not fitted: the ideal
    CHECK_THROWS_AS((void)parse_hardware("extends: h800-ib\ncalibration:\n  ep_overlap: 1.5\n", "h.yaml"), ConfigError);
    CHECK_THROWS_AS((void)parse_hardware("extends: h800-ib\ncalibration:\n  ep_overlap: 0.04\n", "h.yaml"), ConfigError);
    CHECK(parse_hardware("extends: h800-ib\ncalibration:\n  ep_overlap: 0.05\n", "h.yaml").calibration.ep_overlap == 0.05);
  }

  TEST_CASE("DP overlap: the reduce-scatter hides under the last backward, the parameter all-gather under the first forward") {
    // One stage of 4 layers, one micro-batch: F = 4 s, B + W = 8 + 4 = 12 s. 4e9 parameters:
    // Megatron's 40M-element bucket is 1% of them, the part of each collective that always
    // waits. What hides still takes the collective kernels' share of the compute units
    // (comm_units / compute_units) from the compute it runs beside.
    Synthetic x(4, 1, 1, Schedule::OneFOneB);
    x.s.overlap.dp = true;
    MemoryEstimate mem;
    mem.stages.emplace_back();
    mem.stages[0].dense_params = 4e9;
    const double share = static_cast<double>(x.hw.device.comm_units) / x.hw.device.compute_units;
    auto dp = [&](double sync, double param) {
      search::StrategyComm comm;
      comm.dp_s = sync;
      comm.dp_param_s = param;
      return search::evaluate_step(x.hw, x.m, x.s, x.c, mem, comm).time_s.dp_comm;
    };
    // Reduce-scatter 10 s inside the 12 s backward: its last bucket, 0.1 s, waits. All-gather
    // 10 s against the 4 s forward: 6 s wait. 20 - 6.1 s hide.
    CHECK(dp(20, 10) == doctest::Approx(0.1 + 6 + (20 - 6.1) * share));
    // An all-reduce of 20 s (no ZeRO: no all-gather) against the 12 s backward: 8 s wait; the
    // forward after the step does not wait for it, so it cannot hide there.
    CHECK(dp(20, 0) == doctest::Approx(8 + 12 * share));
    // Without overlap all of it waits.
    x.s.overlap.dp = false;
    CHECK(dp(20, 10) == doctest::Approx(20));
  }

  TEST_CASE("tied embeddings: the table's gradient all-reduce between first and last stage waits, once per step") {
    // Megatron-LM's finalize_model_grads and DeepSpeed's ReduceTiedGrads run it after the
    // backward, outside the overlapped DP reduction: all of it adds, overlapped DP or not.
    Synthetic x(4, 2, 4, Schedule::OneFOneB);
    search::StrategyComm comm;
    comm.tied_s = 0.5;
    for (bool overlap : {false, true}) {
      x.s.overlap.dp = overlap;
      CHECK(search::evaluate_step(x.hw, x.m, x.s, x.c, MemoryEstimate{}, comm).time_s.dp_comm == doctest::Approx(0.5));
    }
  }

  TEST_CASE("TP communication as the layer costs hold it adds to every micro-batch") {
    // tp_f / tp_b are what the exchange costs as run (cost::tp_exposed: all of it, or with
    // overlap.tp what its GEMMs do not hide plus what overlapping costs them): the step adds
    // them per micro-batch, whatever overlap.tp says.
    Synthetic x(4, 4, 8, Schedule::OneFOneB);
    x.c.dense.tp_f = 0.25;
    x.c.dense.tp_b = 0.25;
    CHECK(x.run().time_s.tp_comm == doctest::Approx(8 * 0.5));
    x.s.overlap.tp = true;
    CHECK(x.run().time_s.tp_comm == doctest::Approx(8 * 0.5));
  }

  TEST_CASE("TGS = global_batch x seq / (step x devices); MFU over the BF16 peak") {
    Synthetic x(4, 4, 8, Schedule::OneFOneB);
    x.c.model_flops_per_token = 1e9;
    Estimate e = x.run();
    const double tokens = 8.0 * x.m.seq_len;
    CHECK(e.devices == 32);
    CHECK(e.tokens_per_device_per_s == doctest::Approx(tokens / (44.0 * 32)));
    CHECK(e.mfu == doctest::Approx(1e9 * tokens / (44.0 * 32 * 989e12)));
  }

  TEST_CASE("property: more micro-batches never raise the bubble's share of the step") {
    double last = 1.0;
    for (int m : {4, 8, 16, 32, 64}) {
      Synthetic x(8, 8, m, Schedule::OneFOneB);
      Estimate e = x.run();
      double share = e.time_s.pp_bubble / e.step_time_s;
      CHECK(share <= last);
      last = share;
    }
  }
}

TEST_SUITE("search.planner") {
  TEST_CASE("the planner's memory is estimate_memory's (fast path = detailed path)") {
    for (const Preset& p : presets()) {
      if (p.kind != FileKind::Strategy) continue;
      CAPTURE(p.name);
      Plan plan = load_plan(p.name);
      Planner planner(plan.hardware, plan.model);
      Estimate e = planner.evaluate(plan.strategy);
      CommBreakdown comm = estimate_comm(plan);
      MemoryEstimate mem = estimate_memory(plan, comm.routing.rank_load);
      CHECK(e.memory_bytes.total == doctest::Approx(mem.stages[static_cast<std::size_t>(mem.worst_stage)].total));
      CHECK(e.feasible == mem.feasible);
      CHECK(e.step_time_s > 0);
      // the components add up to the step
      const TimeBreakdown& t = e.time_s;
      CHECK(e.step_time_s == doctest::Approx(t.compute + t.tp_comm + t.ep_comm + t.pp_comm + t.dp_comm +
                                             t.pp_bubble + t.optimizer + t.queueing + t.offload));
    }
  }

  TEST_CASE("an invalid strategy is reported, not evaluated") {
    Plan plan = load_plan("br166-ep16-mb2");
    plan.strategy.parallel.tp = 3;
    Planner planner(plan.hardware, plan.model);
    Estimate e = planner.evaluate(plan.strategy);
    CHECK_FALSE(e.valid);
    REQUIRE_FALSE(e.infeasible_reasons.empty());
    CHECK(e.infeasible_reasons.front().find("rule") == 0);
  }

  TEST_CASE("search results are identical for 1, 2 and 4 threads") {
    SpacePlan space = load_space("default");
    space.space.nodes.values = {16, 32};
    Planner planner(space.hardware, space.model);
    SearchOptions one;
    one.threads = 1;
    SearchResult a = planner.search(space.space, one);
    for (int threads : {2, 4}) {
      CAPTURE(threads);
      // A planner of its own: one planner answers a repeated question from its cache.
      Planner other(space.hardware, space.model);
      SearchOptions many = one;
      many.threads = threads;
      SearchResult b = other.search(space.space, many);
      CHECK_FALSE(b.from_cache);
      CHECK(b.threads == threads);
      REQUIRE(a.best.size() == b.best.size());
      REQUIRE_FALSE(a.best.empty());
      for (std::size_t i = 0; i < a.best.size(); ++i) {
        CHECK(a.best[i].step_time_s == b.best[i].step_time_s);
        CHECK(a.best[i].strategy.parallel.ep == b.best[i].strategy.parallel.ep);
        CHECK(a.best[i].strategy.training.micro_batch == b.best[i].strategy.training.micro_batch);
        CHECK(!better(a.best[i], b.best[i], one.objective));
        CHECK(!better(b.best[i], a.best[i], one.objective));
      }
      CHECK(a.pareto.size() == b.pareto.size());
      for (std::size_t i = 0; i < std::min(a.pareto.size(), b.pareto.size()); ++i) {
        CHECK(a.pareto[i].step_time_s == b.pareto[i].step_time_s);
      }
      CHECK(a.feasible == b.feasible);
      CHECK(a.evaluated == b.evaluated);
    }
    // every candidate is accounted for: evaluated or rejected by a rule
    std::size_t rejected = 0;
    for (const RuleCount& r : a.rejected) {
      if (r.rule != "memory") rejected += r.count;
    }
    CHECK(a.candidates == a.evaluated + rejected);
    // best first, by the objective
    for (std::size_t i = 1; i < a.best.size(); ++i) {
      CHECK(a.best[i - 1].tokens_per_device_per_s >= a.best[i].tokens_per_device_per_s);
    }
  }

  TEST_CASE("a repeated search is answered from the planner's cache, unchanged") {
    SpacePlan space = load_space("default");
    space.space.nodes.values = {16};
    Planner planner(space.hardware, space.model);
    SearchResult first = planner.search(space.space, SearchOptions{});
    SearchResult again = planner.search(space.space, SearchOptions{});
    CHECK_FALSE(first.from_cache);
    CHECK(again.from_cache);
    REQUIRE(first.best.size() == again.best.size());
    for (std::size_t i = 0; i < first.best.size(); ++i) CHECK(first.best[i].step_time_s == again.best[i].step_time_s);
  }

  TEST_CASE("a search that differs only in its pipeline layout or a decimal is not answered from the cache") {
    // Megatron-Core's layout string decides which candidates are valid; the space's imbalance
    // scales the expert load, however small the difference.
    SpacePlan space = load_space("default");
    space.space.nodes.values = {16};
    Planner planner(space.hardware, space.model);
    const SearchResult plain = planner.search(space.space, SearchOptions{});
    SearchSpace laid = space.space;
    laid.pipeline_layout = "Et|(tt|)*30mL";
    const SearchResult with_layout = planner.search(laid, SearchOptions{});
    CHECK_FALSE(with_layout.from_cache);
    CHECK(with_layout.evaluated != plain.evaluated);
    SearchSpace nudged = space.space;
    nudged.imbalance = space.space.imbalance + 1e-9;
    CHECK_FALSE(planner.search(nudged, SearchOptions{}).from_cache);
    CHECK(planner.search(space.space, SearchOptions{}).from_cache);
  }

  TEST_CASE("a repeated search without the timeline's events; the cache keeps the latest 64 answers") {
    SpacePlan space = load_space("default");
    space.space.nodes.values = {16};
    Planner planner(space.hardware, space.model);
    const SearchResult first = planner.search(space.space, SearchOptions{});
    REQUIRE_FALSE(first.best_timeline.events.empty());
    SearchOptions ranking;
    ranking.timeline = false;
    const SearchResult lean = planner.search(space.space, ranking);
    CHECK(lean.from_cache);
    CHECK(lean.best_timeline.events.empty());
    CHECK(lean.best_timeline.step_time_s == first.best_timeline.step_time_s);
    REQUIRE(lean.best.size() == first.best.size());
    CHECK(lean.best.front().step_time_s == first.best.front().step_time_s);
    // asked again with events: all of them, as the first time
    const SearchResult full = planner.search(space.space, SearchOptions{});
    CHECK(full.from_cache);
    REQUIRE(full.best_timeline.events.size() == first.best_timeline.events.size());
    CHECK(full.best_timeline.events.back().end_s == first.best_timeline.events.back().end_s);
    // 64 other questions (top 101..164; the first asked for 20) push the first one out
    for (int top = 101; top <= 164; ++top) {
      SearchOptions o = ranking;
      o.top = top;
      (void)planner.search(space.space, o);
    }
    CHECK_FALSE(planner.search(space.space, SearchOptions{}).from_cache);
  }

  TEST_CASE("branch and bound: the same results with and without pruning") {
    // The bound (step_lower_bound) only skips candidates that can enter neither the kept
    // results, nor their node count's best, nor the Pareto front; so every list is the same.
    for (const char* name : {"qwen3-235b-h100", "mixtral-h100"}) {
      CAPTURE(name);
      const SpacePlan space = load_space(name);
      // Two planners: one planner answers the same question from its cache.
      Planner planner(space.hardware, space.model), other(space.hardware, space.model);
      SearchOptions on;
      on.threads = 2;
      on.top = 10;
      SearchOptions off = on;
      off.prune = false;
      const SearchResult a = planner.search(space.space, on);
      const SearchResult b = other.search(space.space, off);
      CHECK(a.pruned > 0);
      CHECK(b.pruned == 0);
      CHECK(a.feasible == b.feasible);
      CHECK(a.evaluated == b.evaluated);
      auto same = [](const std::vector<Estimate>& x, const std::vector<Estimate>& y) {
        REQUIRE(x.size() == y.size());
        for (std::size_t i = 0; i < x.size(); ++i) {
          CHECK(x[i].step_time_s == y[i].step_time_s);
          CHECK(x[i].memory_bytes.total == y[i].memory_bytes.total);
          CHECK(!better(x[i], y[i], Objective::Tgs));
          CHECK(!better(y[i], x[i], Objective::Tgs));
        }
      };
      REQUIRE(a.best.size() == 10);
      same(a.best, b.best);
      same(a.pareto, b.pareto);
      same(a.best_per_nodes, b.best_per_nodes);
    }
  }

  TEST_CASE("`auto` enumerates every value of cp, etp, zero, optimizer, offload, precision, recompute") {
    // Inner (training) choices multiply the candidates: zero 0-3 (x4), three optimizers (x3),
    // each offload on and off (x2), BF16 and FP8 on H100 (x2). Absent keys keep one value.
    SpacePlan space = load_space("mixtral-h100");
    space.space.nodes.values = {8};
    space.space.precision.values = {Precision::Bf16};  // zero [1], optimizer [adam] in the file
    Planner planner(space.hardware, space.model);
    SearchOptions one;
    one.threads = 1;
    one.top = 1;
    one.resimulate = 0;
    auto candidates = [&](const SearchSpace& sp) { return planner.search(sp, one).candidates; };
    const std::size_t base = candidates(space.space);
    REQUIRE(space.space.zero.values.size() == 1);
    SearchSpace sp = space.space;
    sp.zero.auto_values = true;
    CHECK(candidates(sp) == 4 * base);
    sp = space.space;
    sp.optimizer.auto_values = true;
    CHECK(candidates(sp) == 3 * base);
    sp = space.space;
    sp.optimizer_offload.auto_values = true;
    sp.activation_offload.auto_values = true;
    CHECK(candidates(sp) == 4 * base);
    sp = space.space;
    sp.precision.auto_values = true;
    CHECK(candidates(sp) == 2 * base);
    // FP8 parameters: with BF16 and FP8 tried, true only beside FP8 (3 training choices, not 4)
    sp.fp8_params.auto_values = true;
    CHECK(candidates(sp) == 3 * base);
    // recompute: none, selective, full, op; by module each of core_attn, layernorm, moe,
    // moe_act (Mixtral: GQA, every FFN a MoE without shared experts) and all four: 9
    sp = space.space;
    sp.recompute = {};
    sp.recompute.values.push_back(Recompute{});
    const std::size_t one_rc = candidates(sp);
    sp.recompute.auto_values = true;
    CHECK(candidates(sp) == 9 * one_rc);
    // cp and etp: auto tries more than the absent key's 1
    sp = space.space;
    sp.cp.auto_values = true;
    CHECK(candidates(sp) > base);
    sp = space.space;
    sp.etp.auto_values = true;
    CHECK(candidates(sp) > base);
    // a space file that leaves cp and etp out means 1
    const SearchSpace parsed = parse_search_space("hardware: h100-sxm-ib\nmodel: mixtral-8x7b\nnodes: 8\n"
                                                  "training: {micro_batch: 1, global_batch: 64}\n", "space.yaml");
    CHECK_FALSE(parsed.cp.auto_values);
    CHECK(parsed.cp.values == std::vector<int>{1});
    CHECK(parsed.etp.values == std::vector<int>{1});
    CHECK(parsed.pp.auto_values);
  }

  TEST_CASE("hybrid sharding: states sharded inside a replica, the shard's gradients all-reduced across replicas") {
    // torch FSDP HYBRID_SHARD as IBM's fms-fsdp runs Llama 2 7B; here Llama 3 70B (validation/fms-fsdp-*-hsdp-*):
    // 96 ranks as 12 replicas of 8 (one node each). ZeRO-3 keeps 1/8 of the weights, gradients
    // and optimizer states instead of 1/96: each part 12 x. Without overlap a step is, per
    // replica of 8 neighbouring ranks, the gradients' reduce-scatter (FP32: 4 B x P), the
    // all-reduce of a rank's 1/8 of them over the 12 replicas (ranks 8 apart), and the updated
    // parameters' all-gather (BF16: 2 B x P), plus two all-gathers per micro-batch (forward and
    // backward), all inside the node.
    const HardwareSpec h100 = load_hardware("h100-sxm-ib");
    const ModelSpec llama = load_model("llama3-70b");
    const std::string text = "nodes: 12\nparallel: {tp: 1, pp: 1, dp: 96}\n"
                             "training: {micro_batch: 2, global_batch: 192, zero: 3}\noverlap: {dp: false}\n";
    const Strategy full = parse_strategy(text, "full.yaml", h100, llama);
    Strategy hybrid = full;
    hybrid.parallel.dp_replicate = 12;
    REQUIRE(check_rules(hybrid, h100, llama).empty());
    const Evaluation a = Planner(h100, llama).explain(full);
    const Evaluation b = Planner(h100, llama).explain(hybrid);
    const StageMemory& fa = a.memory.stages[0];
    const StageMemory& fb = b.memory.stages[0];
    CHECK(fb.optimizer_states == doctest::Approx(12 * fa.optimizer_states));
    CHECK(fb.gradients == doctest::Approx(12 * fa.gradients));
    CHECK(fb.weights == doctest::Approx(12 * fa.weights));
    const double P = fb.dense_params;
    auto t = [&](Collective op, int size, long long stride, double bytes) {
      return cost::collective(h100, op, bytes, cost::place(h100, size, stride, false)).time_s;
    };
    const double sync = t(Collective::ReduceScatter, 8, 1, 4 * P) + t(Collective::AllReduce, 12, 8, 4 * P / 8) +
                        t(Collective::AllGather, 8, 1, 2 * P);
    const double gathers = b.estimate.micro_batches * 2 * t(Collective::AllGather, 8, 1, 2 * P);
    CHECK(b.estimate.time_s.dp_comm == doctest::Approx(sync + gathers).epsilon(1e-9));
    // Equal replicas, each sharded.
    Strategy uneven = hybrid;
    uneven.parallel.dp_replicate = 7;
    std::vector<RuleViolation> v = check_rules(uneven, h100, llama);
    REQUIRE(v.size() == 1);
    CHECK(v[0].rule == "dp_replicate");
    Strategy plain = hybrid;
    plain.training.zero = 0;
    v = check_rules(plain, h100, llama);
    REQUIRE(v.size() == 1);
    CHECK(v[0].rule == "dp_replicate");
    // The strategy file spells it under parallel.
    const Strategy parsed = parse_strategy("nodes: 12\nparallel: {tp: 1, pp: 1, dp: 96, dp_replicate: 12}\n"
                                           "training: {micro_batch: 2, global_batch: 192, zero: 3}\n",
                                           "hsdp.yaml", h100, llama);
    CHECK(parsed.parallel.dp_replicate == 12);
  }

  TEST_CASE("layer offload: the copies hide under each pass's compute, the excess is exposed") {
    // Llama 3 70B on 64 GB200 (Megatron-FSDP as ZeRO-3, MBS 2, 2 micro-batches): 40 of the 80
    // layers offloaded (hardware/gb200-nvl72.yaml: NVLink-C2C 225 GB/s per GPU per direction).
    // Half of a set is ~156 GB, 0.7 s each way, under a forward of ~1.2 s: nothing exposed. On a
    // 10 GB/s host link each direction takes C = bytes / 10 GB/s and exposes C - F in the
    // forward and C - (B + W) in the backward, per micro-batch.
    const HardwareSpec gb = load_hardware("gb200-nvl72");
    const ModelSpec llama = load_model("llama3-70b");
    const std::string text = "nodes: 16\nparallel: {tp: 1, pp: 1, dp: 64}\n"
                             "training: {micro_batch: 2, global_batch: 256, zero: 3, offload_layers: 40}\n";
    const Strategy s = parse_strategy(text, "offload.yaml", gb, llama);
    REQUIRE(s.training.offload_layers == 40);
    const Evaluation ev = Planner(gb, llama).explain(s);
    const double bytes = ev.memory.stages[0].offloaded_activations;
    CHECK(bytes > 100e9);
    CHECK(bytes / 225e9 < ev.estimate.stage_f_s);
    CHECK(ev.estimate.time_s.offload == 0);
    HardwareSpec slow = gb;
    slow.host.offload_bw_bytes_per_s = 10e9;
    const Estimate e = Planner(slow, llama).evaluate(s);
    const double c = bytes / 10e9;
    REQUIRE(c > e.stage_b_s + e.stage_w_s);
    CHECK(e.micro_batches == 2);
    CHECK(e.time_s.offload == doctest::Approx(2 * ((c - e.stage_f_s) + (c - e.stage_b_s - e.stage_w_s))));
    // Megatron-Core refuses it with a pipeline, and for every layer of the rank.
    Strategy piped = s;
    piped.parallel.pp = 2;
    piped.parallel.dp = 32;
    const std::vector<RuleViolation> v = check_rules(piped, gb, llama);
    REQUIRE(v.size() == 1);
    CHECK(v[0].rule == "offload_layers_pp");
    Strategy all = s;
    all.training.offload_layers = 80;
    const std::vector<RuleViolation> w = check_rules(all, gb, llama);
    REQUIRE(w.size() == 1);
    CHECK(w[0].rule == "offload_layers");
  }

  TEST_CASE("recompute_layers: N of each chunk's layers recompute, the step grows by N / L of full recompute") {
    // Megatron-LM --recompute-method block --recompute-num-layers N (Megatron-Bridge's Llama 3
    // 8B H100 FP8 preset: 5 of 32). One device's pipeline without DP: the step is the micro-
    // batches times the sum of the layers' times plus what no layer changes, so recomputing
    // N of the L layers adds N / L of what recomputing all of them adds, and HFU's recomputed
    // FLOP (HFU x step - MFU x step) are N / L of full recompute's.
    const HardwareSpec hw = load_hardware("h100-sxm-ib");
    const ModelSpec llama = load_model("llama3-70b");
    auto run = [&](const char* training) {
      const std::string text = std::string("nodes: 1\nparallel: {tp: 8, pp: 1, dp: 1}\ntraining: {micro_batch: 1, "
                                           "global_batch: 4, ") + training + "}\n";
      return Planner(hw, llama).evaluate(parse_strategy(text, "rl.yaml", hw, llama));
    };
    const Estimate none = run("recompute: none");
    const Estimate full = run("recompute: full");
    const Estimate part = run("recompute: full, recompute_layers: 20");
    REQUIRE(part.strategy.training.recompute_layers == 20);
    REQUIRE(full.step_time_s > none.step_time_s);
    CHECK(part.step_time_s - none.step_time_s == doctest::Approx((full.step_time_s - none.step_time_s) * 20 / 80));
    auto recomputed = [](const Estimate& e) { return (e.hfu - e.mfu) * e.step_time_s; };
    CHECK(recomputed(part) == doctest::Approx(recomputed(full) * 20 / 80));
    // More than a chunk holds: every layer.
    CHECK(run("recompute: full, recompute_layers: 80").step_time_s == doctest::Approx(full.step_time_s));
    // The breakdown lists the 20 recomputing layers and the 60 others, those without recompute time.
    const Evaluation ev = Planner(hw, llama).explain(part.strategy);
    REQUIRE(ev.compute.layers.size() >= 2);
    CHECK(ev.compute.layers[0].kind == "dense");
    CHECK(ev.compute.layers[0].count == 20);
    CHECK(ev.compute.layers[0].recompute_s > 0);
    CHECK(ev.compute.layers[1].kind == "dense");
    CHECK(ev.compute.layers[1].count == 60);
    CHECK(ev.compute.layers[1].recompute_skipped);
    CHECK(ev.compute.layers[1].recompute_s == 0);
    CHECK(ev.compute.layers[1].backward_s == doctest::Approx(ev.compute.layers[0].backward_s - ev.compute.layers[0].recompute_s));
    // Interleaved, PP4 x VPP2: 8 chunks of 10 layers, 3 of each recompute, 24 of 80.
    auto piped = [&](const char* training) {
      const std::string text = std::string("nodes: 4\nparallel: {tp: 8, pp: 4, dp: 1, vpp: 2}\nschedule: interleaved\n"
                                           "training: {micro_batch: 1, global_batch: 8, ") + training + "}\n";
      return Planner(hw, llama).evaluate(parse_strategy(text, "rl.yaml", hw, llama));
    };
    const Estimate pf = piped("recompute: full"), pn = piped("recompute: none"), p3 = piped("recompute: full, recompute_layers: 3");
    CHECK(recomputed(p3) == doctest::Approx(recomputed(pf) * 24 / 80));
    CHECK(p3.step_time_s > pn.step_time_s);
    CHECK(p3.step_time_s < pf.step_time_s);
    // It counts layers that recompute: with none it is refused (exit 2 from the CLI).
    Strategy bad = part.strategy;
    bad.training.recompute = Recompute{};
    const std::vector<RuleViolation> v = check_rules(bad, hw, llama);
    REQUIRE(v.size() == 1);
    CHECK(v[0].rule == "recompute_layers");
    CHECK(v[0].key == "training.recompute_layers");
  }

  TEST_CASE("recompute_layers in a search: each value for the candidates that recompute, none repeated") {
    // [0, 20, 80] with none and full at PP1 (one chunk of 80 layers): none once; full with
    // every layer (0), with 20; 80 covers every layer of the chunk, the same as 0, so it is
    // not a candidate of its own.
    const std::string text = "hardware: h100-sxm-ib\nmodel: llama3-70b\nnodes: [1]\nparallel: {tp: [8], pp: [1], cp: [1], sp: [false]}\n"
                             "training: {micro_batch: [1], global_batch: [4], recompute: [none, full], recompute_layers: [0, 20, 80]}\n"
                             "schedule: [1f1b]\n";
    const SearchSpace sp = parse_search_space(text, "rl-space.yaml");
    Planner planner(load_hardware("h100-sxm-ib"), load_model("llama3-70b"));
    SearchOptions o;
    o.keep_all = true;
    o.resimulate = 0;
    std::multiset<std::pair<int, int>> seen;  // (mode, layers)
    for (const Estimate& e : planner.search(sp, o).all)
      seen.insert({static_cast<int>(e.strategy.training.recompute.mode), e.strategy.training.recompute_layers});
    const int none = static_cast<int>(RecomputeMode::None), full = static_cast<int>(RecomputeMode::Full);
    CHECK(seen == std::multiset<std::pair<int, int>>{{none, 0}, {full, 0}, {full, 20}});
    // With PP4 (chunks of 20) 20 repeats 0 as well.
    const std::string piped = "hardware: h100-sxm-ib\nmodel: llama3-70b\nnodes: [4]\nparallel: {tp: [8], pp: [4], cp: [1], sp: [false]}\n"
                              "training: {micro_batch: [1], global_batch: [16], recompute: [full], recompute_layers: [0, 5, 20]}\n"
                              "schedule: [1f1b]\n";
    std::multiset<int> layers;
    for (const Estimate& e : planner.search(parse_search_space(piped, "rl-pp.yaml"), o).all)
      layers.insert(e.strategy.training.recompute_layers);
    CHECK(layers == std::multiset<int>{0, 5});
  }

  TEST_CASE("EP overlap without a pipeline pairs a micro-batch's forward with the previous one's backward") {
    // Megatron-Core's combined_1f1b_schedule_for_no_pipelining (megatron/core/pipeline_parallel/
    // combined_1f1b.py): at pp 1 the overlap needs a second micro-batch in the step. With one
    // micro-batch (global 8 = dp 8 x mb 1) overlap.ep changes nothing; with two (global 16)
    // the EP time is priced by the overlap rule instead of added whole.
    const HardwareSpec hw = load_hardware("h100-sxm-ib");
    const ModelSpec mix = load_model("mixtral-8x7b");
    auto ep_time = [&](int global, bool overlap) {
      const std::string text = "nodes: 1\nparallel: {tp: 1, pp: 1, dp: 8, ep: 8}\ntraining: {micro_batch: 1, global_batch: " +
                               std::to_string(global) + ", zero: 1}\nmoe: {dispatch: alltoall}\noverlap: {ep: " +
                               (overlap ? "true" : "false") + "}\n";
      return Planner(hw, mix).evaluate(parse_strategy(text, "ep1.yaml", hw, mix)).time_s.ep_comm;
    };
    REQUIRE(ep_time(8, false) > 0);
    CHECK(ep_time(8, true) == doctest::Approx(ep_time(8, false)));
    CHECK(ep_time(16, true) != doctest::Approx(ep_time(16, false)));
  }

  TEST_CASE("tp auto: powers of two up to the scale-up domain, not the node") {
    // hardware/gb200-nvl72.yaml: 4-GPU trays on a 72-GPU NVLink domain -> tp 1..64;
    // h100-sxm-ib: the node is the domain (8 GPUs) -> tp 1..8. Llama 3 405B's 128 heads and 8
    // KV heads allow every power of two to 64 (kv_heads_tp: replicas when tp > 8).
    auto tps = [](const char* hw, int nodes) {
      const std::string text = std::string("hardware: ") + hw + "\nmodel: llama3-405b\nnodes: [" +
                               std::to_string(nodes) + "]\nparallel: {tp: auto, pp: 1, cp: 1}\n"
                               "training: {micro_batch: [1], global_batch: [64], recompute: [full]}\n"
                               "schedule: [1f1b]\n";
      const SearchSpace sp = parse_search_space(text, "tp.yaml");
      Planner planner(load_hardware(hw), load_model("llama3-405b"));
      SearchOptions o;
      o.keep_all = true;
      o.resimulate = 0;
      std::set<int> seen;
      for (const Estimate& e : planner.search(sp, o).all) seen.insert(e.strategy.parallel.tp);
      return seen;
    };
    CHECK(tps("gb200-nvl72", 16) == std::set<int>{1, 2, 4, 8, 16, 32, 64});
    CHECK(tps("h100-sxm-ib", 8) == std::set<int>{1, 2, 4, 8});
  }

  TEST_CASE("the Pareto front: no member is dominated by another") {
    SpacePlan space = load_space("default");
    Planner planner(space.hardware, space.model);
    SearchResult r = planner.search(space.space, SearchOptions{});
    REQUIRE_FALSE(r.pareto.empty());
    for (const Estimate& a : r.pareto) {
      for (const Estimate& b : r.pareto) {
        if (&a == &b) continue;
        const bool dominates = b.tokens_per_device_per_s >= a.tokens_per_device_per_s &&
                               b.memory_bytes.capacity - b.memory_bytes.total >=
                                   a.memory_bytes.capacity - a.memory_bytes.total &&
                               b.strategy.nodes <= a.strategy.nodes &&
                               (b.tokens_per_device_per_s > a.tokens_per_device_per_s ||
                                b.memory_bytes.total < a.memory_bytes.total || b.strategy.nodes < a.strategy.nodes);
        CHECK_FALSE(dominates);
      }
    }
  }
}

TEST_SUITE("search.dp_sync") {
  // GPT-3 175B (tied embeddings, vocab 50257, h 12288) at TP8 on DGX A100 nodes: the groups
  // below put one rank on each of two nodes, so each collective is a two-rank exchange over
  // the node's NIC (a100-sxm-ib: 25 GB/s per GPU, its size curve, 2.8 us a hop under one
  // leaf). A two-rank ring all-reduce moves S once each way after a reduce-scatter of S / 2:
  // 2 (n - 1)/n S = S over the link in 2 (n - 1) = 2 hops; a reduce-scatter or all-gather
  // moves S / 2 in one hop.
  Strategy gpt3_two_nodes(int pp, int dp) {
    Strategy s;
    s.nodes = 2;
    s.parallel.tp = 8;
    s.parallel.pp = pp;
    s.parallel.dp = dp;
    s.training.micro_batch = 1;
    s.training.global_batch = 4;
    s.overlap.dp = false;
    return s;
  }

  TEST_CASE("tied embeddings on two pipeline ranks: the table's FP32 gradient all-reduced between them") {
    const HardwareSpec hw = load_hardware("a100-sxm-ib");
    const TierSpec& ib = hw.tiers.back();
    const Planner planner(hw, load_model("gpt3-175b"));
    // PP2, no DP: the only DP-sync term is the table's gradient, 4 B x 50257 / 8 x 12288.
    const Strategy s = gpt3_two_nodes(2, 1);
    const double S = 4.0 * 50257 / 8 * 12288;
    CHECK(planner.evaluate(s).time_s.dp_comm == doctest::Approx(S / cost::tier_bandwidth(ib, S) + 2 * 2.8e-6));
    // BF16 main gradients halve it.
    Strategy bf16 = s;
    bf16.training.bf16_grads = true;
    CHECK(planner.evaluate(bf16).time_s.dp_comm ==
          doctest::Approx(S / 2 / cost::tier_bandwidth(ib, S / 2) + 2 * 2.8e-6));
    // DualPipe's V holds the first and the last stage on one rank: nothing to exchange.
    Strategy v = s;
    v.schedule = Schedule::DualPipe;
    CHECK(planner.evaluate(v).time_s.dp_comm == 0);
    // Untied embeddings (Llama) have two tables.
    ModelSpec untied = load_model("gpt3-175b");
    untied.tied_embeddings = false;
    CHECK(Planner(hw, untied).evaluate(s).time_s.dp_comm == 0);
  }

  TEST_CASE("grad_reduce all_reduce: ZeRO-1's gradients all-reduced, then the parameters gathered") {
    // DP2 over two nodes, no overlap: FP32 gradients of the rank's P parameters, then its BF16
    // parameters gathered. Reduce-scatter (Megatron's distributed optimizer): 4P / 2 in a
    // hop; all-reduce (DeepSpeed's BF16 optimizer): 4P in two hops; all-gather 2P / 2 in one.
    const HardwareSpec hw = load_hardware("a100-sxm-ib");
    const TierSpec& ib = hw.tiers.back();
    const Planner planner(hw, load_model("gpt3-175b"));
    Strategy s = gpt3_two_nodes(1, 2);
    const Evaluation rs = planner.explain(s);
    const double P = rs.memory.stages.at(0).dense_params;
    const double gather = P / cost::tier_bandwidth(ib, P) + 2.8e-6;
    CHECK(rs.estimate.time_s.dp_comm == doctest::Approx(2 * P / cost::tier_bandwidth(ib, 2 * P) + 2.8e-6 + gather));
    s.training.grad_all_reduce = true;
    CHECK(planner.evaluate(s).time_s.dp_comm ==
          doctest::Approx(4 * P / cost::tier_bandwidth(ib, 4 * P) + 2 * 2.8e-6 + gather));
    // Without ZeRO the all-reduce is all there is, whatever grad_reduce says.
    s.training.zero = 0;
    const double ar = 4 * P / cost::tier_bandwidth(ib, 4 * P) + 2 * 2.8e-6;
    CHECK(planner.evaluate(s).time_s.dp_comm == doctest::Approx(ar));
    s.training.grad_all_reduce = false;
    CHECK(planner.evaluate(s).time_s.dp_comm == doctest::Approx(ar));
  }
}

TEST_SUITE("planner.spaces") {
  TEST_CASE("every shipped space searches to feasible plans; DeepSeek-V3's own layout is among them") {
    for (const char* name : {"default", "deepseek-v3-h800-cluster", "llama3-70b-h100", "gpt3-175b-a100", "mixtral-h100", "qwen3-235b-h100"}) {
      CAPTURE(name);
      SpacePlan space = load_space(name);
      Planner planner(space.hardware, space.model);
      SearchOptions o;
      o.keep_all = std::string(name) == "deepseek-v3-h800-cluster";
      const SearchResult r = planner.search(space.space, o);
      CHECK(r.feasible > 0);
      CHECK_FALSE(r.best.empty());
      if (!o.keep_all) continue;
      // DeepSeek-V3 report sec. 3.2-3.3: 2048 H800 (256 nodes), TP1 PP16 EP64 DualPipe, micro
      // batch 1, recompute of RMSNorm and the MLA up-projections, FP8, BF16 moments.
      bool found = false;
      for (const Estimate& e : r.all) {
        const Strategy& s = e.strategy;
        if (s.nodes == 256 && s.parallel.tp == 1 && s.parallel.pp == 16 && s.parallel.ep == 64 &&
            s.schedule == Schedule::DualPipe && s.training.micro_batch == 1 &&
            s.training.recompute.mode == RecomputeMode::Modules && s.training.optimizer == Optimizer::AdamBf16 &&
            s.moe.dispatch == Dispatch::DeepEp) {
          found = found || e.feasible;
        }
      }
      CHECK(found);
    }
  }
}

TEST_SUITE("search.streaming") {
  TEST_CASE("max_candidates: a prefix of the enumeration, the rest counted as left out") {
    SpacePlan space = load_space("default");
    space.space.nodes.values = {16};
    Planner planner(space.hardware, space.model);
    SearchOptions all;
    all.threads = 1;
    const SearchResult whole = planner.search(space.space, all);
    REQUIRE(whole.left_out == 0);
    SearchOptions capped = all;
    capped.max_candidates = whole.candidates / 4;
    const SearchResult part = planner.search(space.space, capped);
    CHECK(part.left_out > 0);
    // Whole layouts are taken while the count is under the cap: the evaluated and rejected
    // candidates plus those left out make up the space.
    std::size_t rejected = 0;
    for (const RuleCount& c : part.rejected) rejected += c.rule == "memory" ? 0 : c.count;
    CHECK(part.evaluated + rejected + part.left_out == whole.candidates);
    CHECK(part.evaluated < whole.evaluated);
    // Single-threaded, layouts come in order: the capped search is the same at 1 and 2 threads
    // only up to which layouts each thread took, so compare counts, not rankings, across them.
    SearchOptions capped2 = capped;
    capped2.threads = 2;
    // With a progress callback: the calling thread stops waiting when the workers stop, not
    // when every candidate is done (a capped search never gets there).
    std::size_t last_done = 0;
    capped2.progress = [&](std::size_t done, std::size_t total) {
      last_done = done;
      CHECK(done <= total);
    };
    const SearchResult part2 = planner.search(space.space, capped2);
    CHECK(part2.left_out > 0);
  }

  TEST_CASE("results are identical at 1, 2 and 4 threads") {
    SpacePlan space = load_space("default");
    Planner planner(space.hardware, space.model);
    std::vector<SearchResult> rs;
    for (int t : {1, 2, 4}) {
      SearchOptions o;
      o.threads = t;
      o.top = 10 + t;  // distinct questions: not answered from the cache
      rs.push_back(planner.search(space.space, o));
    }
    for (std::size_t k = 1; k < rs.size(); ++k) {
      CHECK(rs[k].evaluated == rs[0].evaluated);
      CHECK(rs[k].feasible == rs[0].feasible);
      REQUIRE(rs[k].pareto.size() == rs[0].pareto.size());
      for (std::size_t i = 0; i < 10; ++i) {
        CHECK(rs[k].best[i].step_time_s == rs[0].best[i].step_time_s);
        CHECK(strategy_json(Plan{space.hardware, space.model, rs[k].best[i].strategy}) ==
              strategy_json(Plan{space.hardware, space.model, rs[0].best[i].strategy}));
      }
    }
  }
}

TEST_SUITE("search.properties") {
  TEST_CASE("every evaluated strategy: finite outputs, memory parts sum to the total, time terms to the step") {
    // The default space and DeepSeek's cluster space, every strategy they evaluate (feasible
    // or not): the identities the reports rely on.
    for (const char* name : {"default", "deepseek-v3-h800-cluster"}) {
      CAPTURE(name);
      SpacePlan space = load_space(name);
      Planner planner(space.hardware, space.model);
      SearchOptions o;
      o.keep_all = true;
      o.resimulate = 0;
      const SearchResult r = planner.search(space.space, o);
      REQUIRE(r.all.size() == r.evaluated);
      std::size_t checked = 0;
      for (std::size_t i = 0; i < r.all.size(); i += 7) {  // a regular sample keeps it quick
        const Estimate& e = r.all[i];
        const MemoryBreakdown& m = e.memory_bytes;
        for (double v : {m.weights, m.gradients, m.optimizer_states, m.activations, m.buffers, m.reserve, m.total}) {
          REQUIRE(std::isfinite(v));
          CHECK(v >= 0);
        }
        CHECK(m.weights + m.gradients + m.optimizer_states + m.activations + m.buffers + m.reserve ==
              doctest::Approx(m.total).epsilon(1e-9));
        if (!e.feasible && e.step_time_s == 0) continue;  // pruned before its step time
        const TimeBreakdown& t = e.time_s;
        REQUIRE(std::isfinite(e.step_time_s));
        CHECK(e.step_time_s > 0);
        CHECK(t.exposed_comm == doctest::Approx(t.tp_comm + t.ep_comm + t.pp_comm + t.dp_comm).epsilon(1e-9));
        CHECK(e.step_time_s ==
              doctest::Approx(t.compute + t.exposed_comm + t.pp_bubble + t.optimizer + t.queueing + t.offload).epsilon(1e-9));
        CHECK(std::isfinite(e.tokens_per_device_per_s));
        CHECK(e.mfu > 0);
        CHECK(e.mfu < 1);
        ++checked;
      }
      CHECK(checked > 100);
    }
  }
}

namespace {

// Every candidate of `sp` on the space's hardware and model, each with its estimate.
SearchResult search_all(const SpacePlan& space, const SearchSpace& sp) {
  Planner planner(space.hardware, space.model);
  SearchOptions o;
  o.keep_all = true;
  return planner.search(sp, o);
}

}  // namespace

TEST_SUITE("search.planner") {
  TEST_CASE("the search's estimate of a candidate is evaluate's closed form, to the last bit") {
    // The search reuses a layout's rule check, PP / DP communication and bottleneck rank
    // across the candidates that share what they depend on; evaluate computes each afresh.
    SpacePlan space = load_space("default");
    space.space.nodes.values = {16, 32};
    space.hardware.device.memory_bytes *= 1000;  // every candidate fits: every one is timed
    space.hardware.host.memory_bytes *= 1000;
    Planner planner(space.hardware, space.model);
    SearchOptions o;
    o.keep_all = true;
    o.resimulate = 0;
    o.prune = false;
    const SearchResult r = planner.search(space.space, o);
    REQUIRE(r.all.size() > 1000);
    std::size_t checked = 0;
    for (std::size_t i = 0; i < r.all.size(); i += 11) {
      const Estimate& e = r.all[i];
      const Estimate full = planner.evaluate(e.strategy);
      CHECK(e.step_time_s == full.closed_form_step_s);
      CHECK(e.time_s.dp_comm == full.time_s.dp_comm);
      CHECK(e.time_s.compute == full.time_s.compute);
      CHECK(e.memory_bytes.total == full.memory_bytes.total);
      CHECK(e.memory_bytes.host_per_node == full.memory_bytes.host_per_node);
      ++checked;
    }
    CHECK(checked > 100);
  }

  TEST_CASE("inside a layout the rules read only sequence parallel, micro-batch, global batch and chunking") {
    // The search checks the rules once per layout and Enumeration::rule_key: any other field a
    // space varies inside a layout must leave the first broken rule as it is.
    const SpacePlan space = load_space("default");
    Strategy base;
    base.nodes = 16;
    base.parallel.tp = 1;
    base.parallel.pp = 16;
    base.parallel.dp = 8;
    base.parallel.ep = 16;
    base.ep_over_dies = true;
    base.training.global_batch = 960;
    for (int mb : {1, 3}) {
      for (int gbs : {960, 100}) {
        // 960 is a multiple of dp x mb = 8 or 24; 100 of neither (rule batch_dp)
        Strategy s = base;
        s.training.micro_batch = mb;
        s.training.global_batch = gbs;
        const char* rule = first_broken_rule(s, space.hardware, space.model);
        CHECK(std::string(rule != nullptr ? rule : "") == (gbs == 100 ? "batch_dp" : ""));
        for (int variant = 0; variant < 8; ++variant) {
          Strategy v = s;
          v.training.recompute.mode = variant & 1 ? RecomputeMode::Full : RecomputeMode::None;
          v.training.zero = variant & 2 ? 3 : 1;
          v.training.optimizer = variant & 4 ? Optimizer::Adam8bit : Optimizer::Adam;
          v.training.optimizer_offload = variant & 1;
          v.training.activation_offload = variant & 2;
          v.training.precision = variant & 4 ? Precision::Fp8 : Precision::Bf16;
          v.training.fp8_params = variant & 4;
          v.moe.dispatch = variant & 1 ? Dispatch::DeepEp : Dispatch::AllGather;
          v.moe.routing = variant & 2 ? Routing::Balanced : Routing::Uniform;
          CAPTURE(variant);
          const char* got = first_broken_rule(v, space.hardware, space.model);
          CHECK(std::string(got != nullptr ? got : "") == std::string(rule != nullptr ? rule : ""));
        }
      }
    }
  }

  TEST_CASE("fp8_params is a search dimension beside FP8: 2 B less per linear weight, and 70B fits on 16 H100") {
    // Llama 3 70B on 2 H100 nodes, TP 8 PP 2 DP 1, FP8 GEMMs, ZeRO-1: 40 layers per stage,
    // each with the linear weights q and o (h^2 each), k and v (h x 1024 each), gate, up and
    // down (h x 28672 each), h = 8192, split over TP 8. Without FP8 parameters they weigh 2 B
    // (BF16) + 1 B (FP8 copy), with them 1 B. Per rank 40 x 855.6 M / 8 = 4.28 B linear
    // weights, 19 B each with Adam and FP32 gradients over DP 1: 81 GB, over the 80 GiB of an
    // H100 with the rest; FP8 parameters take 8.6 GB off and the plan fits.
    const char* yaml =
        "hardware: h100-sxm-ib\nmodel: llama3-70b\nnodes: 2\n"
        "parallel: {tp: 8, pp: 2, sp: true}\n"
        "training: {micro_batch: 1, global_batch: 16, precision: fp8, recompute: full, fp8_params: auto}\n"
        "schedule: [1f1b]\ntop: 100\n";
    const SpacePlan space = parse_space(yaml, "fp8p.space.yaml");
    const SearchResult r = search_all(space, space.space);
    REQUIRE(r.all.size() == 2);
    const Estimate& off = r.all[0].strategy.training.fp8_params ? r.all[1] : r.all[0];
    const Estimate& on = r.all[0].strategy.training.fp8_params ? r.all[0] : r.all[1];
    REQUIRE(on.strategy.training.fp8_params);
    REQUIRE_FALSE(off.strategy.training.fp8_params);
    const double h = 8192;
    const double linear = 40 * (2 * h * h + 2 * h * 1024 + 3 * h * 28672) / 8;
    // (the layers' norm weights, 2 h per layer or 0.015% of the rest, go with them)
    CHECK(off.memory_bytes.weights - on.memory_bytes.weights == doctest::Approx(2 * linear).epsilon(5e-4));
    CHECK_FALSE(off.feasible);
    CHECK(on.feasible);
    CHECK(r.feasible == 1);
  }

  TEST_CASE("cp_comm is a search dimension where cp > 1") {
    // Llama 3 70B on 4 H100 nodes, TP 8, CP 1 or 2: with `cp_comm: auto` every CP 2 layout
    // comes in the four schemes, CP 1 once; without the key, p2p only.
    const char* yaml =
        "hardware: h100-sxm-ib\nmodel: llama3-70b\nnodes: 4\n"
        "parallel: {tp: 8, cp: [1, 2], pp: [2], sp: true}\n"
        "training: {micro_batch: 1, global_batch: 64, seq_len: 32768, recompute: full, cp_comm: auto}\n"
        "schedule: [1f1b]\ntop: 100\n";
    SpacePlan space = parse_space(yaml, "cp.space.yaml");
    const SearchResult r = search_all(space, space.space);
    std::map<int, int> schemes_cp2;
    int cp1 = 0;
    for (const Estimate& e : r.all) {
      if (e.strategy.parallel.cp == 2) ++schemes_cp2[static_cast<int>(e.strategy.training.cp_comm)];
      if (e.strategy.parallel.cp == 1) ++cp1;
    }
    CHECK(schemes_cp2.size() == 4);
    CHECK(cp1 == 1);
    space.space.cp_comm = Choice<CpComm>{};
    const SearchResult p2p = search_all(space, space.space);
    REQUIRE_FALSE(p2p.all.empty());
    for (const Estimate& e : p2p.all) CHECK(e.strategy.training.cp_comm == CpComm::P2p);
    CHECK(p2p.candidates < r.candidates);
  }
}
