#pragma once
// Time of one op on one device: the kernel-level model of src/cost/kernels.hpp (GEMM tiles
// and waves, attention by pass and sequence, memory-bound kernels by class) or, for a
// device without a kernel model, the hardware's GEMM efficiency tables; plus the launch
// overhead of every kernel the op starts.

#include <array>
#include <string>
#include <vector>

#include "cost/gemm_efficiency.hpp"
#include "cost/kernels.hpp"
#include "model/op_graph.hpp"
#include "paraplan/estimate.hpp"
#include "paraplan/spec.hpp"

namespace paraplan::cost {

/// Everything op_time needs, prepared once per hardware, precision and attention kernel
/// (no table lookups by name in the hot loop).
struct ComputeModel {
  // Table surfaces (devices without a kernel model), fallbacks resolved.
  GemmEfficiency dense_bf16, dense_low, grouped_bf16, grouped_low;
  // Kernel model: the GEMM spec, the peak fractions of BF16 and of the strategy's GEMM
  // precision, and the measured tables' corrections of the model (dense / grouped, BF16 /
  // low precision).
  const GemmKernelSpec* kernel = nullptr;
  double fraction_bf16 = 0, fraction_low = 0;
  double rate_low = 1;  ///< peak of the GEMM precision over the BF16 peak
  GemmCorrection fix_dense_bf16, fix_dense_low, fix_grouped_bf16, fix_grouped_low;
  AttentionKernelSpec attention;  ///< the flash kernel in use (forward == 0: none)
  bool has_attention_kernel = false;
  double peak_bf16 = 0;   ///< device FLOP/s
  double peak_low = 0;    ///< device FLOP/s in the strategy's GEMM precision
  double peak_attention = 0;  ///< the attention kernel's peak: FP8 for an FP8 kernel, else BF16
  double mem_bw = 0;      ///< device bytes/s through HBM (the raw bandwidth)
  std::array<double, kMemClassCount> mem_fraction{};  ///< per class
  double gemm_mem_fraction = 0;  ///< the roofline fraction for GEMM operands
  double overhead_s = 0;  ///< per graph kernel: launch overhead x launches per graph kernel
  double launch_s = 0;    ///< per launch (an op with exact_launches)
  double host_sync_s = 0; ///< per host synchronisation
  int units = 0;          ///< compute units per device
  int dies = 1;
  /// Time multipliers by op class and pass fitted by `calibrate profile` (1 = none).
  std::array<std::array<double, kCalibrationPasses>, kOpClassCount> calibration = CalibrationSpec::ones();
  bool fp8 = false;  ///< the strategy's GEMMs run in FP8 on this device (the `low` ops)
  double fp8_gemm = 1;  ///< calibration.fp8_gemm where FP8 GEMMs are in effect
  double sustained = 1; ///< calibration.sustained: BF16 GEMMs in a training step
};

/// Builds the model. Without a kernel model, tables missing for a dtype fall back in this
/// order: grouped FP8 -> FP8 -> grouped BF16 -> BF16 -> constant 0.6. A device without an
/// FP8 peak runs FP8 GEMMs at its BF16 peak. `attention_kernel` names one of the device's
/// flash kernels (empty = its first); with `attention_dropout` the device's `NAME_dropout`
/// entry of that kernel, where it lists one, times it.
ComputeModel make_compute_model(const HardwareSpec& hw, Precision precision,
                                const std::string& attention_kernel = {}, bool attention_dropout = false);

/// The constant used when a device has no BF16 table at all (documented default).
inline constexpr double kDefaultGemmEfficiency = 0.6;

struct OpTime {
  double time_s = 0;
  double efficiency = 0;  ///< FLOP-rate efficiency used (GEMM, attention); 0 for memory ops
  double achieved = 0;    ///< FLOP/s (GEMM, attention) or bytes/s (memory ops) achieved
  const char* bound = "";  ///< what limits it: compute, memory, launch, host
};

/// Time of `op`, including `kernels` x the launch overhead. Ops flagged per_die use one
/// die's peak, bandwidth and units; whole-device ops on multi-die devices run split over
/// the dies ("duplicate mode"), each die taking m / dies rows.
OpTime op_time(const ComputeModel& cm, const model::Op& op);
/// Whether `op` is a grouped GEMM run as one kernel per group (the hardware's `grouped: loop`,
/// unless the op is a fused persistent kernel, moe.fused_mlp).
bool grouped_loop(const ComputeModel& cm, const model::Op& op);

/// One op as the host issues it: its launches (fractional: a graph kernel's framework
/// launches), its device time, and whether it is a host wait (the host stops until the
/// device has finished everything before it, then goes on).
struct IssuedOp {
  double launches = 0;
  double time_s = 0;
  bool wait = false;
};

/// When the last kernel of `ops` ends, issued in order from an empty queue onto one in-order
/// stream by a host that needs `issue_s` per launch: each kernel starts when it has been
/// issued or when the kernel before it ends, whichever is later. An op's time is shared
/// evenly over its launches; an op with no launch (a graphed op, replayed by an earlier
/// graph launch) runs after the kernels before it; a wait runs after them too, and the host
/// issues nothing more until it ends.
double host_paced_s(const std::vector<IssuedOp>& ops, double issue_s);

/// One pass of a layer as the host issues it, in order. A graphed part is replayed by one
/// launch, issued before the first op it replays.
struct IssueOrder {
  std::vector<IssuedOp> ops;
  std::size_t sync_at = 0;  ///< where the host first waits, when `waits`
  bool waits = false, graphed = false;
  void add(double launches, double time_s, bool wait, bool graph);
  /// The host's time for the pass. With a wait, from it to the next one: the ops after the
  /// wait, then those before it (the next layer's), paced kernel by kernel (host_paced_s).
  /// Without one, the host runs ahead but not faster than it issues: launches x issue_s.
  [[nodiscard]] double host_s(double issue_s) const;
};

/// A tensor-parallel block of a layer (the ops of one OpEstimate::block): its first forward
/// GEMM and its row-parallel one, the last forward GEMM. In the order the blocks first run.
struct TpBlockGemms {
  std::string block, first, row;
};
std::vector<TpBlockGemms> tp_block_gemms(const LayerEstimate& layer);

/// The op's calibration class (index into kOpClassNames; -1 for host syncs) and its name.
int op_class(const model::Op& op);
const char* op_class_name(const model::Op& op);

/// estimate_compute with every layer recomputing as training.recompute says (one entry per
/// kind; training.recompute_layers ignored): the per-key layer costs take the layers left out
/// of the recompute from a second call with recompute none.
ComputeBreakdown compute_every_layer(const Plan& plan, double expert_load);

/// `s` without recompute: how the layers training.recompute_layers leaves out run.
Strategy without_recompute(Strategy s);

}  // namespace paraplan::cost
