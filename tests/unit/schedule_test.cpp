// The event simulation of the pipeline schedules: on uniform stages it reproduces the
// closed-form bubbles of the papers, its peak in-flight sets are the memory model's, and an
// uneven two-stage pipeline is timed as worked out by hand.

#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "paraplan/config.hpp"
#include "paraplan/planner.hpp"
#include "paraplan/report.hpp"
#include "config/pipeline_layout.hpp"
#include "schedule/layout.hpp"
#include "schedule/simulate.hpp"
#include "search/layer_costs.hpp"
#include "search/step.hpp"

using namespace paraplan;
using namespace paraplan::schedule;

namespace {

Pipeline uniform(int pp, int chunks, int m, double f, double b, double w) {
  Pipeline p;
  p.micro_batches = m;
  p.ranks.assign(static_cast<std::size_t>(pp), std::vector<ChunkTimes>(static_cast<std::size_t>(chunks), ChunkTimes{f, b, w}));
  return p;
}

// 1F1B over 4 stages of one layer each, 8 micro-batches, and given layer times F, B, W = 1,
// 2, 1: the step the first schedule test above times by hand.
struct UniformStep {
  HardwareSpec hw;
  ModelSpec m;
  Strategy s;
  search::LayerCosts c;
};

UniformStep uniform_step() {
  UniformStep u{load_hardware("h100-sxm-ib"), load_model("llama3-70b"), Strategy{}, search::LayerCosts{}};
  u.m.layers = 4;
  u.s.nodes = 4;
  u.s.parallel.tp = 8;
  u.s.parallel.pp = 4;
  u.s.schedule = Schedule::OneFOneB;
  u.s.training.micro_batch = 1;
  u.s.training.global_batch = 8;
  u.c.dense.f = 1.0;
  u.c.dense.b = 2.0;
  u.c.dense.w = 1.0;
  return u;
}

}  // namespace

