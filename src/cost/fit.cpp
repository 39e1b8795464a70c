#include "cost/fit.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>

namespace paraplan::cost {
namespace {

void quality(const std::vector<TimedTransfer>& rows, AlphaBeta& f) {
  double mean = 0;
  for (const auto& r : rows) mean += r.time_s;
  mean /= static_cast<double>(rows.size());
  double ss_res = 0, ss_tot = 0;
  f.worst_relative = 0;
  for (const auto& r : rows) {
    double fit = f.alpha_s + r.bytes / f.beta_bytes_per_s;
    ss_res += (fit - r.time_s) * (fit - r.time_s);
    ss_tot += (r.time_s - mean) * (r.time_s - mean);
    f.worst_relative = std::max(f.worst_relative, std::fabs(fit - r.time_s) / r.time_s);
  }
  f.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 1.0;
}

}  // namespace

AlphaBeta fit_alpha_beta(const std::vector<TimedTransfer>& rows) {
  AlphaBeta f;
  if (rows.size() < 2) return f;
  const auto n = static_cast<Eigen::Index>(rows.size());
  // Weighted rows: [1/t, s/t] . [alpha, 1/beta] = 1
  Eigen::MatrixXd A(n, 2);
  Eigen::VectorXd b = Eigen::VectorXd::Ones(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto& r = rows[static_cast<std::size_t>(i)];
    A(i, 0) = 1.0 / r.time_s;
    A(i, 1) = r.bytes / r.time_s;
  }
  Eigen::Vector2d x = A.colPivHouseholderQr().solve(b);
  if (x(0) < 0 || x(1) <= 0) {
    // No latency: fit the slope alone, gamma = sum(s/t) / sum((s/t)^2) in the same weights.
    double num = A.col(1).sum(), den = A.col(1).squaredNorm();
    x << 0.0, num / den;
  }
  f.alpha_s = x(0);
  f.beta_bytes_per_s = 1.0 / x(1);
  quality(rows, f);
  return f;
}

}  // namespace paraplan::cost
