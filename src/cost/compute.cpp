#include "cost/compute.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "paraplan/estimate.hpp"
#include "schedule/layout.hpp"

namespace paraplan::cost {
namespace {

GemmCorrection correction_of(const GemmTable* table, const GemmKernelSpec& g, double fraction, int units,
                             double rate) {
  GemmCorrection c;
  if (table == nullptr) return c;
  for (const GemmPoint& p : table->points) {
    const double model = gemm_model_efficiency(g, fraction, units, p.m, p.n, p.k, 1, GemmPass::Forward, rate);
    c.add(p.m, p.n, p.k, p.efficiency / model);
  }
  return c;
}

}  // namespace

ComputeModel make_compute_model(const HardwareSpec& hw, Precision precision,
                                const std::string& attention_kernel, bool attention_dropout) {
  const DeviceSpec& d = hw.device;
  auto surface = [&](std::initializer_list<GemmKind> order) {
    for (GemmKind k : order) {
      if (d.table(k)) return GemmEfficiency(*d.table(k));
    }
    return GemmEfficiency(kDefaultGemmEfficiency);
  };
  auto table = [&](std::initializer_list<GemmKind> order) -> const GemmTable* {
    for (GemmKind k : order) {
      if (d.table(k) && !d.table(k)->points.empty()) return &*d.table(k);
    }
    return nullptr;
  };
  ComputeModel cm;
  const bool fp8 = model::fp8_gemms(precision, d);
  cm.dense_bf16 = surface({GemmKind::Bf16});
  cm.grouped_bf16 = surface({GemmKind::GroupedBf16, GemmKind::Bf16});
  cm.dense_low = fp8 ? surface({GemmKind::Fp8, GemmKind::Bf16}) : cm.dense_bf16;
  cm.grouped_low = fp8 ? surface({GemmKind::GroupedFp8, GemmKind::Fp8, GemmKind::GroupedBf16,
                                  GemmKind::Bf16})
                       : cm.grouped_bf16;
  cm.peak_bf16 = d.peak(Dtype::Bf16);
  cm.peak_low = fp8 ? d.peak(Dtype::Fp8) : cm.peak_bf16;
  cm.mem_bw = d.memory_bw_bytes_per_s;
  for (int c = 0; c < kMemClassCount; ++c) cm.mem_fraction[static_cast<std::size_t>(c)] = d.memory_fraction(static_cast<MemClass>(c));
  cm.gemm_mem_fraction = d.memory_bound_efficiency;
  cm.overhead_s = d.kernel_overhead_s * d.launches_per_kernel;  // per launch, launches per graph kernel
  cm.launch_s = d.kernel_overhead_s;
  cm.host_sync_s = d.host_sync_s;
  cm.units = d.compute_units;
  cm.dies = std::max(1, d.dies);
  cm.calibration = hw.calibration.compute;
  cm.fp8 = fp8;
  cm.fp8_gemm = fp8 ? hw.calibration.fp8_gemm : 1.0;
  cm.sustained = hw.calibration.sustained;
  const int die_units = cm.units / cm.dies;
  if (d.gemm_kernel.present()) {
    const GemmKernelSpec& g = d.gemm_kernel;
    cm.kernel = &d.gemm_kernel;
    cm.fraction_bf16 = g.peak_fraction[static_cast<int>(Dtype::Bf16)];
    const double f8 = g.peak_fraction[static_cast<int>(Dtype::Fp8)];
    cm.fraction_low = fp8 && f8 > 0 ? f8 : cm.fraction_bf16;
    cm.rate_low = cm.peak_bf16 > 0 ? cm.peak_low / cm.peak_bf16 : 1.0;
    // Measured points correct the model where they were taken (first table of each chain).
    cm.fix_dense_bf16 = correction_of(table({GemmKind::Bf16}), g, cm.fraction_bf16, die_units, 1.0);
    cm.fix_grouped_bf16 = correction_of(table({GemmKind::GroupedBf16}), g, cm.fraction_bf16, die_units, 1.0);
    if (fp8) {
      cm.fix_dense_low = correction_of(table({GemmKind::Fp8}), g, cm.fraction_low, die_units, cm.rate_low);
      cm.fix_grouped_low = correction_of(table({GemmKind::GroupedFp8}), g, cm.fraction_low, die_units, cm.rate_low);
    } else {
      cm.fix_dense_low = cm.fix_dense_bf16;
      cm.fix_grouped_low = cm.fix_grouped_bf16;
    }
  }
  if (const AttentionKernelSpec* a = d.attention_kernel(attention_kernel)) {
    cm.attention = *a;
    cm.has_attention_kernel = true;
  }
  // Dropout on the probabilities runs inside the flash kernel (a random number per score):
  // where the hardware times the kernel so (`NAME_dropout`), that entry stands in.
  if (attention_dropout && cm.has_attention_kernel) {
    for (const AttentionKernelSpec& a : d.attention) {
      if (a.name == cm.attention.name + "_dropout") {
        cm.attention = a;
        break;
      }
    }
  }
  cm.peak_attention = cm.has_attention_kernel && cm.attention.fp8 ? d.peak(Dtype::Fp8) : cm.peak_bf16;
  return cm;
}

bool grouped_loop(const ComputeModel& cm, const model::Op& op) {
  return op.kind == model::OpKind::GroupedGemm && cm.kernel != nullptr && cm.kernel->grouped_loop &&
         !op.fused_grouped;
}

static OpTime op_time_uncalibrated(const ComputeModel& cm, const model::Op& op) {
  using model::OpKind;
  const double share = op.per_die ? 1.0 / cm.dies : 1.0;
  const double split = op.per_die ? 1.0 : static_cast<double>(cm.dies);  // duplicate mode
  const int units = cm.units / cm.dies;  // one die's units run the kernel
  const double launch = op.kernels * (op.exact_launches ? cm.launch_s : cm.overhead_s);
  OpTime t;
  double kernel_s = 0, memory_s = 0;
  switch (op.kind) {
    case OpKind::Gemm:
    case OpKind::GroupedGemm: {
      const bool grouped = op.kind == OpKind::GroupedGemm;
      const bool low = op.low_precision;
      const double peak = (low ? cm.peak_low : cm.peak_bf16) * share;
      const double m = op.m / split;
      int kernels = op.kernels;
      const bool loop = cost::grouped_loop(cm, op);
      if (loop) kernels = op.groups;
      // The efficiency of one matmul of n x k (the op's own shape, or one of its parts).
      auto efficiency = [&](double n, double k) {
        if (cm.kernel != nullptr) {
          const GemmPass pass = op.phase == model::Phase::InputGrad    ? GemmPass::Dgrad
                                : op.phase == model::Phase::WeightGrad ? GemmPass::Wgrad
                                                                       : GemmPass::Forward;
          const double fraction = low ? cm.fraction_low : cm.fraction_bf16;
          const double e = gemm_model_efficiency(*cm.kernel, fraction, units, m, n, k, loop ? 1 : op.groups, pass,
                                                 low ? cm.rate_low : 1.0, low && cm.fp8, op.m_sd / split);
          const GemmCorrection& fix = grouped ? (low ? cm.fix_grouped_low : cm.fix_grouped_bf16)
                                              : (low ? cm.fix_dense_low : cm.fix_dense_bf16);
          return std::clamp(e * fix.at(m, n, k), 1e-6, 1.0);
        }
        const GemmEfficiency& surface = low ? (grouped ? cm.grouped_low : cm.dense_low)
                                            : (grouped ? cm.grouped_bf16 : cm.dense_bf16);
        return surface.at(m, n, k);
      };
      const double mem_bw = cm.mem_bw * cm.gemm_mem_fraction * share;
      // Each matmul at its own shape and roofline: separate linears (training.linears:
      // separate) run one per part, with its share of the op's FLOP and of its bytes (A, B and
      // C of m x n x k); any other GEMM is its one part.
      const bool on_k = op.phase == model::Phase::InputGrad;  // dX = dY W^T: the parts split k
      const std::array<double, 1> whole_op{on_k ? op.k : op.n};
      const std::span<const double> parts = op.separate ? std::span<const double>(op.unfused_n) : whole_op;
      const double whole = op.m * op.k + op.k * op.n + op.m * op.n;
      double busy = 0;
      for (double part : parts) {
        if (op.separate && part <= 0) continue;
        const double n = on_k ? op.n : part, k = on_k ? part : op.k;
        t.efficiency = efficiency(n, k);
        const double part_kernel = op.flops * (op.separate ? n * k / (op.n * op.k) : 1.0) / (peak * t.efficiency);
        const double part_memory = op.bytes * (op.separate ? (op.m * k + k * n + op.m * n) / whole : 1.0) / mem_bw;
        kernel_s += part_kernel;
        memory_s += part_memory;
        busy += std::max(part_kernel, part_memory);
      }
      if (op.separate) t.efficiency = op.flops / (peak * kernel_s);
      t.time_s = busy + kernels * cm.overhead_s;
      t.achieved = op.flops / t.time_s;
      t.bound = memory_s > kernel_s ? "memory" : "compute";
      if (kernels * cm.overhead_s > busy) t.bound = "launch";
      return t;
    }
    case OpKind::Attention: {
      if (cm.has_attention_kernel) {
        const bool backward = op.phase == model::Phase::InputGrad;
        t.efficiency = attention_efficiency(cm.attention, backward, units, op.groups / split, op.m,
                                            op.n, op.causal, op.window, op.head_dim);
      } else {
        // No attention kernel figures: the GEMM model's large-shape fraction, or the GEMM
        // surface at the attention shape.
        t.efficiency = cm.kernel != nullptr ? cm.fraction_bf16 : cm.dense_bf16.at(op.m / split, op.n, op.k);
      }
      kernel_s = op.flops / (cm.peak_attention * share * t.efficiency);
      t.time_s = kernel_s + launch;
      t.achieved = op.flops / t.time_s;
      t.bound = launch > kernel_s ? "launch" : "compute";
      return t;
    }
    case OpKind::Memory: {
      const double bw = cm.mem_bw * share * cm.mem_fraction[static_cast<std::size_t>(op.mem_class)];
      memory_s = op.bytes / bw;
      t.time_s = memory_s + launch;
      t.achieved = op.bytes / t.time_s;
      t.bound = launch > memory_s ? "launch" : "memory";
      return t;
    }
    case OpKind::HostSync:
      t.time_s = op.kernels * cm.host_sync_s;
      t.bound = "host";
      return t;
  }
  return t;
}

int op_class(const model::Op& op) {
  switch (op.kind) {
    case model::OpKind::Gemm: return 0;
    case model::OpKind::GroupedGemm: return 1;
    case model::OpKind::Attention: return 2;
    case model::OpKind::Memory: return 3 + static_cast<int>(op.mem_class);
    default: return -1;
  }
}

const char* op_class_name(const model::Op& op) {
  const int c = op_class(op);
  return c >= 0 ? kOpClassNames[c] : "";
}

double host_paced_s(const std::vector<IssuedOp>& ops, double issue_s) {
  double host = 0, end = 0;
  for (const IssuedOp& op : ops) {
    const long n = std::max(1L, std::lround(op.launches));
    for (long j = 0; j < n; ++j) {
      host += op.launches / static_cast<double>(n) * issue_s;
      end = std::max(end, host) + op.time_s / static_cast<double>(n);
    }
    if (op.wait) host = end;
  }
  return end;
}

void IssueOrder::add(double launches, double time_s, bool wait, bool graph) {
  if (graph && !graphed) ops.push_back({1.0, 0.0, false});
  graphed = graphed || graph;
  if (wait && !waits) sync_at = ops.size();
  waits = waits || wait;
  ops.push_back({launches, time_s, wait});
}

double IssueOrder::host_s(double issue_s) const {
  if (waits) {
    std::vector<IssuedOp> from_wait = ops;
    std::rotate(from_wait.begin(), from_wait.begin() + static_cast<std::ptrdiff_t>(sync_at + 1), from_wait.end());
    return host_paced_s(from_wait, issue_s);
  }
  double launches = 0;
  for (const IssuedOp& op : ops) launches += op.launches;
  return launches * issue_s;
}

std::vector<TpBlockGemms> tp_block_gemms(const LayerEstimate& layer) {
  std::vector<TpBlockGemms> blocks;
  for (const OpEstimate& op : layer.ops) {
    if (op.block.empty() || op.phase != "forward") continue;
    auto it = std::find_if(blocks.begin(), blocks.end(), [&](const TpBlockGemms& b) { return b.block == op.block; });
    if (it == blocks.end()) {
      blocks.push_back({op.block, op.name, op.name});
    } else {
      it->row = op.name;
    }
  }
  return blocks;
}

OpTime op_time(const ComputeModel& cm, const model::Op& op) {
  OpTime t = op_time_uncalibrated(cm, op);
  const int cls = op_class(op);
  if (cls >= 0) {
    // Recomputed forwards run the forward kernels.
    const std::size_t pass = op.phase == model::Phase::WeightGrad ? 2 : op.phase == model::Phase::InputGrad ? 1 : 0;
    double f = cm.calibration[static_cast<std::size_t>(cls)][pass];
    const bool gemm = op.kind == model::OpKind::Gemm || op.kind == model::OpKind::GroupedGemm;
    // FP8 GEMMs (an FP8 `low` op) take fp8_gemm, BF16 ones the sustained training rate (both 1
    // unless the hardware was calibrated to training runs).
    if (gemm && op.low_precision && cm.fp8) {
      f *= cm.fp8_gemm;
    } else if (gemm) {
      f *= cm.sustained;
    }
    if (f != 1) {
      t.time_s *= f;
      t.achieved /= f;
    }
  }
  return t;
}

}  // namespace paraplan::cost

