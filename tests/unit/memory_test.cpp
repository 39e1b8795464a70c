// The memory model: Korthikanti et al. 2022's activation formulas and Megatron-LM's weight +
// optimizer bytes on GPT-3 175B, ZeRO stages, offload, pipeline schedules, recompute, and the
// BR166 seed figures (SEED_DIGEST.md sec. 3). Every expected value is derived here by hand
// from the formula named beside it. docs/cost-model.md ("Memory") has the formulas and
// docs/validation.md ("Memory") the seed table.

#include "cost/memory.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <cstdio>
#include <string>

#include "paraplan/config.hpp"
#include "paraplan/estimate.hpp"
#include "paraplan/model.hpp"
#include "paraplan/report.hpp"
#include "paraplan/units.hpp"

using namespace paraplan;
using cost::ActivationOptions;

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kMiB = 1024.0 * 1024;

// A strategy built in code: tp x pp x dp devices, 1F1B, BF16, Adam, ZeRO-0, no recompute.
Plan make_plan(const std::string& model, const std::string& hw, int tp, int pp, int dp, int mb,
               int gb, bool sp = false) {
  Plan p;
  p.model = load_model(model);
  p.hardware = load_hardware(hw);
  Strategy& s = p.strategy;
  s.parallel.tp = tp;
  s.parallel.pp = pp;
  s.parallel.dp = dp;
  s.parallel.sp = sp;
  s.nodes = std::max(1, tp * pp * dp / p.hardware.devices_per_node());
  s.training.micro_batch = mb;
  s.training.global_batch = gb;
  s.training.zero = 0;
  s.training.optimizer = Optimizer::Adam;
  s.training.recompute = Recompute{};
  return p;
}

// GPT-3 175B as Korthikanti et al. 2022 evaluate it (Table 3): h 12288, a 96, s 2048, b 1.
Plan gpt3(int tp, bool sp) {
  return make_plan("gpt3-175b", "a100-sxm-ib", tp, 1, 8 / tp, 1, 64, sp);
}

const ActivationOptions kPaper{false, true, true};  // no flash attention, dropout masks

double layer_bytes(const Plan& p, const ActivationOptions& opt = {}, bool moe = false) {
  return cost::sum(cost::layer_activations(p, moe, 1.0, opt));
}

double part(const std::vector<MemoryPart>& parts, const std::string& name) {
  for (const MemoryPart& p : parts) {
    if (p.name == name) return p.bytes;
  }
  return 0;
}

Plan with_recompute(Plan p, RecomputeMode mode) {
  p.strategy.training.recompute = Recompute{};
  p.strategy.training.recompute.mode = mode;
  return p;
}

const StageMemory& worst(const MemoryEstimate& e) {
  return e.stages[static_cast<std::size_t>(e.worst_stage)];
}

}  // namespace

