#pragma once
// A YAML document as a plain tree whose every node remembers file:line:col, so that
// diagnostics stay exact after `extends:` merges nodes from several files. The only
// yaml-cpp user is tree.cpp.

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "paraplan/errors.hpp"

namespace paraplan::config {

/// Where a file came from: the name shown in diagnostics and the directory against which
/// its relative references resolve.
struct Source {
  std::string display;  ///< "strategies/x.yaml" or "builtin:hardware/br166-ubbv2.yaml"
  std::string dir;      ///< directory of the file ("" = working directory)
  bool builtin = false; ///< a compiled-in preset: relative references stay among presets
  std::string identity; ///< canonical path or builtin path, for cycle detection
  /// Text from an untrusted caller (the C API's strings) and the files it reached: its
  /// references may open only built-in presets and files under `include_dir`.
  bool confined = false;
  std::string include_dir{};  ///< confined: canonical folder whose files may be read; "" = none
};

/// A position in a source.
struct Loc {
  std::shared_ptr<const Source> source;
  int line = 0;  ///< 1-based
  int col = 0;   ///< 1-based
};

/// One YAML node.
struct Node {
  enum class Type { Null, Scalar, Seq, Map };
  Type type = Type::Null;
  std::string scalar;  ///< Scalar text as written
  std::vector<Node> items;  ///< Seq elements
  std::vector<std::pair<std::string, Node>> entries;  ///< Map entries in file order
  std::vector<Loc> key_locs;  ///< Map: location of each key, parallel to entries
  Loc loc;

  // Out of line, where Node is complete: a vector of pairs holding Node inside Node is
  // otherwise instantiated too early for clang with libstdc++ 12 in C++20.
  Node();
  ~Node();
  Node(const Node&);
  Node(Node&&) noexcept;
  Node& operator=(const Node&);
  Node& operator=(Node&&) noexcept;

  [[nodiscard]] bool is_map() const { return type == Type::Map; }
  [[nodiscard]] bool is_seq() const { return type == Type::Seq; }
  [[nodiscard]] bool is_scalar() const { return type == Type::Scalar; }
  [[nodiscard]] bool is_null() const { return type == Type::Null; }
  /// Map lookup; nullptr when absent or not a map.
  [[nodiscard]] const Node* find(std::string_view key) const;
  [[nodiscard]] Node* find(std::string_view key);
  /// Removes a map entry if present.
  void erase(std::string_view key);
};

/// Collects diagnostics of one load; throws them together.
class Diags {
 public:
  void error(const Loc& at, std::string message);
  void error(const std::shared_ptr<const Source>& file, std::string message);
  [[nodiscard]] bool empty() const { return list_.empty(); }
  [[nodiscard]] std::size_t size() const { return list_.size(); }
  /// Throws ConfigError with everything collected, sorted by file order; no-op if empty.
  void throw_if_any();

 private:
  std::vector<Diagnostic> list_;
};

/// Parses YAML text into a tree. Syntax errors, duplicate keys, non-scalar keys, nesting
/// deeper than 64 levels, more than 200000 nodes (alias bombs) and a second non-empty
/// document (after `---`) are diagnostics; the returned tree is then whatever could be read
/// (possibly Null).
Node parse_yaml(std::string_view text, const std::shared_ptr<const Source>& source,
                Diags& diags);

/// Parses JSON text (a Hugging Face config.json) into the same tree: objects are maps in
/// file order, strings and numbers scalars (numbers as written), null is Null. The first
/// syntax error and every duplicate key are diagnostics ("not JSON: expected ...").
Node parse_json(std::string_view text, const std::shared_ptr<const Source>& source,
                Diags& diags);

/// Overlays `over` onto `base`: maps merge by key, sequences whose items are all maps with
/// a scalar `name` merge by name, anything else is replaced.
void merge_into(Node& base, Node over);

}  // namespace paraplan::config
