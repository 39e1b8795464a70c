// Calibration: real-format logs parse, fits recover known values, the written overlay loads
// and carries the measurements, and broken logs are reported at their line.

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "paraplan/calibrate.hpp"
#include "paraplan/config.hpp"
#include "paraplan/errors.hpp"

namespace fs = std::filesystem;
using namespace paraplan;

namespace {

std::string data(const char* name) { return (fs::path(PARAPLAN_TEST_DATA) / "calibrate" / name).string(); }

std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / name;
  std::ofstream(p) << text;
  return p.string();
}

}  // namespace

TEST_SUITE("calibrate") {
  TEST_CASE("an nccl-tests all_reduce_perf log parses: op, ranks, every size, busbw") {
    CollectiveLog log = parse_collective_log(data("all_reduce_perf_h100.log"));
    CHECK(log.op == Collective::AllReduce);  // from "Collective test starting: all_reduce_perf"
    CHECK(log.ranks == 8);                   // eight "Rank ... Group" lines
    REQUIRE(log.samples.size() == 32);       // 8 B .. 16 GiB, factor 2
    CHECK(log.samples.front().bytes == 8);
    CHECK(log.samples.back().bytes == 17179869184.0);
    CollectiveCalibration c = calibrate_collective(log);
    CHECK(c.peak_busbw == doctest::Approx(480.16e9));  // the sweep's peak (8 GiB row)
    CHECK(c.r2 > 0.95);
    // the size curve: busbw / peak, 1 at the peak
    REQUIRE_FALSE(c.size_efficiency.empty());
    CHECK(c.size_efficiency.back().efficiency == doctest::Approx(479.9 / 480.16).epsilon(1e-3));
  }

  TEST_CASE("a fit on synthetic nccl-tests rows recovers alpha and beta") {
    // t = 25 us + bytes / 100 GB/s at 1 KiB .. 1 GiB
    std::string log =
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
    for (double s = 1024; s <= 1073741824.0; s *= 4) {
      const double t_us = 25 + s / 100e9 * 1e6;
      char line[256];
      std::snprintf(line, sizeof line, "%12.0f %13.0f %9s %7s %7d %12.3f %7.2f %7.2f %6d %12.3f %7.2f %7.2f %6d\n", s,
                    s / 4, "float", "none", -1, t_us, s / t_us / 1e3, s / t_us / 1e3, 0, t_us, 0.0, 0.0, 0);
      log += line;
    }
    CollectiveCalibration c = calibrate_collective(parse_collective_log(write_temp("all_gather_perf.log", log)));
    CHECK(c.op == Collective::AllGather);  // from the file name
    CHECK(c.alpha_s == doctest::Approx(25e-6).epsilon(1e-3));
    CHECK(c.beta_bytes_per_s == doctest::Approx(100e9).epsilon(1e-3));
  }

  TEST_CASE("the seeds' send/recv table (size, GB/s) calibrates the BR166 cluster tier") {
    CollectiveLog log = parse_collective_log(data("br166_sendrecv.csv"), "send_recv");
    REQUIRE(log.samples.size() == 6);
    CollectiveCalibration c = calibrate_collective(log);
    CHECK(c.peak_busbw == doctest::Approx(12.19e9));
    REQUIRE(c.size_efficiency.size() == 6);
    // the preset's curve (SEED_DIGEST.md sec. 1.4, column A over 12.19)
    CHECK(c.size_efficiency[0].efficiency == doctest::Approx(0.18 / 12.19));
    CHECK(c.size_efficiency[3].efficiency == doctest::Approx(7.55 / 12.19));
    // the overlay loads and carries the measurement
    HardwareOverlay o;
    o.base = "br166-ubbv2";
    o.name = "br166-cal";
    o.date = "2026-11-22";
    o.tier = "cluster";
    o.collectives.push_back({c, "br166_sendrecv.csv"});
    HardwareSpec hw = parse_hardware(hardware_overlay_yaml(o), "br166-cal.yaml");
    CHECK(hw.name == "br166-cal");
    CHECK(hw.tiers.back().collective(Collective::SendRecv)->bus_bw_bytes_per_s == doctest::Approx(12.19e9));
    CHECK(hw.tiers.back().size_efficiency.size() == 6);
    CHECK(hw.tiers.back().latency_s == load_hardware("br166-ubbv2").tiers.back().latency_s);  // inherited
  }

  TEST_CASE("a GEMM sweep becomes a table that reproduces its rows (DeepGEMM FP8, H800)") {
    GemmCalibration g = calibrate_gemm(data("deepgemm_fp8_h800.csv"), 1979e12);
    CHECK(g.rows == 18);
    // 4096 x 4096 x 7168 at 1410 TFLOPS: 1410 / 1979
    bool found = false;
    for (const GemmPoint& p : g.table.points) {
      if (p.m == 4096 && p.n == 4096 && p.k == 7168) {
        CHECK(p.efficiency == doctest::Approx(1410.0 / 1979));
        found = true;
      }
    }
    CHECK(found);
    CHECK(g.worst_error < 1e-9);  // these measurements are monotone, so the surface is exact
  }

  TEST_CASE("DeepEP test output: the best dispatch and combine bandwidths") {
    DeepEpCalibration d = parse_deepep_log(data("deepep_internode_ep16.log"));
    CHECK(d.dispatch_rdma == doctest::Approx(43e9));
    CHECK(d.combine_rdma == doctest::Approx(43e9));
    CHECK(d.dispatch_nvl == 0.0);
  }

  TEST_CASE("broken logs are reported at file:line") {
    const std::string header =
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
    const std::string bad = write_temp("all_reduce_perf_bad.log",
                                       header + "        1024           256     float     sum      -1    12.00   0.09   0.15      0\n"
                                                "        2048           512     float     sum      -1    oops   0.17   0.30      0\n"
                                                "        4096\n");
    try {
      (void)parse_collective_log(bad);
      FAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
      REQUIRE(e.diagnostics().size() == 2);
      CHECK(e.diagnostics()[0].line == 3);
      CHECK(e.diagnostics()[0].message == "`oops` is not a number");
      CHECK(e.diagnostics()[1].line == 4);
    }
    const std::string no_header = write_temp("all_reduce_perf_noheader.log", "        1024  256  float  sum  -1  12.0  0.09  0.15  0\n");
    CHECK_THROWS_AS((void)parse_collective_log(no_header), ConfigError);
    const std::string gemm = write_temp("gemm_bad.csv", "m,n,k,tflops\n4096,4096,7168,99999\n");
    try {
      (void)calibrate_gemm(gemm, 989e12);
      FAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
      CHECK(e.diagnostics()[0].line == 2);
      CHECK(e.diagnostics()[0].message.find("exceeds the peak") != std::string::npos);
    }
  }
}