namespace paraplan {
namespace {

// A GEMM run as `chunks` GEMMs of m / chunks rows each, as a TP overlap pipelines it: every
// chunk is a kernel of its own and reads the whole weight. Transformer Engine issues the
// chunks round-robin on min(3, chunks) compute streams (NVTE_COMM_OVERLAP_MAX_STREAMS,
// TransformerEngine@d0067d0 transformer_engine/common/include/transformer_engine/
// comm_gemm_overlap.h; split_overlap_ag / split_overlap_rs in common/comm_gemm_overlap/
// comm_gemm_overlap.cpp), from its C++ loop: a chunk's tiles fill the units the one before
// leaves idle and its launch hides behind the other streams' kernels. The tiles keep the
// whole GEMM's wave quantization; the split costs the weight read once per chunk.
double split_time(const cost::ComputeModel& cm, const model::Op& op, int chunks) {
  model::Op whole = op;
  const double weights = op.k * op.n * (op.low_precision && cm.fp8 ? 1.0 : 2.0);
  whole.bytes = op.bytes + (chunks - 1) * weights;
  return cost::op_time(cm, whole).time_s;
}

// overlap.tp as Transformer Engine's userbuffers run it with Megatron-Bridge's tuned
// configurations (NVIDIA-NeMo/Megatron-Bridge@067f987 src/megatron/bridge/training/
// comm_overlap.py; TransformerEngine@d0067d0 transformer_engine/pytorch/module/base.py for
// the methods): the all-gather before a block's column-parallel GEMMs (qkv, fc1) and the one
// of the output gradient before its row-parallel GEMM's dgrad (proj, fc2) are ring exchanges
// that split the GEMM into TP-degree chunks; the reduce-scatter after the row-parallel
// forward GEMM is a ring exchange too with FP8 GEMMs, and with BF16 ones a pipeline of 4
// chunks (num_splits 4). The row-parallel GEMM of a block is its last forward GEMM. Marks
// each block GEMM and prices the chunked ones. torch's AsyncTP (`async`) runs the
// row-parallel forward GEMM as tp chunks, one per destination rank
// (_fused_matmul_reduce_scatter_impl's chunk_producer), whatever the precision.
void split_tp_gemms(const cost::ComputeModel& cm, const std::vector<model::Op>& ops, LayerEstimate& le, int tp,
                    bool async) {
  constexpr int kPipelineSplits = 4;
  for (std::size_t i = 0; i < ops.size(); ++i) le.ops[i].block = model::tp_block(ops[i]);
  if (tp <= 1) return;
  const std::vector<cost::TpBlockGemms> blocks = cost::tp_block_gemms(le);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    OpEstimate& op = le.ops[i];
    const auto it = std::find_if(blocks.begin(), blocks.end(), [&](const cost::TpBlockGemms& b) { return b.block == op.block; });
    if (op.block.empty() || it == blocks.end()) continue;  // no block, or one without a forward GEMM
    if (ops[i].phase == model::Phase::Forward) {
      const bool pipeline = op.name == it->row && !op.fp8 && !async;
      op.split_s = split_time(cm, ops[i], pipeline ? kPipelineSplits : tp);
    } else if (ops[i].phase == model::Phase::InputGrad && op.name == it->row + ".dgrad") {
      op.split_s = split_time(cm, ops[i], tp);
    }
  }
}

}  // namespace

