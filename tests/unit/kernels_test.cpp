// Kernel-level times: GEMM tiles and waves, split-k, the per-tile k overhead, pass factors,
// grouped GEMMs as one kernel or a loop; flash attention by pass, sequence and mask; memory-
// bound classes and launch overheads. Every expected value is worked out by hand from the
// formulas in src/cost/kernels.hpp (docs/cost-model.md, "Kernels").

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "cost/compute.hpp"
#include "cost/kernels.hpp"
#include "model/op_graph.hpp"
#include "paraplan/config.hpp"
#include "paraplan/errors.hpp"
#include "paraplan/estimate.hpp"
#include "paraplan/planner.hpp"

using namespace paraplan;
using cost::GemmPass;

namespace {

GemmKernelSpec one_tile(double k_overhead = 0, int split = 1) {
  GemmKernelSpec g;
  g.tiles = {GemmTile{128, 256, 1.0}};
  g.k_overhead = k_overhead;
  g.max_split_k = split;
  return g;
}

}  // namespace

TEST_SUITE("cost.kernels") {
  TEST_CASE("GEMM waves: a full wave runs at the fraction, one more tile row takes a second wave") {
    // 132 units, 128 x 256 tiles: m = 128 x 12, n = 256 x 11 is exactly 132 tiles, one wave.
    const GemmKernelSpec g = one_tile();
    CHECK(cost::gemm_model_efficiency(g, 0.8, 132, 1536, 2816, 4096, 1, GemmPass::Forward) == doctest::Approx(0.8));
    // m = 1537: 13 x 11 = 143 tiles -> 2 waves = 264 slots of 128 x 256 outputs for
    // 1537 x 2816 useful ones: 0.8 x 1537 x 2816 / (264 x 128 x 256)
    CHECK(cost::gemm_model_efficiency(g, 0.8, 132, 1537, 2816, 4096, 1, GemmPass::Forward) ==
          doctest::Approx(0.8 * 1537.0 * 2816 / (264.0 * 128 * 256)));
  }

  TEST_CASE("routed rows spread around the mean: tile rows and waves counted over the spread") {
    // 128 x 128 tiles, n = 128 (one column of tiles), no k overhead. The mean m = 4096 sits on
    // a tile edge (32 rows of tiles) and m ~ Normal(4096, 64^2): r = ceil(m / 128) is 32 for
    // 3968 < m <= 4096 (Phi(0) - Phi(-2) = 0.47725), 33 for 4096 < m <= 4224 (the same), 31
    // and 34 with Phi(-2) - Phi(-4) = 0.02272 each and 30 / 35 with ~3e-5: E[r] = 32.5 by
    // symmetry.
    GemmKernelSpec g;
    g.tiles = {GemmTile{128, 128, 1.0}};
    // No units (no waves): efficiency = m / (E[r] x 128) = 4096 / 4160.
    CHECK(cost::gemm_model_efficiency(g, 1.0, 0, 4096, 128, 1024, 1, GemmPass::Forward, 1.0, false, 64) ==
          doctest::Approx(4096.0 / 4160).epsilon(1e-4));
    CHECK(cost::gemm_model_efficiency(g, 1.0, 0, 4096, 128, 1024, 1, GemmPass::Forward) == doctest::Approx(1.0));
    // One kernel per group on 32 units: r <= 32 is one wave of 32 tiles, r >= 33 two, each
    // with probability 1/2: E[slots] = 48 tiles for 32 tiles of work, 2/3; at the mean alone
    // it would be one wave (1.0), one row above it two (0.5).
    CHECK(cost::gemm_model_efficiency(g, 1.0, 32, 4096, 128, 1024, 1, GemmPass::Forward, 1.0, false, 64) ==
          doctest::Approx(2.0 / 3).epsilon(1e-4));
    // One persistent kernel over 4 groups: 4 x 32.5 = 130 tiles in ceil(130 / 32) = 5 waves of
    // 32: 4 x 4096 x 128 useful rows x columns over 160 x 128 x 128 = 0.8.
    CHECK(cost::gemm_model_efficiency(g, 1.0, 32, 4096, 128, 1024, 4, GemmPass::Forward, 1.0, false, 64) ==
          doctest::Approx(0.8).epsilon(1e-4));
  }

  TEST_CASE("k overhead: each tile pays k0 more elements of k; FP8 pays rate x k0") {
    const GemmKernelSpec g = one_tile(256);
    // one full wave: efficiency = fraction x k / (k + k0) = 0.8 x 4096 / 4352
    CHECK(cost::gemm_model_efficiency(g, 0.8, 132, 1536, 2816, 4096, 1, GemmPass::Forward) ==
          doctest::Approx(0.8 * 4096 / 4352.0));
    // at twice the rate (FP8 on Hopper) the same fixed time is 512 elements of k
    CHECK(cost::gemm_model_efficiency(g, 0.8, 132, 1536, 2816, 4096, 1, GemmPass::Forward, 2.0) ==
          doctest::Approx(0.8 * 4096 / 4608.0));
  }

  TEST_CASE("split-k fills idle units when the tiles alone do not") {
    // m = 128, n = 256 x 16: 16 tiles on 132 units. Without splitting: 1 wave, 16 / 132 of
    // the units busy -> 0.8 x 16 / 132. With up to 8 splits: s tiles x 16 <= 132 allows s = 8
    // (128 slots, one wave, each doing k / 8): efficiency = 0.8 x (128 x 4096 x k) /
    // (132 x 128 x 256 x k / 8) = 0.8 x 128 / 132 (k overhead 0).
    CHECK(cost::gemm_model_efficiency(one_tile(0, 1), 0.8, 132, 128, 4096, 16384, 1, GemmPass::Forward) ==
          doctest::Approx(0.8 * 16 / 132.0));
    CHECK(cost::gemm_model_efficiency(one_tile(0, 8), 0.8, 132, 128, 4096, 16384, 1, GemmPass::Forward) ==
          doctest::Approx(0.8 * 128 / 132.0));
  }

  TEST_CASE("passes: dgrad and wgrad scale the forward efficiency; a smaller tile wins when it fits better") {
    GemmKernelSpec g = one_tile();
    g.wgrad = 0.9;
    g.dgrad = 0.95;
    CHECK(cost::gemm_model_efficiency(g, 0.8, 132, 1536, 2816, 4096, 1, GemmPass::Wgrad) == doctest::Approx(0.72));
    CHECK(cost::gemm_model_efficiency(g, 0.8, 132, 1536, 2816, 4096, 1, GemmPass::Dgrad) == doctest::Approx(0.76));
    // n = 128 x 33 = 4224 with m = 128 x 4 = 512: 128 x 256 tiles -> 4 x 17 = 68 tiles in one
    // wave, n padded to 4352 (4224 / 4352 used) and 68 of 132 units -> 0.8 x 512 x 4224 /
    // (132 x 128 x 256). A 128 x 128 tile at 0.95: 4 x 33 = 132 tiles, one full wave ->
    // 0.8 x 0.95 = 0.76, the larger.
    g.tiles.push_back(GemmTile{128, 128, 0.95});
    CHECK(cost::gemm_model_efficiency(g, 0.8, 132, 512, 4224, 4096, 1, GemmPass::Forward) == doctest::Approx(0.76));
  }

  TEST_CASE("grouped GEMM: one persistent kernel packs the groups' tiles into common waves") {
    // 4 groups of m = 128 x 3, n = 256 x 11: 33 tiles each, 132 together = one wave -> 0.8;
    // alone, one group is a third of a wave -> 0.8 x 33 / 132.
    const GemmKernelSpec g = one_tile();
    CHECK(cost::gemm_model_efficiency(g, 0.8, 132, 384, 2816, 4096, 4, GemmPass::Forward) == doctest::Approx(0.8));
    CHECK(cost::gemm_model_efficiency(g, 0.8, 132, 384, 2816, 4096, 1, GemmPass::Forward) ==
          doctest::Approx(0.8 * 33 / 132.0));
  }

  TEST_CASE("flash attention: per-tile overhead, causal half, largest-first bound on few tiles") {
    AttentionKernelSpec k{"t", 0.6, 0.5, 128, 200, 300};
    // many tiles (32 heads x 64 query tiles = 2048 on 132 units), causal, s = 8192: each tile
    // meets 4096 keys on average: forward 0.6 x 4096 / (4096 + 200)
    CHECK(cost::attention_efficiency(k, false, 132, 32, 8192, 8192, true) == doctest::Approx(0.6 * 4096 / 4296.0));
    // backward: tiles along the keys, 0.5 x 4096 / (4096 + 300)
    CHECK(cost::attention_efficiency(k, true, 132, 32, 8192, 8192, true) == doctest::Approx(0.5 * 4096 / 4396.0));
    // no mask: every tile meets all 8192 keys: 0.6 x 8192 / 8392
    CHECK(cost::attention_efficiency(k, false, 132, 32, 8192, 8192, false) == doctest::Approx(0.6 * 8192 / 8392.0));
    // 1 head, s = 4096: 32 tiles on 132 units. Total work 32 x (2048 + 200) / 132 = 545 is
    // below the longest tile, 4096 + 200 keys: that tile sets the time, and 0.6 x (32 x
    // 2048) / (132 x 4296) of the device is useful.
    CHECK(cost::attention_efficiency(k, false, 132, 1, 4096, 4096, true) ==
          doctest::Approx(0.6 * 32 * 2048 / (132.0 * 4296)));
    // a causal 1024-key window over 8192: a tile meets 8192 x (1/8 - 1/128) = 960 keys on
    // average, so the per-tile overhead weighs more; it reads 1023 / 128 -> 8 + 1 = 9 whole
    // blocks, 1152 columns, 128 beyond the window, 64 of them past a causal diagonal's half
    // block, on 7/8 of the tiles: 56. 0.6 x 960 / (960 + 56 + 200)
    CHECK(cost::attention_efficiency(k, false, 132, 32, 8192, 8192, true, 1024) ==
          doctest::Approx(0.6 * 960 / 1216.0));
    // few tiles: the longest tile is the window's blocks, not the sequence. 1 head, 64 tiles
    // of 960 on 132 units: 64 x 1216 / 132 = 590 < 1152 + 200, so 0.6 x 64 x 960 / (132 x 1352)
    CHECK(cost::attention_efficiency(k, false, 132, 1, 8192, 8192, true, 1024) ==
          doctest::Approx(0.6 * 64 * 960 / (132.0 * 1352)));
    // a window at least the sequence long is no window
    CHECK(cost::attention_efficiency(k, false, 132, 32, 8192, 8192, true, 8192) ==
          doctest::Approx(0.6 * 4096 / 4296.0));
  }

  TEST_CASE("flash attention: a head smaller than the reference runs slower by the non-matmul work per score") {
    // forward_softmax 60 at reference head dim 128: a head of d runs at e x [d / (d + 60)] /
    // [128 / 188]. Many tiles, no mask, s = 8192, overhead 200: shape 8192 / 8392.
    AttentionKernelSpec k{"t", 0.6, 0.5, 128, 200, 300};
    k.head_dim = 128;
    k.forward_softmax = 60;
    k.backward_softmax = 16;
    const double shape = 8192 / 8392.0;
    // head dim 64: 0.6 x (64 / 124) / (128 / 188) = 0.6 x 0.516129 / 0.680851 = 0.454839
    CHECK(cost::attention_efficiency(k, false, 132, 32, 8192, 8192, false, 0, 64) ==
          doctest::Approx(0.454839 * shape).epsilon(1e-5));
    // backward, softmax 16: 0.5 x (64 / 80) / (128 / 144) = 0.5 x 0.9 = 0.45
    CHECK(cost::attention_efficiency(k, true, 132, 32, 8192, 8192, false, 0, 64) ==
          doctest::Approx(0.45 * 8192 / 8492.0));
    // the reference head dim, or none given: e itself
    CHECK(cost::attention_efficiency(k, false, 132, 32, 8192, 8192, false, 0, 128) == doctest::Approx(0.6 * shape));
    CHECK(cost::attention_efficiency(k, false, 132, 32, 8192, 8192, false) == doctest::Approx(0.6 * shape));
    // MLA's query-key 192 and value 128 heads: d = 160, wider than the reference: e itself
    // (the small-head term is no gain: H100's wider heads run no faster)
    CHECK(cost::attention_efficiency(k, false, 132, 32, 8192, 8192, false, 0, 160) == doctest::Approx(0.6 * shape));
    // wider than the reference: no gain from the small-head term; the wide-head exponent
    // costs (128 / d)^x. Without it: e. With backward 0.58 at MLA's 160: 0.8^0.58 = exp(0.58 x ln 0.8) = 0.878605
    CHECK(cost::attention_efficiency(k, true, 132, 32, 8192, 8192, false, 0, 160) ==
          doctest::Approx(0.5 * 8192 / 8492.0));
    k.backward_wide_head = 0.58;
    CHECK(cost::attention_efficiency(k, true, 132, 32, 8192, 8192, false, 0, 160) ==
          doctest::Approx(0.5 * 0.878605 * 8192 / 8492.0).epsilon(1e-5));
    // no term: the head dim does not matter
    k.forward_softmax = 0;
    CHECK(cost::attention_efficiency(k, false, 132, 32, 8192, 8192, false, 0, 64) == doctest::Approx(0.6 * shape));
  }

  TEST_CASE("attention dropout: the kernel's `_dropout` entry stands in where the hardware lists one") {
    // hardware/h100-sxm-ib.yaml lists cudnn and fa2 with and without dropout (measured at
    // dropout 0.1: cuDNN's forward at 0.307 of peak against 0.6692).
    const HardwareSpec h100 = load_hardware("h100-sxm-ib");
    CHECK(cost::make_compute_model(h100, Precision::Bf16).attention.name == "cudnn");
    CHECK(cost::make_compute_model(h100, Precision::Bf16, "", true).attention.name == "cudnn_dropout");
    CHECK(cost::make_compute_model(h100, Precision::Bf16, "", true).attention.forward == doctest::Approx(0.307));
    CHECK(cost::make_compute_model(h100, Precision::Bf16, "fa2", true).attention.name == "fa2_dropout");
    CHECK(cost::make_compute_model(h100, Precision::Bf16, "fa3", true).attention.name == "fa3");  // none listed
    // a100-sxm-ib lists none: its kernel as it is
    const HardwareSpec a100 = load_hardware("a100-sxm-ib");
    CHECK(cost::make_compute_model(a100, Precision::Bf16, "", true).attention.name ==
          cost::make_compute_model(a100, Precision::Bf16).attention.name);
  }

  TEST_CASE("llm-foundry's Triton flash attention runs at half FlashAttention-2's rate") {
    // The presets' `triton` kernel (llm-foundry's attn_impl triton, FlashAttention-1 in
    // pre-MLIR Triton): its header (mosaicml/llm-foundry@b2a43a147 llmfoundry/models/layers/
    // flash_attn_triton.py) puts it a little below CUDA FlashAttention-1 over forward +
    // backward, and FlashAttention-2 is "around 2x" FlashAttention-1 (Dao 2023, arXiv
    // 2307.08691, abstract). So each pass at fa2 / 2 (the presets round to 3 digits), same
    // tiles and per-tile overheads: at any shape the kernel takes twice fa2's time.
    for (const char* name : {"a100-sxm-ib", "h100-sxm-ib"}) {
      CAPTURE(name);
      const HardwareSpec hw = load_hardware(name);
      // the kernels as the planner picks them by name (`training.attention`)
      const cost::ComputeModel cm_fa2 = cost::make_compute_model(hw, Precision::Bf16, "fa2");
      const cost::ComputeModel cm_triton = cost::make_compute_model(hw, Precision::Bf16, "triton");
      REQUIRE(cm_fa2.attention.name == "fa2");
      REQUIRE(cm_triton.attention.name == "triton");
      const AttentionKernelSpec* fa2 = &cm_fa2.attention;
      const AttentionKernelSpec* triton = &cm_triton.attention;
      CHECK(triton->forward == doctest::Approx(fa2->forward / 2).epsilon(2e-3));
      CHECK(triton->backward == doctest::Approx(fa2->backward / 2).epsilon(2e-3));
      CHECK(triton->block == fa2->block);
      CHECK(triton->forward_overhead == fa2->forward_overhead);
      CHECK(triton->backward_overhead == fa2->backward_overhead);
      // MPT-7B at 65536 tokens, 32 heads, causal: efficiency (and so time) in the ratio 1 : 2
      for (bool backward : {false, true}) {
        const double e2 = cost::attention_efficiency(*fa2, backward, 108, 32, 65536, 65536, true);
        const double et = cost::attention_efficiency(*triton, backward, 108, 32, 65536, 65536, true);
        CHECK(et / e2 == doctest::Approx(0.5).epsilon(2e-3));
      }
    }
  }

  TEST_CASE("measured table points correct the model exactly where they were taken") {
    cost::GemmCorrection c;
    c.add(4096, 4096, 7168, 0.9);
    c.add(1024, 4096, 7168, 0.5);
    CHECK(c.at(4096, 4096, 7168) == doctest::Approx(0.9));
    CHECK(c.at(1024, 4096, 7168) == doctest::Approx(0.5));
    // halfway in log2 m (2048): equal distances, equal weights -> the mean
    CHECK(c.at(2048, 4096, 7168) == doctest::Approx(0.7));
    CHECK(cost::GemmCorrection{}.at(1, 2, 3) == 1.0);
  }

  TEST_CASE("FP8 weight-gradient GEMMs take their own pass factor where the hardware gives one") {
    // h800-ib: wgrad {bf16: 0.952, fp8: 0.567} (DeepSeek's FP8 weight-gradient kernel as
    // traced, 0.50, as an after-idle rate: x 1.134, the FP8 power-limit ratio h800-ib's
    // calibration takes back). The same large GEMM (8192 x 7168 x 4096: 56 x 28 = 1568 tiles
    // of 128 x 256, 11.9 waves on 132 SMs) as a weight gradient: BF16 at 0.952 of its forward
    // time's rate, FP8 at 0.567 of its forward rate (both compute-bound, so time scales by the
    // inverse). The power-limit factors are the same for both passes; set to 1 here so that
    // the launch overhead subtracted below is the whole of the non-GEMM time.
    HardwareSpec hw = load_hardware("h800-ib");
    CHECK(hw.device.gemm_kernel.wgrad == doctest::Approx(0.952));
    CHECK(hw.device.gemm_kernel.wgrad_fp8 == doctest::Approx(0.50 * 1.134).epsilon(1e-3));
    hw.calibration.sustained = 1;
    hw.calibration.fp8_gemm = 1;
    for (Precision p : {Precision::Bf16, Precision::Fp8}) {
      const cost::ComputeModel cm = cost::make_compute_model(hw, p);
      model::Op g;
      g.kind = model::OpKind::Gemm;
      g.m = 8192, g.n = 7168, g.k = 4096;
      g.flops = 2.0 * g.m * g.n * g.k;
      g.bytes = 1e6;  // not memory-bound
      g.kernels = 1;
      g.low_precision = true;  // a linear layer: in the strategy's precision, BF16 or FP8
      g.phase = model::Phase::Forward;
      // less the launch overhead: 4.5 us per launch, 1.87 launches per graph kernel (h800-ib)
      const double launch = 4.5e-6 * 1.87;
      const double fwd = cost::op_time(cm, g).time_s - launch;
      g.phase = model::Phase::WeightGrad;
      const double wgrad = cost::op_time(cm, g).time_s - launch;
      CHECK(wgrad / fwd == doctest::Approx(p == Precision::Fp8 ? 1 / 0.567 : 1 / 0.952).epsilon(1e-6));
    }
    // A key the map does not know is an error at its place.
    CHECK_THROWS_AS((void)parse_hardware("extends: h800-ib\ndevice:\n  gemm_kernel:\n    peak_fraction: {bf16: 0.8}\n    tiles: [[128, 128, 1]]\n    wgrad: {fp16: 0.5}\n", "w.yaml"), ConfigError);
  }

  TEST_CASE("op times: memory classes, launches, host syncs, per-die resources") {
    HardwareSpec hw = load_hardware("h800-ib");
    const cost::ComputeModel cm = cost::make_compute_model(hw, Precision::Bf16);
    model::Op norm;
    norm.kind = model::OpKind::Memory;
    norm.mem_class = MemClass::Norm;
    norm.bytes = 1e9;
    norm.kernels = 2;
    // h800-ib: norms at 0.31 of 3.35 TB/s, two launches of 4.5 us
    CHECK(cost::op_time(cm, norm).time_s == doctest::Approx(1e9 / (0.31 * 3.35e12) + 2 * 4.5e-6));
    CHECK(std::string(cost::op_time(cm, norm).bound) == "memory");
    model::Op copy = norm;
    copy.mem_class = MemClass::Copy;  // no class figure: memory_bound_efficiency 0.8
    copy.kernels = 1;
    CHECK(cost::op_time(cm, copy).time_s == doctest::Approx(1e9 / (0.8 * 3.35e12) + 4.5e-6));
    model::Op sync;
    sync.kind = model::OpKind::HostSync;
    CHECK(cost::op_time(cm, sync).time_s == doctest::Approx(20e-6));  // host_sync 20 us
    // A tiny kernel is launch-bound
    model::Op tiny = copy;
    tiny.bytes = 1e3;
    CHECK(std::string(cost::op_time(cm, tiny).bound) == "launch");
  }
}

