#pragma once
// Least-squares fits of measured transfer tables (Eigen).

#include <vector>

namespace paraplan::cost {

/// A measured transfer: message size and the time it took.
struct TimedTransfer {
  double bytes = 0;
  double time_s = 0;
};

/// t(bytes) = alpha + bytes / beta, fitted by least squares on relative residuals
/// (each row weighted by 1 / t, so a 1 MiB and a 1 GiB row count alike).
struct AlphaBeta {
  double alpha_s = 0;         ///< latency
  double beta_bytes_per_s = 0;  ///< asymptotic bandwidth
  double r2 = 0;              ///< coefficient of determination of the times
  double worst_relative = 0;  ///< largest |t_fit - t| / t over the rows
};

/// Fits alpha and beta; needs at least two rows with distinct sizes. A negative fitted
/// alpha (data faster than linear at small sizes) is clamped to 0 and beta refitted.
AlphaBeta fit_alpha_beta(const std::vector<TimedTransfer>& rows);

}  // namespace paraplan::cost
