// The GEMM efficiency surface: exact at measured points, monotone, bounded, clamped.

#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "cost/gemm_efficiency.hpp"
#include "paraplan/config.hpp"

using paraplan::GemmPoint;
using paraplan::GemmTable;
using paraplan::cost::GemmEfficiency;

namespace {

GemmTable table(std::initializer_list<GemmPoint> pts, double def = 0.6) {
  GemmTable t;
  t.default_efficiency = def;
  t.points = pts;
  return t;
}

}  // namespace

TEST_SUITE("cost.gemm_efficiency") {
  TEST_CASE("no points: the table's default everywhere") {
    GemmEfficiency e(table({}, 0.45));
    CHECK(e.at(1, 1, 1) == 0.45);
    CHECK(e.at(1e6, 8192, 8192) == 0.45);
  }

  TEST_CASE("BR166 TCore points: exact at the samples, log-linear between, clamped outside") {
    // SEED_DIGEST.md sec. 1.6: n = 4096, k = 7168; m = 1024 / 2048 / 4096 -> 34% / 42% / 53%
    GemmEfficiency e(table({{1024, 4096, 7168, 0.34}, {2048, 4096, 7168, 0.42},
                            {4096, 4096, 7168, 0.53}}));
    CHECK(e.at(1024, 4096, 7168) == doctest::Approx(0.34));
    CHECK(e.at(2048, 4096, 7168) == doctest::Approx(0.42));
    CHECK(e.at(4096, 4096, 7168) == doctest::Approx(0.53));
    // m = 2^10.5 is halfway in log2 between 1024 and 2048: (0.34 + 0.42) / 2
    CHECK(e.at(std::exp2(10.5), 4096, 7168) == doctest::Approx(0.38));
    // m = 3072: log2(3072/2048) = 0.585 of the way from 0.42 to 0.53
    CHECK(e.at(3072, 4096, 7168) == doctest::Approx(0.42 + std::log2(1.5) * 0.11));
    // outside the sampled range the nearest edge holds (clamped), in every dimension
    CHECK(e.at(64, 4096, 7168) == doctest::Approx(0.34));
    CHECK(e.at(65536, 4096, 7168) == doctest::Approx(0.53));
    CHECK(e.at(2048, 1024, 2048) == doctest::Approx(0.42));
    CHECK_FALSE(e.adjusted());
  }

  TEST_CASE("scattered points: monotone in every dimension, within (0, 1], exact where consistent") {
    // SEED_DIGEST.md sec. 1.6: BR166 for-loop points at n = 1024/2048 and TCore points at n = 4096
    paraplan::GemmTable t;
    t.points = {{1024, 1024, 7168, 0.100}, {1024, 2048, 7168, 0.174}, {2048, 1024, 7168, 0.176},
                {2048, 2048, 7168, 0.211}, {1024, 4096, 7168, 0.34},  {2048, 4096, 7168, 0.42},
                {4096, 4096, 7168, 0.53}};
    const GemmEfficiency e(t);
    CHECK(e.at(2048, 2048, 7168) == doctest::Approx(0.211));
    CHECK(e.at(1024, 1024, 7168) == doctest::Approx(0.100));
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> lg(5.0, 16.0);
    for (int i = 0; i < 5000; ++i) {
      double m = std::exp2(lg(rng)), n = std::exp2(lg(rng)), k = std::exp2(lg(rng));
      double v = e.at(m, n, k);
      REQUIRE(v > 0.0);
      REQUIRE(v <= 1.0);
      double f = std::exp2(lg(rng) / 8);  // growth factor >= 1
      CHECK(e.at(m * f, n, k) >= v - 1e-12);
      CHECK(e.at(m, n * f, k) >= v - 1e-12);
      CHECK(e.at(m, n, k * f) >= v - 1e-12);
    }
  }

  TEST_CASE("inconsistent data: a smaller shape measured faster lifts the larger one (monotone envelope)") {
    GemmEfficiency e(table({{1024, 1024, 1024, 0.7}, {2048, 1024, 1024, 0.5}}));
    CHECK(e.adjusted());
    CHECK(e.at(1024, 1024, 1024) == doctest::Approx(0.7));
    CHECK(e.at(2048, 1024, 1024) == doctest::Approx(0.7));
  }

  TEST_CASE("every table of every preset is exact at its points or says it is not") {
    for (const char* hw : {"br166-ubbv2", "h800-ib", "h100-sxm-ib", "a100-sxm-ib"}) {
      const auto spec = paraplan::load_hardware(hw);
      for (const auto& t : spec.device.gemm) {
        if (!t) continue;
        GemmEfficiency e(*t);
        for (const GemmPoint& p : t->points) {
          double v = e.at(p.m, p.n, p.k);
          CHECK(v >= p.efficiency - 1e-12);  // never below a measurement
          if (!e.adjusted()) CHECK(v == doctest::Approx(p.efficiency));
        }
      }
    }
  }
}