TEST_SUITE("cost.memory") {
  // ---- Korthikanti, Casper et al. 2022, "Reducing Activation Recomputation in Large
  // Transformer Models" (arXiv 2205.05198), sec. 4, per-layer activation bytes with 16-bit
  // activations and dropout, no flash attention. GPT-3 175B: s 2048, b 1, h 12288, a 96.
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  const double sbh = s * b * h;

  TEST_CASE("Korthikanti eq. 1: sbh(34 + 5as/h) per layer without parallelism") {
    // 5as/h = 5 x 96 x 2048 / 12288 = 80 -> 114 sbh = 2,868,903,936 bytes
    CHECK(layer_bytes(gpt3(1, false), kPaper) ==
          doctest::Approx(sbh * (34 + 5 * a * s / h)).epsilon(1e-12));
    CHECK(sbh * (34 + 5 * a * s / h) == 2868903936.0);
  }

  TEST_CASE("Korthikanti eq. 2: sbh(10 + 24/t + 5as/(ht)) with tensor parallelism t = 8") {
    // 10 + 3 + 10 = 23 sbh
    CHECK(layer_bytes(gpt3(8, false), kPaper) ==
          doctest::Approx(sbh * (10 + 24 / t + 5 * a * s / (h * t))).epsilon(1e-12));
  }

  TEST_CASE("Korthikanti eq. 4: sbh/t (34 + 5as/h) with tensor + sequence parallelism") {
    CHECK(layer_bytes(gpt3(8, true), kPaper) ==
          doctest::Approx(sbh / t * (34 + 5 * a * s / h)).epsilon(1e-12));
  }

  TEST_CASE("Korthikanti eq. 6: 34 sbh / t with sequence parallelism and selective recompute") {
    CHECK(layer_bytes(with_recompute(gpt3(8, true), RecomputeMode::Selective), kPaper) ==
          doctest::Approx(34 * sbh / t).epsilon(1e-12));
    // without SP, selective recompute leaves sbh(10 + 24/t) (Table 2)
    CHECK(layer_bytes(with_recompute(gpt3(8, false), RecomputeMode::Selective), kPaper) ==
          doctest::Approx(sbh * (10 + 24 / t)).epsilon(1e-12));
  }

  TEST_CASE("Korthikanti Table 2: full recompute keeps 2sbh per layer, 2sbh/t with SP") {
    CHECK(layer_bytes(with_recompute(gpt3(8, false), RecomputeMode::Full), kPaper) == 2 * sbh);
    CHECK(layer_bytes(with_recompute(gpt3(8, true), RecomputeMode::Full), kPaper) == 2 * sbh / t);
  }

  TEST_CASE(
      "flash attention, no dropout (the real-model mode): 32 sbh/t + 4 s b a/t, no s^2 term") {
    // Korthikanti's 34 sbh/t minus the two 1-byte dropout masks (2 sbh/t), and instead of the
    // 5as^2b/t score terms the FP32 log-sum-exp of every query and head: 4 s b a / t bytes.
    CHECK(layer_bytes(gpt3(8, true)) ==
          doctest::Approx(32 * sbh / t + 4 * s * b * a / t).epsilon(1e-12));
    // selective recompute then only frees the log-sum-exp
    CHECK(layer_bytes(with_recompute(gpt3(8, true), RecomputeMode::Selective)) ==
          doctest::Approx(32 * sbh / t).epsilon(1e-12));
  }

  TEST_CASE("recompute: full < selective < none, in paper mode and for DeepSeek-V3 MLA + MoE") {
    for (const ActivationOptions& opt : {kPaper, ActivationOptions{}}) {
      Plan g = gpt3(8, true);
      double none = layer_bytes(g, opt);
      double sel = layer_bytes(with_recompute(g, RecomputeMode::Selective), opt);
      double full = layer_bytes(with_recompute(g, RecomputeMode::Full), opt);
      CHECK(full < sel);
      CHECK(sel < none);
    }
    Plan d = load_plan("br166-ep16-mb2");
    for (bool moe : {false, true}) {
      double none = layer_bytes(with_recompute(d, RecomputeMode::None), {}, moe);
      double sel = layer_bytes(with_recompute(d, RecomputeMode::Selective), {}, moe);
      Plan dm = with_recompute(d, RecomputeMode::Modules);  // [layernorm, mla_up_proj]
      dm.strategy.training.recompute.modules[static_cast<int>(RecomputeModule::LayerNorm)] = true;
      dm.strategy.training.recompute.modules[static_cast<int>(RecomputeModule::MlaUpProj)] = true;
      double mods = layer_bytes(dm, {}, moe);
      double full = layer_bytes(with_recompute(d, RecomputeMode::Full), {}, moe);
      CHECK(full < mods);
      CHECK(mods < sel);
      CHECK(sel < none);
    }
  }

  TEST_CASE(
      "DeepSeek-V3 MoE layer by module, one micro-batch on a BR166 card (EP16 over dies, mb2)") {
    // T = 2 x 4096 = 8192 tokens per card, h 7168, 128 heads, TP1, no SP. Per die 4096 tokens,
    // each sends 8 copies: 32768 copies per die, 65536 per card (balanced routing).
    Plan d = with_recompute(load_plan("br166-ep16-mb2"), RecomputeMode::None);
    auto parts = cost::layer_activations(d, true, 1.0);
    const double T = 8192, H = 7168, copies = 65536;
    CHECK(part(parts, "norm_inputs") == 2 * T * H * 2);
    CHECK(part(parts, "norm_outputs") == 2 * T * H * 2);
    // q_a output (1536) + [c_kv 512, k_rope 64]
    CHECK(part(parts, "mla.compressed") == T * (1536 + 576) * 2);
    // q norm out 1536 + kv norm out 512 + q, k (192 each) and v (128) per head
    CHECK(part(parts, "mla.up_proj") == T * (1536 + 512 + 128 * (192 + 192 + 128)) * 2);
    CHECK(part(parts, "attention.core") == T * 128 * 4);  // FP32 log-sum-exp
    CHECK(part(parts, "attention.output") == T * 128 * 128 * 2);
    CHECK(part(parts, "moe.router") == T * 256 * 5);         // FP32 scores + 1-byte routing map
    CHECK(part(parts, "moe.dispatched") == copies * H * 2);  // 896 MiB: the seeds' "112 MB x 8"
    CHECK(part(parts, "moe.dispatched") == 8 * 112 * kMiB);
    CHECK(part(parts, "moe.expert_fc1") == copies * 4096 * 2);
    CHECK(part(parts, "moe.expert_act") == copies * 2048 * 2);
    CHECK(part(parts, "moe.expert_output") == copies * H * 2);
    CHECK(part(parts, "moe.shared_experts") == T * 3 * 2048 * 2);
    // the slowest rank's load scales the routed copies and nothing else
    auto hot = cost::layer_activations(d, true, 1.5);
    CHECK(part(hot, "moe.dispatched") == doctest::Approx(1.5 * copies * H * 2));
    CHECK(part(hot, "attention.output") == part(parts, "attention.output"));
  }

  // ---- Megatron-LM theoretical memory (megatron/training/theoretical_memory_usage.py):
  // 18 bytes per parameter (2 BF16 weight + 4 FP32 main grad + 4 master + 4 + 4 Adam moments),
  // 6 + 12 / DP with the distributed optimizer.
  TEST_CASE("Megatron: 18 B/param, and 6 + 12/DP with the distributed optimizer, GPT-3 175B") {
    // GPT-3 parameters by hand: per layer 12h^2 + 13h (QKV + bias 3h^2 + 3h, proj h^2 + h,
    // fc1 4h^2 + 4h, fc2 4h^2 + h, two LayerNorms 4h); embedding V h + learned positions s h
    // (tied head); final LayerNorm 2h. V = 50257, L = 96.
    const double H = 12288, V = 50257, L = 96;
    const double P = V * H + 2048 * H + L * (12 * H * H + 13 * H) + 2 * H;
    CHECK(P == doctest::Approx(174.6e9).epsilon(1e-3));
    Plan p = make_plan("gpt3-175b", "h100-sxm-ib", 1, 1, 64, 1, 64);
    MemoryEstimate e = estimate_memory(p);
    REQUIRE(e.stages.size() == 1);
    const StageMemory& st = e.stages[0];
    CHECK(st.dense_params + st.expert_params == P);
    CHECK(st.weights == 2 * P);
    CHECK(st.gradients == 4 * P);
    CHECK(st.optimizer_states == 12 * P);
    CHECK(st.weights + st.gradients + st.optimizer_states == 18 * P);
    p.strategy.training.zero = 1;
    e = estimate_memory(p);
    CHECK(e.stages[0].weights + e.stages[0].gradients + e.stages[0].optimizer_states ==
          doctest::Approx((6 + 12.0 / 64) * P).epsilon(1e-12));
  }

  TEST_CASE("Megatron bytes on a GPT-3 TP8 PP8 middle stage: 18 x (12 layers of a TP shard)") {
    // Per TP rank per layer: column-parallel QKV and fc1 with their biases split (3h^2 + 3h,
    // 4h^2 + 4h over 8), row-parallel proj and fc2 split (h^2, 4h^2 over 8) with their output
    // biases (h, h) and both LayerNorms (4h) replicated: 12h^2/8 + 7h/8 + 6h.
    const double H = 12288;
    const double per_layer = 12 * H * H / 8 + 7 * H / 8 + 6 * H;
    Plan p = make_plan("gpt3-175b", "h100-sxm-ib", 8, 8, 4, 1, 64);
    MemoryEstimate e = estimate_memory(p);
    REQUIRE(e.stages.size() == 8);
    const StageMemory& mid = e.stages[3];
    CHECK(mid.layers == 12);
    CHECK(mid.dense_params == doctest::Approx(12 * per_layer).epsilon(1e-12));
    CHECK(mid.weights + mid.gradients + mid.optimizer_states ==
          doctest::Approx(18 * 12 * per_layer).epsilon(1e-12));
    // tied embeddings with pp > 1: the last stage holds a copy of the V/t x h embedding as
    // its head (Megatron), and no learned positions
    const StageMemory& last = e.stages[7];
    CHECK(last.dense_params ==
          doctest::Approx(12 * per_layer + 2 * H + 50257.0 / 8 * H).epsilon(1e-12));
    CHECK(e.stages[0].dense_params ==
          doctest::Approx(12 * per_layer + 50257.0 / 8 * H + 2048 * H).epsilon(1e-12));
  }

  TEST_CASE("stage parameters add up to the model's count (DeepSeek-V3 with MTP, one device)") {
    Plan p = load_plan("br166-ep16-mb2");
    p.strategy.parallel = Parallel{};
    p.strategy.ep_over_dies = false;
    MemoryEstimate e = estimate_memory(p);
    const ModelCounts c = count_model(p.model);
    REQUIRE(e.stages.size() == 1);
    CHECK(e.stages[0].dense_params + e.stages[0].expert_params ==
          static_cast<double>(c.total_params + c.mtp_params));
    // routed experts alone: (58 + 1 MTP) MoE layers x 256 experts x 3 x 7168 x 2048
    CHECK(e.stages[0].expert_params == 59.0 * 256 * 3 * 7168 * 2048);
  }

  TEST_CASE(
      "ZeRO 0-3: optimizer, then gradients, then weights shard over DP (dense) and expert-DP") {
    // Mixtral 8x7B on 2 H100 nodes: TP1 PP1 DP16 EP8 -> expert-DP = 16 / 8 = 2.
    Plan p = make_plan("mixtral-8x7b", "h100-sxm-ib", 1, 1, 16, 1, 64);
    p.strategy.parallel.ep = 8;
    double W[4], G[4], O[4];
    double Pd = 0, Pe = 0;
    for (int z = 0; z <= 3; ++z) {
      p.strategy.training.zero = z;
      const StageMemory st = estimate_memory(p).stages[0];
      W[z] = st.weights;
      G[z] = st.gradients;
      O[z] = st.optimizer_states;
      Pd = st.dense_params;
      Pe = st.expert_params;
    }
    // 8 experts / ep 8 = 1 expert per rank, 3 x 4096 x 14336 parameters per layer, 32 layers
    CHECK(Pe == 32.0 * 3 * 4096 * 14336);
    CHECK(W[0] == 2 * (Pd + Pe));
    CHECK(G[0] == 4 * (Pd + Pe));
    CHECK(O[0] == 12 * (Pd + Pe));
    CHECK(O[1] == doctest::Approx(12 * Pd / 16 + 12 * Pe / 2));
    CHECK(G[1] == G[0]);
    CHECK(G[2] == doctest::Approx(4 * Pd / 16 + 4 * Pe / 2));
    CHECK(W[2] == W[0]);
    CHECK(W[3] == doctest::Approx(2 * Pd / 16 + 2 * Pe / 2));
    CHECK(O[3] == O[2]);
  }

  TEST_CASE("8-bit Adam: FP32 master 4 B + 8-bit m and v + an FP32 scale per 2048 values") {
    CHECK(cost::optimizer_bytes_per_param(Optimizer::Adam) == 12);
    CHECK(cost::optimizer_bytes_per_param(Optimizer::Adam8bit) == 4 + 1 + 1 + 2 * 4.0 / 2048);
  }

  TEST_CASE("optimizer offload moves the optimizer states to host memory, checked per node") {
    Plan p = make_plan("llama3-70b", "h100-sxm-ib", 8, 1, 2, 1, 64);  // 2 nodes x 8
    p.strategy.training.zero = 1;
    const StageMemory on = estimate_memory(p).stages[0];
    p.strategy.training.optimizer_offload = true;
    MemoryEstimate e = estimate_memory(p);
    const StageMemory& off = e.stages[0];
    CHECK(off.optimizer_states == 0);
    CHECK(off.host_bytes == on.optimizer_states);
    CHECK(off.weights == on.weights);
    CHECK(off.gradients == on.gradients);
    CHECK(off.total == doctest::Approx(on.total - on.optimizer_states));
    // every device of a node is in the one stage: 8 x the per-device host bytes
    CHECK(e.host_bytes_per_node == doctest::Approx(8 * on.optimizer_states));
    CHECK(e.host_capacity == 2e12);  // DGX H100: 2 TB
    // a host too small for it makes the strategy infeasible with a host reason
    p.hardware.host.memory_bytes = e.host_bytes_per_node / 2;
    e = estimate_memory(p);
    CHECK_FALSE(e.feasible);
    REQUIRE(!e.infeasible_reasons.empty());
    CHECK(e.infeasible_reasons.back().find("host memory per node") != std::string::npos);
  }

  TEST_CASE("host memory per node: a node that spans two stages holds both stages' devices") {
    // Megatron's rank order puts PP outermost: device g is in stage g / (tp x cp x dp).
    // tp 4 x dp 3 = 12 devices a stage, pp 2, 8 devices a node: node 0 holds devices 0-7
    // (stage 0), node 1 devices 8-11 (stage 0) and 12-15 (stage 1), node 2 16-23 (stage 1).
    Plan p = make_plan("llama3-70b", "h100-sxm-ib", 4, 2, 3, 1, 48);
    p.strategy.training.optimizer_offload = true;
    MemoryEstimate e = estimate_memory(p);
    REQUIRE(e.stages.size() == 2);
    const double h0 = e.stages[0].host_bytes, h1 = e.stages[1].host_bytes;
    CHECK(h0 != h1);  // the embedding and the head differ in size (so node 1 is its own case)
    CHECK(e.host_bytes_per_node == doctest::Approx(std::max({8 * h0, 4 * h0 + 4 * h1, 8 * h1})));
    // 128 nodes, tp 8 x dp 64 = 512 devices (64 nodes) a stage: every node lies in one stage,
    // so the busiest holds 8 devices of the stage with the most host memory.
    p = make_plan("llama3-70b", "h100-sxm-ib", 8, 2, 64, 1, 128);
    p.strategy.training.optimizer_offload = true;
    e = estimate_memory(p);
    REQUIRE(e.stages.size() == 2);
    CHECK(p.strategy.nodes == 128);
    CHECK(e.host_bytes_per_node == doctest::Approx(8 * std::max(e.stages[0].host_bytes, e.stages[1].host_bytes)));
  }

  TEST_CASE("the search's memory keeps the worst stage and the one with the most parameters") {
    // combine_memory without detail keeps one stage per run of ranks that hold the same
    // layers; by its contract the worst stage (its total and rank), the parameters of the
    // stage that holds the most and the host memory of the busiest node (summed over every
    // rank, with offload) are those of the full per-rank list.
    for (int offload = 0; offload < 3; ++offload)
    for (Schedule sch : {Schedule::OneFOneB, Schedule::Interleaved, Schedule::DualPipe, Schedule::ZeroBubble}) {
      CAPTURE(offload);
      Plan p = make_plan("deepseek-v3", "h800-ib", 1, 16, 8, 1, 128);
      p.strategy.parallel.ep = 8;
      p.strategy.schedule = sch;
      p.strategy.parallel.vpp = sch == Schedule::Interleaved ? 2 : 1;
      p.strategy.training.activation_offload = offload >= 1;
      p.strategy.training.optimizer_offload = offload == 2;
      const MemoryEstimate full = estimate_memory(p);
      const MemoryEstimate fast = cost::combine_memory(cost::memory_inputs(p, 1.0), p.hardware, p.model, p.strategy, false);
      REQUIRE(full.stages.size() == 16);
      CHECK(fast.stages.size() < full.stages.size());
      const StageMemory& wf = full.stages[static_cast<std::size_t>(full.worst_stage)];
      const StageMemory& ws = fast.stages[static_cast<std::size_t>(fast.worst_stage)];
      CHECK(ws.stage == wf.stage);
      CHECK(ws.total == wf.total);
      CHECK(ws.in_flight == wf.in_flight);
      CHECK(fast.host_bytes_per_node == full.host_bytes_per_node);
      if (offload > 0) CHECK(full.host_bytes_per_node > 0);
      auto most = [](const MemoryEstimate& m) {
        double best = 0;
        for (const StageMemory& st : m.stages) best = std::max(best, st.dense_params + st.expert_params);
        return best;
      };
      CHECK(most(fast) == most(full));
    }
    // A tied embedding (GPT-3): the head's rank holds its own copy unless it holds the
    // embedding too (DualPipe's rank 0 holds both ends).
    for (Schedule sch : {Schedule::OneFOneB, Schedule::DualPipe, Schedule::DualPipeV}) {
      Plan p = make_plan("gpt3-175b", "a100-sxm-ib", 8, 8, 2, 1, 128);
      p.strategy.schedule = sch;
      const MemoryEstimate full = estimate_memory(p);
      const MemoryEstimate fast = cost::combine_memory(cost::memory_inputs(p, 1.0), p.hardware, p.model, p.strategy, false);
      const StageMemory& wf = full.stages[static_cast<std::size_t>(full.worst_stage)];
      const StageMemory& ws = fast.stages[static_cast<std::size_t>(fast.worst_stage)];
      CHECK(ws.total == wf.total);
      for (const StageMemory& st : fast.stages) {
        CHECK(st.weights == full.stages[static_cast<std::size_t>(st.stage)].weights);
      }
    }
  }

  TEST_CASE("1F1B: stage i holds min(pp - i, m) micro-batches") {
    Plan p = make_plan("llama3-70b", "h100-sxm-ib", 2, 4, 2, 1, 16);  // m = 16 / 2 = 8
    MemoryEstimate e = estimate_memory(p);
    CHECK(e.micro_batches == 8);
    for (int i = 0; i < 4; ++i) CHECK(e.stages[static_cast<std::size_t>(i)].in_flight == 4 - i);
    p.strategy.training.global_batch = 4;  // m = 2
    e = estimate_memory(p);
    const double expect[] = {2, 2, 2, 1};
    for (int i = 0; i < 4; ++i) CHECK(e.stages[static_cast<std::size_t>(i)].in_flight == expect[i]);
    // zero-bubble (ZB-H1) keeps the same peak
    p.strategy.schedule = Schedule::ZeroBubble;
    for (int i = 0; i < 4; ++i)
      CHECK(estimate_memory(p).stages[static_cast<std::size_t>(i)].in_flight == expect[i]);
    // activations follow it: stages 0 and 1 (20 layers each, no head) hold 2 sets
    const MemoryEstimate e2 = estimate_memory(p);
    CHECK(e2.stages[0].activations == doctest::Approx(e2.stages[1].activations));
    CHECK(schedule::in_flight_sets(p.strategy, 0, 100) == 4);
  }

  TEST_CASE("interleaved 1F1B: first stage holds pp (1 + (pp - 1) / (pp vpp)) micro-batches") {
    // Llama 3 70B, 80 layers, pp 4, vpp 2: 10 layers per chunk, 20 per rank either way.
    Plan p = make_plan("llama3-70b", "h100-sxm-ib", 2, 4, 2, 1, 16);  // m = 8
    const StageMemory plain = estimate_memory(p).stages[0];
    p.strategy.schedule = Schedule::Interleaved;
    p.strategy.parallel.vpp = 2;
    const StageMemory inter = estimate_memory(p).stages[0];
    // Megatron: warm-up 2 (pp - 1) + (vpp - 1) pp = 10 chunks, + 1 = 11 chunk sets
    CHECK(inter.in_flight == 11);
    CHECK(inter.in_flight / 2 == doctest::Approx(4 * (1 + 3.0 / 8)));
    CHECK(inter.layers == plain.layers);
    CHECK(inter.activations == doctest::Approx(plain.activations * (1 + 3.0 / 8)).epsilon(1e-12));
    CHECK(schedule::in_flight_sets(p.strategy, 3, 8) == 2 * 0 + 4 + 1);
  }

  TEST_CASE("DualPipe: each rank holds two stages' parameters and pp + 1 activation sets") {
    Plan p = make_plan("llama3-70b", "h100-sxm-ib", 2, 4, 2, 1, 32);  // m = 16
    const MemoryEstimate base = estimate_memory(p);
    p.strategy.schedule = Schedule::DualPipe;
    const MemoryEstimate dual = estimate_memory(p);
    // rank 1 holds stages 1 and 2: 2x the parameters of a (middle) 1F1B stage
    CHECK(dual.stages[1].dense_params == 2 * base.stages[1].dense_params);
    CHECK(dual.stages[1].weights == 2 * base.stages[1].weights);
    CHECK(dual.stages[1].gradients == 2 * base.stages[1].gradients);
    // rank 0 holds stages 0 and 3: embedding and head on the same rank (DeepSeek-V3 sec. 3.2.1)
    CHECK(dual.stages[0].dense_params == base.stages[0].dense_params + base.stages[3].dense_params);
    CHECK(dual.stages[0].embedding);
    CHECK(dual.stages[0].head);
    // pp + 1 = 5 stage sets, half of each direction: (5 / 2) x (stage 1 + stage 2 sets)
    CHECK(dual.stages[1].in_flight == 5);
    const double set1 = base.stages[1].activations / base.stages[1].in_flight;
    const double set2 = base.stages[2].activations / base.stages[2].in_flight;
    CHECK(dual.stages[1].activations == doctest::Approx(2.5 * (set1 + set2)).epsilon(1e-12));
    // DualPipeV: 2 pp chunks, one copy: 1x the parameters, 2 pp + 1 chunk sets
    p.strategy.schedule = Schedule::DualPipeV;
    const MemoryEstimate v = estimate_memory(p);
    CHECK(v.stages[1].dense_params == doctest::Approx(base.stages[1].dense_params).epsilon(1e-12));
    CHECK(v.stages[1].in_flight == 9);
  }

  TEST_CASE("layers: as even as possible, the outer stages one layer short") {
    // DeepSeek-V3 61 layers on 16 stages: 13 x 4 + 3 x 3, short stages 0, 15, 1.
    auto c = schedule::chunk_layer_counts(61, 16);
    CHECK(c[0] == 3);
    CHECK(c[15] == 3);
    CHECK(c[1] == 3);
    for (int i = 2; i < 15; ++i) CHECK(c[static_cast<std::size_t>(i)] == 4);
    auto c8 = schedule::chunk_layer_counts(61, 8);  // 5 x 8 + 3 x 7: stages 0, 7, 1 short
    CHECK(c8[0] == 7);
    CHECK(c8[7] == 7);
    CHECK(c8[1] == 7);
    CHECK(c8[2] == 8);
    auto even = schedule::chunk_layer_counts(80, 4);
    for (int n : even) CHECK(n == 20);
  }

  TEST_CASE("uneven pipelines: fixed first / last stages, embedding and loss in the split, empty outer chunks") {
    // Qwen3-235B: 94 layers on PP32 x VPP3 = 96 chunks: the two outermost hold only the
    // embedding and the head, every other chunk one layer.
    auto q = schedule::chunk_layer_counts(94, 96);
    CHECK(q[0] == 0);
    CHECK(q[95] == 0);
    CHECK(std::accumulate(q.begin(), q.end(), 0) == 94);
    // Megatron --decoder-first-pipeline-num-layers 1 --decoder-last-pipeline-num-layers 2:
    // 61 layers on 16 stages -> 58 over the 14 inner stages = 12 x 4 + 2 x 5; the 4-layer
    // (short) ones are the outermost (1, 14, 2, 13, ...), so the innermost 7 and 8 hold 5.
    auto f = schedule::chunk_layer_counts(61, 16, 1, 2);
    CHECK(f[0] == 1);
    CHECK(f[15] == 2);
    CHECK(std::accumulate(f.begin(), f.end(), 0) == 61);
    CHECK(f[1] == 4);
    CHECK(f[14] == 4);
    CHECK(f[7] == 5);
    CHECK(f[8] == 5);
    // --account-for-embedding/loss-in-pipeline-split: 62 layers + 2 = 64 units on 16 stages,
    // 4 each; the first and last give one unit to the embedding and the loss.
    auto a = schedule::chunk_layer_counts(62, 16, 0, 0, true, true);
    CHECK(a[0] == 3);
    CHECK(a[15] == 3);
    for (int i = 1; i < 15; ++i) CHECK(a[static_cast<std::size_t>(i)] == 4);
  }

  TEST_CASE("activation offload keeps one set on the device and puts the rest in host memory") {
    Plan p = make_plan("llama3-70b", "h100-sxm-ib", 8, 4, 1, 1, 16);
    p.strategy.parallel.sp = true;
    const StageMemory on = estimate_memory(p).stages[0];
    p.strategy.training.activation_offload = true;
    const StageMemory off = estimate_memory(p).stages[0];
    CHECK(on.in_flight == 4);
    CHECK(off.activations == doctest::Approx(on.activations / 4));
    CHECK(off.host_bytes == doctest::Approx(on.activations * 3 / 4));
  }

  TEST_CASE("layer offload: that many of the rank's layers' activations live in host memory") {
    // Megatron-Core's cpu_offloading_num_layers (Transformer Engine's offload context), as the
    // Megatron-Bridge GB200 / GB300 Llama 3 70B presets run it: 40 or 20 of the 80 layers.
    // One set in flight (pp 1), so 40 of 80 layers leave half of it on the device and put
    // the other half in host memory; 79 leave 1 / 80.
    Plan p = make_plan("llama3-70b", "gb200-nvl72", 1, 1, 64, 2, 256);
    const StageMemory on = estimate_memory(p).stages[0];
    REQUIRE(on.layers == 80);
    CHECK(on.in_flight == 1);
    CHECK(on.offloaded_activations == 0);
    p.strategy.training.offload_layers = 40;
    const StageMemory half = estimate_memory(p).stages[0];
    CHECK(half.activations == doctest::Approx(on.activations / 2));
    CHECK(half.host_bytes == doctest::Approx(on.host_bytes + on.activations / 2));
    CHECK(half.offloaded_activations == doctest::Approx(on.activations / 2));
    CHECK(half.weights == on.weights);
    p.strategy.training.offload_layers = 79;
    const StageMemory most = estimate_memory(p).stages[0];
    CHECK(most.activations == doctest::Approx(on.activations / 80));
    CHECK(most.host_bytes == doctest::Approx(on.host_bytes + on.activations * 79 / 80));
  }

  TEST_CASE("recompute_layers: the layers left out of the recompute keep every activation") {
    // Llama 3 70B, TP8 PP4 (20 layers per stage), 1F1B: stage 0 holds 4 sets in flight and no
    // head. Per layer and set: F bytes without recompute, R with full recompute, and one
    // layer's F - R again while its backward recomputes. So A_none = 80 F and A_full = 80 R +
    // (F - R), i.e. F - R = (A_none - A_full) / 79; with 5 of the stage's 20 layers recomputed
    // the other 15 of each of the 4 sets store F - R more: A_5 = A_full + 60 (F - R).
    Plan p = make_plan("llama3-70b", "h100-sxm-ib", 8, 4, 1, 1, 16);
    p.strategy.parallel.sp = true;
    const StageMemory none = estimate_memory(p).stages[0];
    REQUIRE(none.in_flight == 4);
    REQUIRE(none.layers == 20);
    p.strategy.training.recompute.mode = RecomputeMode::Full;
    const StageMemory full = estimate_memory(p).stages[0];
    p.strategy.training.recompute_layers = 5;
    const StageMemory five = estimate_memory(p).stages[0];
    const double extra = (none.activations - full.activations) / 79;
    REQUIRE(extra > 0);
    CHECK(five.activations == doctest::Approx(full.activations + 60 * extra));
    // Twenty or more of a 20-layer stage: every layer recomputes.
    p.strategy.training.recompute_layers = 20;
    CHECK(estimate_memory(p).stages[0].activations == doctest::Approx(full.activations));
    p.strategy.training.recompute_layers = 64;
    CHECK(estimate_memory(p).stages[0].activations == doctest::Approx(full.activations));
    // The search's compact path gives the same worst stage.
    p.strategy.training.recompute_layers = 5;
    CHECK(cost::combine_memory(cost::memory_inputs(p, 1.0), p.hardware, p.model, p.strategy, false).stages[0].activations ==
          doctest::Approx(five.activations));
  }

  TEST_CASE("infeasible: the reason names the stage, the largest part and the overflow") {
    Plan p = make_plan("llama3-70b", "h100-sxm-ib", 8, 1, 1, 1, 8);  // 70B on 8 GPUs, Adam
    MemoryEstimate e = estimate_memory(p);
    CHECK_FALSE(e.feasible);
    REQUIRE(e.infeasible_reasons.size() == 1);
    const std::string& r = e.infeasible_reasons[0];
    const StageMemory& st = worst(e);
    // 70.55 B / 8 x 12 B of optimizer states: the largest part
    CHECK(r.find("stage 0 needs") != std::string::npos);
    CHECK(r.find("of 80 GiB (85.9 GB) capacity") != std::string::npos);
    CHECK(r.find("optimizer states") != std::string::npos);
    CHECK(r.find("over by " + units::format_size(st.total - 80 * kGiB)) != std::string::npos);
    MESSAGE(r);
  }

  TEST_CASE("memory_json carries the pinned memory_bytes keys of the worst stage") {
    Plan p = load_plan("br166-ep16-mb2");
    MemoryEstimate e = estimate_memory(p);
    std::string j = memory_json(p, e);
    for (const char* k :
         {"\"memory_bytes\"", "\"weights\"", "\"gradients\"", "\"optimizer_states\"",
          "\"activations\"", "\"buffers\"", "\"reserve\"", "\"total\"", "\"capacity\"",
          "\"feasible\"", "\"infeasible_reasons\"", "\"stages\"", "\"activations_by_module\""}) {
      CHECK_MESSAGE(j.find(k) != std::string::npos, k);
    }
    CHECK(memory_text(p, e).find("Worst stage " + std::to_string(e.worst_stage)) !=
          std::string::npos);
  }

  // ---- properties
  TEST_CASE("property: a larger micro-batch never needs less activation memory") {
    // At fixed global batch: in-flight x micro-batch = min(pp - i, gb / (dp b)) x b never drops.
    for (const char* ref : {"br166-ep16-mb2", "br166-ep32-32n-mb1"}) {
      Plan p = load_plan(ref);
      double prev = 0;
      for (int mb : {1, 2, 4, 8}) {
        p.strategy.training.micro_batch = mb;
        double act = worst(estimate_memory(p)).activations;
        CHECK(act >= prev);
        prev = act;
      }
    }
    Plan g = make_plan("gpt3-175b", "h100-sxm-ib", 8, 8, 2, 1, 16, true);
    double prev = 0;
    for (int mb : {1, 2, 4, 8}) {
      g.strategy.training.micro_batch = mb;
      double act = 0;
      for (const StageMemory& st : estimate_memory(g).stages) act = std::max(act, st.activations);
      CHECK(act >= prev);
      prev = act;
    }
  }

  TEST_CASE("property: more pipeline stages never mean more weight memory per stage") {
    for (const char* model : {"deepseek-v3", "llama3-70b", "gpt3-175b"}) {
      double prev = 1e300;
      for (int pp : {1, 2, 4, 8, 16}) {
        Plan p = make_plan(model, "h100-sxm-ib", 1, pp, 8, 1, 64);
        if (p.model.moe) p.strategy.parallel.ep = 8;
        double w = 0;
        for (const StageMemory& st : estimate_memory(p).stages) w = std::max(w, st.weights);
        CHECK_MESSAGE(w <= prev, model << " pp " << pp);
        prev = w;
      }
    }
  }

  TEST_CASE("property: the components add up and more device memory never makes it infeasible") {
    Plan p = load_plan("br166-ep32-32n-mb1");
    MemoryEstimate e = estimate_memory(p);
    for (const StageMemory& st : e.stages) {
      CHECK(st.total == doctest::Approx(st.weights + st.gradients + st.optimizer_states +
                                        st.activations + st.buffers + st.reserve));
      CHECK(cost::sum(st.activation_parts) == doctest::Approx(st.activations));
      CHECK(cost::sum(st.buffer_parts) == doctest::Approx(st.buffers));
      CHECK(st.total <= worst(e).total);
    }
    p.hardware.device.memory_bytes = worst(e).total;
    CHECK(estimate_memory(p).feasible);
    p.hardware.device.memory_bytes = worst(e).total * 0.99;
    CHECK_FALSE(estimate_memory(p).feasible);
  }
  TEST_CASE("FP8 weights: an FP8 copy beside each BF16 layer weight, none for embedding, positions and head") {
    // GPT-3 175B at TP8 PP8 on H100 in FP8 (Transformer Engine keeps a 1-byte copy of each
    // linear weight it casts; Megatron-Core's embedding and output layer are not TE FP8
    // modules, and the op graph runs lm_head in BF16). Per TP rank per layer as in the test
    // above, 12h^2/8 + 7h/8 + 6h, at 2 + 1 B; the embedding shard V/8 x h, the 2048 x h learned
    // positions, the head's copy of the embedding and the final norm (2h) at 2 B only.
    const double H = 12288;
    const double per_layer = 12 * H * H / 8 + 7 * H / 8 + 6 * H;
    Plan p = make_plan("gpt3-175b", "h100-sxm-ib", 8, 8, 4, 1, 64);
    p.strategy.training.precision = Precision::Fp8;
    MemoryEstimate e = estimate_memory(p);
    REQUIRE(e.stages.size() == 8);
    CHECK(e.stages[3].weights == doctest::Approx(3 * 12 * per_layer).epsilon(1e-12));
    CHECK(e.stages[0].weights ==
          doctest::Approx(3 * 12 * per_layer + 2 * (50257.0 / 8 * H + 2048 * H)).epsilon(1e-12));
    CHECK(e.stages[7].weights ==
          doctest::Approx(3 * 12 * per_layer + 2 * (2 * H + 50257.0 / 8 * H)).epsilon(1e-12));
    // ZeRO-3 shards the BF16 weights over DP = 4 and keeps no FP8 copy of a shard: each
    // gathered layer is cast for its GEMMs and the cast dropped with it, so the prefetch
    // buffer holds two gathered layers in BF16 and one layer's FP8 cast (2 x 2 + 1 B).
    p.strategy.training.zero = 3;
    const MemoryEstimate z = estimate_memory(p);
    CHECK(z.stages[0].weights ==
          doctest::Approx((2 * 12 * per_layer + 2 * (50257.0 / 8 * H + 2048 * H)) / 4).epsilon(1e-12));
    CHECK(part(z.stages[3].buffer_parts, "zero3_prefetch") == doctest::Approx(5 * per_layer).epsilon(1e-12));
  }

  TEST_CASE("FP8: GEMM inputs kept for the weight gradient are the 1-byte FP8 copies") {
    // Llama 3 70B at TP8 + SP on H100, s 8192, b 1: T = 8192 tokens, Tr = T / 8, h 8192,
    // f / t = 28672 / 8, a' = 64 / 8 heads of d 128. FP8 stores the QKV and fc1 inputs (the
    // two norm outputs, 2 Tr h) and the fc2 input (T f / t) in 1 B instead of 2, and keeps an
    // FP8 copy of the attention output beside the BF16 O the flash backward needs (+T a' d).
    Plan p = make_plan("llama3-70b", "h100-sxm-ib", 8, 1, 1, 1, 1, true);
    const double T = 8192, Tr = T / 8, h = 8192, f = 28672.0 / 8, ad = 8 * 128;
    const double bf16 = layer_bytes(p);
    p.strategy.training.precision = Precision::Fp8;
    const double fp8 = layer_bytes(p);
    CHECK(bf16 - fp8 == doctest::Approx(2 * Tr * h + T * f - T * ad));
    // A GPU without FP8 runs the GEMMs in BF16 and keeps BF16 inputs.
    p.hardware = load_hardware("a100-sxm-ib");
    CHECK(layer_bytes(p) == doctest::Approx(bf16));
  }
}