namespace cost {

Strategy without_recompute(Strategy s) {
  s.training.recompute = Recompute{};
  s.training.recompute_layers = 0;
  return s;
}

ComputeBreakdown compute_every_layer(const Plan& plan, double expert_load) {
  const double load = expert_load * plan.strategy.moe.imbalance;
  ComputeBreakdown out;
  out.model = count_model(plan.model, plan.strategy.training.seq_len);
  const model::Tokens tok = model::tokens_of(plan.model, plan.strategy, plan.hardware, load);
  out.tokens_per_device = tok.per_device;
  out.tokens_per_expert = tok.per_expert;
  out.tokens_per_expert_slowest = tok.per_expert_slowest;
  out.experts_per_rank = tok.experts_per_rank;
  const cost::ComputeModel cm = cost::make_compute_model(plan.hardware, plan.strategy.training.precision,
                                                         plan.strategy.training.attention_kernel,
                                                         plan.model.attention_dropout > 0);
  const double per_graph_kernel = plan.hardware.device.launches_per_kernel;
  for (const model::Layer& layer : model::build_layers(plan.model, plan.strategy, plan.hardware, load)) {
    LayerEstimate le;
    le.kind = model::name(layer.kind);
    le.count = layer.count;
    // Each pass's ops as the host issues them, for its issue bound below (the backward's
    // recomputed forward first, where a MoE block recomputed whole waits again).
    cost::IssueOrder fwd, bwd;
    for (const model::Op& op : layer.ops) {
      cost::OpTime t = cost::op_time(cm, op);
      OpEstimate oe;
      oe.name = op.name;
      oe.phase = model::name(op.phase);
      oe.kind = model::name(op.kind);
      oe.time_s = t.time_s;
      oe.flops = op.flops;
      oe.bytes = op.bytes;
      oe.m = op.m;
      oe.n = op.n;
      oe.k = op.k;
      oe.groups = op.groups;
      oe.m_sd = op.m_sd;
      oe.efficiency = t.efficiency;
      oe.per_die = op.per_die;
      oe.fp8 = op.low_precision && cm.fp8 && (op.kind == model::OpKind::Gemm || op.kind == model::OpKind::GroupedGemm);
      oe.kernels = op.kind == model::OpKind::HostSync ? 0 : op.kernels;
      oe.op_class = cost::op_class_name(op);
      if (cost::grouped_loop(cm, op)) {
        oe.kernels = op.groups;
      }
      // The framework's launches: each graph kernel x device.launches_per_kernel, an op that
      // spells out its launches one for one; a graphed op is replayed by its graph's launch.
      const double launches = op.graphed ? 0.0 : oe.kernels * (op.exact_launches ? 1.0 : per_graph_kernel);
      (op.phase == model::Phase::Forward ? fwd : bwd)
          .add(launches, t.time_s, op.kind == model::OpKind::HostSync, op.graphed);
      oe.achieved = t.achieved;
      oe.bound = t.bound;
      switch (op.phase) {
        case model::Phase::Forward: le.forward_s += t.time_s; break;
        case model::Phase::Recompute: le.recompute_s += t.time_s; le.backward_s += t.time_s; break;
        case model::Phase::WeightGrad: le.weight_grad_s += t.time_s; le.backward_s += t.time_s; break;
        case model::Phase::InputGrad: le.backward_s += t.time_s; break;
      }
      le.ops.push_back(std::move(oe));
    }
    split_tp_gemms(cm, layer.ops, le, plan.strategy.overlap.tp ? plan.strategy.parallel.tp : 1,
                   plan.strategy.overlap.tp_async);
    // A forward that waits at a host synchronisation (dropless MoE token counts) issues the
    // kernels after it from an empty queue, and the next layer's before its own wait: from
    // one wait to the next, each kernel starts when the host has issued it (device.host_issue
    // per launch; the launches are counted above) or when the kernel before it ends, on one
    // in-order stream (cost::host_paced_s), so the pass takes at least its launches times the
    // issue time. Its backward starts from the queue the last forward wait drained and has
    // no wait of its own unless it recomputes the wait (a MoE block recomputed whole), so
    // the host can run ahead across it, and it takes at least its launches (recomputed
    // forward, input and weight gradients) times the issue time; a recomputed wait paces the
    // backward as the forward's paces the forward. The
    // host is the bottleneck of a pass whose kernels are shorter than the host's time to
    // issue them (the DeepSeek trace's 32 us per launch is its two host threads', forward and
    // backward, over all 963 launches). A graphed part of a pass is replayed by one launch.
    // A pass without a host wait (a dense layer, a MoE layer without dropless token counts)
    // lets the host run ahead, but not faster than it issues: layers alike in a stack each
    // take at least their launches times the issue time, so a stack of layers whose kernels
    // are shorter than their issue (small models, small micro-batches) runs at the host's pace.
    // The embedding and the head, one of each, run on the lead the host gained elsewhere.
    const bool stacked = layer.kind == model::LayerKind::Dense || layer.kind == model::LayerKind::Moe;
    const double issue = plan.hardware.device.host_issue_s;
    if (issue > 0 && (fwd.waits || stacked)) {
      // The host's excess over a pass, shown as one op bound by the host.
      auto bound = [&](const char* phase, double host, double& pass_s) {
        if (host <= pass_s) return;
        OpEstimate h;
        h.name = "host_issue";
        h.phase = phase;
        h.kind = "host_sync";
        h.kernels = 0;
        h.time_s = host - pass_s;
        h.bound = "host";
        le.ops.push_back(h);
        pass_s = host;
      };
      bound("forward", fwd.host_s(issue), le.forward_s);
      bound("input_grad", bwd.host_s(issue), le.backward_s);
    }
    out.layers.push_back(std::move(le));
  }
  return out;
}

}  // namespace cost

