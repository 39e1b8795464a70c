#include "config/reader.hpp"

#include <charconv>
#include <cmath>

#include "util/strings.hpp"

namespace paraplan::config {
namespace {

std::string quoted(std::string_view s) { return "`" + std::string(s) + "`"; }

// The smallest efficiency-like fraction: small enough for a measured size curve at 8 B,
// large enough that a time divided by it stays finite.
constexpr double kMinFraction = 1e-6;

// Scalars are shown in messages, but a binary-junk value must not flood the terminal.
std::string shown(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 40)) {
    out += (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f) ? '?' : c;
  }
  if (s.size() > 40) out += "...";
  return out;
}

const char* type_name(const Node& n) {
  switch (n.type) {
    case Node::Type::Null: return "nothing";
    case Node::Type::Scalar: return "a value";
    case Node::Type::Seq: return "a list";
    case Node::Type::Map: return "a map";
  }
  return "?";
}

}  // namespace

std::optional<std::string> ScalarReader::text(const Node& n, std::string_view what) const {
  if (!n.is_scalar()) {
    diags_.error(n.loc, quoted(what) + " must be a single value, not " + type_name(n));
    return std::nullopt;
  }
  return n.scalar;
}

std::optional<long long> ScalarReader::integer(const Node& n, std::string_view what,
                                               long long lo, long long hi) const {
  auto s = text(n, what);
  if (!s) return std::nullopt;
  std::string_view v = util::trim(*s);
  if (!v.empty() && v.front() == '+') v.remove_prefix(1);
  long long value = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
  if (ec == std::errc::result_out_of_range) {
    diags_.error(n.loc, quoted(what) + " = " + shown(*s) + " is out of range (" +
                            std::to_string(lo) + ".." + std::to_string(hi) + ")");
    return std::nullopt;
  }
  if (v.empty() || ec != std::errc() || ptr != v.data() + v.size()) {
    diags_.error(n.loc, quoted(what) + " must be a whole number, got " + quoted(shown(*s)));
    return std::nullopt;
  }
  if (value < lo || value > hi) {
    std::string range = value > hi  ? "must be at most " + std::to_string(hi)
                        : lo == 0   ? std::string("must not be negative")
                        : "must be at least " + std::to_string(lo);
    diags_.error(n.loc, quoted(what) + " " + range + ", got " + std::to_string(value));
    return std::nullopt;
  }
  return value;
}

std::optional<double> ScalarReader::number(const Node& n, std::string_view what, double lo,
                                           double hi) const {
  auto s = text(n, what);
  if (!s) return std::nullopt;
  std::string_view v = util::trim(*s);
  if (!v.empty() && v.front() == '+') v.remove_prefix(1);
  double value = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
  if (v.empty() || ec == std::errc::invalid_argument || ptr != v.data() + v.size()) {
    std::string hint;
    if (units::parse(v, units::Quantity::Size).ok() || units::parse(v, units::Quantity::Rate).ok() ||
        units::parse(v, units::Quantity::Time).ok()) {
      hint = " (this key takes a plain number, without a unit)";
    }
    diags_.error(n.loc, quoted(what) + " must be a number, got " + quoted(shown(*s)) + hint);
    return std::nullopt;
  }
  if (ec == std::errc::result_out_of_range || !std::isfinite(value)) {
    diags_.error(n.loc, quoted(what) + " = " + shown(*s) + " is not a finite number");
    return std::nullopt;
  }
  if (value < lo || value > hi) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " must be in [%g, %g], got %g", lo, hi, value);
    diags_.error(n.loc, quoted(what) + buf);
    return std::nullopt;
  }
  return value;
}

std::optional<double> ScalarReader::fraction(const Node& n, std::string_view what) const {
  auto v = number(n, what, -1e300, 1e300);
  if (!v) return std::nullopt;
  if (!(*v > 0.0 && *v <= 1.0)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", *v);
    diags_.error(n.loc, quoted(what) + " is a fraction and must be in (0, 1], got " + buf);
    return std::nullopt;
  }
  if (*v < kMinFraction) {
    // Efficiencies divide times: 1e-320 would make them infinite.
    char lo[32];
    std::snprintf(lo, sizeof lo, "%g", kMinFraction);
    diags_.error(n.loc, quoted(what) + " = " + shown(std::string(util::trim(n.scalar))) + " is below " + lo +
                            ", the smallest fraction accepted");
    return std::nullopt;
  }
  return v;
}

std::optional<double> ScalarReader::quantity(const Node& n, std::string_view what,
                                             units::Quantity kind, bool allow_zero) const {
  auto s = text(n, what);
  if (!s) return std::nullopt;
  units::Parsed p = units::parse(*s, kind);
  if (!p.ok()) {
    diags_.error(n.loc, quoted(what) + ": " + p.error);
    return std::nullopt;
  }
  if (p.value < 0.0 || (!allow_zero && p.value == 0.0)) {
    diags_.error(n.loc, quoted(what) + " must be " + (allow_zero ? "zero or positive" : "positive") +
                            ", got " + quoted(shown(*s)));
    return std::nullopt;
  }
  // Bounds that keep every result finite (a rate of 1e-320 TB/s would divide to infinity).
  const units::Range range = units::accepted_range(kind);
  if (p.value != 0.0 && (p.value < range.lo || p.value > range.hi)) {
    const bool low = p.value < range.lo;
    diags_.error(n.loc, quoted(what) + " = " + quoted(shown(*s)) + " is " + (low ? "below " : "above ") +
                            units::format(low ? range.lo : range.hi, kind) + ", the " +
                            (low ? "smallest " : "largest ") + std::string(units::name(kind)) +
                            " accepted");
    return std::nullopt;
  }
  return p.value;
}