TEST_SUITE("validation.seed_memory") {
  // SEED_DIGEST.md sec. 3. BR166 card = 2 dies; EP counts dies. Seed "GB"/"MB" are binary
  // (sec. 0.3; PyTorch's "MB" in max reserved is MiB). docs/validation.md has the table.

  TEST_CASE(
      "stage-1 'weight with state 24.47 GB' (DP8 EP16 PP16, chunk adam 8bit) = 4 B/param x 4 MoE "
      "layers") {
    // The seeds' figure is 4 bytes per parameter -- BF16 weight (2) + 8-bit m and v (1 + 1) --
    // over one card's share of 4 MoE layers, in GiB:
    //   per layer: attention 187,107,328 + 2 norms 14,336 + router 1,835,008
    //              + shared expert 44,040,192 = 232,996,864 dense,
    //              32 experts per card x 3 x 7168 x 2048 = 1,409,286,144 routed;
    //   4 x 1,642,283,008 x 4 B = 26,276,528,128 B = 24.472 GiB.
    const double per_layer = 232996864.0 + 32 * 3.0 * 7168 * 2048;
    CHECK(4 * per_layer * 4 / kGiB == doctest::Approx(24.47).epsilon(0.0003));
    MemoryEstimate e = estimate_memory(load_plan("br166-ep16-mb2"));
    const StageMemory& st =
        e.stages[2];  // the first stage with 4 MoE layers (0: 3 dense, 1: 3 MoE)
    REQUIRE(st.moe_layers == 4);
    CHECK(st.dense_params + st.expert_params == 4 * per_layer);
    // our BF16 weights are exactly half of it; the tool adds what the seeds leave out:
    // FP32 main gradients (4 B) and the FP32 master weights of 8-bit Adam (4 B), and shards
    // the dense part of the optimizer over DP 8 (ZeRO-1).
    CHECK(2 * st.weights / kGiB == doctest::Approx(24.47).epsilon(0.0003));
    MESSAGE("stage 2 weights + grads + optimizer: "
            << (st.weights + st.gradients + st.optimizer_states) / kGiB
            << " GiB (seed: weight with state 24.47)");
  }

  TEST_CASE("EP32 'weight with state': TP1 DP16 PP8 27.94 GB; TP2 DP8 25.38 GB") {
    // 8 MoE layers, 16 experts per card: (232,996,864 + 16 x 44,040,192) x 8 x 4 B = 27.944 GiB
    const double expert = 3.0 * 7168 * 2048;
    Plan p = load_plan("br166-ep32-16n-mb2");
    MemoryEstimate e = estimate_memory(p);
    const StageMemory& st = e.stages[2];
    REQUIRE(st.moe_layers == 8);
    CHECK(4 * (st.dense_params + st.expert_params) / kGiB ==
          doctest::Approx(27.94).epsilon(0.0003));
    CHECK(st.dense_params + st.expert_params == 8 * (232996864.0 + 16 * expert));
    // TP2 DP8 (mb4): the tool splits q_b, kv_b, o and the shared expert over TP and keeps
    // q_a, kv_a, norms and router whole: 16,990,208 + 216,006,656 / 2 = 124,993,536 dense per
    // layer -> 24.72 GiB. The seeds' 25.38 GiB is matched exactly if the shared expert
    // (44,040,192) stays unsplit: + 8 x 22,020,096 x 4 B = + 0.656 GiB.
    p.strategy.parallel.tp = 2;
    p.strategy.parallel.dp = 8;
    p.strategy.training.micro_batch = 4;
    const StageMemory st2 = estimate_memory(p).stages[2];
    const double ours = 8 * (124993536.0 + 16 * expert);
    CHECK(st2.dense_params + st2.expert_params == ours);
    CHECK(4 * ours / kGiB == doctest::Approx(24.72).epsilon(0.0003));
    CHECK(4 * (ours + 8 * 22020096.0) / kGiB == doctest::Approx(25.38).epsilon(0.0003));
  }

  TEST_CASE(
      "stage-1 'activation 260.92 GB' (DP8 EP16 mb2, no recompute): the seeds' 16 micro-batches x "
      "4 MoE layers") {
    // The seeds' stage 1 holds pp = 16 micro-batches of 4 MoE layers (their weight figure
    // counts 4 MoE layers). One MoE layer, one micro-batch: the parts of the module test above.
    Plan p = with_recompute(load_plan("br166-ep16-mb2"), RecomputeMode::None);
    p.strategy.training.activation_offload = false;  // the stage-1 estimate: "offload False"
    p.strategy.training.optimizer_offload = false;
    const double T = 8192, H = 7168, copies = 65536;
    const double layer = 4 * T * H * 2                         // norm inputs + outputs
                         + T * (1536 + 576) * 2                // compressed q, kv
                         + T * (1536 + 512 + 128 * 512) * 2    // up-projected q, k, v
                         + T * 128 * 4 + T * 128 * 128 * 2     // lse, attention output
                         + T * 256 * 5                         // router
                         + copies * (H + 4096 + 2048 + H) * 2  // routed copies, experts
                         + T * 3 * 2048 * 2;                   // shared expert
    CHECK(layer_bytes(p, {}, true) == layer);
    const double seeds_way = 16 * 4 * layer;
    MESSAGE("tool, 16 x 4 MoE layers: " << seeds_way / kGiB << " GiB vs seed 260.92 GiB ("
                                        << (seeds_way / (260.92 * kGiB) - 1) * 100 << "%)");
    CHECK(seeds_way / kGiB == doctest::Approx(260.92).epsilon(0.10));
    // the tool's own worst stage (stage 2: 14 in-flight micro-batches x 4 layers)
    MemoryEstimate e = estimate_memory(p);
    CHECK(e.worst_stage == 2);
    CHECK(worst(e).in_flight == 14);
    CHECK(part(worst(e).activation_parts, "moe.dispatched") == 14 * 4 * copies * H * 2);
    // mb4: the seeds' 521.84 = 2 x 260.92; the tool is linear in the micro-batch too
    Plan p4 = p;
    p4.strategy.training.micro_batch = 4;
    CHECK(layer_bytes(p4, {}, true) == doctest::Approx(2 * layer).epsilon(1e-12));
  }

  TEST_CASE("BR166 row 1 (br166-ep16-mb2) next to the measured max reserved 61264 MiB per card") {
    const double measured = 61264 * kMiB;
    // (a) The other reading of the seeds (recompute of MLA up-projections and norms only, no
    // offload): 14 in-flight micro-batches of 4 MoE layers' expert intermediates on stage 2
    // do not fit. The seeds' own estimate for these settings without recompute is 285 GB.
    Plan light = load_plan("br166-ep16-mb2");
    light.strategy.training.recompute = Recompute{};
    light.strategy.training.recompute.mode = RecomputeMode::Modules;
    light.strategy.training.recompute.modules[static_cast<int>(RecomputeModule::MlaUpProj)] = true;
    light.strategy.training.recompute.modules[static_cast<int>(RecomputeModule::LayerNorm)] = true;
    light.strategy.training.optimizer_offload = false;
    light.strategy.training.activation_offload = false;
    MemoryEstimate as_file = estimate_memory(light);
    CHECK_FALSE(as_file.feasible);
    CHECK(as_file.worst_stage == 2);
    CHECK(as_file.infeasible_reasons[0].find("activations") != std::string::npos);
    MESSAGE("modules, no offload: " << worst(as_file).total / kMiB << " MiB ("
                           << (worst(as_file).total / measured - 1) * 100 << "% vs measured)");
    // (b) The seeds' settings for this configuration (sec. 3.2, the row that starts from
    // "single-node EP16 TP1DP8EP16PP16": chunk adam 8bit, recompute True, offload True),
    // read as full recompute with optimizer states and activations offloaded, as the strategy
    // file now says. The worst stage
    // is then the last one (3 MoE layers + the MTP MoE block, head, embedding copy, FP32
    // logits). Tolerance 10%: PyTorch's max reserved exceeds the allocated peak by the
    // caching allocator's fragmentation, and balanced-routing runs spread 60-63 GB (sec. 3.1).
    Plan p = load_plan("br166-ep16-mb2");
    CHECK(p.strategy.training.recompute.mode == RecomputeMode::Full);
    CHECK(p.strategy.training.optimizer_offload);
    CHECK(p.strategy.training.activation_offload);
    MemoryEstimate e = estimate_memory(p);
    MESSAGE("seed settings: stage " << e.worst_stage << " " << worst(e).total / kMiB << " MiB ("
                                    << (worst(e).total / measured - 1) * 100 << "% vs 61264 MiB)");
    CHECK(e.worst_stage == 15);
    CHECK(worst(e).total == doctest::Approx(measured).epsilon(0.10));
    // The FP32 logits of the loss are freed before the first layer is recomputed, so they and
    // the recompute working set do not add up: the configuration that ran fits.
    CHECK(e.feasible);
    CHECK(worst(e).total < e.capacity);
  }

  TEST_CASE("A/M scaling of the seven-row table: row 4 about half of row 1, row 7 about row 4") {
    // Seeds (sec. 3.1): row 1 = A + M, row 4 = A/2 + M/2, row 7 = A/2 + M/2, with A ~ mb and
    // M ~ mb x layers per stage. The tool's activations follow exactly: per-card activation
    // is linear in mb and, at fixed tokens per die, independent of EP; rows 1, 4, 7 all have
    // PP16 (same in-flight counts and layers per stage).
    const MemoryEstimate r1 = estimate_memory(load_plan("br166-ep16-mb2"));
    const MemoryEstimate r4 = estimate_memory(load_plan("br166-ep32-32n-mb1"));
    const MemoryEstimate r7 = estimate_memory(load_plan("br166-ep64-64n-mb1"));
    for (int st : {0, 2, 8}) {
      const auto i = static_cast<std::size_t>(st);
      CHECK(r4.stages[i].activations ==
            doctest::Approx(0.5 * r1.stages[i].activations).epsilon(1e-9));
      CHECK(r7.stages[i].activations == doctest::Approx(r4.stages[i].activations).epsilon(1e-9));
    }
    // Parameters on the worst stage: the expert state follows experts per card (EP16 -> 32 ->
    // 64 over dies: 16 -> 8 -> 4 per card), the dense state (attention, shared experts, the
    // last stage's head and MTP module) does not. The seeds' A/M table has no term for either.
    const StageMemory& w1 = worst(r1);
    const StageMemory& w4 = worst(r4);
    const StageMemory& w7 = worst(r7);
    CHECK(w4.stage == w1.stage);
    CHECK(w4.dense_params == doctest::Approx(w1.dense_params));
    CHECK(w4.expert_params == doctest::Approx(0.5 * w1.expert_params));
    CHECK(w7.expert_params == doctest::Approx(0.5 * w4.expert_params));
    // So the totals fall by less than the seeds' halving: row 4 / row 1 is 0.66 here, not 0.5
    // (the fixed dense state), and row 7 / row 4 0.79, not 1 (the expert state halves again).
    const double q41 = w4.total / w1.total, q74 = w7.total / w4.total;
    MESSAGE("row 4 / row 1 = " << q41 << ", row 7 / row 4 = " << q74);
    CHECK(q41 > 0.5);
    CHECK(q41 < 0.75);
    CHECK(q74 < 1.0);
  }
}

