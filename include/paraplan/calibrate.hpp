#pragma once
/// Calibration: hardware numbers from benchmark output (nccl-tests, size/bandwidth tables,
/// GEMM sweeps, DeepEP tests), with the fit quality shown, instead of hand-copied numbers.
/// Parsers throw ConfigError with file:line:col for malformed logs.

#include <string>
#include <vector>

#include "paraplan/export.hpp"
#include "paraplan/estimate.hpp"
#include "paraplan/spec.hpp"
#include "paraplan/validate.hpp"

namespace paraplan {

/// One row of a collective benchmark.
struct CollectiveSample {
  double bytes = 0;       ///< nccl-tests size
  double time_s = 0;      ///< out-of-place time
  double busbw = 0;       ///< bytes/s, nccl-tests bus bandwidth
};

/// A parsed collective benchmark log.
struct CollectiveLog {
  std::string file;
  Collective op = Collective::AllReduce;
  int ranks = 0;          ///< 0 = not stated in the log
  std::vector<CollectiveSample> samples;
};

/// Parses nccl-tests output (`all_reduce_perf` ... tables: size, count, type, redop, root,
/// time, algbw, busbw, #wrong, in-place columns) or a two-column CSV (size, GB/s; the seeds'
/// send/recv table). `op` names the collective when the log does not (its "Collective test
/// starting" line or its file name usually do).
[[nodiscard]] PARAPLAN_EXPORT CollectiveLog parse_collective_log(const std::string& path,
                                                                 const std::string& op = "");

/// What a collective log says about a tier.
struct CollectiveCalibration {
  Collective op = Collective::AllReduce;
  double peak_busbw = 0;          ///< bytes/s, the largest busbw measured
  double alpha_s = 0;             ///< least-squares latency (t = alpha + bytes / beta)
  double beta_bytes_per_s = 0;
  double r2 = 0;
  double worst_relative = 0;      ///< worst |fit - t| / t over the rows
  std::vector<SizePoint> size_efficiency;  ///< busbw / peak at up to 12 log-spaced sizes
};

[[nodiscard]] PARAPLAN_EXPORT CollectiveCalibration calibrate_collective(const CollectiveLog& log);

/// GEMM sweep rows (m, n, k and time or TFLOPS) turned into an efficiency table.
struct GemmCalibration {
  GemmTable table;                ///< every row as a point, efficiency = achieved / peak
  int rows = 0;
  double median_error = 0;        ///< |surface(m, n, k) - measured| / measured, median over rows
  double worst_error = 0;
};

/// Reads a CSV with a header naming m, n, k and either time_us / time_ms / time_s or
/// tflops (other columns are ignored); `peak` is the device's FLOP/s for the dtype.
[[nodiscard]] PARAPLAN_EXPORT GemmCalibration calibrate_gemm(const std::string& path, double peak);

/// One measured GEMM of a sweep.
struct GemmRow {
  double m = 0, n = 0, k = 0;
  int groups = 1;                ///< grouped GEMM: groups in the one kernel
  std::string pass = "forward";  ///< forward | dgrad | wgrad (CSV `pass`, or `layout` TN / NN / NT)
  double efficiency = 0;         ///< achieved / peak
};

/// Reads a GEMM sweep CSV: a header naming m, n, k and one of time_us / time_ms / time_s,
/// tflops or efficiency (of `peak`), optionally pass (or layout) and groups; `#` lines are
/// comments. `peak` is the device's FLOP/s for the dtype.
[[nodiscard]] PARAPLAN_EXPORT std::vector<GemmRow> read_gemm_rows(const std::string& path, double peak);

/// The kernel-level GEMM model (device.gemm_kernel) fitted to a sweep: the tile candidates'
/// relative efficiencies and the per-tile k overhead by grid search, the peak fraction and
/// the dgrad / wgrad factors in closed form (least squares in log space) at each grid point;
/// the point with the smallest mean |relative error| wins.
struct GemmModelCalibration {
  GemmKernelSpec kernel;          ///< fitted; peak_fraction set for `dtype` only
  Dtype dtype = Dtype::Bf16;
  int units = 0;                  ///< compute units the sweep's GPU has
  int rows = 0;
  double mean_error = 0;          ///< mean |model - measured| / measured
  double median_error = 0, worst_error = 0, bias = 0;
  double fixed_s = 0;             ///< fitted fixed time per kernel (device.kernel_overhead covers it)
  bool fitted_dgrad = false, fitted_wgrad = false;  ///< the rows had input- / weight-gradient GEMMs
  bool fraction_only = false;     ///< tiles, k overhead and pass factors kept from `start`
};

/// Fits `start`'s tiles (their m x n; the first keeps efficiency 1) on `units` compute
/// units, with a fixed time per kernel. `roofline_bytes_per_s` > 0 bounds each row by its
/// HBM traffic (inputs of `input_bytes` per element, BF16 output) at that rate against
/// `peak`; `rate` = the dtype's peak over the BF16 peak (k_overhead is in BF16 elements).
/// `fraction_only`: `start`'s tiles, their speeds, k overhead and dgrad / wgrad factors are
/// kept (one kernel model for every precision, fitted on another sweep) and only this
/// dtype's peak fraction and the fixed time are fitted.
[[nodiscard]] PARAPLAN_EXPORT GemmModelCalibration calibrate_gemm_model(
    const std::vector<GemmRow>& rows, const GemmKernelSpec& start, int units, Dtype dtype, double peak,
    double roofline_bytes_per_s, double input_bytes, double rate, bool fraction_only = false);

/// A device's GEMM peak fraction from its Maximum Achievable Matmul FLOPS (mamf-finder.py,
/// stas00/ml-engineering): MAMF is the best any shape of the finder's grid reached, so the
/// kernel model at that fraction must reach the measured figure at its own best shape of the
/// same grid and exceed it nowhere: fraction = (MAMF / peak) / max over the grid of the
/// model's shape factor (tiles, waves, split-k, k overhead).
struct MamfCalibration {
  double mamf_fraction = 0;  ///< MAMF / peak
  double best_shape_factor = 0;  ///< the model's shape factor at the best shape
  double m = 0, n = 0, k = 0;    ///< the best shape under the fitted fraction
  double peak_fraction = 0;    ///< mamf_fraction / best_shape_factor
  int shapes = 0;              ///< grid points searched
};

/// Searches m, n, k in [lo, hi] by `step` (mamf-finder's `--m_range lo hi step`, all three
/// alike) on `units` compute units; `rate` = the dtype's peak over the BF16 peak. A shape is
/// also bounded by its HBM roofline: inputs of `input_bytes` per element and a BF16 output
/// at `roofline_bytes_per_s` against `peak` (0 = no roofline).
[[nodiscard]] PARAPLAN_EXPORT MamfCalibration calibrate_mamf(const GemmKernelSpec& kernel, int units, double rate,
                                                             double mamf_fraction, int lo, int hi, int step,
                                                             double peak = 0, double roofline_bytes_per_s = 0,
                                                             double input_bytes = 2);

/// The sustained GEMM rate against the short-burst one (calibration.sustained; for an FP8
/// sweep calibration.fp8_gemm, which FP8 GEMMs take instead): the same
/// GEMM sweep timed twice, each row after the GPU idled (`burst`: the clock at its maximum)
/// and rows back to back (`capped`: the board at its power limit, the clock lower), as
/// bench/gpu/gemm.py --burst and without. The factor is the capped sweep's total time over
/// the burst sweep's on the rows both hold (a training step's GEMM time is such a sum); the
/// per-row ratios' median and range are reported beside it.
struct SustainedCalibration {
  double factor = 0;                 ///< sum of capped times / sum of burst times
  double median = 0, low = 0, high = 0;  ///< per-row capped / burst ratios
  int rows = 0;                      ///< rows in both sweeps
  int unmatched = 0;                 ///< rows in only one of them
};

/// Matches rows on (m, n, k, groups, pass); throws ConfigError when none match.
[[nodiscard]] PARAPLAN_EXPORT SustainedCalibration calibrate_sustained(const std::vector<GemmRow>& burst,
                                                                       const std::vector<GemmRow>& capped,
                                                                       const std::string& burst_path,
                                                                       const std::string& capped_path);

/// DeepEP test output: the best dispatch / combine bandwidths it reports.
struct DeepEpCalibration {
  double dispatch_rdma = 0, dispatch_nvl = 0, combine_rdma = 0, combine_nvl = 0;  ///< bytes/s, 0 = absent
  /// HybridEP's tests/test_hybrid_ep.py output: its kernel-only rates, algorithm bandwidth
  /// (received bytes, a rank's own copies included, over the time).
  bool hybrid = false;
  int ranks = 0;  ///< HybridEP: the run's ranks (its "Kernel Benchmark (..., N ranks)" header)
  /// HybridEP runs at several rank counts: the NVLink and RDMA rates' fractions of the
  /// smallest count's, by ranks (`ranks_efficiency` rows); empty for one run.
  std::vector<SizePoint> nvl_ranks, rdma_ranks;
};

/// Parses DeepEP's test_intranode.py / test_internode.py output ("Best dispatch ...: X GB/s
/// (RDMA), Y GB/s (NVL)" lines, "... GB/s (NVL)" for intranode), or HybridEP's
/// tests/test_hybrid_ep.py output (its kernel benchmark: "dispatch kernel (BF16)(NVL): X
/// GB/s, ..." and "combine kernel(NVL): Y GB/s, ...", RDMA likewise, under "=== Kernel
/// Benchmark (BF16, N ranks) ===").
[[nodiscard]] PARAPLAN_EXPORT DeepEpCalibration parse_deepep_log(const std::string& path);

/// One log as parse_deepep_log reads it, or several HybridEP logs at different rank counts
/// as one figure: the smallest count's rates and the others' as `nvl_ranks` / `rdma_ranks`
/// (each pass's rate the harmonic mean of dispatch and combine, as the overlay writes it).
[[nodiscard]] PARAPLAN_EXPORT DeepEpCalibration parse_deepep_logs(const std::vector<std::string>& paths);

// ---- kernels: flash attention, memory-bound kernels, launch and host costs --------------

/// One timed flash-attention call (bench/gpu/attention.py): a kernel's forward or backward
/// over `batch` sequences of `seq` tokens, `heads` query heads of `head_dim`.
struct AttentionRow {
  std::string kernel;        ///< the hardware's `attention` entry it calibrates (fa2, fa3, cudnn, ...)
  bool backward = false;
  bool causal = true;
  double batch = 1, heads = 1, head_dim = 128, seq = 0;
  double v_head_dim = 128;   ///< the value head dim (= head_dim unless the CSV has v_head_dim)
  double window = 0;         ///< causal sliding window in keys (0: none)
  double time_s = 0;
  double flops = 0;          ///< 2 b h s^2 (d + dv) forward (half of it causal), x 2.5 backward;
                             ///< with a window w the causal pairs are s w - w^2 / 2
  double efficiency = 0;     ///< flops / (time x the peak of its data type)
  bool fp8 = false;          ///< an FP8 / MXFP8 row: efficiency of the FP8 peak
  int line = 0;
};

/// Reads bench/gpu/attention.py's CSV: a header naming kernel, pass (forward | backward),
/// causal (0/1 or true/false), batch, heads, head_dim, seq and time_us (or time_ms / time_s),
/// optionally v_head_dim and window; `#` lines are comments. Also NVIDIA cudnn-frontend's
/// benchmark/sdpa_benchmark_training CSVs as written (backend, profile_pass, attn_mask,
/// batch_size, num_q_heads, head_dim_qk, head_dim_vo, q_seqlen, kv_seqlen, time_ms,
/// sliding_window_size): their BF16, non-deterministic, successful rows of equal query and key
/// lengths; the rows left out are counted in `notes`. `dtype`: the data type whose rows are
/// read (bf16, or cudnn-frontend's fp8 / mxfp8: their kernel is named `BACKEND_DTYPE`, e.g.
/// cudnn_mxfp8, and marked fp8); a CSV without a data_type column is BF16. `peak`: the
/// device's FLOP/s at that data type (a row above it is an error).
[[nodiscard]] PARAPLAN_EXPORT std::vector<AttentionRow> read_attention_rows(const std::string& path, double peak,
                                                                            std::vector<std::string>* notes = nullptr,
                                                                            const std::string& dtype = "bf16");

/// The attention model's efficiency and per-tile overhead (device.attention[].forward /
/// backward and forward_overhead / backward_overhead) of one kernel and pass, fitted to its
/// rows on `units` compute units: the overhead by a search over 0..4096 in steps of 4, the
/// efficiency in closed form at each (least squares in relative error); the smallest sum wins.
/// Rows of two or more head dims also fit the head-dim term (forward_softmax /
/// backward_softmax, 0..1024 in steps of 4) against the reference head dim (128 if timed),
/// on the rows at or below it; rows of wider heads then fit the wide-head exponent
/// (0..2 in steps of 0.01) with the rest held.
struct AttentionFit {
  std::string kernel;
  bool backward = false;
  double efficiency = 0, overhead = 0;
  double block = 128;
  double head_dim = 128;     ///< the reference head dim `efficiency` holds at
  double softmax = 0;        ///< head-dim term (AttentionKernelSpec); fitted with 2+ head dims
  double wide_head = 0;      ///< exponent for heads wider than the reference; fitted if any
  int wide_rows = 0;         ///< rows of heads wider than the reference
  int head_dims = 1;         ///< distinct head dims in the rows
  bool fp8 = false;          ///< FP8 rows: efficiency of the FP8 peak (`precision: fp8`)
  int rows = 0;
  double mean_error = 0, worst_error = 0;  ///< |model - measured| / measured over the rows
};
[[nodiscard]] PARAPLAN_EXPORT std::vector<AttentionFit> calibrate_attention(const std::vector<AttentionRow>& rows,
                                                                            int units, double block = 128);

/// One timed memory-bound kernel (bench/gpu/memory_bound.py): the bytes it reads and writes.
struct MemoryKernelRow {
  std::string op;            ///< e.g. rms_norm, swiglu, cast_fp8, copy
  MemClass mem_class = MemClass::Elementwise;
  double bytes = 0, time_s = 0;
  int line = 0;
};

/// Reads bench/gpu/memory_bound.py's CSV: a header naming op, class (elementwise | norm |
/// cast | permute | softmax | reduction | copy), bytes and time_us (or time_ms / time_s).
[[nodiscard]] PARAPLAN_EXPORT std::vector<MemoryKernelRow> read_memory_rows(const std::string& path);

/// Per class, least squares t = fixed + bytes / (fraction x HBM bandwidth): the class's
/// device.memory_bound fraction; the median fixed time over the classes is the kernel's
/// fixed cost (device.kernel_overhead: launch and tail). A class whose line misses a row by
/// more than 25% or lands below 1% of HBM is left out with a warning.
struct MemoryClassFit {
  MemClass mem_class = MemClass::Elementwise;
  double fraction = 0, fixed_s = 0, r2 = 0, worst_error = 0;
  int rows = 0;
};
struct MemoryCalibration {
  std::vector<MemoryClassFit> classes;
  double kernel_overhead_s = 0;  ///< median of the classes' fixed times (>= 0)
  std::vector<std::string> warnings;  ///< e.g. a class faster than the datasheet bandwidth (clamped to 1)
};
[[nodiscard]] PARAPLAN_EXPORT MemoryCalibration calibrate_memory(const std::vector<MemoryKernelRow>& rows,
                                                                 double memory_bw_bytes_per_s);

/// bench/gpu/launch.py's CSV (`quantity,time_us`): host_issue (host time per launched op of a
/// training-like autograd loop), host_sync (a device-to-host read and the stream drained
/// behind it); repeated rows are summarised by their median.
struct LaunchCalibration {
  double host_issue_s = 0, host_sync_s = 0;  ///< 0 = not measured
  int rows = 0;
};
[[nodiscard]] PARAPLAN_EXPORT LaunchCalibration read_launch(const std::string& path);

/// The name a memory-bound class has in hardware files (device.memory_bound keys).
[[nodiscard]] PARAPLAN_EXPORT const char* mem_class_name(MemClass c);

// ---- profiles: the user's own measured step -------------------------------------------

/// One measured row of a profile: an op (CSV) or a kernel name's total (trace), its pass
/// (forward | backward | any) and time.
struct ProfileRow {
  std::string name;
  std::string phase = "any";
  double time_s = 0;
  int line = 0;   ///< where it is in the file (first occurrence for a trace)
  int count = 1;  ///< kernels summed into it (trace)
};

/// A measured profile: a per-op CSV (`op,phase,time_ms`, the seeds' table: one layer) or a
/// Chrome trace / PyTorch profiler JSON (GPU kernels of one or more layer passes).
struct Profile {
  std::string file;
  bool trace = false;
  std::vector<ProfileRow> rows;  ///< CSV rows; for a trace, one row per distinct kernel name
  int launches = 0;              ///< trace: GPU kernels (every one, mapped or not)
  double host_busy_s = 0;        ///< trace: the host threads' busy time (union of each thread's cpu_op spans)
  int host_threads = 0;          ///< trace: threads with cpu_op events
};

/// Reads a profile; the format follows the content (`{` or `[` first: a trace). Bad rows
/// (unknown phase, negative or non-numeric times, no kernels) throw ConfigError with
/// file:line:col.
[[nodiscard]] PARAPLAN_EXPORT Profile read_profile(const std::string& path);

/// How profile rows map to the op graph (a YAML file, or a built-in map name:
/// `br166-seed-profile`, `nvidia-kernels`). Each entry matches a row name (exactly, or a
/// regular expression with `regex:`), optionally only in one pass, and says what it is:
/// model ops (`ops`: op names, `*` a wildcard) and communication ops (`comm`) of the layer,
/// or, for trace kernels, an op class (`class`: gemm | grouped_gemm | attention | memory |
/// comm | ignore, or several joined by `|`). `passes: forward|backward` marks kernels that run once per layer pass
/// (attention), which counts the passes a trace holds.
struct ProfileMapEntry {
  std::string match;
  bool regex = false;
  std::string phase = "any";
  std::vector<std::string> ops, comm;
  std::string op_class;
  std::string passes;
  int line = 0;
};
struct ProfileMap {
  std::string file;
  std::vector<ProfileMapEntry> entries;
};
[[nodiscard]] PARAPLAN_EXPORT ProfileMap load_profile_map(const std::string& ref);

/// One compared row.
struct ProfileFitRow {
  std::string name, phase;
  double measured_s = 0, before_s = 0, after_s = 0;
  std::string what;  ///< the model ops or class it was compared with
};

/// One op class (or tier and collective) over the whole profile: each row's measured time
/// is shared out over the classes in it in proportion to the fitted model's times there.
struct ProfileFitClass {
  std::string name;  ///< "gemm", "attention", ..., "all_gather on node"
  double measured_s = 0;  ///< the rows' measured time shared out to this class
  double before_s = 0;    ///< the model's time for it, as derived
  double after_s = 0;     ///< the same with the fitted multipliers
};

/// A profile fitted to the model of a strategy.
struct ProfileFit {
  CalibrationSpec calibration;                         ///< compute time multipliers
  struct Comm {
    std::string tier, collective;
    double factor = 1;
  };
  std::vector<Comm> comm;                              ///< communication multipliers by tier and collective
  std::vector<std::string> fitted;                     ///< "gemm forward: 0.81 (3 rows)" ...
  std::vector<ProfileFitRow> rows;
  std::vector<ProfileFitClass> classes;                ///< by op class, largest measured first
  std::vector<ProfileRow> unmatched_rows;              ///< a trace's kernels no map entry took (a CSV's are errors)
  std::vector<std::pair<std::string, double>> unmatched_ops;  ///< model ops (pass) no row took, seconds
  double forward_passes = 1, backward_passes = 1;      ///< layer passes the profile holds
  double measured_forward_s = 0, measured_backward_s = 0;  ///< CSV: the layer's rows by pass
  double measured_total_s = 0;                         ///< trace: the fitted kernels' total
  double rows_before_s = 0, rows_after_s = 0;          ///< trace: the model for those kernels
  std::vector<std::pair<std::string, double>> ignored_s;  ///< trace: kernels the map ignores (entry, seconds)
  double before_forward_s = 0, before_backward_s = 0, after_forward_s = 0, after_backward_s = 0;
  double mean_error_before = 0, mean_error_after = 0;  ///< mean |model - measured| / measured over rows
  std::vector<int> at_bound;                           ///< multipliers held at 1/4 or 4 (internal index)
  /// Share of the compute units the layer's overlapped EP kernels held (DeepEP's SMs): the
  /// model's compute ops were compared at 1 / (1 - share) of their time, as they ran; 0 = none.
  double held_share = 0;
};

/// Fits `profile` to the model of `plan`'s `layer` kind (moe | dense) by least squares on
/// relative errors: one time multiplier per op class and pass, and per tier, each kept near
/// 1 where the rows do not determine it. `passes` > 0 overrides the layer passes counted in
/// a trace (forward, backward).
[[nodiscard]] PARAPLAN_EXPORT ProfileFit calibrate_profile(const Profile& profile, const ProfileMap& map,
                                                           const Plan& plan, const std::string& layer = "moe",
                                                           double forward_passes = 0, double backward_passes = 0);

/// What a trace says about kernel launches against the op graph: the kernels the framework
/// launched for the layer passes it holds over the kernels the graph counts for them
/// (device.launches_per_kernel), and the host's busy time per launch (device.host_issue).
struct LaunchEstimate {
  int launches = 0;
  double graph_kernels = 0;         ///< the layer's graph kernels x the passes (forward, backward)
  double launches_per_kernel = 0;   ///< 0 = no trace
  double host_busy_s = 0;
  int host_threads = 0;
  double host_issue_s = 0;          ///< 0 = the trace has no cpu_op events
};

/// Launches and host time of a trace against `plan`'s `layer` (moe | dense) run
/// `forward_passes` and `backward_passes` times (ProfileFit's counts). A CSV gives nothing.
[[nodiscard]] PARAPLAN_EXPORT LaunchEstimate estimate_launches(const Profile& profile, const Plan& plan,
                                                               const std::string& layer, double forward_passes,
                                                               double backward_passes);

/// The fit in words: each row measured vs model before and after, the layer, the
/// multipliers, the rows and model ops left out.
[[nodiscard]] PARAPLAN_EXPORT std::string profile_fit_text(const Profile& profile, const ProfileMap& map,
                                                           const ProfileFit& fit, const Plan& plan,
                                                           const std::string& layer, bool passes_given);

/// The overlay (`extends: base`) carrying a profile fit's `calibration:` section, with the
/// command, the profile and the fit quality in comments.
/// `launches`, where given, are written too (device.launches_per_kernel, device.host_issue):
/// the fit was made with them.
[[nodiscard]] PARAPLAN_EXPORT std::string profile_overlay_yaml(const ProfileFit& fit, const std::string& base,
                                                               const std::string& name, const std::string& command,
                                                               const std::string& date,
                                                               const LaunchEstimate* launches = nullptr);

/// The launch estimate in words, against the hardware's figures.
[[nodiscard]] PARAPLAN_EXPORT std::string launch_estimate_text(const LaunchEstimate& l, const Plan& plan,
                                                               double forward_passes, double backward_passes,
                                                               bool adopted);

/// `paraplan calibrate runs`: global knobs (time multipliers, at most one per mechanism:
/// gemm, fp8_gemm, attention, memory, communication,
/// host) fitted to measured runs by least squares
/// on log(predicted / measured), each within [1/4, 4]; every run is also predicted by a fit
/// to the others (leave-one-out). At most one knob per three runs; all runs on one hardware.
struct RunsFit {
  std::string hardware;             ///< the hardware every run names
  std::vector<std::string> knobs;
  std::vector<double> values;       ///< fitted multipliers, in `knobs` order
  std::vector<int> moved;           ///< per knob, the runs whose prediction it moves
  struct Row {
    std::string name, metric;
    double measured = 0, before = 0, after = 0, loo = 0;  ///< model, fitted, left-out fit
  };
  std::vector<Row> rows;
  double mean_before_pct = 0, mean_after_pct = 0, mean_loo_pct = 0;  ///< mean |error|
};
/// Throws ConfigError (file `--knobs` or the case file) for an unknown or repeated knob, more
/// knobs than runs / 3, a knob that moves none of the runs, or runs on different hardware.
[[nodiscard]] PARAPLAN_EXPORT RunsFit calibrate_runs(const std::vector<ValidationCase>& cases,
                                                     const std::vector<std::string>& knobs);
/// Knobs, then per run measured / model / fitted / left-out with errors, then the means.
[[nodiscard]] PARAPLAN_EXPORT std::string runs_fit_text(const RunsFit& fit);
/// The overlay (`extends: base`): the knobs folded into `calibration:` (and `device:` host
/// times for `host`), the runs it was fitted to and the errors in comments.
[[nodiscard]] PARAPLAN_EXPORT std::string runs_overlay_yaml(const RunsFit& fit, const HardwareSpec& base_hw,
                                                            const std::string& base, const std::string& name,
                                                            const std::string& command, const std::string& date);

/// What `paraplan calibrate ... --into FILE` writes: a hardware file that extends `base` and
/// overrides only the calibrated fields (tiers merge by name), each with its source and date
/// in a comment. The base file and its comments stay untouched.
struct HardwareOverlay {
  std::string base;          ///< the hardware it extends (name or path)
  std::string name;          ///< the new hardware's name
  std::string date;          ///< ISO date of the calibration
  std::string tier;          ///< tier the collective figures belong to
  std::vector<std::pair<CollectiveCalibration, std::string>> collectives;  ///< with their source file
  bool size_curve_from_first = true;  ///< write the first collective's curve as the tier's size_efficiency
  std::string gemm_table;    ///< "bf16", "fp8", "grouped_bf16", "grouped_fp8"; empty = none
  GemmCalibration gemm;
  std::string gemm_source;
  bool gemm_model = false;   ///< write device.gemm_kernel (and compute_units) from `kernel_fit`
  GemmModelCalibration kernel_fit;
  std::string gemm_command;  ///< the command line that produced the fit (recorded beside it)
  bool write_units = false;  ///< also write device.compute_units (the base has none)
  DeepEpCalibration deepep;  ///< cluster tier's `deepep` = RDMA, node tier's = NVLink (DeepEP: the lower of dispatch, combine; HybridEP: their harmonic mean)
  std::string deepep_source;
  std::string node_tier, cluster_tier;  ///< tier names for the DeepEP figures
  /// device.attention entries (merged by name with the base's), with their source
  std::vector<AttentionFit> attention;
  std::string attention_source;
  /// device.memory_bound fractions and device.kernel_overhead, with their source
  bool memory = false;
  MemoryCalibration memory_fit;
  std::string memory_source;
  /// calibration.sustained (fp8_gemm from an FP8 sweep: FP8 GEMMs take no `sustained`),
  /// measured, with the command that measured it
  bool sustained = false;
  bool sustained_fp8 = false;
  SustainedCalibration sustained_fit;
  std::string sustained_command;
  /// device.host_issue / host_sync, with their source
  bool launch = false;
  LaunchCalibration launch_fit;
  std::string launch_source;
};

/// The YAML text of an overlay.
[[nodiscard]] PARAPLAN_EXPORT std::string hardware_overlay_yaml(const HardwareOverlay& o);

}  // namespace paraplan
