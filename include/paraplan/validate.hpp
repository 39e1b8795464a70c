#pragma once
/// Validation: predicted against published measurements (`paraplan validate`).
/// Case files: one YAML per case in validation/ (schema: docs/validation.md).

#include <string>
#include <vector>

#include "paraplan/export.hpp"
#include "paraplan/spec.hpp"

namespace paraplan {

/// What a case measures; each names its unit and the tool computes the same quantity.
enum class Metric {
  StepTime,             ///< step_time_s: seconds per iteration
  Tgs,                  ///< tokens_per_device_per_s
  ModelTflops,          ///< model_tflops_per_device: model FLOP (no recompute) / step / device, TFLOP/s
  MegatronTflops,       ///< megatron_tflops_per_device: 96 B s l h^2 (1 + s/6h + V/16lh) / step / device (counts recompute)
  MoeLayerForwardMs,    ///< moe_layer_forward_ms: one MoE block (router .. combine), forward, ms
  MoeLayerBackwardMs,   ///< moe_layer_backward_ms
  LayerForwardMs,       ///< layer_forward_ms: one dense transformer layer with its TP comm, ms
  LayerBackwardMs,      ///< layer_backward_ms (with recompute)
  CollectiveUs,         ///< collective_time_us: one collective call, microseconds
  RdmaBandwidth,        ///< rdma_bandwidth_gbps: DeepEP-style dispatch, RDMA bytes / time, GB/s
  MemoryGib,            ///< memory_per_device_gib: the worst stage's memory per device (PyTorch max reserved), GiB
};

/// A collective micro-benchmark (nccl-tests style).
struct CollectiveCase {
  Collective op = Collective::AllReduce;
  double bytes = 0;   ///< nccl-tests size
  int ranks = 1;
  int stride = 1;     ///< devices between members
};

/// One validation case.
struct ValidationCase {
  std::string name;
  std::string file;
  std::string category;     ///< dense | moe | micro | memory
  std::string source;       ///< paper and table, or repository and file
  std::vector<std::string> assumptions;  ///< what the source does not state and the case assumes
  bool calibration = false; ///< the hardware file takes a number from this same measurement
  /// The measurement times a kernel or layer in isolation (a benchmark of seconds), not a
  /// sustained training run: the hardware's `calibration.sustained` is not applied.
  bool isolated = false;
  Metric metric = Metric::StepTime;
  double measured = 0;      ///< in the metric's unit
  std::string definition;   ///< how the source defines its figure
  /// Layer metrics: the model ops that make up the measured figure, as name globs
  /// (`measured.ops`, e.g. a profile's rows); empty = the metric's default set.
  std::vector<std::string> ops;
  double bound_pct = 25;    ///< |error| above this fails `paraplan validate`
  Plan plan;                ///< hardware, model and strategy (strategy cases)
  CollectiveCase collective;  ///< collective cases
  bool is_collective = false;
};

/// A case's outcome.
struct CaseResult {
  std::string name, category, metric;
  double measured = 0, predicted = 0;
  double error_pct = 0;     ///< (predicted - measured) / measured x 100
  /// error_pct signed so that + is the model promising more than measured: a shorter time,
  /// more throughput or bandwidth, less memory (time and memory metrics: -error_pct)
  double optimism_pct = 0;
  double bound_pct = 0;
  bool within = true;
  bool calibration = false;
  std::string breakdown;    ///< the largest terms of the prediction, for reading the gap
};

/// Accuracy over a set of cases.
struct ValidationSummary {
  std::string category;     ///< "all", "dense", "moe", "micro"
  int cases = 0;
  double mape = 0;          ///< mean |error| in percent
  double bias = 0;          ///< mean optimism_pct: + = faster / more throughput / less memory than measured
  double worst = 0;         ///< largest |error|
  std::string worst_case;
};

struct ValidationReport {
  std::vector<CaseResult> results;
  std::vector<ValidationSummary> summaries;  ///< all, then per category (calibration cases excluded)
  int failed = 0;                            ///< cases over their bound
};

/// Every `*.yaml` case in `dir` (sorted by file name), or the one case file `dir` names;
/// throws ConfigError with all problems.
[[nodiscard]] PARAPLAN_EXPORT std::vector<ValidationCase> load_cases(const std::string& dir);

/// Predicts one case.
[[nodiscard]] PARAPLAN_EXPORT CaseResult run_case(const ValidationCase& c);

/// Runs every case and summarises.
[[nodiscard]] PARAPLAN_EXPORT ValidationReport validate(const std::vector<ValidationCase>& cases);

/// The table of cases and the summary, for people.
[[nodiscard]] PARAPLAN_EXPORT std::string validation_text(const ValidationReport& r);

/// The spelling of a metric as case files write it ("step_time_s", ...).
[[nodiscard]] PARAPLAN_EXPORT const char* metric_name(Metric m);

}  // namespace paraplan