TEST_SUITE("cost.memory") {
  TEST_CASE("DeepSeek-V3's low-precision storage: FP8 attention output and SwiGLU inputs, no expert outputs, BF16 moments") {
    // strategies/deepseek-v3-h800.yaml with balanced routing: 4096 tokens per GPU, 128 heads
    // of v_head_dim 128, 4 experts per rank each receiving 4096 x 64 x 8 / 256 = 8192 tokens.
    Plan p = load_plan("deepseek-v3-h800");
    p.strategy.moe.routing = Routing::Balanced;
    auto bytes = [](const std::vector<MemoryPart>& parts, const std::string& name) {
      double b = 0;
      for (const MemoryPart& x : parts) b += x.name == name ? x.bytes : 0.0;
      return b;
    };
    auto parts = cost::layer_activations(p, true, 1.0);
    const double copies = 8192.0 * 4;
    CHECK(bytes(parts, "attention.output") == doctest::Approx(4096.0 * 128 * 128 * 1));  // E5M6, 1 B
    CHECK(bytes(parts, "moe.expert_fc1") == doctest::Approx(copies * 2 * 2048 * 1));     // FP8 SwiGLU input
    CHECK(bytes(parts, "moe.expert_act") == 0);     // recomputed (moe_act)
    CHECK(bytes(parts, "moe.expert_output") == 0);  // weights applied on the SwiGLU output
    // Megatron's way: BF16 + FP8 attention output, BF16 SwiGLU input, expert outputs kept
    p.strategy.training.fp8_storage = false;
    p.strategy.moe.gate_at_swiglu = false;
    parts = cost::layer_activations(p, true, 1.0);
    CHECK(bytes(parts, "attention.output") == doctest::Approx(4096.0 * 128 * 128 * 3));
    CHECK(bytes(parts, "moe.expert_fc1") == doctest::Approx(copies * 2 * 2048 * 2));
    CHECK(bytes(parts, "moe.expert_output") == doctest::Approx(copies * 7168 * 2));
    // Optimizer states per parameter: FP32 master 4 + BF16 moments 2 + 2
    CHECK(cost::optimizer_bytes_per_param(Optimizer::AdamBf16) == 8.0);
  }

  TEST_CASE("DeepSeek-V3 as DeepSeek trained it fits in an 80 GB H800") {
    const MemoryEstimate m = estimate_memory(load_plan("deepseek-v3-h800"));
    CHECK(m.feasible);
    CHECK(m.stages[static_cast<std::size_t>(m.worst_stage)].total < 80.0 * 1024 * 1024 * 1024);
  }
}