TEST_SUITE("schedule.simulate") {
  TEST_CASE("1F1B: (m + p - 1)(F + B + W) (Narayanan et al. 2021), one autograd backward") {
    // B and W run as one backward: the input gradient leaves after both, so the backward
    // chain costs B + W per stage. p = 4, m = 8, F = 1, B = 2, W = 1: (8 + 3) x 4 = 44.
    const Simulation s = simulate(Schedule::OneFOneB, uniform(4, 1, 8, 1, 2, 1));
    REQUIRE(s.ok);
    CHECK(s.makespan == doctest::Approx(44.0));
    for (double busy : s.busy) CHECK(busy == doctest::Approx(32.0));
  }

  TEST_CASE("interleaved: the 1F1B bubble divided by v") {
    // Chunk F, B, W = 0.5, 1, 0.5; rank per micro-batch 2 x 2 = 4; bubble 3 x 4 / 2 = 6.
    const Simulation v2 = simulate(Schedule::Interleaved, uniform(4, 2, 8, 0.5, 1, 0.5));
    REQUIRE(v2.ok);
    CHECK(v2.makespan == doctest::Approx(8 * 4.0 + 3 * 4.0 / 2));
    // v = 3, chunk 1, 1, 1: rank 9 per micro-batch, bubble 3 x 9 / 3 = 9.
    const Simulation v3 = simulate(Schedule::Interleaved, uniform(4, 3, 8, 1, 1, 1));
    REQUIRE(v3.ok);
    CHECK(v3.makespan == doctest::Approx(8 * 9.0 + 9.0));
  }

  TEST_CASE("torch's interleaved time steps, each step's transfers waited on before the next") {
    // torch.distributed.pipelining's ScheduleInterleaved1F1B, p = 2, v = 2, m = 2 (stage
    // c p + r on rank r; _get_1f1b_rank_ops): rank 0's time steps are F0.0 F0.1 F2.0 F2.1,
    // three empty (two until its first backward can arrive, one before the cool-down's
    // first backward), B2.0 - B2.1 - B0.0 - B0.1; rank 1's are - F1.0 F1.1 - F3.0 B3.0 F3.1
    // B3.1 - B1.0 - B1.1. F = 1, B = 2, no transfer time. A step waits for the ranks it sends
    // to or receives from (a stage's output to the next stage's rank; the last forward and
    // the first backward send nothing): steps 0-3 end at 1, 2, 3, 4 (rank 1 idle at 0 and
    // 3, its partner's task sets the end); 4: F3.0 4-5 alone; 5: B3.0 5-7, rank 0 waits; 6:
    // F3.1 7-8 (rank 0 idle, no transfer: at 7); 7: B2.0 7-9 and B3.1 8-10 exchange, both
    // at 10; 9: B2.1 and B1.0 10-12; 11: B0.0 and B1.1 12-14; 13: B0.1 14-16. Makespan 16.
    Pipeline p = uniform(2, 2, 2, 1, 2, 0);
    p.lockstep = true;
    p.p2p_overlapped = false;
    Simulation s = simulate(Schedule::Interleaved, p);
    REQUIRE(s.ok);
    CHECK(s.makespan == doctest::Approx(16.0));
    for (double busy : s.busy) CHECK(busy == doctest::Approx(12.0));  // 4 x (1 + 2)
    // Transfers of 0.5 after every step with an exchange (0, 1, 2, 3, 5, 7, 9, 11): steps
    // end at 1.5, 3, 4.5, 6; F3.0 6-7; B3.0 7-9 -> 9.5; F3.1 9.5-10.5; B2.0 9.5-11.5 and
    // B3.1 10.5-12.5 -> 13; 13-15 -> 15.5; 15.5-17.5 -> 18; B0.0.1 18-20.
    p.p2p_s = 0.5;
    s = simulate(Schedule::Interleaved, p);
    REQUIRE(s.ok);
    CHECK(s.makespan == doctest::Approx(20.0));
    // Other schedules run as with transfers not overlapped (torch's single-stage 1F1B waits
    // each send with the next receive): the same makespan as overlap.pp false.
    Pipeline one = uniform(4, 1, 8, 1, 2, 1);
    one.p2p_s = 0.5;
    one.p2p_overlapped = false;
    const double blocking = simulate(Schedule::OneFOneB, one).makespan;
    one.lockstep = true;
    CHECK(simulate(Schedule::OneFOneB, one).makespan == doctest::Approx(blocking));
    // Five micro-batches on four ranks of eight chunks: torch's grid, built for whole rounds
    // of pp micro-batches, would run a task before its input arrives; that is reported, and
    // the caller keeps the closed form.
    Pipeline five = uniform(4, 8, 5, 1, 2, 0);
    five.lockstep = true;
    five.p2p_overlapped = false;
    const Simulation bad = simulate(Schedule::Interleaved, five);
    CHECK_FALSE(bad.ok);
    CHECK(bad.error.find("5 micro-batches on 4 ranks") != std::string::npos);
    // The strategy key: `overlap.pp: lockstep` is not overlapped and runs the time steps.
    const Plan plan = load_plan("deepseek-v3-h800", {"schedule=interleaved", "overlap.pp=lockstep"});
    CHECK(plan.strategy.overlap.pp_lockstep);
    CHECK_FALSE(plan.strategy.overlap.pp);
  }

  TEST_CASE("ZB-H1: (p - 1)(F + B - W), a third of 1F1B's bubble when F = B = W (Qi et al. 2023)") {
    const Simulation eq = simulate(Schedule::ZeroBubble, uniform(4, 1, 8, 1, 1, 1));
    REQUIRE(eq.ok);
    CHECK(eq.makespan == doctest::Approx(8 * 3.0 + 3 * 1.0));  // 1F1B's bubble would be 9
    const Simulation s = simulate(Schedule::ZeroBubble, uniform(4, 1, 8, 1, 2, 1));
    CHECK(s.makespan == doctest::Approx(8 * 4.0 + 3 * (1 + 2 - 1.0)));
  }

  TEST_CASE("DualPipe: (PP/2 - 1)(F&B + B - 3W) of the DualPipe README") {
    // The README's B is the whole backward (here B + W) and F&B = F + B + W. With F = B:
    // F, B, W = 1, 1, 1: README B = 2, F&B = 3, bubble (8/2 - 1)(3 + 2 - 3) = 6 on 8 ranks,
    // 32 micro-batches (16 per direction), each rank running 32 x 3 = 96 of work.
    const Simulation a = simulate(Schedule::DualPipe, uniform(8, 2, 32, 1, 1, 1));
    REQUIRE(a.ok);
    CHECK(a.makespan == doctest::Approx(96.0 + 6.0));
    // F, B, W = 2, 2, 1 on 4 ranks, 16 micro-batches: F&B = 5, README B = 3: (1)(5 + 3 - 3).
    const Simulation b = simulate(Schedule::DualPipe, uniform(4, 2, 16, 2, 2, 1));
    REQUIRE(b.ok);
    CHECK(b.makespan == doctest::Approx(16 * 5.0 + 5.0));
  }

  TEST_CASE("DualPipeV: DualPipe's bubble over 2 pp stages") {
    // 4 ranks = 8 stages: (8/2 - 1)(F&B + B - 3W); F, B, W = 1, 1, 0.5 per chunk: F&B = 2.5,
    // README B = 1.5: 3 (2.5 + 1.5 - 1.5) = 7.5; work 16 micro-batches x 2 chunks x 2.5 = 80.
    const Simulation s = simulate(Schedule::DualPipeV, uniform(4, 2, 16, 1, 1, 0.5));
    REQUIRE(s.ok);
    CHECK(s.makespan == doctest::Approx(80.0 + 7.5));
    const Simulation t = simulate(Schedule::DualPipeV, uniform(8, 2, 32, 2, 2, 1));
    REQUIRE(t.ok);
    CHECK(t.makespan == doctest::Approx(32 * 2 * 5.0 + 7 * (5 + 3 - 3.0)));
  }

  TEST_CASE("too few micro-batches for DualPipe is an error, not a wrong time") {
    const Simulation s = simulate(Schedule::DualPipe, uniform(8, 2, 8, 1, 1, 1));
    CHECK_FALSE(s.ok);
    CHECK(s.error.find("micro-batches") != std::string::npos);
  }

  TEST_CASE("peak in-flight sets are the memory model's") {
    Strategy st;
    st.parallel.pp = 4;
    for (Schedule sc : {Schedule::OneFOneB, Schedule::Interleaved, Schedule::DualPipe, Schedule::DualPipeV}) {
      st.schedule = sc;
      st.parallel.vpp = sc == Schedule::Interleaved ? 2 : 1;
      const int chunks = sc == Schedule::OneFOneB ? 1 : 2;
      const int m = 16;
      const Simulation s = simulate(sc, uniform(4, chunks, m, 1, 2, 1));
      REQUIRE(s.ok);
      for (int r = 0; r < 4; ++r) {
        CAPTURE(r);
        CHECK(s.peak_sets[static_cast<std::size_t>(r)] == doctest::Approx(in_flight_sets(st, r, m)));
      }
    }
  }

  TEST_CASE("an uneven two-stage 1F1B pipeline, timed by hand") {
    // Stage 0: F, B, W = 1, 1, 1; stage 1 (the head): 2, 2, 2; two micro-batches; send 0.5
    // beside compute. Rank 0: F0 [0, 1], F1 [1, 2]. Rank 1: F0 [1.5, 3.5], B0 + W0 [3.5, 7.5],
    // F1 [7.5, 9.5], B1 + W1 [9.5, 13.5]. Rank 0: B0 + W0 [8, 10] (gradient arrives 7.5 +
    // 0.5), B1 + W1 [14, 16]. Step 16; the closed form would give 2 x 6 + (2 - 1) x 6 = 18.
    Pipeline p;
    p.micro_batches = 2;
    p.p2p_s = 0.5;
    p.ranks = {{ChunkTimes{1, 1, 1}}, {ChunkTimes{2, 2, 2}}};
    const Simulation s = simulate(Schedule::OneFOneB, p, true);
    REQUIRE(s.ok);
    CHECK(s.makespan == doctest::Approx(16.0));
    CHECK(s.events.size() == 12);  // 2 ranks x 2 micro-batches x F, B, W
    // A blocking send occupies the sender: F0 on rank 0 ends at 1.5, rank 1 starts it at 2.
    p.p2p_overlapped = false;
    const Simulation b = simulate(Schedule::OneFOneB, p, true);
    REQUIRE(b.ok);
    CHECK(b.busy[0] == doctest::Approx(2 * (3 + 0.5)));  // its forwards send, the first stage's backward does not
    CHECK(b.busy[1] == doctest::Approx(2 * (6 + 0.5)));      // only its backward sends
  }
}