std::optional<bool> boolean_spelling(std::string_view text) {
  if (text == "true" || text == "True" || text == "yes") return true;
  if (text == "false" || text == "False" || text == "no") return false;
  return std::nullopt;
}

std::optional<bool> ScalarReader::boolean(const Node& n, std::string_view what) const {
  auto s = text(n, what);
  if (!s) return std::nullopt;
  if (auto b = boolean_spelling(*s)) return b;
  diags_.error(n.loc, quoted(what) + " must be true or false, got " + quoted(shown(*s)));
  return std::nullopt;
}

void ScalarReader::unknown_value(const Node& n, std::string_view what, const std::string& got,
                                 const std::vector<std::string>& all) const {
  std::string msg = "unknown value " + quoted(shown(got)) + " for " + quoted(what);
  if (auto near = util::nearest(got, all); !near.empty()) msg += "; did you mean " + quoted(near) + "?";
  msg += " (one of: " + util::join(all, ", ") + ")";
  diags_.error(n.loc, std::move(msg));
}

MapReader::MapReader(const Node* node, Diags& diags, std::string path, Loc fallback)
    : node_(node), diags_(diags), path_(std::move(path)), scalars_(diags) {
  loc_ = node != nullptr ? node->loc : std::move(fallback);
  if (node_ != nullptr && !node_->is_map()) {
    if (!node_->is_null()) {
      diags_.error(node_->loc, (path_.empty() ? std::string("the file") : quoted(path_)) +
                                   " must be a map of `key: value` lines, not " + type_name(*node_));
    } else if (path_.empty()) {
      diags_.error(node_->loc, "the file is empty");
    }
    node_ = nullptr;
  }
}

std::string MapReader::dotted(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

const Node* MapReader::get(std::string_view key, Need need) {
  known_.emplace_back(key);
  const Node* n = node_ != nullptr ? node_->find(key) : nullptr;
  if (n != nullptr && n->is_null()) n = nullptr;
  if (n == nullptr && need == Need::Required) {
    std::string where = path_.empty() ? "" : " in " + quoted(path_);
    diags_.error(loc_, "missing required key " + quoted(key) + where);
  }
  return n;
}

std::optional<std::string> MapReader::text(std::string_view key, Need need) {
  const Node* n = get(key, need);
  return n ? scalars_.text(*n, dotted(key)) : std::nullopt;
}

std::optional<int> MapReader::count(std::string_view key, Need need, int lo, int hi) {
  const Node* n = get(key, need);
  if (n == nullptr) return std::nullopt;
  auto v = scalars_.integer(*n, dotted(key), lo, hi);
  return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
}

std::optional<double> MapReader::number(std::string_view key, double lo, double hi, Need need) {
  const Node* n = get(key, need);
  return n ? scalars_.number(*n, dotted(key), lo, hi) : std::nullopt;
}

std::optional<double> MapReader::fraction(std::string_view key, Need need) {
  const Node* n = get(key, need);
  return n ? scalars_.fraction(*n, dotted(key)) : std::nullopt;
}

std::optional<double> MapReader::quantity(std::string_view key, units::Quantity kind, Need need,
                                          bool allow_zero) {
  const Node* n = get(key, need);
  return n ? scalars_.quantity(*n, dotted(key), kind, allow_zero) : std::nullopt;
}

std::optional<bool> MapReader::boolean(std::string_view key, Need need) {
  const Node* n = get(key, need);
  return n ? scalars_.boolean(*n, dotted(key)) : std::nullopt;
}

std::vector<std::string> MapReader::text_list(std::string_view key) {
  std::vector<std::string> out;
  const Node* n = get(key);
  if (n == nullptr) return out;
  if (n->is_scalar()) return {n->scalar};
  if (!n->is_seq()) {
    diags_.error(n->loc, quoted(dotted(key)) + " must be a list of text lines");
    return out;
  }
  for (const Node& item : n->items) {
    if (auto s = scalars_.text(item, dotted(key))) out.push_back(*s);
  }
  return out;
}

void MapReader::finish() {
  if (node_ == nullptr) return;
  for (std::size_t i = 0; i < node_->entries.size(); ++i) {
    const std::string& key = node_->entries[i].first;
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
    std::string msg = "unknown key " + quoted(shown(key)) +
                      (path_.empty() ? std::string() : " in " + quoted(path_));
    if (auto near = util::nearest(key, known_); !near.empty()) {
      msg += "; did you mean " + quoted(near) + "?";
    }
    diags_.error(node_->key_locs[i], std::move(msg));
  }
}

}  // namespace paraplan::config
