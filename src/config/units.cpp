#include "paraplan/units.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "util/strings.hpp"

namespace paraplan::units {
namespace {

struct Unit {
  std::string_view suffix;
  double factor;  // to SI base units
};

constexpr double kKi = 1024.0;
constexpr std::array kSizeUnits{
    Unit{"B", 1.0},           Unit{"KB", 1e3},
    Unit{"MB", 1e6},          Unit{"GB", 1e9},
    Unit{"TB", 1e12},         Unit{"PB", 1e15},
    Unit{"KiB", kKi},         Unit{"MiB", kKi * kKi},
    Unit{"GiB", kKi * kKi * kKi}, Unit{"TiB", kKi * kKi * kKi * kKi},
    Unit{"PiB", kKi * kKi * kKi * kKi * kKi},
};
constexpr std::array kRateUnits{
    Unit{"B/s", 1.0},           Unit{"KB/s", 1e3},
    Unit{"MB/s", 1e6},          Unit{"GB/s", 1e9},
    Unit{"TB/s", 1e12},         Unit{"PB/s", 1e15},
    Unit{"KiB/s", kKi},         Unit{"MiB/s", kKi * kKi},
    Unit{"GiB/s", kKi * kKi * kKi}, Unit{"TiB/s", kKi * kKi * kKi * kKi},
    Unit{"b/s", 1.0 / 8},       Unit{"Kb/s", 1e3 / 8},
    Unit{"Mb/s", 1e6 / 8},      Unit{"Gb/s", 1e9 / 8},
    Unit{"Tb/s", 1e12 / 8},
};
constexpr std::array kComputeUnits{
    Unit{"FLOPS", 1.0},   Unit{"GFLOPS", 1e9},  Unit{"TFLOPS", 1e12},
    Unit{"PFLOPS", 1e15}, Unit{"EFLOPS", 1e18},
};
constexpr std::array kTimeUnits{
    Unit{"ns", 1e-9}, Unit{"us", 1e-6}, Unit{"ms", 1e-3}, Unit{"s", 1.0},
};

template <std::size_t N>
const Unit* find(const std::array<Unit, N>& table, std::string_view suffix) {
  for (const Unit& u : table) {
    if (u.suffix == suffix) return &u;
  }
  return nullptr;
}

const Unit* find_unit(Quantity kind, std::string_view suffix) {
  switch (kind) {
    case Quantity::Size: return find(kSizeUnits, suffix);
    case Quantity::Rate: return find(kRateUnits, suffix);
    case Quantity::Compute: return find(kComputeUnits, suffix);
    case Quantity::Time: return find(kTimeUnits, suffix);
  }
  return nullptr;
}

std::vector<std::string> suffixes(Quantity kind) {
  std::vector<std::string> out;
  auto add = [&](const auto& table) {
    for (const Unit& u : table) out.emplace_back(u.suffix);
  };
  switch (kind) {
    case Quantity::Size: add(kSizeUnits); break;
    case Quantity::Rate: add(kRateUnits); break;
    case Quantity::Compute: add(kComputeUnits); break;
    case Quantity::Time: add(kTimeUnits); break;
  }
  return out;
}

std::string_view example(Quantity kind) {
  switch (kind) {
    case Quantity::Size: return "64 GB";
    case Quantity::Rate: return "50 GB/s";
    case Quantity::Compute: return "989 TFLOPS";
    case Quantity::Time: return "10 us";
  }
  return "";
}

// A hint for a suffix that is not a unit of `kind`.
std::string unit_hint(Quantity kind, std::string_view suffix) {
  // A unit of another kind: say what it measures.
  for (Quantity other : {Quantity::Size, Quantity::Rate, Quantity::Compute, Quantity::Time}) {
    if (other != kind && find_unit(other, suffix) != nullptr) {
      return "`" + std::string(suffix) + "` is a " + std::string(name(other)) + " unit, but a " +
             std::string(name(kind)) + " is expected (e.g. `" + std::string(example(kind)) +
             "`)";
    }
  }
  // Same letters, other case: "gb" -> "GB", "gib" -> "GiB". Bits and bytes differ only in
  // case, so an ambiguous match names both.
  std::vector<std::string> same_letters;
  for (const std::string& s : suffixes(kind)) {
    if (util::iequals(s, suffix)) same_letters.push_back("`" + s + "`");
  }
  std::string msg = "unknown " + std::string(name(kind)) + " unit `" + std::string(suffix) + "`";
  // Spellings people write that are not units here, mapped to the one meant.
  static constexpr std::pair<std::string_view, std::string_view> kAliases[] = {
      {"sec", "s"},        {"secs", "s"},         {"msec", "ms"},       {"usec", "us"},
      {"nsec", "ns"},      {"\xC2\xB5s", "us"},   {"\xCE\xBCs", "us"},  {"TFLOP/s", "TFLOPS"},
      {"PFLOP/s", "PFLOPS"}, {"GFLOP/s", "GFLOPS"}, {"Gbps", "Gb/s"},    {"GBps", "GB/s"}};
  std::string_view alias;
  for (const auto& [from, to] : kAliases) {
    if (from == suffix) alias = to;
  }
  if (!alias.empty()) {
    msg += "; did you mean `" + std::string(alias) + "`?";
  } else if (!same_letters.empty()) {
    msg += "; did you mean " + util::join(same_letters, " or ") + "?";
  } else if (auto near = util::nearest(suffix, suffixes(kind)); !near.empty()) {
    msg += "; did you mean `" + near + "`?";
  }
  msg += " (accepted: " + std::string(accepted(kind)) + ")";
  return msg;
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

}  // namespace

std::string_view name(Quantity kind) noexcept {
  switch (kind) {
    case Quantity::Size: return "size";
    case Quantity::Rate: return "rate";
    case Quantity::Compute: return "compute rate";
    case Quantity::Time: return "time";
  }
  return "quantity";
}

Range accepted_range(Quantity kind) noexcept {
  switch (kind) {
    case Quantity::Size: return {1.0, 1e18};
    case Quantity::Rate: return {1e3, 1e18};
    case Quantity::Compute: return {1e9, 1e21};
    case Quantity::Time: return {1e-12, 3600.0};
  }
  return {0.0, 0.0};
}

std::string_view accepted(Quantity kind) noexcept {
  switch (kind) {
    case Quantity::Size: return "B KB MB GB TB PB KiB MiB GiB TiB PiB";
    case Quantity::Rate: return "B/s KB/s MB/s GB/s TB/s PB/s KiB/s MiB/s GiB/s TiB/s b/s Kb/s Mb/s Gb/s Tb/s";
    case Quantity::Compute: return "FLOPS GFLOPS TFLOPS PFLOPS EFLOPS";
    case Quantity::Time: return "ns us ms s";
  }
  return "";
}

Parsed parse(std::string_view text, Quantity kind) {
  Parsed out;
  std::string_view s = util::trim(text);
  if (s.empty()) {
    out.error = "empty " + std::string(name(kind)) + "; write a number and a unit, e.g. `" +
                std::string(example(kind)) + "`";
    return out;
  }
  // The number: the longest prefix of number characters. from_chars takes no '+'.
  std::size_t start = (s.front() == '+') ? 1 : 0;
  std::size_t end = start;
  while (end < s.size()) {
    char c = s[end];
    bool exp_sign = (c == '-' || c == '+') && end > start && (s[end - 1] == 'e' || s[end - 1] == 'E');
    bool exp = (c == 'e' || c == 'E') && end > start && end + 1 < s.size() &&
               (std::isdigit(static_cast<unsigned char>(s[end + 1])) || s[end + 1] == '-' ||
                s[end + 1] == '+');
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.' || (c == '-' && end == start) ||
        exp_sign || exp) {
      ++end;
    } else {
      break;
    }
  }
  std::string_view number = s.substr(start, end - start);
  double value = 0.0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec == std::errc::invalid_argument ||
      ptr != number.data() + number.size()) {
    out.error = "expected a " + std::string(name(kind)) + " like `" + std::string(example(kind)) +
                "`, got `" + std::string(s) + "`";
    return out;
  }
  if (ec == std::errc::result_out_of_range || !std::isfinite(value)) {
    out.error = "number `" + std::string(number) + "` is out of range";
    return out;
  }
  std::size_t unit_start = end;
  while (unit_start < s.size() && is_space(s[unit_start])) ++unit_start;
  std::string_view suffix = s.substr(unit_start);
  if (suffix.empty()) {
    out.error = "missing unit in `" + std::string(s) + "`; a " + std::string(name(kind)) +
                " needs one, e.g. `" + std::string(example(kind)) + "` (accepted: " +
                std::string(accepted(kind)) + ")";
    return out;
  }
  const Unit* unit = find_unit(kind, suffix);
  if (unit == nullptr) {
    out.error = unit_hint(kind, suffix);
    return out;
  }
  out.value = value * unit->factor;
  if (!std::isfinite(out.value)) {
    out.value = 0.0;
    out.error = "`" + std::string(s) + "` is out of range";
  }
  return out;
}

