#include "cost/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace paraplan::cost {

namespace {

// The probabilities of a group's tile rows r = ceil(x / tile) for x ~ Normal(mean, sd), over
// the r within six standard deviations (the tails folded into the end rows; r >= 1).
struct RowTiles {
  std::vector<std::pair<double, double>> p;  // (r, probability)
  double mean = 0;                           // E[r]
};

RowTiles row_tiles(double mean, double sd, double tile) {
  RowTiles out;
  const double lo = std::max(1.0, std::floor((mean - 6 * sd) / tile));
  const double hi = std::max(lo, std::ceil((mean + 6 * sd) / tile));
  if (hi - lo > 256) {
    // A spread of hundreds of tile rows: the ceil averages to half a tile; no distribution.
    out.mean = mean / tile + 0.5;
    return out;
  }
  auto below = [&](double x) { return 0.5 * std::erfc(-(x - mean) / (sd * std::sqrt(2.0))); };
  for (double r = lo; r <= hi; r += 1) {
    const double upper = r == hi ? 1.0 : below(r * tile);
    const double lower = r == lo ? 0.0 : below((r - 1) * tile);
    const double p = std::max(0.0, upper - lower);
    out.p.emplace_back(r, p);
    out.mean += r * p;
  }
  return out;
}

}  // namespace

double gemm_model_efficiency(const GemmKernelSpec& g, double peak_fraction, int units, double m,
                             double n, double k, int groups, GemmPass pass, double rate, bool low,
                             double m_sd) {
  if (m <= 0 || n <= 0 || k <= 0) return peak_fraction;
  const double wgrad = low && g.wgrad_fp8 > 0 ? g.wgrad_fp8 : g.wgrad;
  const double pass_factor = pass == GemmPass::Dgrad ? g.dgrad : pass == GemmPass::Wgrad ? wgrad : 1.0;
  const double work = static_cast<double>(groups) * m * n * k;  // useful MACs
  const bool spread = m_sd > 0;
  double best = 0;
  for (const GemmTile& t : g.tiles) {
    const RowTiles rows = spread ? row_tiles(m, m_sd, t.m) : RowTiles{};
    const double col_tiles = std::ceil(n / t.n);
    const double tiles = static_cast<double>(groups) * (spread ? rows.mean : std::ceil(m / t.m)) * col_tiles;
    const int max_split = units > 0 ? std::max(1, g.max_split_k) : 1;
    for (int s = 1; s <= max_split; ++s) {
      // Split k only while the grid leaves compute units idle (cuBLAS split-K, stream-K).
      if (s > 1 && tiles * (s - 1) >= units) break;
      double waves = 0;  // in tile slots
      if (units <= 0) {
        waves = tiles * s;
      } else if (!spread || groups > 1) {
        waves = std::ceil(tiles * s / units) * units;  // one kernel: the groups share waves
      } else if (rows.p.empty()) {
        waves = (tiles * s / units + 0.5) * units;  // a wide spread: the last wave half full on average
      } else {
        // One kernel per group: each pays the waves of its own rows.
        for (const auto& [r, p] : rows.p) waves += p * std::ceil(r * col_tiles * s / units) * units;
      }
      const double done = waves * t.m * t.n * (k / s + g.k_overhead * rate);  // MAC slots spent
      best = std::max(best, t.efficiency * work / done);
    }
  }
  return std::clamp(peak_fraction * pass_factor * best, 1e-6, 1.0);
}

double gemm_time(const KernelResources& r, double flops, double bytes, double eff) {
  const double compute = flops / (r.peak_flop_per_s * eff);
  const double memory = r.mem_bw > 0 ? bytes / r.mem_bw : 0.0;
  return std::max(compute, memory);
}

