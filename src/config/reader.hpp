#pragma once
// Typed, located access to the keys of one YAML map. Every lookup declares its key as
// known; finish() then reports the unknown ones with the nearest known key. Problems are
// collected in Diags, never thrown, so one pass reports everything in a file.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/tree.hpp"
#include "paraplan/units.hpp"

namespace paraplan::config {

enum class Need { Optional, Required };

/// Name/value pairs of an enum as files spell it.
template <typename E>
using EnumNames = std::vector<std::pair<std::string_view, E>>;

/// The boolean a scalar spells (true, True, yes / false, False, no), or nullopt.
std::optional<bool> boolean_spelling(std::string_view text);

/// Reads one scalar into a typed value, reporting problems at the scalar's location.
/// `what` names the value in messages ("`device.memory`").
class ScalarReader {
 public:
  explicit ScalarReader(Diags& diags) : diags_(diags) {}

  std::optional<std::string> text(const Node& n, std::string_view what) const;
  /// Whole number in [lo, hi].
  std::optional<long long> integer(const Node& n, std::string_view what, long long lo,
                                   long long hi) const;
  /// Plain number in [lo, hi] (NaN and infinities rejected).
  std::optional<double> number(const Node& n, std::string_view what, double lo, double hi) const;
  /// Efficiency-like fraction in [1e-6, 1] ((0, 1] in messages; below 1e-6 said apart).
  std::optional<double> fraction(const Node& n, std::string_view what) const;
  /// Quantity with unit within units::accepted_range(kind); `allow_zero` admits 0,
  /// negatives are always rejected.
  std::optional<double> quantity(const Node& n, std::string_view what, units::Quantity kind,
                                 bool allow_zero) const;
  std::optional<bool> boolean(const Node& n, std::string_view what) const;

  template <typename E>
  std::optional<E> enumeration(const Node& n, std::string_view what,
                               const EnumNames<E>& names) const {
    auto s = text(n, what);
    if (!s) return std::nullopt;
    for (const auto& [spelling, value] : names) {
      if (spelling == *s) return value;
    }
    std::vector<std::string> all;
    for (const auto& [spelling, value] : names) all.emplace_back(spelling);
    unknown_value(n, what, *s, all);
    return std::nullopt;
  }

  Diags& diags() const { return diags_; }

 private:
  void unknown_value(const Node& n, std::string_view what, const std::string& got,
                     const std::vector<std::string>& all) const;
  Diags& diags_;
};

/// Reads the keys of one map. `path` is the dotted path of the map ("device", "" = root).
class MapReader {
 public:
  /// `node` may be nullptr (absent section: every key reads as absent). A node that is not
  /// a map is reported once.
  MapReader(const Node* node, Diags& diags, std::string path, Loc fallback = {});

  /// The value under `key`, or nullptr; a Null value counts as absent. Declares the key.
  const Node* get(std::string_view key, Need need = Need::Optional);
  /// Declares a key as known without reading it (read elsewhere).
  void known(std::string_view key) { known_.emplace_back(key); }

  std::optional<std::string> text(std::string_view key, Need need = Need::Optional);
  std::optional<int> count(std::string_view key, Need need = Need::Optional, int lo = 1,
                           int hi = 1 << 30);
  std::optional<double> number(std::string_view key, double lo, double hi,
                               Need need = Need::Optional);
  std::optional<double> fraction(std::string_view key, Need need = Need::Optional);
  std::optional<double> quantity(std::string_view key, units::Quantity kind,
                                 Need need = Need::Optional, bool allow_zero = false);
  std::optional<bool> boolean(std::string_view key, Need need = Need::Optional);
  std::vector<std::string> text_list(std::string_view key);

  template <typename E>
  std::optional<E> enumeration(std::string_view key, const EnumNames<E>& names,
                               Need need = Need::Optional) {
    const Node* n = get(key, need);
    if (n == nullptr) return std::nullopt;
    return scalars_.enumeration(*n, dotted(key), names);
  }

  /// Reports keys that no lookup declared, with a "did you mean" for near misses.
  void finish();

  [[nodiscard]] std::string dotted(std::string_view key) const;
  [[nodiscard]] const Loc& loc() const { return loc_; }
  [[nodiscard]] const Node* node() const { return node_; }
  [[nodiscard]] const ScalarReader& scalars() const { return scalars_; }
  [[nodiscard]] Diags& diags() const { return diags_; }

 private:
  const Node* node_;
  Diags& diags_;
  std::string path_;
  Loc loc_;
  ScalarReader scalars_;
  std::vector<std::string> known_;
};

}  // namespace paraplan::config
