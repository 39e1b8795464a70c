#pragma once
// Step time of one strategy from cached per-layer costs (docs/cost-model.md, "Step time").

#include "paraplan/model.hpp"
#include "paraplan/planner.hpp"
#include "schedule/simulate.hpp"
#include "search/layer_costs.hpp"

namespace paraplan::search {

/// Communication that depends on more than the layer key (pipeline neighbours, DP groups),
/// computed by the caller: it owns the caches.
struct StrategyComm {
  double pp_send_s = 0;   ///< one micro-batch's activations to the next stage
  double dp_s = 0;        ///< gradient reduce-scatter + parameter all-gather (or all-reduce) per step
  double dp_param_s = 0;  ///< of dp_s, the updated parameters' all-gather (0 with an all-reduce)
  double dp_gather_s = 0; ///< ZeRO-3: the parameter all-gathers of one micro-batch (forward and backward)
  /// Tied input and output embeddings on different pipeline ranks: the all-reduce of the
  /// table's gradient between the first and the last stage, once per DP synchronisation.
  double tied_s = 0;
};

/// Bytes the DP collectives of the bottleneck rank move, for the caller to cost.
struct DpVolumes {
  double dense_params = 0, expert_params = 0;
};

/// One micro-batch through a rank: forward, input-gradient and weight-gradient times with
/// their exposed communication, and of them the compute, TP/CP, EP and queueing parts.
struct MicroBatchTimes {
  double f = 0, b = 0, w = 0, compute = 0, tp = 0, ep = 0, queueing = 0;
};
/// The rank whose micro-batch takes longest, the closed form's bottleneck: one micro-batch's
/// times through all its chunks (exposed communication included) and the number of chunks
/// its bubble is counted in (2 for DualPipeV, else 1).
struct Bottleneck {
  MicroBatchTimes times;
  double chunks = 1;
};
/// The bottleneck rank of `s`. It follows from the layer costs, the pipeline layout, the
/// schedule and the overlap settings alone: the search reuses it across candidates of a
/// layout that share their layer costs.
Bottleneck bottleneck(const ModelSpec& m, const Strategy& s, const LayerCosts& c);

/// The full estimate of `s` (valid strategy assumed) from its layer costs. `comm` supplies
/// the PP and DP times; `detail` = false skips the words (the bottleneck text) and leaves
/// `strategy` empty (the search copies it only into the estimates it keeps); `simulate`
/// times the pipeline by the event simulation of the schedule instead of the closed form.
/// `known`: `bottleneck(m, s, c)` where the caller has it (not used with `simulate`).
Estimate evaluate_step(const HardwareSpec& hw, const ModelSpec& m, const Strategy& s, const LayerCosts& c,
                       const MemoryEstimate& memory, const StrategyComm& comm, bool detail = true,
                       bool simulate = false, const Bottleneck* known = nullptr);

/// What turns a step time into evaluate_step's TGS and MFU: the step's tokens, the devices,
/// the model FLOP of the step and the devices' BF16 dense peak.
struct StepScale {
  double tokens = 0, devices = 0, model_flops = 0, peak = 0;
  [[nodiscard]] double tgs(double step_s) const { return tokens / (step_s * devices); }
  [[nodiscard]] double mfu(double step_s) const { return model_flops / (step_s * peak); }
};
StepScale step_scale(const HardwareSpec& hw, const ModelSpec& m, const Strategy& s, const LayerCosts& c);

/// A lower bound of evaluate_step's closed-form step time (simulate = false) that costs no
/// per-rank work: the bottleneck rank's micro-batch takes at least the average rank's share of
/// the transformer layers (every schedule's ranks together run each layer once per
/// micro-batch), and the step at least `micro_batches` of it; every other term is >= 0. The
/// search skips a candidate whose bound cannot enter its results (branch and bound).
double step_lower_bound(const ModelSpec& m, const Strategy& s, const LayerCosts& c);

/// The worst stage's memory as the estimate reports it (zeros without stages).
MemoryBreakdown worst_memory(const MemoryEstimate& m);

/// What the schedule simulation of `s` runs: per rank its chunks' per-micro-batch times.
schedule::Pipeline pipeline_of(const ModelSpec& m, const Strategy& s, const LayerCosts& c, const StrategyComm& comm);

}  // namespace paraplan::search
