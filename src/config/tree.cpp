#include "config/tree.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

namespace paraplan::config {

Node::Node() = default;
Node::~Node() = default;
Node::Node(const Node&) = default;
Node::Node(Node&&) noexcept = default;
Node& Node::operator=(const Node&) = default;
Node& Node::operator=(Node&&) noexcept = default;

const Node* Node::find(std::string_view key) const {
  if (type != Type::Map) return nullptr;
  for (const auto& [k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

Node* Node::find(std::string_view key) {
  return const_cast<Node*>(static_cast<const Node&>(*this).find(key));
}

void Node::erase(std::string_view key) {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].first == key) {
      entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(i));
      key_locs.erase(key_locs.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
  }
}

void Diags::error(const Loc& at, std::string message) {
  list_.push_back(Diagnostic{at.source ? at.source->display : std::string("<input>"), at.line,
                             at.col, std::move(message)});
}

void Diags::error(const std::shared_ptr<const Source>& file, std::string message) {
  list_.push_back(Diagnostic{file ? file->display : std::string("<input>"), 0, 0,
                             std::move(message)});
}

void Diags::throw_if_any() {
  if (list_.empty()) return;
  std::stable_sort(list_.begin(), list_.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::tie(a.file, a.line, a.col) < std::tie(b.file, b.line, b.col);
  });
  // The same message at the same place twice (a node reached through two paths) once.
  list_.erase(std::unique(list_.begin(), list_.end(),
                          [](const Diagnostic& a, const Diagnostic& b) {
                            return a.str() == b.str();
                          }),
              list_.end());
  std::vector<Diagnostic> out;
  out.swap(list_);
  throw ConfigError(std::move(out));
}

namespace {

constexpr int kMaxDepth = 64;
constexpr long kMaxNodes = 200000;

struct Converter {
  const std::shared_ptr<const Source>& source;
  Diags& diags;
  long nodes = 0;
  bool budget_reported = false;
  bool depth_reported = false;

  Loc loc_of(const YAML::Mark& m) const {
    // yaml-cpp marks are 0-based; a null mark has -1.
    return Loc{source, m.line >= 0 ? m.line + 1 : 0, m.column >= 0 ? m.column + 1 : 0};
  }

