// The Blackwell training features of Megatron-Bridge's 26.06 / 26.08 presets: full-iteration
// CUDA graphs, Transformer Engine's fused grouped MLP, the MXFP8 LM head and cuDNN's MXFP8
// attention. Expected values are worked out by hand from the op graph's byte counts
// (docs/cost-model.md, "Blackwell features") and from cudnn-frontend's published GB200
// timings (hardware/calibration/gb200-cudnn-sdpa-*-mxfp8.csv).

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cost/compute.hpp"
#include "cost/kernels.hpp"
#include "model/op_graph.hpp"
#include "model/params.hpp"
#include "paraplan/calibrate.hpp"
#include "paraplan/config.hpp"
#include "paraplan/errors.hpp"
#include "paraplan/estimate.hpp"
#include "paraplan/interop.hpp"

using namespace paraplan;

namespace {

// DeepSeek-V3 as deepseek-v3-h800 lays it out, on GB200 under the MXFP8 recipe.
Plan gb200_dsv3() {
  Plan p = load_plan("deepseek-v3-h800");
  p.hardware = load_hardware("gb200-nvl72");
  p.strategy.hardware = "gb200-nvl72";
  p.strategy.training.precision = Precision::Fp8;
  p.strategy.training.fp8_recipe = Fp8Recipe::Mxfp8;
  return p;
}

const model::Layer& layer(const std::vector<model::Layer>& layers, model::LayerKind kind) {
  const auto it = std::find_if(layers.begin(), layers.end(), [&](const model::Layer& l) { return l.kind == kind; });
  REQUIRE(it != layers.end());
  return *it;
}

const model::Op* find(const model::Layer& l, const std::string& name, model::Phase phase) {
  for (const model::Op& op : l.ops) {
    if (op.name == name && op.phase == phase) return &op;
  }
  return nullptr;
}

const LayerEstimate& estimate(const ComputeBreakdown& b, const std::string& kind) {
  const auto it = std::find_if(b.layers.begin(), b.layers.end(), [&](const LayerEstimate& l) { return l.kind == kind; });
  REQUIRE(it != b.layers.end());
  return *it;
}

std::vector<std::string> rules_of(const std::vector<RuleViolation>& v) {
  std::vector<std::string> out;
  for (const RuleViolation& r : v) out.push_back(r.rule);
  return out;
}

}  // namespace