TEST_SUITE("cost.memory") {
  TEST_CASE("eager elementwise keeps the FP32 norm input and the SwiGLU product's silu output") {
    // torchtitan without torch.compile (pytorch/torchtitan@9dec370 torchtitan/models/norms.py,
    // models/llama/model.py): RMSNorm in FP32 leaves autograd x.float() (pow's input, 4 B) and
    // the normalized BF16 tensor (the weight multiply's), 4 B per element more than a fused
    // norm's BF16 input; silu(x W1) * (x W3) keeps silu's output, 2 B per FFN element more.
    // Llama 3 70B at TP8 without SP, micro-batch 1: T = 8192 tokens on every rank, h 8192,
    // FFN 28672 / 8 = 3584 per rank; two norms per layer. A LayerNorm (one ATen kernel, eager
    // or not) adds nothing.
    Plan p = make_plan("llama3-70b", "h100-sxm-ib", 8, 1, 1, 1, 1, false);
    const double fused = layer_bytes(p);
    p.strategy.training.eager_elementwise = true;
    const double eager = layer_bytes(p);
    const double T = 8192, h = 8192, f = 3584;
    CHECK(eager - fused == doctest::Approx(2 * T * h * 4 + T * f * 2));
    p.model.norm = NormKind::LayerNorm;
    const double layernorm_eager = layer_bytes(p);
    p.strategy.training.eager_elementwise = false;
    CHECK(layernorm_eager - layer_bytes(p) == doctest::Approx(T * f * 2));
  }

  TEST_CASE("FP8 parameters hold each linear weight in 1 B instead of BF16 beside an FP8 copy") {
    // GPT-3 175B at TP8 PP8, FP8 GEMMs: 12 layers per stage, each with 12 h^2 linear weights
    // (QKV 3h^2, output h^2, FC1 4h^2, FC2 4h^2; Megatron --fp8-param-gather, NeMo
    // fp8_params) split over TP 8. Without FP8 parameters each weighs 2 B (BF16) + 1 B (its FP8
    // copy), with them 1 B, so every stage holds 2 B x 12 x 12 h^2 / 8 less. The embedding and
    // the head stay BF16 either way, and the biases and norms (13 h per layer, 1e-4 of the
    // linear weights) are within the tolerance.
    Plan p = make_plan("gpt3-175b", "h100-sxm-ib", 8, 8, 1, 1, 8, true);
    p.strategy.training.precision = Precision::Fp8;
    const MemoryEstimate copies = estimate_memory(p);
    p.strategy.training.fp8_params = true;
    const MemoryEstimate fp8 = estimate_memory(p);
    const double h = 12288;
    const double saved = 2.0 * 12 * 12 * h * h / 8;
    REQUIRE(copies.stages.size() == 8);
    for (std::size_t i = 0; i < copies.stages.size(); ++i) {
      CAPTURE(i);
      CHECK(copies.stages[i].weights - fp8.stages[i].weights == doctest::Approx(saved).epsilon(0.002));
      CHECK(fp8.stages[i].activations == doctest::Approx(copies.stages[i].activations));
    }
    // BF16 GEMMs keep BF16 weights: the knob needs FP8 GEMMs.
    p.strategy.training.precision = Precision::Bf16;
    const MemoryEstimate bf16 = estimate_memory(p);
    p.strategy.training.fp8_params = false;
    CHECK(bf16.stages[0].weights == doctest::Approx(estimate_memory(p).stages[0].weights));
  }

  TEST_CASE("BF16 main gradients take 2 B per parameter instead of 4") {
    Plan p = load_plan("deepseek-v3-h800");
    const MemoryEstimate fp32 = estimate_memory(p);
    p.strategy.training.bf16_grads = true;
    const MemoryEstimate bf16 = estimate_memory(p);
    for (std::size_t i = 0; i < fp32.stages.size(); ++i) {
      CHECK(bf16.stages[i].gradients == doctest::Approx(fp32.stages[i].gradients / 2));
    }
  }

  TEST_CASE("recompute op keeps the block input, every other matmul output and SDPA's outputs") {
    // torchtitan's selective op policy (pytorch/torchtitan@9dec370 parallelize_llama.py):
    // the checkpointed block keeps its input x; of wq, wk, wv, wo, w1, w3, w2 the odd ones
    // (wq, wv, w1, w2) keep their outputs; SDPA keeps O and its FP32 log-sum-exp. Llama 3 70B
    // at TP8 without SP, micro-batch 1: T = 8192 tokens, per rank 8 query heads and 1 KV head
    // of 128, FFN 3584. BF16, flash attention:
    //   x  T h x 2 B;  wq T 8 128 x 2;  wv T 1 128 x 2;  O T 8 128 x 2;  lse T 8 x 4;
    //   w1 T 3584 x 2;  w2 T h x 2.
    Plan p = make_plan("llama3-70b", "h100-sxm-ib", 8, 1, 8, 1, 64);
    p.strategy.training.recompute.mode = RecomputeMode::Op;
    const double T = 8192, hh = 8192;
    const double expected = T * (hh * 2 + 1024 * 2 + 128 * 2 + 1024 * 2 + 8 * 4 + 3584 * 2 + hh * 2);
    const auto parts = cost::layer_activations(p, false, 1.0, {});
    CHECK(cost::sum(parts) == doctest::Approx(expected).epsilon(1e-12));
    CHECK(part(parts, "layer_input") == doctest::Approx(T * hh * 2));
    CHECK(part(parts, "norm_outputs") == 0);
    // Less than Megatron's selective (which keeps both norms' inputs and outputs, q/k/v,
    // the SwiGLU input and output) and more than full recompute (the input alone).
    CHECK(cost::sum(parts) < layer_bytes(with_recompute(p, RecomputeMode::Selective)));
    CHECK(cost::sum(parts) > layer_bytes(with_recompute(p, RecomputeMode::Full)));
  }
}

