#pragma once
// GEMM efficiency (achieved / peak) as a function of (m, n, k), built from a hardware
// table's measured points.
//
// Construction (docs/cost-model.md, "GEMM efficiency"):
//  1. Axes: the distinct log2(m), log2(n), log2(k) of the points form a rectilinear grid.
//  2. Monotone fill: a grid node takes the largest efficiency among the measured points
//     that it dominates (every coordinate >=); a node dominating none takes the smallest
//     measured efficiency. Larger GEMMs are never slower per FLOP than smaller ones. When
//     the measurements themselves obey that order, every measured point keeps its value.
//  3. Lookup: trilinear interpolation in log2 space on the grid, coordinates clamped to
//     the grid's range. Multilinear interpolation of data that is monotone along each axis
//     is monotone along each axis, stays within the data's range (so in (0, 1]) and is
//     exact at the nodes.

#include <array>
#include <vector>

#include "paraplan/spec.hpp"

namespace paraplan::cost {

class GemmEfficiency {
 public:
  /// A constant surface.
  explicit GemmEfficiency(double constant = 0.6);
  /// The surface of a hardware table (constant `default_efficiency` when it has no points).
  explicit GemmEfficiency(const GemmTable& table);

  /// Efficiency at (m, n, k), in (0, 1]. Pure and thread-safe.
  [[nodiscard]] double at(double m, double n, double k) const;

  /// True when some measured point could not keep its value (a smaller shape measured
  /// faster than a larger one); the surface then uses the monotone envelope there.
  [[nodiscard]] bool adjusted() const { return adjusted_; }

 private:
  std::array<std::vector<double>, 3> axes_;  // log2 coordinates, increasing
  std::vector<double> grid_;                 // values, index (i * nn + j) * nk + l
  bool adjusted_ = false;
};

}  // namespace paraplan::cost
