// Loading specs: preset values against their sources, `extends:` and merging, references
// relative to the including file, strategy rules, search spaces.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "paraplan/config.hpp"
#include "paraplan/errors.hpp"
#include "paraplan/spec.hpp"

namespace fs = std::filesystem;
using namespace paraplan;

namespace {

constexpr double kGiB = 1073741824.0;

std::string good(const std::string& rel) {
  return (fs::path(PARAPLAN_TEST_DATA) / "good" / rel).string();
}

bool has_rule(const std::vector<RuleViolation>& v, const std::string& rule) {
  return std::any_of(v.begin(), v.end(), [&](const RuleViolation& r) { return r.rule == rule; });
}

std::vector<std::string> rules_of(const std::vector<RuleViolation>& v) {
  std::vector<std::string> out;
  for (const auto& r : v) out.push_back(r.rule);
  std::sort(out.begin(), out.end());
  return out;
}

// Row 1 of the seeds' strategy table (SEED_DIGEST.md sec. 3.1): 16 nodes TP1 EP16 DP8 PP16 mb2.
Strategy row1() {
  Strategy s;
  s.nodes = 16;
  s.parallel.pp = 16;
  s.parallel.dp = 8;
  s.parallel.ep = 16;
  s.ep_over_dies = true;
  s.training.micro_batch = 2;
  s.training.global_batch = 960;
  return s;
}

// BR166 built in code, no YAML: die 2 -> vnode 4 -> node 2 -> cluster 64.
HardwareSpec br166_in_code() {
  HardwareSpec hw;
  hw.name = "br166-code";
  hw.device.name = "BR166";
  hw.device.dies = 2;
  for (auto [name, size] : {std::pair{"die", 2}, std::pair{"vnode", 4}, std::pair{"node", 2},
                            std::pair{"cluster", 64}}) {
    TierSpec t;
    t.name = name;
    t.size = size;
    hw.tiers.push_back(t);
  }
  return hw;
}

}  // namespace

TEST_SUITE("config.presets") {
  TEST_CASE("every built-in preset loads; every built-in strategy obeys the rules") {
    REQUIRE(presets().size() == 34);  // 13 hardware, 6 models, 9 strategies, 6 spaces
    for (const Preset& p : presets()) {
      CAPTURE(p.name);
      CHECK_FALSE(p.description.empty());
      CHECK_NOTHROW((void)check_file(p.name));
      CHECK(detect_kind(p.name) == p.kind);
    }
  }

  TEST_CASE("br166-ubbv2 carries the seed's numbers (SEED_DIGEST.md sec. 1)") {
    HardwareSpec hw = load_hardware("br166-ubbv2");
    CHECK(hw.device.dies == 2);                                  // sec. 1.1
    CHECK(hw.device.memory_bytes == 64 * kGiB);                  // public BR100, assumed
    CHECK(hw.device.memory_bw_bytes_per_s == 1.2e12);            // 2 dies x 600 GB/s, sec. 1.1
    CHECK(hw.device.peak(Dtype::Bf16) == 1024e12);               // public BR100
    // 8 cards per node: die 2 x vnode 4 x node 2 = 16 dies = 8 cards (sec. 1.1, 1.5)
    CHECK(hw.devices_per_node() == 8);
    CHECK(hw.max_nodes() == 1024);                               // assumed flat RoCE fabric, sec. 3.1 / 8
    REQUIRE(hw.tiers.size() == 4);
    CHECK(hw.tiers[3].bw_bytes_per_s == 12e9);                   // RDMA send/recv, sec. 1.4
    const auto& ag = hw.tiers[2].collective(Collective::AllGather);
    REQUIRE(ag.has_value());
    CHECK(ag->bus_bw_bytes_per_s == doctest::Approx(128.6e9));   // SPC fused allgather, sec. 1.3
    CHECK(ag->engine == Engine::Compute);
    CHECK(hw.tiers[2].collective(Collective::ReduceScatter)->engine == Engine::Dma);
    // the send/recv size table, column A over its 1 GiB value 12.19 GB/s (sec. 1.4)
    REQUIRE(hw.tiers[3].size_efficiency.size() == 6);
    CHECK(hw.tiers[3].size_efficiency[0].bytes == 1048576.0);
    CHECK(hw.tiers[3].size_efficiency[0].efficiency == doctest::Approx(0.18 / 12.19).epsilon(0.01));
    // TCore utilization at m = 2048, n = 4096, k = 7168: 42% (sec. 1.6)
    const auto& grouped = hw.device.table(GemmKind::GroupedBf16);
    REQUIRE(grouped.has_value());
    bool found = false;
    for (const GemmPoint& p : grouped->points) {
      if (p.m == 2048 && p.n == 4096 && p.k == 7168) {
        CHECK(p.efficiency == 0.42);
        found = true;
      }
    }
    CHECK(found);
  }

  TEST_CASE("NVIDIA presets: one device per rank, 8 per node, NIC share per GPU") {
    HardwareSpec h100 = load_hardware("h100-sxm-ib");
    CHECK(h100.device.dies == 1);
    CHECK(h100.devices_per_node() == 8);
    CHECK(h100.device.peak(Dtype::Bf16) == 989e12);  // H100 SXM datasheet, dense BF16
    CHECK(h100.tiers.back().bw_bytes_per_s == 50e9);  // one 400 Gb/s NDR NIC per GPU
    HardwareSpec a100 = load_hardware("a100-sxm-ib");
    CHECK(a100.device.peak(Dtype::Bf16) == 312e12);  // A100 datasheet
    CHECK(a100.tiers.back().bw_bytes_per_s == 25e9);  // 200 Gb/s HDR per GPU
    CHECK(a100.device.peak(Dtype::Fp8) == 0.0);       // no FP8 on Ampere
  }

  TEST_CASE("models: the dimensions of their configs") {
    ModelSpec ds = load_model("deepseek-v3");
    CHECK(ds.layers == 61);
    CHECK(ds.attention.kind == AttentionKind::Mla);
    CHECK(ds.attention.kv_lora_rank == 512);
    REQUIRE(ds.moe.has_value());
    CHECK(ds.moe->routed_experts == 256);
    CHECK(ds.moe->top_k == 8);
    CHECK(ds.moe->shared_expert_intermediate == 2048);  // defaults to expert_intermediate
    ModelSpec llama = load_model("llama3-70b");
    CHECK(llama.attention.kv_heads == 8);
    CHECK(llama.attention.head_dim == 128);
    ModelSpec gpt3 = load_model("gpt3-175b");
    CHECK(gpt3.norm == NormKind::LayerNorm);
    CHECK(gpt3.bias);
    CHECK_FALSE(gpt3.moe.has_value());
  }
}