TEST_SUITE("cost.sustained") {
  TEST_CASE("calibration.sustained multiplies BF16 GEMM time and nothing else") {
    // By definition (hardware `calibration.sustained`, docs/calibration.md): a BF16 GEMM's
    // time x s; FP8 GEMMs (fp8_gemm's), attention and memory-bound kernels unchanged.
    Plan p = load_plan("deepseek-v3-h800");  // FP8 training: lm_head and router stay BF16
    REQUIRE(p.strategy.training.precision == Precision::Fp8);
    p.hardware.calibration.sustained = 1;  // h800-ib carries H100's measured 1.133
    const ComputeBreakdown base = estimate_compute(p);
    p.hardware.calibration.sustained = 1.5;
    const ComputeBreakdown slow = estimate_compute(p);
    int bf16 = 0, fp8 = 0, other = 0;
    for (std::size_t i = 0; i < base.layers.size(); ++i) {
      for (std::size_t j = 0; j < base.layers[i].ops.size(); ++j) {
        const OpEstimate& a = base.layers[i].ops[j];
        const OpEstimate& b = slow.layers[i].ops[j];
        REQUIRE(a.name == b.name);
        if (a.name == "host_issue") continue;  // the host's bound over the pass, not a kernel
        const bool gemm = a.kind == "gemm" || a.kind == "grouped_gemm";
        const bool bf16_gemm = gemm && (a.name.rfind("lm_head", 0) == 0 || a.name.rfind("router_gate", 0) == 0);
        const bool fp8_gemm = gemm && a.name.find("experts.") != std::string::npos;
        if (bf16_gemm) {
          CHECK(b.time_s == doctest::Approx(1.5 * a.time_s));
          ++bf16;
        } else if (fp8_gemm) {
          CHECK(b.time_s == a.time_s);
          ++fp8;
        } else if (!gemm) {
          CHECK(b.time_s == a.time_s);
          ++other;
        }
      }
    }
    CHECK(bf16 > 0);
    CHECK(fp8 > 0);
    CHECK(other > 0);
  }
}