TEST_SUITE("cost.memory") {
  TEST_CASE("the eager loss peaks at 12 B per logit, 16 B under torch's loss_parallel (TP > 1)") {
    // Llama 3 70B (vocabulary 128256), s 8192, b 1, loss: eager. TP 1: F.cross_entropy's fused
    // log_softmax: at the backward's peak the saved FP32 log-probabilities, nll's FP32 gradient
    // and the FP32 input gradient, 3 x 4 B per logit. TP 8: the vocab shard (16032), and the
    // decomposed log_softmax of torch/distributed/tensor/parallel/loss.py adds exp(output)'s
    // FP32 temporary: 4 x 4 B.
    auto logits = [](int tp) {
      Plan p;
      p.model = load_model("llama3-70b");
      p.hardware = load_hardware("h100-sxm-ib");
      p.strategy.nodes = 1;
      p.strategy.parallel.tp = tp;
      p.strategy.parallel.dp = 8 / tp;
      p.strategy.parallel.sp = tp > 1;
      p.strategy.training.micro_batch = 1;
      p.strategy.training.global_batch = 8 / tp;
      p.strategy.training.seq_len = 8192;
      p.strategy.training.recompute.mode = RecomputeMode::Full;
      p.strategy.training.zero = 3;
      p.strategy.training.eager_loss = true;
      const MemoryEstimate e = estimate_memory(p);
      double b = 0;
      for (const MemoryPart& x : e.stages.at(0).buffer_parts) b += x.name == "logits" ? x.bytes : 0.0;
      return b;
    };
    CHECK(logits(1) == doctest::Approx(8192.0 * 128256 * 12));
    CHECK(logits(8) == doctest::Approx(8192.0 * 16032 * 16));
  }
}

