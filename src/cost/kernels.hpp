#pragma once
// Kernel-level times: GEMMs by tile and wave, flash attention by pass, sequence and mask,
// memory-bound kernels by class. Formulas and sources: docs/cost-model.md, "Kernels".
//
//   GEMM (m, n, k) on U compute units, tile tm x tn (relative speed e_t), split s along k:
//     tiles = ceil(m / tm) x ceil(n / tn) [x groups],  waves = ceil(tiles x s / U)
//     time  = waves x (k / s + k0) x 2 tm tn / (peak / U x peak_fraction x e_t x pass)
//   i.e. efficiency = peak_fraction x e_t x pass x (m n k) / (waves x U x tm tn x (k / s + k0)),
//   the best over the candidate tiles and splits; bounded below by the shape's roofline.
//
//   Flash attention, one pass: tiles = batch x heads x ceil(queries / block), each
//   processing its keys (causal: on average half) plus a fixed `overhead` in keys:
//     time = max(sum_tiles (keys_t + overhead) / U, max_t (keys_t + overhead)) x block x d
//            x 4 / (peak / U x efficiency)      (largest-first scheduling bound)

#include "paraplan/spec.hpp"

namespace paraplan::cost {

/// The compute resources one kernel runs on (one die when the op is per-die or split over
/// dies in duplicate mode).
struct KernelResources {
  double peak_flop_per_s = 0;  ///< in the GEMM's dtype
  double mem_bw = 0;           ///< bytes/s through HBM at the roofline fraction
  int units = 0;               ///< compute units (SMs); 0 = unknown (no quantization)
};

/// Which pass a GEMM belongs to (their kernels differ: dgrad = dY W^T, wgrad = X^T dY with
/// an FP32 accumulate into the main gradient).
enum class GemmPass { Forward, Dgrad, Wgrad };

/// The shape-dependent efficiency of a GEMM (or of every group of a grouped GEMM) under the
/// kernel model, before the roofline: in (0, 1]. `groups` > 1 = one persistent kernel over
/// all groups. `rate` = the dtype's peak over the BF16 peak: the per-tile fixed cost is a
/// time, so a dtype that runs through k `rate` times faster pays `rate` x k_overhead
/// elements of k for it (FP8 on Hopper: 2). `low`: an FP8 GEMM (its own wgrad factor where
/// the hardware gives one). `m_sd` > 0: each group's m varies around `m` with this
/// standard deviation (a normal approximation of the routed rows per expert), and the tiles
/// along m are counted as expected over that spread instead of at the mean: a loop of one
/// kernel per group pays each group's own tile rows and waves.
double gemm_model_efficiency(const GemmKernelSpec& g, double peak_fraction, int units, double m,
                             double n, double k, int groups, GemmPass pass, double rate = 1.0,
                             bool low = false, double m_sd = 0);

/// Time of a GEMM at efficiency `eff` (of the peak), bounded below by its HBM traffic.
double gemm_time(const KernelResources& r, double flops, double bytes, double eff);

/// Efficiency of a flash-attention pass: `groups` = batch x heads, `queries` and `keys` per
/// sequence, `causal` mask, `window` keys per query under a causal sliding window (0 = none);
/// per-pass fraction and overhead from `k`; `head_dim` the mean of the query-key and value
/// head dims (0 = the kernel's reference head dim).
double attention_efficiency(const AttentionKernelSpec& k, bool backward, int units, double groups,
                            double queries, double keys, bool causal, double window = 0, double head_dim = 0);

/// Inverse-distance correction of a model by measured points, in log2(m, n, k) space: exact
/// at each point, a weighted mean of the points' measured / model ratios elsewhere.
class GemmCorrection {
 public:
  GemmCorrection() = default;
  /// Points as (m, n, k, measured / model).
  void add(double m, double n, double k, double ratio);
  [[nodiscard]] bool empty() const { return pts_.empty(); }
  /// The factor at (m, n, k); 1 without points.
  [[nodiscard]] double at(double m, double n, double k) const;

 private:
  struct P {
    double x[3];
    double ratio;
  };
  std::vector<P> pts_;
};

}  // namespace paraplan::cost