double attention_efficiency(const AttentionKernelSpec& k, bool backward, int units, double groups,
                            double queries, double keys, bool causal, double window, double head_dim) {
  double e = backward ? k.backward : k.forward;
  // Per score: matmul work in proportion to the head dim, non-matmul work (`softmax` head
  // dims' worth) not: a head of d runs d / (d + softmax) of the matmul rate, against the
  // reference head dim the fraction was measured at. Wider heads do not gain by it: the
  // kernels' tiles shrink as the head grows, by (reference / d)^wide_head (H100, cuDNN 9.19:
  // heads of 160, MLA's 192 / 128, and 256 run their causal backward at 0.88 and 0.72 of
  // 128's rate; hardware/calibration/h100-sxm-README.md).
  const double softmax = backward ? k.backward_softmax : k.forward_softmax;
  if (softmax > 0 && head_dim > 0 && head_dim < k.head_dim) {
    e *= (head_dim / (head_dim + softmax)) / (k.head_dim / (k.head_dim + softmax));
  }
  const double wide = backward ? k.backward_wide_head : k.forward_wide_head;
  if (wide > 0 && head_dim > k.head_dim) e *= std::pow(k.head_dim / head_dim, wide);
  const double overhead = backward ? k.backward_overhead : k.forward_overhead;
  if (queries <= 0 || keys <= 0) return e;
  // Tiles run along the queries in the forward pass and along the keys in the backward one;
  // each meets, on average, half of the other side under a causal mask. A causal sliding
  // window of w keys leaves a tile min(position, w) of them: on average cols (x - x^2 / 2)
  // for x = w / cols, and at most w.
  const double rows = backward ? keys : queries;
  const double cols = backward ? queries : keys;
  const double block = std::max(1.0, k.block);
  const double tiles = std::max(1.0, groups) * std::ceil(rows / block);
  double mean_cols = causal ? cols / 2 : cols;
  double longest = cols;
  double masked = 0;  // columns a tile visits beyond its pairs, past the causal diagonal's
  if (causal && window > 0 && window < cols) {
    const double x = window / cols;
    mean_cols = cols * (x - x * x / 2);
    // The kernel visits whole blocks: a tile past the first w keys reads the ceil((w - 1) /
    // block) + 1 blocks its window touches, block (ceil(...) + 1) - w more columns than it
    // keeps. A causal tile wastes half a block on its diagonal, which the fitted overhead
    // already holds, so a windowed one pays the rest (64 columns at w = 128 or 1024, block
    // 128) on the share of tiles the window has filled.
    const double visited = block * (std::ceil((window - 1) / block) + 1);
    masked = std::max(0.0, visited - window - block / 2) * std::max(0.0, 1 - x);
    longest = std::min(cols, visited);
  }
  const double work = tiles * mean_cols;                  // ideal, in columns x tiles
  double span = tiles * (mean_cols + masked + overhead);  // total work with the per-tile cost
  if (units > 0) span = std::max(span / units, longest + overhead) * units;  // largest-first bound
  return std::clamp(e * work / span, 1e-6, 1.0);
}

void GemmCorrection::add(double m, double n, double k, double ratio) {
  pts_.push_back({{std::log2(std::max(m, 1.0)), std::log2(std::max(n, 1.0)), std::log2(std::max(k, 1.0))}, ratio});
}

double GemmCorrection::at(double m, double n, double k) const {
  if (pts_.empty()) return 1.0;
  const double x[3] = {std::log2(std::max(m, 1.0)), std::log2(std::max(n, 1.0)), std::log2(std::max(k, 1.0))};
  double num = 0, den = 0;
  for (const P& p : pts_) {
    double d2 = 0;
    for (int i = 0; i < 3; ++i) d2 += (x[i] - p.x[i]) * (x[i] - p.x[i]);
    if (d2 < 1e-18) return p.ratio;
    const double w = 1.0 / (d2 * d2);  // inverse distance, power 4 in d (2 in d^2)
    num += w * p.ratio;
    den += w;
  }
  return num / den;
}

}  // namespace paraplan::cost