TEST_SUITE("schedule.step") {
  TEST_CASE("evaluate times the pipeline by the simulation; uniform stages agree with the closed form") {
    auto [hw, m, s, c] = uniform_step();
    const Estimate closed = search::evaluate_step(hw, m, s, c, MemoryEstimate{}, search::StrategyComm{}, true, false);
    const Estimate sim = search::evaluate_step(hw, m, s, c, MemoryEstimate{}, search::StrategyComm{}, true, true);
    CHECK_FALSE(closed.simulated);
    CHECK(sim.simulated);
    CHECK(sim.step_time_s == doctest::Approx(44.0));  // (8 + 3) x 4, as above
    CHECK(sim.closed_form_step_s == doctest::Approx(closed.step_time_s));
  }

  TEST_CASE("a schedule the simulation cannot run keeps the closed form, and the report says which") {
    // torch's interleaved grid is built for whole rounds of pp micro-batches: five on four
    // ranks would run a task before its input (schedule.simulate, above). Asked to simulate,
    // evaluate keeps the closed form and marks it; not asked (the search's fast estimate),
    // nothing failed and the report must not say it did.
    auto [hw, m, s, c] = uniform_step();
    m.layers = 32;
    s.parallel.vpp = 8;
    s.schedule = Schedule::Interleaved;
    s.training.global_batch = 5;
    s.overlap.pp = false;
    s.overlap.pp_lockstep = true;
    const Estimate fast = search::evaluate_step(hw, m, s, c, MemoryEstimate{}, search::StrategyComm{}, true, false);
    const Estimate asked = search::evaluate_step(hw, m, s, c, MemoryEstimate{}, search::StrategyComm{}, true, true);
    CHECK_FALSE(fast.simulated);
    CHECK_FALSE(fast.simulation_failed);
    CHECK_FALSE(asked.simulated);
    CHECK(asked.simulation_failed);
    CHECK(asked.step_time_s == doctest::Approx(fast.step_time_s));
    Plan plan;
    plan.strategy = s;
    const std::string failed = estimate_text(plan, asked), closed = estimate_text(plan, fast);
    CHECK(failed.find("could not run this schedule") != std::string::npos);
    CHECK(closed.find("could not run") == std::string::npos);
    CHECK(closed.find("timed by the closed form") != std::string::npos);
  }

  TEST_CASE("pipeline_runs: each run of the schedule fills and drains the pipeline") {
    // Gradient accumulation around the schedule (torchtitan, NeMo AutoModel): a step of m
    // micro-batches in R runs of m / R each takes R (m / R + p - 1)(F + B + W) =
    // (m + R (p - 1))(F + B + W). p = 4, m = 8, F + B + W = 4: R = 1 44 (above), R = 2
    // 2 x (4 + 3) x 4 = 56, R = 4 4 x (2 + 3) x 4 = 80; interleaved, v = 2 with chunk 0.5, 1,
    // 0.5 (rank 4 per micro-batch): R = 2, 2 x (4 x 4 + 3 x 4 / 2) = 44 (1 run: 38).
    auto [hw, m, s, c] = uniform_step();
    for (const auto& [runs, step] : {std::pair{1, 44.0}, {2, 56.0}, {4, 80.0}}) {
      s.training.pipeline_runs = runs;
      CAPTURE(runs);
      const Estimate closed = search::evaluate_step(hw, m, s, c, MemoryEstimate{}, search::StrategyComm{}, true, false);
      const Estimate sim = search::evaluate_step(hw, m, s, c, MemoryEstimate{}, search::StrategyComm{}, true, true);
      CHECK(sim.simulated);
      CHECK(sim.step_time_s == doctest::Approx(step));
      CHECK(closed.step_time_s == doctest::Approx(step));
      CHECK(sim.micro_batches == 8);  // the step's micro-batches, whatever the runs
      CHECK(sim.time_s.compute == doctest::Approx(8 * 4.0));
    }
    m.layers = 8;
    s.parallel.vpp = 2;
    s.schedule = Schedule::Interleaved;
    c.dense = {};
    c.dense.f = 0.5;
    c.dense.b = 1.0;
    c.dense.w = 0.5;
    s.training.pipeline_runs = 2;
    CHECK(search::evaluate_step(hw, m, s, c, MemoryEstimate{}, search::StrategyComm{}, true, true).step_time_s ==
          doctest::Approx(44.0));
    s.training.pipeline_runs = 1;
    CHECK(search::evaluate_step(hw, m, s, c, MemoryEstimate{}, search::StrategyComm{}, true, true).step_time_s ==
          doctest::Approx(38.0));
    // A run holds no more micro-batches in flight than it has: 1F1B's first stage min(p, m / R).
    s.schedule = Schedule::OneFOneB;
    s.parallel.vpp = 1;
    s.training.pipeline_runs = 4;
    CHECK(in_flight_sets(s, 0, run_micro_batches(s)) == doctest::Approx(2.0));
    s.training.pipeline_runs = 1;
    CHECK(in_flight_sets(s, 0, run_micro_batches(s)) == doctest::Approx(4.0));
  }

  TEST_CASE("pipeline_runs: torch's pipelining synchronises the data-parallel ranks after each run") {
    // A stage's last backward of a schedule step reduces its gradients (and FSDP reshards),
    // PipelineStage.backward_maybe_with_nosync (pytorch/pytorch@88fa1e7 stage.py): with the
    // DP exchange not overlapped (3 s), R runs pay it R times. p = 4, m = 8, F + B + W = 4:
    // R = 1 44 + 3 = 47, R = 2 56 + 2 x 3 = 62, R = 4 80 + 4 x 3 = 92.
    auto [hw, m, s, c] = uniform_step();
    s.overlap.dp = false;
    search::StrategyComm comm;
    comm.dp_s = 3.0;
    for (const auto& [runs, step] : {std::pair{1, 47.0}, {2, 62.0}, {4, 92.0}}) {
      s.training.pipeline_runs = runs;
      CAPTURE(runs);
      for (bool simulate : {false, true}) {
        const Estimate e = search::evaluate_step(hw, m, s, c, MemoryEstimate{}, comm, true, simulate);
        CHECK(e.step_time_s == doctest::Approx(step));
        CHECK(e.time_s.dp_comm == doctest::Approx(3.0 * runs));
      }
    }
    // Without pipeline parallelism there is no schedule step to count: once per step, the
    // four layers on one rank, 8 x 4 x 4 + 3 = 131 whatever pipeline_runs says.
    s.parallel.pp = 1;
    s.training.pipeline_runs = 2;
    CHECK(search::evaluate_step(hw, m, s, c, MemoryEstimate{}, comm, true, false).step_time_s == doctest::Approx(131.0));
  }

  TEST_CASE("grad_sync micro_batch: FSDP without no_sync reduces and gathers again every micro-batch") {
    // FSDP2's defaults (requires_gradient_sync, reshard_after_backward) with torch's pipelining
    // on a stage module that is not an FSDP module: each micro-batch reduce-scatters (2 s
    // here) and gathers the parameters again (1 s, dp_param_s), not once per run. p = 4,
    // m = 8, F + B + W = 4 per micro-batch: the pipeline 44 as above, not overlapped
    // 44 + 8 x 3 = 68 (the run's single sync would be 44 + 3 = 47).
    auto [hw, m, s, c] = uniform_step();
    s.overlap.dp = false;
    s.training.grad_sync_micro_batch = true;
    search::StrategyComm comm;
    comm.dp_s = 3.0;
    comm.dp_param_s = 1.0;
    for (bool simulate : {false, true}) {
      const Estimate e = search::evaluate_step(hw, m, s, c, MemoryEstimate{}, comm, true, simulate);
      CHECK(e.time_s.dp_comm == doctest::Approx(24.0));
      CHECK(e.step_time_s == doctest::Approx(68.0));
    }
    // ZeRO-3 gathers twice a micro-batch (forward and backward, dp_gather_s = 2 x 1 s):
    // 8 x (2 + 2) = 32.
    s.training.zero = 3;
    comm.dp_gather_s = 2.0;
    CHECK(search::evaluate_step(hw, m, s, c, MemoryEstimate{}, comm, true, false).time_s.dp_comm == doctest::Approx(32.0));
    // Overlapped (FSDP's own streams), 16 layers: each rank holds 4 in one chunk, which waits
    // for its first layer's gather and its last layer's reduce-scatter, 1/4 of the 3 s; the
    // other 2.25 s run beside the 16 s of compute on h100-sxm-ib's 20 of 132 SMs' share
    // (comm_units / compute_units): 8 x (0.75 + 2.25 x 20 / 132) = 8.7273.
    s.training.zero = 1;
    s.overlap.dp = true;
    m.layers = 16;
    MemoryEstimate mem;
    mem.stages.resize(1);
    mem.stages[0].layers = 4;
    CHECK(search::evaluate_step(hw, m, s, c, mem, comm, true, false).time_s.dp_comm ==
          doctest::Approx(8 * (0.75 + 2.25 * 20.0 / 132.0)));
    // Interleaved: each rank's 4 layers in 2 chunks of 2, each chunk waiting for its own first
    // gather and last reduce-scatter, 2/4 of the traffic: 8 x (1.5 + 1.5 x 20 / 132) = 13.818.
    s.schedule = Schedule::Interleaved;
    s.parallel.vpp = 2;
    CHECK(search::evaluate_step(hw, m, s, c, mem, comm, true, false).time_s.dp_comm ==
          doctest::Approx(8 * (1.5 + 1.5 * 20.0 / 132.0)));
  }

  TEST_CASE("pipeline_runs: a batch the runs cannot share evenly is refused by the batch_runs rule") {
    Strategy s;
    s.nodes = 4;
    s.parallel.tp = 8;
    s.parallel.pp = 4;
    s.training.micro_batch = 1;
    s.training.global_batch = 6;
    s.training.pipeline_runs = 4;
    std::vector<std::string> rules;
    for (const RuleViolation& v : check_rules(s, load_hardware("h100-sxm-ib"), load_model("llama3-70b"))) rules.push_back(v.rule);
    CHECK(std::find(rules.begin(), rules.end(), "batch_runs") != rules.end());
    s.training.global_batch = 8;
    rules.clear();
    for (const RuleViolation& v : check_rules(s, load_hardware("h100-sxm-ib"), load_model("llama3-70b"))) rules.push_back(v.rule);
    CHECK(std::find(rules.begin(), rules.end(), "batch_runs") == rules.end());
  }

  TEST_CASE("the timeline of a preset strategy: one compute track per stage, every task once") {
    Planner planner(load_hardware("h100-sxm-ib"), load_model("llama3-70b"));
    Strategy s;
    s.nodes = 4;
    s.parallel.tp = 8;
    s.parallel.pp = 4;
    s.parallel.dp = 1;
    s.training.micro_batch = 1;
    s.training.global_batch = 8;
    s.schedule = Schedule::OneFOneB;
    const Timeline tl = planner.timeline(s);
    REQUIRE(tl.ok);
    CHECK(tl.stages == 4);
    int compute = 0;
    for (const TimelineEvent& e : tl.events) {
      if (e.stream == "compute" && e.kind != "optimizer") ++compute;
      CHECK(e.end_s >= e.start_s);
      CHECK(e.end_s <= tl.step_time_s * (1 + 1e-9));
    }
    CHECK(compute == 4 * 8 * 3);
    CHECK(planner.evaluate(s).step_time_s == doctest::Approx(tl.step_time_s));
    // Two runs of the schedule: the same tasks, four micro-batches each, the second run after
    // the first one's drain.
    s.training.pipeline_runs = 2;
    const Timeline two = planner.timeline(s);
    REQUIRE(two.ok);
    int tasks = 0, late = 0;
    double first_end = 0;
    for (const TimelineEvent& e : two.events) {
      if (e.stream != "compute" || e.kind == "optimizer") continue;
      ++tasks;
      if (e.micro < 4) first_end = std::max(first_end, e.end_s);
    }
    for (const TimelineEvent& e : two.events) {
      if (e.stream == "compute" && e.kind != "optimizer" && e.micro >= 4 && e.start_s >= first_end - 1e-12) ++late;
    }
    CHECK(tasks == 4 * 8 * 3);
    CHECK(late == 4 * 4 * 3);
    CHECK(planner.evaluate(s).step_time_s == doctest::Approx(two.step_time_s));
    CHECK(two.step_time_s > tl.step_time_s);
  }
}

