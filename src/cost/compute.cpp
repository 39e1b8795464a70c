#include "cost/compute.hpp"

#include <algorithm>

#include "paraplan/estimate.hpp"

namespace paraplan::cost {

ComputeModel make_compute_model(const HardwareSpec& hw, Precision precision) {
  const DeviceSpec& d = hw.device;
  auto surface = [&](std::initializer_list<GemmKind> order) {
    for (GemmKind k : order) {
      if (d.table(k)) return GemmEfficiency(*d.table(k));
    }
    return GemmEfficiency(kDefaultGemmEfficiency);
  };
  ComputeModel cm;
  cm.dense_bf16 = surface({GemmKind::Bf16});
  cm.grouped_bf16 = surface({GemmKind::GroupedBf16, GemmKind::Bf16});
  const bool fp8 = model::fp8_gemms(precision, d);
  cm.dense_low = fp8 ? surface({GemmKind::Fp8, GemmKind::Bf16}) : cm.dense_bf16;
  cm.grouped_low = fp8 ? surface({GemmKind::GroupedFp8, GemmKind::Fp8, GemmKind::GroupedBf16,
                                  GemmKind::Bf16})
                       : cm.grouped_bf16;
  cm.peak_bf16 = d.peak(Dtype::Bf16);
  cm.peak_low = fp8 ? d.peak(Dtype::Fp8) : cm.peak_bf16;
  cm.mem_bw = d.memory_bw_bytes_per_s * d.memory_bound_efficiency;
  cm.overhead_s = d.kernel_overhead_s;
  cm.attention_efficiency = d.attention_efficiency;
  cm.dies = std::max(1, d.dies);
  return cm;
}

OpTime op_time(const ComputeModel& cm, const model::Op& op) {
  using model::OpKind;
  const double share = op.per_die ? 1.0 / cm.dies : 1.0;
  const double split = op.per_die ? 1.0 : static_cast<double>(cm.dies);  // duplicate mode
  const double bw = cm.mem_bw * share;
  OpTime t;
  switch (op.kind) {
    case OpKind::Gemm:
    case OpKind::GroupedGemm: {
      const bool grouped = op.kind == OpKind::GroupedGemm;
      const GemmEfficiency& surface = op.low_precision ? (grouped ? cm.grouped_low : cm.dense_low)
                                                       : (grouped ? cm.grouped_bf16 : cm.dense_bf16);
      const double peak = (op.low_precision ? cm.peak_low : cm.peak_bf16) * share;
      t.efficiency = surface.at(op.m / split, op.n, op.k);
      t.time_s = std::max(op.flops / (peak * t.efficiency), op.bytes / bw) + cm.overhead_s;
      break;
    }
    case OpKind::Attention: {
      t.efficiency = cm.attention_efficiency > 0 ? cm.attention_efficiency
                                                 : cm.dense_bf16.at(op.m / split, op.n, op.k);
      t.time_s = op.flops / (cm.peak_bf16 * share * t.efficiency) + cm.overhead_s;
      break;
    }
    case OpKind::Memory:
      t.time_s = op.bytes / bw + cm.overhead_s;
      break;
  }
  return t;
}

}  // namespace paraplan::cost

namespace paraplan {

ComputeBreakdown estimate_compute(const Plan& plan, double expert_load) {
  const double load = expert_load * plan.strategy.moe.imbalance;
  ComputeBreakdown out;
  out.model = count_model(plan.model, plan.strategy.training.seq_len);
  const model::Tokens tok = model::tokens_of(plan.model, plan.strategy, plan.hardware, load);
  out.tokens_per_device = tok.per_device;
  out.tokens_per_expert = tok.per_expert;
  out.tokens_per_expert_slowest = tok.per_expert_slowest;
  out.experts_per_rank = tok.experts_per_rank;
  const cost::ComputeModel cm = cost::make_compute_model(plan.hardware, plan.strategy.training.precision);
  for (const model::Layer& layer : model::build_layers(plan.model, plan.strategy, plan.hardware, load)) {
    LayerEstimate le;
    le.kind = model::name(layer.kind);
    le.count = layer.count;
    for (const model::Op& op : layer.ops) {
      cost::OpTime t = cost::op_time(cm, op);
      OpEstimate oe{op.name, model::name(op.phase), model::name(op.kind), t.time_s, op.flops, op.bytes,
                    op.m, op.n, op.k, op.groups, t.efficiency, op.per_die};
      switch (op.phase) {
        case model::Phase::Forward: le.forward_s += t.time_s; break;
        case model::Phase::Recompute: le.recompute_s += t.time_s; le.backward_s += t.time_s; break;
        case model::Phase::WeightGrad: le.weight_grad_s += t.time_s; le.backward_s += t.time_s; break;
        case model::Phase::InputGrad: le.backward_s += t.time_s; break;
      }
      le.ops.push_back(std::move(oe));
    }
    out.layers.push_back(std::move(le));
  }
  return out;
}

}  // namespace paraplan