namespace {

// 4 significant digits, trailing zeros dropped: 61.26, 1.2, 989.
std::string sig4(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

template <std::size_t N>
std::string format_with(double value, const std::array<Unit, N>& table, std::size_t first,
                        std::size_t last) {
  if (value == 0.0 || !std::isfinite(value)) return sig4(value) + " " + std::string(table[first].suffix);
  std::size_t pick = first;
  for (std::size_t i = first; i <= last; ++i) {
    if (std::fabs(value) >= table[i].factor * 0.9995) pick = i;
  }
  return sig4(value / table[pick].factor) + " " + std::string(table[pick].suffix);
}

}  // namespace

std::string format_size(double bytes) { return format_with(bytes, kSizeUnits, 0, 5); }
std::string format_size_binary(double bytes) {
  if (std::fabs(bytes) < kKi) return sig4(bytes) + " B";
  return format_with(bytes, kSizeUnits, 6, 10);
}
std::string format_rate(double bytes_per_s) { return format_with(bytes_per_s, kRateUnits, 0, 5); }
std::string format_flops(double flop_per_s) {
  return format_with(flop_per_s, kComputeUnits, 0, 4);
}
std::string format_time(double seconds) {
  if (seconds == 0.0 || !std::isfinite(seconds)) return sig4(seconds) + " s";
  double a = std::fabs(seconds);
  if (a >= 1.0) return sig4(seconds) + " s";
  if (a >= 1e-3) return sig4(seconds * 1e3) + " ms";
  if (a >= 1e-6) return sig4(seconds * 1e6) + " us";
  return sig4(seconds * 1e9) + " ns";
}

std::string format(double value, Quantity kind) {
  switch (kind) {
    case Quantity::Size: return format_size(value);
    case Quantity::Rate: return format_rate(value);
    case Quantity::Compute: return format_flops(value);
    case Quantity::Time: return format_time(value);
  }
  return sig4(value);
}

}  // namespace paraplan::units
