#include "cost/gemm_efficiency.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace paraplan::cost {
namespace {

// Index of the grid cell and the weight of its upper node for coordinate x on `axis`,
// clamped to the axis range.
std::pair<std::size_t, double> locate(const std::vector<double>& axis, double x) {
  if (axis.size() == 1 || x <= axis.front()) return {0, 0.0};
  if (x >= axis.back()) return {axis.size() - 2, 1.0};
  auto it = std::upper_bound(axis.begin(), axis.end(), x);
  std::size_t hi = static_cast<std::size_t>(it - axis.begin());
  std::size_t lo = hi - 1;
  return {lo, (x - axis[lo]) / (axis[hi] - axis[lo])};
}

}  // namespace

GemmEfficiency::GemmEfficiency(double constant) {
  for (auto& a : axes_) a = {0.0};
  grid_ = {std::clamp(constant, 1e-6, 1.0)};
}

GemmEfficiency::GemmEfficiency(const GemmTable& table) : GemmEfficiency(table.default_efficiency) {
  if (table.points.empty()) return;
  struct P {
    std::array<double, 3> x;
    double e;
  };
  std::vector<P> pts;
  for (const GemmPoint& p : table.points) {
    pts.push_back({{std::log2(p.m), std::log2(p.n), std::log2(p.k)}, p.efficiency});
  }
  for (int d = 0; d < 3; ++d) {
    std::vector<double>& axis = axes_[d];
    axis.clear();
    for (const P& p : pts) axis.push_back(p.x[d]);
    std::sort(axis.begin(), axis.end());
    axis.erase(std::unique(axis.begin(), axis.end()), axis.end());
  }
  double min_e = std::numeric_limits<double>::infinity();
  for (const P& p : pts) min_e = std::min(min_e, p.e);
  const std::size_t nm = axes_[0].size(), nn = axes_[1].size(), nk = axes_[2].size();
  grid_.assign(nm * nn * nk, min_e);
  for (std::size_t i = 0; i < nm; ++i) {
    for (std::size_t j = 0; j < nn; ++j) {
      for (std::size_t l = 0; l < nk; ++l) {
        double best = -1.0;
        for (const P& p : pts) {
          if (p.x[0] <= axes_[0][i] && p.x[1] <= axes_[1][j] && p.x[2] <= axes_[2][l]) {
            best = std::max(best, p.e);
          }
        }
        if (best > 0) grid_[(i * nn + j) * nk + l] = best;
      }
    }
  }
  for (const P& p : pts) {
    if (std::fabs(at(std::exp2(p.x[0]), std::exp2(p.x[1]), std::exp2(p.x[2])) - p.e) > 1e-12) {
      adjusted_ = true;
    }
  }
}

double GemmEfficiency::at(double m, double n, double k) const {
  const std::size_t nn = axes_[1].size(), nk = axes_[2].size();
  if (grid_.size() == 1) return grid_[0];
  const double x[3] = {std::log2(std::max(m, 1.0)), std::log2(std::max(n, 1.0)),
                       std::log2(std::max(k, 1.0))};
  std::pair<std::size_t, double> c[3];
  for (int d = 0; d < 3; ++d) c[d] = locate(axes_[d], x[d]);
  double value = 0.0;
  for (int corner = 0; corner < 8; ++corner) {
    double w = 1.0;
    std::size_t idx[3];
    for (int d = 0; d < 3; ++d) {
      bool upper = (corner >> d) & 1;
      double t = c[d].second;
      if (axes_[d].size() == 1) {
        if (upper) w = 0.0;
        idx[d] = 0;
        continue;
      }
      w *= upper ? t : 1.0 - t;
      idx[d] = c[d].first + (upper ? 1 : 0);
    }
    if (w == 0.0) continue;
    value += w * grid_[(idx[0] * nn + idx[1]) * nk + idx[2]];
  }
  return value;
}

}  // namespace paraplan::cost
