#pragma once
/// Quantities with units, as input files write them ("64 GiB", "400 Gb/s", "989 TFLOPS",
/// "10 us") and as reports print them. Internally everything is SI base units: bytes,
/// bytes/s, FLOP/s, seconds. `GB` is 1e9 bytes and `GiB` 2^30, always.

#include <string>
#include <string_view>

#include "paraplan/export.hpp"

namespace paraplan::units {

/// What a quantity measures; decides which unit suffixes are accepted.
enum class Quantity {
  Size,     ///< bytes: B KB MB GB TB PB (1000^n), KiB MiB GiB TiB PiB (1024^n)
  Rate,     ///< bytes/s: B/s .. PB/s, KiB/s .. PiB/s, and bits/s Kb/s Mb/s Gb/s Tb/s
  Compute,  ///< FLOP/s: GFLOPS TFLOPS PFLOPS (also FLOPS)
  Time,     ///< seconds: ns us ms s
};

/// Outcome of parsing one quantity: the value in SI base units, or why it failed.
struct Parsed {
  double value = 0.0;  ///< SI base units (bytes, bytes/s, FLOP/s, s)
  std::string error;   ///< empty on success; otherwise a message naming the problem
  [[nodiscard]] bool ok() const noexcept { return error.empty(); }
};

/// Parses `<number> [space] <unit>`; the number may have a sign, decimals and an exponent.
/// Rejects bare numbers, unknown or wrong-kind units (with a "did you mean" hint), NaN,
/// infinities and values that overflow a double. Sign is kept: callers check ranges.
[[nodiscard]] PARAPLAN_EXPORT Parsed parse(std::string_view text, Quantity kind);

/// The range a non-zero quantity of an input file must lie in, SI base units: wide enough
/// for any machine, narrow enough that every result computed from it stays a finite
/// number. Size 1 B .. 1000 PB, rate 1 KB/s .. 1000 PB/s, compute 1 GFLOPS .. 1000 EFLOPS,
/// time 1 ps .. 1 h. Whether zero is allowed is the key's business.
struct Range {
  double lo = 0.0;  ///< smallest accepted value
  double hi = 0.0;  ///< largest accepted value
};
[[nodiscard]] PARAPLAN_EXPORT Range accepted_range(Quantity kind) noexcept;

/// `value` of `kind` in its unit ("1 KB/s", "3600 s"), for messages.
[[nodiscard]] PARAPLAN_EXPORT std::string format(double value, Quantity kind);

/// Human name of a quantity kind ("size", "rate", ...), for messages.
[[nodiscard]] PARAPLAN_EXPORT std::string_view name(Quantity kind) noexcept;

/// The unit suffixes accepted for a kind, space-separated, for messages and docs.
[[nodiscard]] PARAPLAN_EXPORT std::string_view accepted(Quantity kind) noexcept;

/// Bytes as a readable decimal size with 4 significant digits: 61264000000 -> "61.26 GB".
[[nodiscard]] PARAPLAN_EXPORT std::string format_size(double bytes);
/// Bytes as binary size: 68719476736 -> "64 GiB".
[[nodiscard]] PARAPLAN_EXPORT std::string format_size_binary(double bytes);
/// Bytes/s: 1.2e12 -> "1.2 TB/s".
[[nodiscard]] PARAPLAN_EXPORT std::string format_rate(double bytes_per_s);
/// FLOP/s: 9.89e14 -> "989 TFLOPS".
[[nodiscard]] PARAPLAN_EXPORT std::string format_flops(double flop_per_s);
/// Seconds: 0.0131 -> "13.1 ms".
[[nodiscard]] PARAPLAN_EXPORT std::string format_time(double seconds);

}  // namespace paraplan::units