TEST_SUITE("cost.memory") {
  TEST_CASE("ring attention's buffers during a layer's backward (cp > 1)") {
    // Llama 3 70B at TP 8 (8 query heads per rank, head 128), CP 4, s 8192: 2048 tokens per
    // rank. With repeat_kv K/V are 8 heads wide: kv = 2048 x 8 x (128 + 128) elements.
    Plan p;
    p.model = load_model("llama3-70b");
    p.hardware = load_hardware("h100-sxm-ib");
    p.strategy.nodes = 4;
    p.strategy.parallel.tp = 8;
    p.strategy.parallel.cp = 4;
    p.strategy.parallel.sp = true;
    p.strategy.training.micro_batch = 1;
    p.strategy.training.global_batch = 1;
    p.strategy.training.seq_len = 8192;
    p.strategy.training.repeat_kv = true;
    const double kv = 2048.0 * 8 * 256, dq = 2048.0 * 8 * 128 * 4;
    // torch: all four chunks gathered (BF16), the FP32 dQ, dK/dV x 3 in FP32
    p.strategy.training.cp_comm = CpComm::TorchAllGather;
    CHECK(cost::memory_inputs(p, 1.0).cp_work == doctest::Approx(4 * kv * 2 + dq + 3 * kv * 4));
    // TE's ring: the current and the next chunk; dK/dV in BF16
    p.strategy.training.cp_comm = CpComm::P2p;
    CHECK(cost::memory_inputs(p, 1.0).cp_work == doctest::Approx(2 * kv * 2 + dq + 3 * kv * 2));
    p.strategy.parallel.cp = 1;
    CHECK(cost::memory_inputs(p, 1.0).cp_work == 0.0);
  }
}