TEST_SUITE("config.extends") {
  TEST_CASE("br166-ubbv2-port10 extends br166-ubbv2 and adds only the Port-10 link") {
    HardwareSpec base = load_hardware("br166-ubbv2");
    HardwareSpec p10 = load_hardware("br166-ubbv2-port10");
    CHECK(p10.name == "br166-ubbv2-port10");
    CHECK(base.extra_links.empty());
    REQUIRE(p10.extra_links.size() == 1);
    CHECK(p10.extra_links[0].name == "port10");
    CHECK(p10.extra_links[0].between == LinkPairing::NodePairs);
    CHECK(p10.extra_links[0].bw_bytes_per_s == 25e9);  // SEED_DIGEST sec. 1.2, Port-10 pull
    CHECK(p10.tiers.size() == base.tiers.size());
    CHECK(p10.device.memory_bytes == base.device.memory_bytes);
  }

  TEST_CASE("tiers merge by name: overriding one field keeps the others") {
    HardwareSpec base = load_hardware("br166-ubbv2");
    HardwareSpec hw = load_hardware(good("custom-hw.yaml"));
    CHECK(hw.name == "br166-2nic");
    REQUIRE(hw.tiers.size() == 4);
    CHECK(hw.tiers[3].name == "cluster");
    CHECK(hw.tiers[3].bw_bytes_per_s == 24e9);
    CHECK(hw.tiers[3].latency_s == base.tiers[3].latency_s);
    CHECK(hw.tiers[3].size_efficiency.size() == base.tiers[3].size_efficiency.size());
    CHECK(hw.tiers[2].bw_bytes_per_s == base.tiers[2].bw_bytes_per_s);
  }

  TEST_CASE("an overlay may switch an inherited compute-engine collective to DMA") {
    // br166-ubbv2's node all-gather is an SPC (compute) figure with compute_share 1.0; a user
    // trying the same figure on DMA engines changes only `engine`. The inherited share no
    // longer applies; a share written beside `engine: dma` in one file is still refused.
    const std::string overlay =
        "extends: br166-ubbv2\nname: br166-dma\nnetwork:\n  tiers:\n    - name: node\n      collectives:\n"
        "        all_gather: {bandwidth: 128.6 GB/s, convention: algbw, engine: dma}\n";
    const HardwareSpec hw = parse_hardware(overlay, "br166-dma.yaml");
    const auto& ag = hw.tiers[2].collective(Collective::AllGather);
    REQUIRE(ag.has_value());
    CHECK(ag->engine == Engine::Dma);
    CHECK(ag->compute_share == 1.0);
    CHECK_THROWS_AS((void)parse_hardware("extends: br166-ubbv2\nname: x\nnetwork:\n  tiers:\n    - name: node\n"
                                         "      collectives:\n        all_gather: {bandwidth: 1 GB/s, engine: dma, "
                                         "compute_share: 0.5}\n",
                                         "x.yaml"),
                    ConfigError);
  }

  TEST_CASE("a measured collective may carry its own message-size curve") {
    const std::string overlay =
        "extends: h100-sxm-ib\nname: x\nnetwork:\n  tiers:\n    - name: node\n      collectives:\n"
        "        all_to_all: {bandwidth: 300 GB/s, size_efficiency: [[1 MiB, 0.1], [1 GiB, 0.9]]}\n";
    const HardwareSpec hw = parse_hardware(overlay, "x.yaml");
    const auto& a2a = hw.tiers[0].collective(Collective::AllToAll);
    REQUIRE(a2a.has_value());
    REQUIRE(a2a->size_efficiency.size() == 2);
    CHECK(a2a->size_efficiency[1].bytes == 1073741824.0);
    CHECK(a2a->size_efficiency[1].efficiency == 0.9);
    // sizes must increase, at the row that breaks it
    try {
      (void)parse_hardware("extends: h100-sxm-ib\nname: x\nnetwork:\n  tiers:\n    - name: node\n      collectives:\n"
                           "        all_to_all: {bandwidth: 300 GB/s, size_efficiency: [[1 GiB, 0.9], [1 MiB, 0.1]]}\n",
                           "x.yaml");
      FAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
      REQUIRE(e.diagnostics().size() == 1);
      CHECK(e.diagnostics()[0].line == 7);
      CHECK(e.diagnostics()[0].message.find("must increase") != std::string::npos);
    }
  }

  TEST_CASE("references resolve against the including file's folder, not the working directory") {
    auto cwd = fs::current_path();
    fs::current_path(fs::temp_directory_path());
    Plan plan = load_plan(good("sub/strategy.yaml"));
    fs::current_path(cwd);
    CHECK(plan.hardware.name == "br166-2nic");
    CHECK(plan.model.name == "deepseek-v3");
    CHECK(plan.strategy.moe.dispatch == Dispatch::DeepEp);
    CHECK(plan.strategy.name == "strategy");  // the file stem when `name:` is absent
  }

  TEST_CASE("a space extends another by relative path and overrides lists, auto and module lists") {
    SpacePlan sp = load_space(good("sub/space.yaml"));
    CHECK(sp.space.nodes.values == std::vector<int>{32});
    CHECK(sp.space.micro_batch.values == std::vector<int>{1, 2});
    CHECK(sp.space.tp.auto_values);
    CHECK(sp.space.dispatch.auto_values);
    REQUIRE(sp.space.recompute.values.size() == 4);
    CHECK(sp.space.recompute.values[3].mode == RecomputeMode::Modules);
    CHECK(sp.space.recompute.values[3].has(RecomputeModule::MlaUpProj));
    CHECK_FALSE(sp.space.recompute.values[3].has(RecomputeModule::CoreAttn));
    CHECK(sp.space.objective == Objective::Tgs);
  }
}