TEST_SUITE("schedule.trace") {
  namespace fs = std::filesystem;

  int count(const std::string& text, const std::string& what) {
    int n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }

  TEST_CASE("chrome_trace: one process per stage, one thread per stream, every event once") {
    Timeline tl;
    tl.stages = 2;
    tl.micro_batches = 1;
    tl.events = {{0, "compute", "F", 0, 0, 0.0, 1e-3}, {0, "p2p", "send", 0, 0, 1e-3, 1.5e-3},
                 {1, "compute", "F", 0, 0, 1.5e-3, 2.5e-3}, {1, "dp", "sync", 0, 0, 2.5e-3, 3e-3}};
    const std::string j = chrome_trace(tl, "two stages");
    CHECK(count(j, "\"ph\": \"X\"") == 4);
    CHECK(count(j, "\"process_name\"") == 2);
    CHECK(count(j, "\"thread_name\"") == 2 * 3);
    CHECK(j.find("\"ts\": 1500") != std::string::npos);  // 1.5 ms in microseconds
    CHECK(j.find("\"dur\": 1000") != std::string::npos);
  }

  TEST_CASE("evaluate --trace writes the seeds' base case as a trace with a track per stage") {
    const fs::path out = fs::temp_directory_path() / "paraplan_trace_test.json";
    fs::remove(out);
    const std::string cmd = std::string(PARAPLAN_CLI) + " evaluate br166-ep16-mb2 --trace " + out.string() + " > /dev/null 2>&1";
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::ifstream in(out);
    const std::string j((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // strategies/br166-ep16-mb2.yaml: pp 16, 60 micro-batches; 1F1B runs F, B, W of each.
    CHECK(count(j, "\"process_name\"") == 16);
    CHECK(count(j, "\"cat\": \"compute\"") >= 16 * 60 * 3);
    fs::remove(out);
    // A path that cannot be written is exit 2, not "wrote".
    const std::string bad = std::string(PARAPLAN_CLI) + " evaluate br166-ep16-mb2 --trace /proc/no/such/dir/t.json > /dev/null 2>&1";
    const int rc = std::system(bad.c_str());
    CHECK(WIFEXITED(rc));
    CHECK(WEXITSTATUS(rc) == 2);
  }
}

TEST_SUITE("cli.exit_codes") {
  int run(const std::string& args) {
    // Output to /dev/null unless the arguments redirect stderr themselves.
    const bool own = args.find("2>") != std::string::npos;
    const std::string cmd = std::string(PARAPLAN_CLI) + " " + args + (own ? " > /dev/null" : " > /dev/null 2>&1");
    const int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }

  TEST_CASE("misuse is exit 2, with the file never claimed written") {
    namespace fs = std::filesystem;
    const fs::path empty = fs::temp_directory_path() / "paraplan_no_cases";
    fs::create_directories(empty);
    for (const auto& e : fs::directory_iterator(empty)) fs::remove_all(e.path());
    CHECK(run("validate " + empty.string()) == 2);                 // no case files
    CHECK(run("rank --nodes 4096") == 2);                           // br166-ubbv2 has 1024 nodes
    CHECK(run("rank -o /proc/no/such/dir/report") == 2);            // cannot write the reports
    CHECK(run("calibrate profile calibration/profiles/missing.csv -s br166-ep16-mb2") == 2);
  }

  TEST_CASE("nothing fits: exit 3 with the closest candidates and the change that makes each fit") {
    namespace fs = std::filesystem;
    const fs::path err = fs::temp_directory_path() / "paraplan_closest.txt";
    // No recompute, no offload, 16 nodes: every DeepSeek-V3 plan on BR166 is over 64 GiB.
    const std::string args = "rank --nodes 16 --set training.global_batch=4096 --set \"training.recompute=[none]\" "
                             "--set \"training.optimizer_offload=[false]\" 2> " + err.string();
    CHECK(run(args) == 3);
    std::ifstream in(err);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(text.find("the closest") != std::string::npos);
    CHECK(text.find("over by") != std::string::npos);
    CHECK(text.find("fits with") != std::string::npos);
  }
}

TEST_SUITE("schedule.pipeline_layout") {
  using paraplan::config::LayoutChunk;
  using paraplan::config::parse_pipeline_layout;

  std::vector<LayoutChunk> parse_ok(const std::string& text) {
    std::string error;
    std::size_t at = 0;
    std::vector<LayoutChunk> c = parse_pipeline_layout(text, error, at);
    CHECK(error.empty());
    return c;
  }

  TEST_CASE("recompute_layers counts a chunk's first layers, the dense ones first") {
    // Megatron-LM's block method recomputes the first N layers of each model chunk
    // (NVIDIA/Megatron-LM@d98e8a64dd megatron/core/recompute.py, method "block": the layers of
    // the chunk's block with index < recompute_num_layers). DeepSeek-V3's first 3 layers are
    // dense: a chunk of layers 0-7 with N = 2 recomputes 2 dense ones, with N = 5 its 3 dense
    // and 2 MoE ones; the chunk of layers 8-15 has no dense layer; N = 0 means all.
    const paraplan::schedule::Chunk first{0, 8}, second{8, 8};
    CHECK(first.recomputed(2) == 2);
    CHECK(first.recomputed_dense(2, 3) == 2);
    CHECK(first.recomputed(5) == 5);
    CHECK(first.recomputed_dense(5, 3) == 3);
    CHECK(second.recomputed_dense(5, 3) == 0);
    CHECK(second.recomputed(12) == 8);
    CHECK(second.recomputed(0) == 8);
  }

  TEST_CASE("Megatron-Bridge 25.09's DeepSeek-V3 H100 layout and Megatron-LM's documented example") {
    // NVIDIA-NeMo/Megatron-Bridge@fa0315ae2 scripts/performance/run_script.py: "Et|(tt|)*30mL"
    // = [E t] + 30 x [t t] + [m L]: 32 chunks, 1 + 60 = 61 layers.
    const std::vector<LayoutChunk> b = parse_ok("Et|(tt|)*30mL");
    REQUIRE(b.size() == 32);
    CHECK(b[0].embedding == 1);
    CHECK(b[0].layers == 1);
    for (int c = 1; c <= 30; ++c) CHECK(b[static_cast<std::size_t>(c)].layers == 2);
    CHECK(b[31].layers == 0);
    CHECK(b[31].mtp == 1);
    CHECK(b[31].loss == 1);
    // Megatron-LM docs/user-guide/features/pipeline_parallel_layout.md: "Et*3|(tt|)*29,m|L"
    // = [E t t t] + 29 x [t t] + [m] + [L] (commas only for reading): 3 + 58 = 61 layers.
    const std::vector<LayoutChunk> d = parse_ok("Et*3|(tt|)*29,m|L");
    REQUIRE(d.size() == 32);
    CHECK(d[0].layers == 3);
    CHECK(d[29].layers == 2);
    CHECK(d[30].mtp == 1);
    CHECK(d[30].loss == 0);
    CHECK(d[31].loss == 1);
    CHECK(d[31].layers == 0);
    // Empty chunks are allowed (the same document: "E||t|L").
    CHECK(parse_ok("E||t|L").size() == 4);
  }

  TEST_CASE("a malformed layout names what is wrong and where") {
    auto error_of = [](const std::string& text, std::size_t& at) {
      std::string error;
      CHECK(parse_pipeline_layout(text, error, at).empty());
      return error;
    };
    std::size_t at = 0;
    CHECK(error_of("Et|tx|L", at).find("unknown symbol `x`") != std::string::npos);
    CHECK(at == 4);
    CHECK(error_of("E(tt|*2L", at).find("never closed") != std::string::npos);
    CHECK(error_of("Et*|L", at).find("followed by a count") != std::string::npos);
    CHECK(at == 2);
    CHECK(error_of("Et)|L", at).find("without `(`") != std::string::npos);
    CHECK(error_of("(t)*99999999", at).find("too large") != std::string::npos);
    CHECK(error_of("((((t*1000)*1000)*1000)|L)", at).find("too long") != std::string::npos);
    CHECK(error_of(std::string(100000, '(') + "t", at).find("nested too deeply") != std::string::npos);
  }

  TEST_CASE("an interleaved strategy with a layout: each rank's chunks hold what the layout says") {
    // DeepSeek-V3 (61 layers, one MTP layer) TP2 PP8 VPP4: chunk c runs on rank c % 8.
    Plan p = load_plan("deepseek-v3-h800");
    Strategy& s = p.strategy;
    s.schedule = Schedule::Interleaved;
    s.parallel.pp = 8;
    s.parallel.vpp = 4;
    s.parallel.pipeline_layout = "Et|(tt|)*30mL";
    const auto ranks = schedule::rank_chunks(p.model, s);
    REQUIRE(ranks->size() == 8);
    const auto& r0 = (*ranks)[0];  // chunks 0, 8, 16, 24
    REQUIRE(r0.size() == 4);
    CHECK(r0[0].embedding);
    CHECK(r0[0].layers == 1);
    CHECK(r0[1].first_layer == 1 + 7 * 2);  // chunk 8: after chunk 0's 1 and chunks 1-7's 2 each
    const auto& r7 = (*ranks)[7];  // chunks 7, 15, 23, 31
    CHECK(r7[2].layers == 2);
    CHECK(r7[3].layers == 0);
    CHECK(r7[3].head);
    CHECK(r7[3].mtp);
    int layers = 0;
    for (const auto& r : *ranks) {
      for (const auto& c : r) layers += c.layers;
    }
    CHECK(layers == 61);

    // MTP and loss on different chunks (Megatron's example at PP16 VPP2): the MTP layer runs
    // on rank 14 (chunk 30), the head on rank 15 (chunk 31), whose chunk has no MTP block.
    s.parallel.pp = 16;
    s.parallel.vpp = 2;
    s.parallel.dp = 128;  // 16 x 128 = 2048 H800
    s.parallel.pipeline_layout = "Et*3|(tt|)*29,m|L";
    REQUIRE(check_rules(s, p.hardware, p.model).empty());
    const auto split = schedule::rank_chunks(p.model, s);
    CHECK((*split)[14][1].mtp);
    CHECK_FALSE((*split)[14][1].head);
    CHECK((*split)[15][1].head);
    CHECK_FALSE((*split)[15][1].mtp);
    const Estimate e = Planner(p.hardware, p.model).evaluate(s);
    CHECK(std::isfinite(e.step_time_s));
    CHECK(e.step_time_s > 0);
  }

  TEST_CASE("rules: the layout must hold the model in the schedule's chunk count") {
    Plan p = load_plan("deepseek-v3-h800");
    Strategy s = p.strategy;
    s.schedule = Schedule::Interleaved;
    s.parallel.pp = 8;
    s.parallel.vpp = 4;
    s.parallel.dp = 256;
    auto rules = [&](const std::string& layout) {
      s.parallel.pipeline_layout = layout;
      std::vector<std::string> out;
      for (const RuleViolation& v : check_rules(s, p.hardware, p.model)) out.push_back(v.rule);
      return out;
    };
    CHECK(rules("Et|(tt|)*30mL").empty());
    CHECK(rules("Et|(tt|)*29mL") == std::vector<std::string>{"pipeline_layout"});   // 31 chunks
    CHECK(rules("Ett|(tt|)*30mL") == std::vector<std::string>{"pipeline_layout"});  // 62 layers
    CHECK(rules("t|(tt|)*30EmL") == std::vector<std::string>{"pipeline_layout"});   // E last
    CHECK(rules("Et|(tt|)*29tm|tL") == std::vector<std::string>{"pipeline_layout"});  // layer after m
    s.parallel.pipeline_layout = "Et|(tt|)*29mL";
    const std::vector<RuleViolation> v = check_rules(s, p.hardware, p.model);
    REQUIRE(v.size() == 1);
    CHECK(v[0].message.find("has 31 chunks") != std::string::npos);
    CHECK(v[0].message.find("= 32") != std::string::npos);
  }
}