  Node convert(const YAML::Node& in, int depth) {
    Node out;
    out.loc = loc_of(in.Mark());
    if (++nodes > kMaxNodes) {
      if (!budget_reported) {
        diags.error(out.loc, "document too large: more than " + std::to_string(kMaxNodes) +
                                 " nodes (an alias bomb?)");
        budget_reported = true;
      }
      return out;
    }
    if (depth > kMaxDepth) {
      if (!depth_reported) {
        diags.error(out.loc,
                    "nesting deeper than " + std::to_string(kMaxDepth) + " levels is not supported");
        depth_reported = true;
      }
      return out;
    }
    switch (in.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        out.type = Node::Type::Null;
        break;
      case YAML::NodeType::Scalar:
        out.type = Node::Type::Scalar;
        out.scalar = in.Scalar();
        break;
      case YAML::NodeType::Sequence:
        out.type = Node::Type::Seq;
        for (const YAML::Node& item : in) {
          out.items.push_back(convert(item, depth + 1));
          if (budget_reported) break;
        }
        break;
      case YAML::NodeType::Map:
        out.type = Node::Type::Map;
        for (const auto& kv : in) {
          Loc kloc = loc_of(kv.first.Mark());
          if (!kv.first.IsScalar()) {
            diags.error(kloc, "a key must be a plain word, not a list or a map");
            continue;
          }
          std::string key = kv.first.Scalar();
          bool dup = false;
          for (std::size_t i = 0; i < out.entries.size(); ++i) {
            if (out.entries[i].first == key) {
              diags.error(kloc, "duplicate key `" + key + "` (first at line " +
                                    std::to_string(out.key_locs[i].line) + ")");
              dup = true;
            }
          }
          Node value = convert(kv.second, depth + 1);
          if (value.loc.line == 0) value.loc = kloc;  // empty values have no mark
          if (!dup) {
            out.entries.emplace_back(std::move(key), std::move(value));
            out.key_locs.push_back(kloc);
          }
          if (budget_reported) break;
        }
        break;
    }
    return out;
  }
};

// Where a second document starts: the first `---` line (at column 1) after a line of content,
// or npos. A `---` before any content opens the first document. (yaml-cpp's LoadAll can loop
// without end on a malformed later document, so the documents are told apart here and only
// the first one is parsed.)
std::size_t second_document(std::string_view text, int* line_out) {
  bool content = false;
  int line = 1;
  for (std::size_t pos = 0; pos < text.size(); ++line) {
    const std::size_t nl = std::min(text.find('\n', pos), text.size());
    const std::string_view l = text.substr(pos, nl - pos);
    const bool marker = l.rfind("---", 0) == 0 && (l.size() == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r');
    if (marker && content) {
      *line_out = line;
      return pos;
    }
    const std::size_t first = l.find_first_not_of(" \t\r");
    if (!marker && first != std::string_view::npos && l[first] != '#' && l.rfind("%", 0) != 0) content = true;
    pos = nl + 1;
  }
  return std::string_view::npos;
}

// Whether a later document holds anything (a trailing `---` or `...` alone is nothing).
bool holds_content(std::string_view doc) {
  std::size_t pos = doc.find('\n');  // past the `---` line itself
  const std::size_t marker_end = pos == std::string_view::npos ? doc.size() : pos;
  if (marker_end > 3 && doc.substr(3, marker_end - 3).find_first_not_of(" \t\r") != std::string_view::npos) {
    return true;  // `--- value` on the marker line
  }
  while (pos != std::string_view::npos && pos < doc.size()) {
    const std::size_t nl = std::min(doc.find('\n', pos + 1), doc.size());
    const std::string_view l = doc.substr(pos + 1, nl - pos - 1);
    const std::size_t first = l.find_first_not_of(" \t\r");
    if (first != std::string_view::npos && l[first] != '#' && l.rfind("...", 0) != 0 && l.rfind("---", 0) != 0) {
      return true;
    }
    pos = nl < doc.size() ? nl : std::string_view::npos;
  }
  return false;
}

}  // namespace

Node parse_yaml(std::string_view text, const std::shared_ptr<const Source>& source,
                Diags& diags) {
  Node root;
  root.loc = Loc{source, 1, 1};
  if (text.find('\0') != std::string_view::npos) {
    auto pos = text.find('\0');
    int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
    diags.error(Loc{source, line, 1}, "file contains a NUL byte; is it a YAML text file?");
    return root;
  }
  // Only UTF-8 (a byte order mark at the very start aside): yaml-cpp switches encodings on a
  // stray UTF-16 mark and can then build nodes until memory runs out.
  {
    std::size_t i = text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
    int line = 1, col = 1;
    while (i < text.size()) {
      const auto c = static_cast<unsigned char>(text[i]);
      const std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
      bool ok = len > 0 && i + len <= text.size() && !(len == 2 && c < 0xC2) && !(len == 4 && c > 0xF4);
      for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
      if (ok && len == 3) {
        const auto c1 = static_cast<unsigned char>(text[i + 1]);
        ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0) && !(c == 0xEF && c1 == 0xBB && text[i + 2] == '\xBF');
      }
      if (!ok) {
        diags.error(Loc{source, line, col}, "not UTF-8 text (a byte that starts no UTF-8 character, or a byte order mark "
                                            "inside the file); is it a YAML text file?");
        return root;
      }
      if (c == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
      i += len;
    }
  }
  // One document per file: a second one would be dropped without a word. Empty ones (a
  // trailing `---`) hold nothing to drop.
  int second_line = 0;
  const std::size_t second = second_document(text, &second_line);
  if (second != std::string_view::npos && holds_content(text.substr(second))) {
    diags.error(Loc{source, second_line, 1},
                "a second YAML document; an input file holds one (remove the `---` line, or split the file)");
    return root;
  }
  try {
    const YAML::Node doc = YAML::Load(std::string(text.substr(0, second)));
    Converter conv{source, diags};
    root = conv.convert(doc, 0);
    if (root.loc.line == 0) root.loc = Loc{source, 1, 1};
  } catch (const YAML::Exception& e) {
    Loc at{source, e.mark.line >= 0 ? e.mark.line + 1 : 0, e.mark.column >= 0 ? e.mark.column + 1 : 0};
    std::string msg = e.msg.empty() ? std::string("invalid YAML") : e.msg;
    diags.error(at, "YAML syntax: " + msg);
  } catch (const std::exception& e) {
    diags.error(Loc{source, 1, 1}, std::string("cannot read YAML: ") + e.what());
  }
  return root;
}

namespace {

bool all_named_maps(const Node& seq) {
  if (!seq.is_seq() || seq.items.empty()) return false;
  return std::all_of(seq.items.begin(), seq.items.end(), [](const Node& n) {
    const Node* name = n.find("name");
    return name != nullptr && name->is_scalar();
  });
}

}  // namespace

void merge_into(Node& base, Node over) {
  if (base.is_map() && over.is_map()) {
    for (std::size_t i = 0; i < over.entries.size(); ++i) {
      auto& [key, value] = over.entries[i];
      if (Node* existing = base.find(key)) {
        merge_into(*existing, std::move(value));
      } else {
        base.entries.emplace_back(key, std::move(value));
        base.key_locs.push_back(over.key_locs[i]);
      }
    }
    return;
  }
  if (all_named_maps(base) && all_named_maps(over)) {
    for (Node& item : over.items) {
      const std::string& name = item.find("name")->scalar;
      auto it = std::find_if(base.items.begin(), base.items.end(), [&](const Node& b) {
        return b.find("name")->scalar == name;
      });
      if (it != base.items.end()) {
        merge_into(*it, std::move(item));
      } else {
        base.items.push_back(std::move(item));
      }
    }
    return;
  }
  base = std::move(over);
}

}  // namespace paraplan::config