TEST_SUITE("config.diagnostics") {
  TEST_CASE("all problems of a file are collected before throwing") {
    const char* yaml =
        "name: x\n"
        "layers: 0\n"
        "hidden: 64\n"
        "vocab: -5\n"
        "seq_len: 128\n"
        "attention: {kind: mla, heads: 4}\n"
        "ffn: {kind: relu, intermediate: 256}\n";
    try {
      (void)parse_model(yaml, "inline.yaml");
      FAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
      std::vector<std::string> got;
      for (const auto& d : e.diagnostics()) got.push_back(d.str());
      const std::vector<std::string> expected{
          "inline.yaml:2:9: error: `layers` must be at least 1, got 0",
          "inline.yaml:4:8: error: `vocab` must be at least 1, got -5",
          "inline.yaml:6:12: error: missing required key `kv_lora_rank` in `attention`",
          "inline.yaml:6:12: error: missing required key `qk_nope_head_dim` in `attention`",
          "inline.yaml:6:12: error: missing required key `qk_rope_head_dim` in `attention`",
          "inline.yaml:6:12: error: missing required key `v_head_dim` in `attention`",
          "inline.yaml:7:13: error: unknown value `relu` for `ffn.kind`; did you mean `gelu`? (one of: "
          "swiglu, gelu)",
      };
      CHECK(got == expected);
      CHECK(e.file() == "inline.yaml");
      CHECK(e.line() == 2);
      CHECK(e.col() == 9);
    }
  }

  TEST_CASE("ffn.clamp: a GLU's clamp, refused on a non-gated FFN with its location") {
    const std::string head = "name: x\nlayers: 4\nhidden: 64\nvocab: 100\nseq_len: 128\nattention: {kind: mha, heads: 4}\n";
    CHECK(parse_model(head + "ffn: {kind: swiglu, intermediate: 256, clamp: 7.0}\n", "c.yaml").ffn.clamp == 7.0);
    CHECK(parse_model(head + "ffn: {kind: swiglu, intermediate: 256}\n", "c.yaml").ffn.clamp == 0.0);
    std::vector<std::string> got;
    try {
      (void)parse_model(head + "ffn: {kind: gelu, intermediate: 256, clamp: 7.0}\n", "c.yaml");
    } catch (const ConfigError& e) {
      for (const auto& d : e.diagnostics()) got.push_back(d.str());
    }
    CHECK(got == std::vector<std::string>{
                     "c.yaml:7:45: error: `ffn.clamp` clamps the halves of a gated (GLU) FFN: use `kind: swiglu`"});
  }

  TEST_CASE("attention.window: window_layers defaults to every layer, needs a window, at most `layers`") {
    const std::string head =
        "name: x\nlayers: 4\nhidden: 64\nvocab: 100\nseq_len: 128\nffn: {kind: gelu, intermediate: 256}\n";
    const ModelSpec all = parse_model(head + "attention: {kind: mha, heads: 4, window: 32}\n", "w.yaml");
    CHECK(all.attention.window == 32);
    CHECK(all.attention.window_layers == 4);
    CHECK(parse_model(head + "attention: {kind: mha, heads: 4, window: 32, window_layers: 2}\n", "w.yaml")
              .attention.window_layers == 2);
    auto errors = [&](const std::string& attention) {
      std::vector<std::string> got;
      try {
        (void)parse_model(head + attention, "w.yaml");
      } catch (const ConfigError& e) {
        for (const auto& d : e.diagnostics()) got.push_back(d.str());
      }
      return got;
    };
    CHECK(errors("attention: {kind: mha, heads: 4, window_layers: 2}\n") ==
          std::vector<std::string>{"w.yaml:7:49: error: `attention.window_layers` needs `attention.window`"});
    CHECK(errors("attention: {kind: mha, heads: 4, window: 32, window_layers: 5}\n") ==
          std::vector<std::string>{"w.yaml:7:61: error: `attention.window_layers` 5 exceeds `layers` 4"});
    CHECK(errors("attention: {kind: mha, heads: 4, window: 0}\n").size() == 1);
  }

  TEST_CASE("a strategy takes single values; lists belong in a space") {
    const char* yaml =
        "hardware: h100-sxm-ib\nmodel: llama3-70b\nnodes: 8\n"
        "parallel: {tp: [4, 8], pp: 2, dp: 4}\n"
        "training: {micro_batch: 1, global_batch: auto}\n";
    try {
      (void)parse_plan(yaml, "s.yaml");
      FAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
      REQUIRE(e.diagnostics().size() == 2);
      CHECK(e.diagnostics()[0].str() ==
            "s.yaml:4:16: error: `parallel.tp` takes one value in a strategy; lists and `auto` "
            "belong in a search space (`*.space.yaml`)");
      CHECK(e.diagnostics()[1].line == 5);
    }
  }

  TEST_CASE("training.grad_accumulation (fused | fp32_add) and grad_reduce (reduce_scatter | all_reduce)") {
    const std::string head = "hardware: h100-sxm-ib\nmodel: llama3-70b\nnodes: 4\nparallel: {tp: 8, pp: 1, dp: 4}\n";
    const Training plain = parse_plan(head + "training: {micro_batch: 1, global_batch: 8}\n", "s.yaml").strategy.training;
    CHECK_FALSE(plain.fp32_grad_add);
    CHECK_FALSE(plain.grad_all_reduce);
    const Training ds = parse_plan(head + "training: {micro_batch: 1, global_batch: 8, grad_accumulation: fp32_add, "
                                          "grad_reduce: all_reduce}\n", "s.yaml").strategy.training;
    CHECK(ds.fp32_grad_add);
    CHECK(ds.grad_all_reduce);
    CHECK_FALSE(parse_plan(head + "training: {micro_batch: 1, global_batch: 8, grad_accumulation: fused, "
                                  "grad_reduce: reduce_scatter}\n", "s.yaml").strategy.training.fp32_grad_add);
    for (const std::string bad : {"grad_accumulation: fp16_add", "grad_reduce: allreduce"}) {
      try {
        (void)parse_plan(head + "training: {micro_batch: 1, global_batch: 8, " + bad + "}\n", "s.yaml");
        FAIL("expected a ConfigError");
      } catch (const ConfigError& e) {
        REQUIRE(e.diagnostics().size() == 1);
        CHECK(e.diagnostics()[0].line == 5);
        CHECK(e.diagnostics()[0].str().find(bad.substr(0, bad.find(':'))) != std::string::npos);
      }
    }
  }

  TEST_CASE("training.grad_sync: run (default) or micro_batch, anything else refused where it stands") {
    const std::string head = "hardware: h100-sxm-ib\nmodel: llama3-70b\nnodes: 4\nparallel: {tp: 8, pp: 1, dp: 4}\n";
    CHECK_FALSE(parse_plan(head + "training: {micro_batch: 1, global_batch: 8}\n", "s.yaml").strategy.training.grad_sync_micro_batch);
    CHECK(parse_plan(head + "training: {micro_batch: 1, global_batch: 8, grad_sync: micro_batch}\n", "s.yaml")
              .strategy.training.grad_sync_micro_batch);
    try {
      (void)parse_plan(head + "training: {micro_batch: 1, global_batch: 8, grad_sync: step}\n", "s.yaml");
      FAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
      REQUIRE(e.diagnostics().size() == 1);
      CHECK(e.diagnostics()[0].line == 5);
      CHECK(e.diagnostics()[0].str().find("grad_sync") != std::string::npos);
    }
  }
}