TEST_SUITE("cost.host_issue") {
  TEST_CASE("a host-paced stream: each kernel starts when issued or when the one before ends") {
    // 10 us per launch. A 100 us kernel, then four that share 8 us (2 us each): the long one
    // is issued at 10 us and ends at 110; the short ones are issued at 20..50 us, all before
    // 110, so they run back to back after it: 112, 114, 116, 118 us. max(host, device) would
    // say 108 us.
    CHECK(cost::host_paced_s({{1, 100e-6}, {4, 8e-6}}, 10e-6) == doctest::Approx(118e-6));
    // The same ops the other way round: each short kernel ends before the next is issued
    // (issued at 10, 20, 30, 40 us, each 2 us long), the long one is issued at 50 us and ends
    // at 150.
    CHECK(cost::host_paced_s({{4, 8e-6}, {1, 100e-6}}, 10e-6) == doctest::Approx(150e-6));
    // A host wait of 20 us starts once everything before it has ended: 10 + 100, then + 20.
    CHECK(cost::host_paced_s({{1, 100e-6}, {0, 20e-6, true}}, 10e-6) == doctest::Approx(130e-6));
    // ... and the host issues nothing until it ends: a 5 us kernel after it is issued at
    // 130 + 10 and ends at 145 (had the host gone on, it would have been issued at 20 and
    // ended at 135).
    CHECK(cost::host_paced_s({{1, 100e-6}, {0, 20e-6, true}, {1, 5e-6}}, 10e-6) == doctest::Approx(145e-6));
    // An op without a launch that is not a wait (a graphed kernel, replayed by an earlier
    // graph launch) runs after the kernels before it and holds nothing up: a graph launch at
    // 10 us, its two replayed kernels of 30 us to 70 us, the next kernel issued at 20 us runs
    // after them: 75 us.
    CHECK(cost::host_paced_s({{1, 0}, {0, 30e-6}, {0, 30e-6}, {1, 5e-6}}, 10e-6) == doctest::Approx(75e-6));
    // A fractional launch count (1.87 per graph kernel) is issued as whole launches sharing
    // the host time: 2 launches of 0.935 x 10 us, 50 us each: 9.35 + 50, then + 50.
    CHECK(cost::host_paced_s({{1.87, 100e-6}}, 10e-6) == doctest::Approx(109.35e-6));
    // A host with no issue time: the device's sum.
    CHECK(cost::host_paced_s({{3, 30e-6}, {2, 5e-6}}, 0) == doctest::Approx(35e-6));
  }

  TEST_CASE("a MoE layer that waits at a host sync takes at least its kernels x the issue time, forward and backward") {
    // deepseek-v3-h800 (a host sync per MoE forward) with a host that needs 1 ms per kernel
    // it launches, one launch per graph kernel: the forward from one wait to the next is
    // then (forward kernels) x 1 ms and the last kernel before the wait (a top-k kernel) and
    // the wait itself, each far below 1 ms, the difference shown as one op.
    Plan p = load_plan("deepseek-v3-h800");
    p.hardware.device.host_issue_s = 1e-3;
    p.hardware.device.launches_per_kernel = 1;
    const ComputeBreakdown b = estimate_compute(p);
    bool seen_moe = false;
    for (const LayerEstimate& l : b.layers) {
      int kernels = 0, kernels_b = 0;
      bool waits = false, shown = false, shown_b = false;
      for (const OpEstimate& o : l.ops) {
        if (o.phase != "forward") {
          kernels_b += o.kernels;
          shown_b = shown_b || o.name == "host_issue";
          continue;
        }
        kernels += o.kernels;
        waits = waits || (o.kind == "host_sync" && o.name != "host_issue");
        shown = shown || o.name == "host_issue";
      }
      if (l.kind == "moe") {
        seen_moe = true;
        CHECK(waits);
      }
      if (waits) {  // the MoE layer, and the MTP module's MoE block
        CHECK(shown);
        CHECK(l.forward_s > kernels * 1e-3);
        CHECK(l.forward_s < kernels * 1e-3 + 0.1e-3);
        // Its backward (recompute, input and weight gradients) follows the drained queue
        // with no wait of its own: at least its kernels x 1 ms as well.
        CHECK(shown_b);
        CHECK(kernels_b > kernels);  // dgrad and wgrad per GEMM: more than the forward's
        CHECK(l.backward_s == doctest::Approx(kernels_b * 1e-3));
      } else if (l.kind == "dense") {
        // No wait, but a stack of alike layers cannot run faster than the host issues them:
        // each pass takes its kernels x 1 ms exactly (one launch each, none graphed).
        CHECK(shown);
        CHECK(shown_b);
        CHECK(l.forward_s == doctest::Approx(kernels * 1e-3));
        CHECK(l.backward_s == doctest::Approx(kernels_b * 1e-3));
      } else {
        CHECK_FALSE(shown);  // one embedding, one head: they run on the lead the host gained
        CHECK_FALSE(shown_b);
      }
    }
    CHECK(seen_moe);
    // Two launches per graph kernel: twice the host time.
    p.hardware.device.launches_per_kernel = 2;
    for (const LayerEstimate& l : estimate_compute(p).layers) {
      if (l.kind != "moe") continue;
      int kernels = 0;
      for (const OpEstimate& o : l.ops) kernels += o.phase == "forward" ? o.kernels : 0;
      CHECK(l.forward_s > 2 * kernels * 1e-3);
      CHECK(l.forward_s < 2 * kernels * 1e-3 + 0.1e-3);
    }
    // Recomputed whole (full recompute), the MoE block waits for its token counts again in
    // the backward: from that wait the backward is paced like the forward, its kernels x 1 ms
    // plus what runs after the last issue (the kernel before the recomputed wait and the
    // wait, each far below 1 ms), where without the recomputed wait it is the kernels x 1 ms
    // exactly (above).
    Plan full = load_plan("deepseek-v3-h800", {"training.recompute=full"});
    full.hardware.device.host_issue_s = 1e-3;
    full.hardware.device.launches_per_kernel = 1;
    bool seen_wait = false;
    for (const LayerEstimate& l : estimate_compute(full).layers) {
      if (l.kind != "moe") continue;
      int kernels_b = 0;
      for (const OpEstimate& o : l.ops) {
        if (o.phase == "forward") continue;
        kernels_b += o.kernels;
        seen_wait = seen_wait || (o.phase == "recompute" && o.kind == "host_sync" && o.name != "host_issue");
      }
      CHECK(l.backward_s > kernels_b * 1e-3 + 1e-9);
      CHECK(l.backward_s < kernels_b * 1e-3 + 0.1e-3);
    }
    CHECK(seen_wait);
    // The preset's 32 us per launch (x 1.87 launches per graph kernel) does not bind
    // DeepSeek's large MoE kernels: the host costs the forward only the restart after the
    // wait, less than the issue of the op after it (the permute's 2 kernels x 1.87 x 32 us =
    // 120 us), and the backward nothing.
    const ComputeBreakdown real = estimate_compute(load_plan("deepseek-v3-h800"));
    for (const LayerEstimate& l : real.layers) {
      for (const OpEstimate& o : l.ops) {
        if (o.name != "host_issue") continue;
        CHECK(o.phase == "forward");
        CHECK(o.time_s < 2 * 1.87 * 32e-6);
      }
    }
  }

  TEST_CASE("a dense stack whose kernels are shorter than their issue runs at the host's pace") {
    // GPT-2 small's shape (12 layers of 768, 12 heads of 64) at 1024 tokens per micro-batch on
    // h100-sxm-ib: its dense layer's kernels take well under the 1.87 x 35.66 us the host needs
    // to issue each, so the forward takes (forward kernels) x 1.87 x 35.66 us and the backward
    // (its kernels) x the same; at 64x the tokens the kernels outlast their issue and the host
    // keeps ahead (no host row).
    const auto dir = std::filesystem::temp_directory_path() / "paraplan_kernels_test";
    std::filesystem::create_directories(dir);
    std::ofstream((dir / "gpt2-small.yaml").string())
        << "name: gpt2-small\nlayers: 12\nhidden: 768\nvocab: 50304\nseq_len: 1024\n"
           "attention: {kind: mha, heads: 12, head_dim: 64}\nffn: {kind: gelu, intermediate: 3072}\n";
    std::ofstream((dir / "gpt2-small-h100.yaml").string())
        << "model: " << (dir / "gpt2-small.yaml").string()
        << "\nhardware: h100-sxm-ib\nnodes: 1\nparallel: {tp: 1, pp: 1, dp: 8}\n"
           "training: {micro_batch: 1, global_batch: 8, seq_len: 1024, precision: bf16}\n";
    Plan p = load_plan((dir / "gpt2-small-h100.yaml").string());
    const double issue = 1.87 * 35.66e-6;
    for (const LayerEstimate& l : estimate_compute(p).layers) {
      if (l.kind != "dense") continue;
      int kf = 0, kb = 0;
      for (const OpEstimate& o : l.ops) (o.phase == "forward" ? kf : kb) += o.kernels;
      CHECK(kf >= 10);
      CHECK(l.forward_s == doctest::Approx(kf * issue));
      CHECK(l.backward_s == doctest::Approx(kb * issue));
    }
    p.strategy.training.micro_batch = 64;
    for (const LayerEstimate& l : estimate_compute(p).layers) {
      for (const OpEstimate& o : l.ops) CHECK(o.name != "host_issue");
    }
  }

  TEST_CASE("an eager loop the graph spells out launches its kernels once each") {
    // GPT-OSS-style experts (biases, a clamped GLU) on deepseek-v3-h800: the FC2 bias loop
    // and the clamps are counted launch for launch (op_graph.cpp), the other ops at 2 launches
    // per graph kernel. With 1 ms of host time per launch the MoE forward is then
    // (2 x graph kernels + the eager ones) x 1 ms (and the last kernel and the wait, far below
    // 1 ms), and its kernel time pays 4.5 us per eager launch, not 2 x 4.5.
    Plan p = load_plan("deepseek-v3-h800");
    p.model.bias = true;
    p.model.ffn.clamp = 7.0;
    p.hardware.device.host_issue_s = 1e-3;
    p.hardware.device.launches_per_kernel = 2;
    bool seen = false;
    for (const LayerEstimate& l : estimate_compute(p).layers) {
      if (l.kind != "moe") continue;
      seen = true;
      int graph = 0, eager = 0;
      for (const OpEstimate& o : l.ops) {
        if (o.phase != "forward") continue;
        const bool spelled = o.name.find("fc2_bias") != std::string::npos || o.name.find("glu_clamp") != std::string::npos;
        (spelled ? eager : graph) += o.kernels;
      }
      const int experts = 256 / p.strategy.parallel.ep;
      CHECK(eager == (2 * experts + 1) + 3);  // the bias loop and the clamps
      CHECK(l.forward_s > (2.0 * graph + eager) * 1e-3);
      CHECK(l.forward_s < (2.0 * graph + eager) * 1e-3 + 0.1e-3);
    }
    CHECK(seen);
  }

  TEST_CASE("CUDA graphs: a MoE layer's kernels up to its host sync are one launch, forward and backward") {
    // deepseek-v3-h800 with 2 ms of host time per launch, one launch per graph kernel. With
    // per-layer graphs the forward ops before the token-count sync (attention, router) and
    // their backward kernels are replayed by one graph launch each way; the rest is issued
    // kernel by kernel. From one wait to the next the host issues the kernels after the sync
    // (2 ms each, every kernel shorter than that, so each has ended before the next is
    // issued), then the graph (2 ms), whose kernels run once it is issued, then waits: the
    // MoE forward is (kernels after the sync + 1) x 2 ms + the graphed kernels' time + the
    // wait's. Its backward has no wait: (kernels of the ops after the sync + 1) x 2 ms.
    const double issue = 2e-3;
    Plan p = load_plan("deepseek-v3-h800");
    p.hardware.device.host_issue_s = issue;
    p.hardware.device.launches_per_kernel = 1;
    p.strategy.training.cuda_graphs = true;
    const auto graph = model::build_layers(p.model, p.strategy, p.hardware, 1.0);
    bool seen = false;
    for (const LayerEstimate& l : estimate_compute(p).layers) {
      if (l.kind != "moe") continue;
      seen = true;
      const model::Layer* ops = nullptr;
      for (const model::Layer& g : graph) {
        if (model::name(g.kind) == l.kind) ops = &g;
      }
      REQUIRE(ops != nullptr);
      int before = 0, after_f = 0, after_b = 0, graphed_b = 0;
      bool synced = false;
      double replayed_s = 0;  // the graphed forward kernels and the wait, as `l.ops` times them
      std::size_t i = 0;
      for (const model::Op& op : ops->ops) {
        REQUIRE(l.ops[i].name == op.name);
        const double t = l.ops[i++].time_s;
        if (op.phase == model::Phase::Forward) {
          if (op.kind == model::OpKind::HostSync) {
            synced = true;
            CHECK_FALSE(op.graphed);
            replayed_s += t;
            continue;
          }
          CHECK(op.graphed == !synced);
          (synced ? after_f : before) += op.kernels;
          if (op.graphed) replayed_s += t;
          if (!op.graphed) CHECK(t < issue);
        } else {
          (op.graphed ? graphed_b : after_b) += op.kernels;
        }
      }
      REQUIRE(synced);
      CHECK(before > 0);
      CHECK(graphed_b > 0);
      CHECK(l.forward_s == doctest::Approx((after_f + 1) * issue + replayed_s));
      CHECK(l.backward_s == doctest::Approx((after_b + 1) * issue));
    }
    CHECK(seen);
    // A dense layer has no wait: its forward is one graph and the kernels outside it, issued
    // ahead of the GPU; at 20 ms per launch the host bounds it: (kernels outside + 1) x 20 ms,
    // the graph's launch counted once.
    Plan slow = p;
    slow.hardware.device.host_issue_s = 20e-3;
    bool dense = false;
    for (const LayerEstimate& l : estimate_compute(slow).layers) {
      if (l.kind != "dense") continue;
      dense = true;
      int outside = 0;
      bool graphed = false;
      for (const model::Layer& g : graph) {
        if (std::string(model::name(g.kind)) != "dense") continue;
        for (const model::Op& op : g.ops) {
          if (op.phase != model::Phase::Forward) continue;
          graphed = graphed || op.graphed;
          if (!op.graphed) outside += op.kernels;
        }
      }
      CHECK(graphed);
      CHECK(l.forward_s == doctest::Approx((outside + 1) * 20e-3));
    }
    CHECK(dense);
    // The planner's per-layer cost cache tells the two settings apart.
    Planner planner(p.hardware, p.model);
    Strategy graphs = p.strategy, none = p.strategy;
    none.training.cuda_graphs = false;
    CHECK(planner.evaluate(graphs).step_time_s < planner.evaluate(none).step_time_s);
  }
}