ComputeBreakdown estimate_compute(const Plan& plan, double expert_load) {
  ComputeBreakdown out = cost::compute_every_layer(plan, expert_load);
  const Strategy& s = plan.strategy;
  if (!s.training.partial_recompute()) return out;
  // training.recompute_layers: the layers left out of the recompute run as with none.
  const ComputeBreakdown kept =
      cost::compute_every_layer(Plan{plan.hardware, plan.model, cost::without_recompute(s)}, expert_load);
  const auto [rc_dense, rc_moe] = schedule::recomputed_layers(plan.model, s);
  std::vector<LayerEstimate> layers;
  for (LayerEstimate& l : out.layers) {
    const int rc = l.kind == "dense" ? rc_dense : l.kind == "moe" ? rc_moe : l.count;
    const auto k = std::find_if(kept.layers.begin(), kept.layers.end(),
                                [&](const LayerEstimate& x) { return x.kind == l.kind; });
    if (rc >= l.count || k == kept.layers.end()) {
      layers.push_back(std::move(l));
      continue;
    }
    LayerEstimate left = *k;
    left.count = l.count - rc;
    left.recompute_skipped = true;
    l.count = rc;
    if (rc > 0) layers.push_back(std::move(l));
    layers.push_back(std::move(left));
  }
  out.layers = std::move(layers);
  return out;
}

}  // namespace paraplan