TEST_SUITE("blackwell") {
  TEST_CASE("cuda_graphs: full replays every op from one graph and drops the MoE layer's host sync") {
    // Megatron-Core's full_iteration graph with static expert buffers: nothing waits for the
    // token counts, and each pass is one launch of the graph. With 10 s of host time per
    // launch, far above the layer's kernels, a pass takes exactly one launch's 10 s.
    Plan p = gb200_dsv3();
    p.strategy.training.cuda_graphs = p.strategy.training.cuda_graphs_full = true;
    const auto layers = model::build_layers(p.model, p.strategy, p.hardware, 1.0);
    for (const model::Layer& l : layers) {
      for (const model::Op& op : l.ops) {
        CHECK(op.kind != model::OpKind::HostSync);
        CHECK(op.graphed);
      }
    }
    p.hardware.device.host_issue_s = 10.0;
    const ComputeBreakdown full = estimate_compute(p);
    const LayerEstimate& moe = estimate(full, "moe");
    CHECK(moe.forward_s == doctest::Approx(10.0));
    CHECK(moe.backward_s == doctest::Approx(10.0));
    // Per-layer graphs keep the sync and the eager kernels after it: far more than one launch.
    p.strategy.training.cuda_graphs_full = false;
    CHECK(estimate(estimate_compute(p), "moe").forward_s > 20.0);
  }

  TEST_CASE("moe.fused_mlp folds the activation and two quantizations into the expert GEMMs") {
    Plan p = gb200_dsv3();
    const auto plain = model::build_layers(p.model, p.strategy, p.hardware, 1.0);
    p.strategy.moe.fused_mlp = true;
    const auto fused = model::build_layers(p.model, p.strategy, p.hardware, 1.0);
    const model::Layer& a = layer(plain, model::LayerKind::Moe);
    const model::Layer& b = layer(fused, model::LayerKind::Moe);
    using model::Phase;
    // Present unfused, gone fused: the SwiGLU both ways, FC2's input quantization (forward)
    // and FC1's output-gradient quantization (backward). FC1's input quantization and FC2's
    // output-gradient one stay.
    for (const auto& [name, phase] : std::vector<std::pair<std::string, Phase>>{
             {"experts.swiglu", Phase::Forward},
             {"experts.swiglu.bwd", Phase::InputGrad},
             {"experts.down_proj.fp8_cast", Phase::Forward},
             {"experts.gate_up_proj.fp8_cast.bwd", Phase::InputGrad}}) {
      CAPTURE(name);
      CHECK(find(a, name, phase) != nullptr);
      CHECK(find(b, name, phase) == nullptr);
    }
    CHECK(find(b, "experts.gate_up_proj.fp8_cast", Phase::Forward) != nullptr);
    CHECK(find(b, "experts.down_proj.fp8_cast.bwd", Phase::InputGrad) != nullptr);
    // The epilogues move the bytes: FC1's writes FC2's input in FP8 twice (row- and
    // column-wise, 2 B per element of rows x f), FC2's dgrad reads the kept BF16 FC1 output
    // and writes its FP8 gradient copies (2 + 2 B per element of rows x 2f).
    const model::Tokens tok = model::tokens_of(p.model, p.strategy, p.hardware, 1.0);
    const double rows = tok.per_expert_slowest * tok.experts_per_rank, f = 2048;  // DeepSeek-V3's expert width
    CHECK(find(b, "experts.gate_up_proj", Phase::Forward)->bytes -
              find(a, "experts.gate_up_proj", Phase::Forward)->bytes ==
          doctest::Approx(rows * f * 2));
    CHECK(find(b, "experts.down_proj.dgrad", Phase::InputGrad)->bytes -
              find(a, "experts.down_proj.dgrad", Phase::InputGrad)->bytes ==
          doctest::Approx(rows * 2 * f * 4));
    // Every expert GEMM is one persistent grouped kernel, though GB200's grouped path loops.
    REQUIRE(p.hardware.device.gemm_kernel.grouped_loop);
    for (const model::Op& op : b.ops) {
      if (op.kind == model::OpKind::GroupedGemm) CHECK(op.fused_grouped);
    }
    const ComputeBreakdown breakdown = estimate_compute(p);
    const LayerEstimate& e = estimate(breakdown, "moe");
    for (const OpEstimate& op : e.ops) {
      if (op.kind == std::string("grouped_gemm")) CHECK(op.kernels == 1);
    }
  }

  TEST_CASE("training.fp8_head runs the output head's GEMMs in FP8 behind their quantizations") {
    // Under MXFP8 (no amax pass) a cast reads BF16 and writes the row- and column-wise FP8
    // copies: 2 + 1 + 1 B per element, of the head's input (T x h) forward and of the
    // logits' gradient (T x V / tp) backward.
    Plan p = gb200_dsv3();
    const auto plain = model::build_layers(p.model, p.strategy, p.hardware, 1.0);
    const model::Layer& bf16 = layer(plain, model::LayerKind::Head);
    CHECK_FALSE(find(bf16, "lm_head", model::Phase::Forward)->low_precision);
    CHECK(find(bf16, "lm_head.fp8_cast", model::Phase::Forward) == nullptr);
    p.strategy.training.fp8_head = true;
    const auto layers = model::build_layers(p.model, p.strategy, p.hardware, 1.0);
    const model::Layer& head = layer(layers, model::LayerKind::Head);
    CHECK(find(head, "lm_head", model::Phase::Forward)->low_precision);
    const model::Op* cast = find(head, "lm_head.fp8_cast", model::Phase::Forward);
    REQUIRE(cast != nullptr);
    const double T = model::tokens_of(p.model, p.strategy, p.hardware, 1.0).per_device;
    CHECK(cast->bytes == doctest::Approx(T * 7168 * 4));
    CHECK(cast->bwd_bytes == doctest::Approx(T * 129280.0 / p.strategy.parallel.tp * 4));
  }

  TEST_CASE("an FP8 attention kernel runs at the FP8 peak behind the quantization of its inputs") {
    Plan p = gb200_dsv3();
    p.strategy.training.attention_kernel = "cudnn_mxfp8";
    p.hardware.device.kernel_overhead_s = 0;
    const auto layers = model::build_layers(p.model, p.strategy, p.hardware, 1.0);
    const model::Layer& moe = layer(layers, model::LayerKind::Moe);
    // DeepSeek-V3's MLA: 128 heads of 192 (query-key) and 128 (value), one K / V head per
    // query head. Forward: Q, K, V read in BF16 and written in FP8 (3 B per element);
    // backward: the output and its gradient (2 x T x 128 x 128 elements, 3 B each).
    const model::Op* cast = find(moe, "core_attention.fp8_cast", model::Phase::Forward);
    REQUIRE(cast != nullptr);
    const double T = model::tokens_of(p.model, p.strategy, p.hardware, 1.0).per_device / p.strategy.parallel.tp;
    CHECK(cast->bytes == doctest::Approx(T * (128 * 192 + 128 * 192 + 128 * 128) * 3));
    CHECK(cast->bwd_bytes == doctest::Approx(2 * T * 128 * 128 * 3));
    // The same fractions at the BF16 peak (2.5 PFLOPS) take twice the FP8 kernel's time (5).
    const model::Op* core = find(moe, "core_attention", model::Phase::Forward);
    REQUIRE(core != nullptr);
    const cost::ComputeModel fp8 = cost::make_compute_model(p.hardware, Precision::Fp8, "cudnn_mxfp8", false);
    HardwareSpec as_bf16 = p.hardware;
    for (AttentionKernelSpec& k : as_bf16.device.attention) {
      if (k.name == "cudnn_mxfp8") k.fp8 = false;
    }
    const cost::ComputeModel bf16 = cost::make_compute_model(as_bf16, Precision::Fp8, "cudnn_mxfp8", false);
    CHECK(cost::op_time(bf16, *core).time_s == doctest::Approx(2 * cost::op_time(fp8, *core).time_s));
    // The FP8 kernel needs the FP8 recipe.
    p.strategy.training.precision = Precision::Bf16;
    const auto broken = rules_of(check_rules(p.strategy, p.hardware, p.model));
    CHECK(std::count(broken.begin(), broken.end(), "attention_kernel") == 1);
  }

  TEST_CASE("GB200's MXFP8 attention against cudnn-frontend's GPT-OSS rows, which it was not fitted to") {
    // hardware/calibration/gb200-cudnn-sdpa-gpt-oss-mxfp8.csv (NVIDIA/cudnn-frontend@3929da2,
    // GPT-OSS: batch 2, 128 heads of 64, a causal window of 128 keys, cuDNN 9.22): forward
    // 0.210 ms at 4k tokens; backward 2.080 ms at 4k and 108.37 ms at 32k, 4 x per doubling,
    // the work of every causal tile (backward_window: false). The model's time is the
    // convention's FLOP over the FP8 peak x attention_efficiency: forward 2 b h (s w - w^2 /
    // 2)(d + d), backward 2.5 x 2 b h s^2 / 2 (d + d).
    const HardwareSpec hw = load_hardware("gb200-nvl72");
    const auto it = std::find_if(hw.device.attention.begin(), hw.device.attention.end(),
                                 [](const AttentionKernelSpec& k) { return k.name == "cudnn_mxfp8"; });
    REQUIRE(it != hw.device.attention.end());
    CHECK(it->fp8);
    CHECK_FALSE(it->backward_window);
    const double peak = hw.device.peak(Dtype::Fp8), b = 2, h = 128, d = 64, w = 128;
    const int units = hw.device.compute_units;
    auto forward = [&](double s) {
      const double flops = 2 * b * h * (s * w - w * w / 2) * 2 * d;
      return flops / (peak * cost::attention_efficiency(*it, false, units, b * h, s, s, true, w, d));
    };
    auto backward = [&](double s) {
      const double flops = 2.5 * 2 * b * h * s * s / 2 * 2 * d;
      return flops / (peak * cost::attention_efficiency(*it, true, units, b * h, s, s, true, 0, d));
    };
    CHECK(forward(4096) == doctest::Approx(0.210e-3).epsilon(0.25));
    CHECK(backward(4096) == doctest::Approx(2.080e-3).epsilon(0.20));
    CHECK(backward(32768) == doctest::Approx(108.37e-3).epsilon(0.30));
  }

  TEST_CASE("a kernel whose backward ignores the window does the causal work of the window's layers") {
    // Half the layers under a window of w = 128 keys at s = 4096 tokens keep 2x - x^2 of the
    // causal pairs, x = w / s; the backward of such a kernel does 2.5 x the forward's FLOP
    // over that fraction, and runs as causal (no window).
    Plan p = gb200_dsv3();
    p.model.attention.window = 128;
    p.model.attention.window_layers = p.model.layers / 2;
    const double x = 128.0 / p.model.seq_len, kept = 2 * x - x * x;
    auto window_ops = [&](const std::string& kernel) {
      p.strategy.training.attention_kernel = kernel;
      const auto layers = model::build_layers(p.model, p.strategy, p.hardware, 1.0);
      const model::Layer& l = layer(layers, model::LayerKind::Moe);
      const model::Op* f = find(l, "core_attention_window", model::Phase::Forward);
      const model::Op* bw = find(l, "core_attention_window.bwd", model::Phase::InputGrad);
      REQUIRE(f != nullptr);
      REQUIRE(bw != nullptr);
      return std::pair{*f, *bw};
    };
    const auto [f8, b8] = window_ops("cudnn_mxfp8");
    CHECK(b8.flops == doctest::Approx(2.5 * f8.flops / kept));
    CHECK(b8.window == 0);
    const auto [f16, b16] = window_ops("cudnn");
    CHECK(b16.flops == doctest::Approx(2.5 * f16.flops));
    CHECK(b16.window == 128);
  }

  TEST_CASE("calibrate attention --dtype mxfp8 reads the MXFP8 rows as fractions of the FP8 peak") {
    // gb200-cudnn-sdpa-llama3.1-mxfp8.csv: 10 forward and 10 non-deterministic backward rows
    // kept (10 deterministic ones left out). Its 32k causal forward row: batch 2, 64 heads of
    // 128, 17.201 ms for 2 x 2 x 64 x 32768^2 / 2 x 256 = 3.518e13 FLOP, 2.045 PFLOP/s (the
    // row's own tflops column: 2046), 0.409 of GB200's 5 PFLOPS FP8 peak.
    const std::string csv = std::string(PARAPLAN_SOURCE_DIR) + "/hardware/calibration/gb200-cudnn-sdpa-llama3.1-mxfp8.csv";
    std::vector<std::string> notes;
    const auto rows = read_attention_rows(csv, 5e15, &notes, "mxfp8");
    CHECK(rows.size() == 20);
    bool seen = false;
    for (const AttentionRow& r : rows) {
      CHECK(r.kernel == "cudnn_mxfp8");
      CHECK(r.fp8);
      if (r.seq == 32768 && r.causal && !r.backward) {
        seen = true;
        CHECK(r.efficiency == doctest::Approx(2046e12 / 5e15).epsilon(0.002));
      }
    }
    CHECK(seen);
    // Read as BF16, the file has no rows of its type.
    CHECK_THROWS_AS((void)read_attention_rows(csv, 2.5e15, nullptr, "bf16"), ConfigError);
  }

  TEST_CASE("the keys: read from a strategy, checked by the rules, exported to Megatron-LM") {
    const HardwareSpec hw = load_hardware("gb200-nvl72");
    const ModelSpec ds = load_model("deepseek-v3");
    const std::string head =
        "hardware: gb200-nvl72\nmodel: deepseek-v3\nnodes: 64\nparallel: {tp: 1, pp: 4, dp: 64, ep: 64}\n";
    Plan p{hw, ds,
           parse_strategy(head +
                              "training: {micro_batch: 1, global_batch: 4096, precision: fp8, fp8_recipe: mxfp8, "
                              "cuda_graphs: full, fp8_head: true}\nmoe: {fused_mlp: true}\n",
                          "b.yaml", hw, ds)};
    CHECK(p.strategy.training.cuda_graphs);
    CHECK(p.strategy.training.cuda_graphs_full);
    CHECK(p.strategy.training.fp8_head);
    CHECK(p.strategy.moe.fused_mlp);
    CHECK(check_rules(p.strategy, hw, ds).empty());
    const std::string m = launch_settings(p, LaunchTarget::Megatron);
    for (const char* arg : {"--cuda-graph-impl full_iteration", "--no-check-for-nan-in-loss-and-grad",
                            "--fp8-output-proj", "--use-transformer-engine-op-fuser"}) {
      CAPTURE(arg);
      CHECK(m.find(arg) != std::string::npos);
    }
    CHECK(m.find("--cuda-graph-impl transformer_engine") == std::string::npos);
    // Without MXFP8 neither the FP8 head nor the fused MLP runs (Megatron-Core and Transformer
    // Engine refuse them).
    p.strategy.training.fp8_recipe = Fp8Recipe::Blockwise;
    CHECK(rules_of(check_rules(p.strategy, hw, ds)) == std::vector<std::string>{"fp8_head", "fused_mlp"});
    // A misspelt mode: file:line:col.
    std::vector<std::string> got;
    try {
      (void)parse_strategy(head + "training: {micro_batch: 1, global_batch: 4096, cuda_graphs: ful}\n", "c.yaml", hw, ds);
    } catch (const ConfigError& e) {
      for (const auto& d : e.diagnostics()) got.push_back(d.str());
    }
    REQUIRE(got.size() == 1);
    CHECK(got[0].rfind("c.yaml:5:61: error: unknown value `ful` for `training.cuda_graphs`", 0) == 0);
  }
}