TEST_SUITE("config.rules") {
  TEST_CASE("the seeds' row 1 is valid on BR166 built in code") {
    ModelSpec ds = load_model("deepseek-v3");
    CHECK(check_rules(row1(), br166_in_code(), ds).empty());
  }

  TEST_CASE("each rule fires for its own condition") {
    const HardwareSpec hw = br166_in_code();
    const ModelSpec ds = load_model("deepseek-v3");
    const ModelSpec llama = load_model("llama3-70b");

    Strategy s = row1();
    s.parallel.tp = 3;  // 128 heads % 3 != 0, and 3 x 8 x 16 = 384 != 128 devices
    CHECK(rules_of(check_rules(s, hw, ds)) == std::vector<std::string>{"heads_tp", "world"});

    s = row1();
    s.parallel.ep = 24;  // 256 % 24 = 16; 8 x 2 dies = 16 expert ranks, 16 % 24 != 0
    CHECK(rules_of(check_rules(s, hw, ds)) == std::vector<std::string>{"ep_world", "experts_ep"});

    s = row1();
    s.ep_over_dies = false;  // EP16 over 8 cards of a stage: 8 % 16 != 0
    CHECK(rules_of(check_rules(s, hw, ds)) == std::vector<std::string>{"ep_world"});

    s = row1();
    s.training.global_batch = 961;  // 961 % (8 x 2) = 1
    CHECK(rules_of(check_rules(s, hw, ds)) == std::vector<std::string>{"batch_dp"});

    // DualPipe's step() asserts an even number of micro-batches, at least 2 x pp; DualPipeV's
    // at least 2 x pp (deepseek-ai/DualPipe@030ce43 dualpipe.py, dualpipev.py). pp 16: 32.
    s = row1();
    s.schedule = Schedule::DualPipe;  // 960 / (8 x 2) = 60 micro-batches
    CHECK(check_rules(s, hw, ds).empty());
    s.training.global_batch = 480;  // 30 < 32
    CHECK(rules_of(check_rules(s, hw, ds)) == std::vector<std::string>{"dualpipe_micro_batches"});
    s.training.global_batch = 528;  // 33 >= 32 but odd: DualPipe no, DualPipeV yes
    CHECK(rules_of(check_rules(s, hw, ds)) == std::vector<std::string>{"dualpipe_micro_batches"});
    s.schedule = Schedule::DualPipeV;
    CHECK(check_rules(s, hw, ds).empty());
    s.training.global_batch = 960;
    s.training.pipeline_runs = 2;  // 30 per run of the schedule
    CHECK(rules_of(check_rules(s, hw, ds)) == std::vector<std::string>{"dualpipe_micro_batches"});

    s = row1();
    s.parallel.vpp = 2;  // vpp needs the interleaved schedule
    CHECK(rules_of(check_rules(s, hw, ds)) == std::vector<std::string>{"vpp_schedule"});
    s.schedule = Schedule::Interleaved;
    CHECK(check_rules(s, hw, ds).empty());
    s.parallel.vpp = 4;  // 16 x 4 = 64 chunks > 61 layers
    CHECK(rules_of(check_rules(s, hw, ds)) == std::vector<std::string>{"layers_pp"});

    s = row1();
    s.nodes = 2048;  // cluster tier has 1024 nodes; 2048 x 8 = 16384 != 128 devices
    CHECK(rules_of(check_rules(s, hw, ds)) == std::vector<std::string>{"nodes_cluster", "world"});

    s = row1();
    s.parallel.cp = 3;
    s.parallel.dp = 1;
    s.parallel.pp = 16;
    s.nodes = 6;  // 3 x 1 x 16 = 48 = 6 x 8; 4096 % 6 != 0; expert ranks 3 x 2 = 6 % 16
    s.training.global_batch = 2;
    CHECK(rules_of(check_rules(s, hw, ds)) == std::vector<std::string>{"ep_world", "seq_cp"});

    s = row1();
    s.schedule = Schedule::DualPipe;
    s.parallel.pp = 16;
    CHECK(check_rules(s, hw, ds).empty());

    Strategy d;  // Llama 70B on 8 nodes: TP8 PP4 DP2 = 64 devices
    d.nodes = 8;
    d.parallel.tp = 8;
  d.parallel.pp = 4;
  d.parallel.dp = 2;
    d.training.global_batch = 128;
    CHECK(check_rules(d, hw, llama).empty());
    d.parallel.ep = 2;  // a dense model has no experts
    d.parallel.sp = true;
    CHECK(rules_of(check_rules(d, hw, llama)) == std::vector<std::string>{"moe_fields"});
    d.parallel.ep = 1;
    d.parallel.tp = 16;  // 8 kv heads vs tp 16: 16 % 8 == 0, replicas are fine
    d.parallel.dp = 1;
    CHECK(check_rules(d, hw, llama).empty());
    d.parallel.tp = 6;   // 64 % 6 != 0 and 8 vs 6 divide neither way
    d.parallel.dp = 1;
    d.nodes = 3;
    CHECK(rules_of(check_rules(d, hw, llama)) == std::vector<std::string>{"heads_tp", "kv_heads_tp"});
    d.parallel.tp = 1;
    d.parallel.pp = 8;
    d.parallel.dp = 3;
    d.training.global_batch = 129;  // not a multiple of 3: 129 = 43 x 3 is; use 130
    d.training.global_batch = 130;
    d.parallel.sp = true;
    CHECK(rules_of(check_rules(d, hw, llama)) == std::vector<std::string>{"batch_dp", "sp_tp"});

    HardwareSpec h100 = load_hardware("h100-sxm-ib");
    s = row1();  // die-level EP on a one-die GPU
    CHECK(has_rule(check_rules(s, h100, ds), "ep_over_dies"));
  }
}

TEST_SUITE("config.presets") {
  TEST_CASE("a100-jean-zay: the DGX A100 preset with 4 x 100 Gb/s Omni-Path per node of 8 GPUs") {
    // bigscience tr11-176B-ml README: 4 OmniPath links per node; OPA links run at 100 Gb/s.
    // Shared by the node's 8 GPUs: 400 / 8 = 50 Gb/s = 6.25 GB/s per GPU. NVLink is the parent's.
    const HardwareSpec jz = load_hardware("a100-jean-zay");
    const HardwareSpec dgx = load_hardware("a100-sxm-ib");
    REQUIRE(jz.tiers.size() == dgx.tiers.size());
    CHECK(jz.tiers.back().bw_bytes_per_s == doctest::Approx(400e9 / 8 / 8));
    CHECK(jz.tiers.back().size == 52);
    CHECK(jz.tiers.front().bw_bytes_per_s == dgx.tiers.front().bw_bytes_per_s);
    CHECK(jz.device.memory_bytes == dgx.device.memory_bytes);
  }
}
