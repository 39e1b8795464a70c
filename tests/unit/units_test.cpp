// Unit parsing: every accepted unit, bits vs bytes, decimal vs binary prefixes, and the
// messages for bad input. Expected values are the unit definitions themselves.

#include <doctest/doctest.h>

#include <string>

#include "paraplan/units.hpp"

using paraplan::units::parse;
using paraplan::units::Quantity;

namespace {

struct Row {
  const char* text;
  Quantity kind;
  double expected;  // SI base units
};

}  // namespace

TEST_SUITE("config.units") {
  TEST_CASE("accepted units convert to SI base units (GB = 1e9, GiB = 2^30, Gb/s = 1e9/8 B/s)") {
    const Row rows[] = {
        {"1 B", Quantity::Size, 1.0},
        {"64 GB", Quantity::Size, 64e9},
        {"64 GiB", Quantity::Size, 64.0 * 1024 * 1024 * 1024},
        {"64GiB", Quantity::Size, 64.0 * 1024 * 1024 * 1024},  // no space is fine
        {"112 MiB", Quantity::Size, 112.0 * 1048576},          // seed's 2x4096x7168x2 B
        {"1.5 KB", Quantity::Size, 1500.0},
        {"2 TiB", Quantity::Size, 2.0 * 1099511627776.0},
        {"3 TB", Quantity::Size, 3e12},
        {"1 KiB", Quantity::Size, 1024.0},
        {"1 MB", Quantity::Size, 1e6},
        {"50 GB/s", Quantity::Rate, 50e9},
        {"400 Gb/s", Quantity::Rate, 50e9},  // one CX7 NIC: 400 Gbit/s = 50 GB/s
        {"200 Gb/s", Quantity::Rate, 25e9},  // HDR
        {"1 GiB/s", Quantity::Rate, 1073741824.0},
        {"1.2 TB/s", Quantity::Rate, 1.2e12},
        {"12 MB/s", Quantity::Rate, 12e6},
        {"989 TFLOPS", Quantity::Compute, 989e12},
        {"1 PFLOPS", Quantity::Compute, 1e15},
        {"500 GFLOPS", Quantity::Compute, 500e9},
        {"10 us", Quantity::Time, 10e-6},
        {"3.33 us", Quantity::Time, 3.33e-6},
        {"5 ns", Quantity::Time, 5e-9},
        {"13.155 ms", Quantity::Time, 13.155e-3},
        {"2 s", Quantity::Time, 2.0},
        {"1e3 ms", Quantity::Time, 1.0},
        {"+7 B", Quantity::Size, 7.0},
        {"  8 KB  ", Quantity::Size, 8000.0},
        {"0 B", Quantity::Size, 0.0},
        {"-1 GB", Quantity::Size, -1e9},  // the sign is kept; callers reject negatives
    };
    for (const Row& r : rows) {
      CAPTURE(r.text);
      auto p = parse(r.text, r.kind);
      REQUIRE_MESSAGE(p.ok(), p.error);
      CHECK(p.value == doctest::Approx(r.expected).epsilon(1e-12));
    }
  }

  TEST_CASE("GB is never 2^30: 1 GiB / 1 GB = 1.073741824") {
    double gib = parse("1 GiB", Quantity::Size).value;
    double gb = parse("1 GB", Quantity::Size).value;
    CHECK(gib / gb == doctest::Approx(1.073741824).epsilon(1e-12));
  }

  TEST_CASE("bad quantities are rejected with a message that says why") {
    struct Bad {
      const char* text;
      Quantity kind;
      const char* message;
    };
    const Bad rows[] = {
        {"64", Quantity::Size,
         "missing unit in `64`; a size needs one, e.g. `64 GB` (accepted: B KB MB GB TB PB KiB "
         "MiB GiB TiB PiB)"},
        {"64 gb", Quantity::Size,
         "unknown size unit `gb`; did you mean `GB`? (accepted: B KB MB GB TB PB KiB MiB GiB TiB "
         "PiB)"},
        {"50 gb/s", Quantity::Rate,
         "unknown rate unit `gb/s`; did you mean `GB/s` or `Gb/s`? (accepted: B/s KB/s MB/s "
         "GB/s TB/s PB/s KiB/s MiB/s GiB/s TiB/s b/s Kb/s Mb/s Gb/s Tb/s)"},
        {"50 GB", Quantity::Rate,
         "`GB` is a size unit, but a rate is expected (e.g. `50 GB/s`)"},
        {"10 ms", Quantity::Size, "`ms` is a time unit, but a size is expected (e.g. `64 GB`)"},
        {"989 TFLOP", Quantity::Compute,
         "unknown compute rate unit `TFLOP`; did you mean `TFLOPS`? (accepted: FLOPS GFLOPS "
         "TFLOPS PFLOPS EFLOPS)"},
        {"10 sec", Quantity::Time, "unknown time unit `sec`; did you mean `s`? (accepted: ns us ms s)"},
        {"", Quantity::Time, "empty time; write a number and a unit, e.g. `10 us`"},
        {"GB", Quantity::Size, "expected a size like `64 GB`, got `GB`"},
        {"nan GB", Quantity::Size, "expected a size like `64 GB`, got `nan GB`"},
        {"inf GB", Quantity::Size, "expected a size like `64 GB`, got `inf GB`"},
        {"1e400 GB", Quantity::Size, "number `1e400` is out of range"},
        {"1e300 PB", Quantity::Size, "`1e300 PB` is out of range"},
        {"1.2.3 GB", Quantity::Size, "expected a size like `64 GB`, got `1.2.3 GB`"},
    };
    for (const Bad& r : rows) {
      CAPTURE(r.text);
      auto p = parse(r.text, r.kind);
      CHECK_FALSE(p.ok());
      CHECK(p.error == r.message);
    }
  }

  TEST_CASE("formatting picks the unit that keeps 4 significant digits") {
    using namespace paraplan::units;
    CHECK(format_size(61264e6) == "61.26 GB");
    CHECK(format_size_binary(64.0 * 1073741824.0) == "64 GiB");
    CHECK(format_rate(1.2e12) == "1.2 TB/s");
    CHECK(format_rate(50e9) == "50 GB/s");
    CHECK(format_flops(989e12) == "989 TFLOPS");
    CHECK(format_time(13.155e-3) == "13.15 ms");  // %.4g rounds half to even on binary value
    CHECK(format_time(10e-6) == "10 us");
    CHECK(format_time(2.5) == "2.5 s");
  }
}
