// Public loading API: resolves references (paths or built-in names), follows `extends:`,
// reads the merged tree into specs and throws every diagnostic at once.

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "config/builtin.hpp"
#include "config/hf_config.hpp"
#include "config/parse.hpp"
#include "config/tree.hpp"
#include "paraplan/config.hpp"
#include "paraplan/interop.hpp"
#include "paraplan/validate.hpp"
#include "util/files.hpp"
#include "util/strings.hpp"

namespace paraplan {

std::string_view kind_name(FileKind kind) noexcept {
  switch (kind) {
    case FileKind::Hardware: return "hardware";
    case FileKind::Model: return "model";
    case FileKind::Strategy: return "strategy";
    case FileKind::Space: return "space";
  }
  return "file";
}

namespace config {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxExtendsDepth = 16;

std::string_view dir_of(FileKind kind) {
  switch (kind) {
    case FileKind::Hardware: return "hardware";
    case FileKind::Model: return "models";
    case FileKind::Strategy:
    case FileKind::Space: return "strategies";
  }
  return "";
}

bool is_path(std::string_view ref) {
  return ref.find('/') != std::string_view::npos || util::ends_with(ref, ".yaml") ||
         util::ends_with(ref, ".yml") || is_json_path(ref);
}

// "strategies/../hardware/x.yaml" -> "hardware/x.yaml", for paths among the presets.
std::string normalize(const std::string& path) {
  return fs::path(path).lexically_normal().generic_string();
}

std::string preset_stem(std::string_view path) {
  std::string_view file = path.substr(path.rfind('/') + 1);
  for (std::string_view ext : {".space.yaml", ".yaml"}) {
    if (util::ends_with(file, ext)) return std::string(file.substr(0, file.size() - ext.size()));
  }
  return std::string(file);
}

// One line of `description:` from a preset's text, without parsing all of it.
std::string description_of(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("description:", 0) == 0) {
      std::string d(util::trim(std::string_view(line).substr(12)));
      if (d.size() >= 2 && (d.front() == '"' || d.front() == '\'') && d.back() == d.front()) {
        d = d.substr(1, d.size() - 2);
      }
      return d;
    }
  }
  return {};
}

struct Text {
  std::shared_ptr<const Source> source;
  std::string text;
};

const BuiltinFile* find_builtin(std::string_view path) {
  for (const BuiltinFile& f : builtin_files()) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

// Resolves `ref` (as written at `at`; at.source null for a command-line argument) to a
// file's text. Reports and returns nullopt when it cannot.
std::optional<Text> resolve(const std::string& ref, FileKind kind, const Loc& at, Diags& diags) {
  const Source* from = at.source.get();
  auto report = [&](std::string msg) {
    if (from != nullptr) {
      diags.error(at, std::move(msg));
    } else {
      diags.error(std::make_shared<Source>(Source{ref, "", false, ref}), std::move(msg));
    }
  };
  if (ref.empty()) {
    report("empty file reference");
    return std::nullopt;
  }
  if (!is_path(ref) || (from != nullptr && from->builtin)) {
    // A built-in: a name of the expected kind, or a path among the presets.
    std::string path = is_path(ref) ? normalize((from != nullptr ? from->dir + "/" : "") + ref)
                                    : std::string(dir_of(kind)) + "/" + ref +
                                          (kind == FileKind::Space ? ".space.yaml" : ".yaml");
    if (const BuiltinFile* f = find_builtin(path)) {
      auto dir = path.substr(0, path.rfind('/'));
      return Text{std::make_shared<Source>(Source{"builtin:" + path, dir, true, "builtin:" + path}),
                  std::string(f->text)};
    }
    std::vector<std::string> names;
    for (const Preset& p : presets()) {
      if (p.kind == kind) names.push_back(p.name);
    }
    std::string msg = "no built-in " + std::string(kind_name(kind)) + " named `" + ref + "`";
    if (auto near = util::nearest(ref, names); !near.empty()) msg += "; did you mean `" + near + "`?";
    msg += " (built-in: " + util::join(names, ", ") + "; or give a path ending in .yaml)";
    report(std::move(msg));
    return std::nullopt;
  }
  fs::path p(ref);
  if (p.is_relative() && from != nullptr && !from->dir.empty()) p = fs::path(from->dir) / p;
  std::error_code ec;
  std::string identity = fs::weakly_canonical(p, ec).string();
  if (ec) identity = p.lexically_normal().string();
  const bool confined = from != nullptr && from->confined;
  if (confined) {
    // Untrusted text: a file only under the include folder, after symlinks and `..`; the
    // file is not opened otherwise, so no message can show anything of it.
    if (from->include_dir.empty()) {
      report("`" + ref + "`: YAML text given as a string may name only built-in presets here "
             "(no include directory was given)");
      return std::nullopt;
    }
    const fs::path rel = fs::path(identity).lexically_relative(from->include_dir);
    if (ec || rel.empty() || *rel.begin() == "..") {
      report("`" + ref + "` is outside the include directory `" + from->include_dir +
             "`; YAML text given as a string may name built-in presets and files under it");
      return std::nullopt;
    }
  }
  // A confined file is read by its resolved name, the one just checked.
  const std::string read_as = confined ? identity : p.string();
  util::FileText file = util::read_regular_file(read_as, util::kMaxYamlBytes, "a YAML input");
  if (!file.ok()) {
    report(file.message(p.string()));
    return std::nullopt;
  }
  std::string dir = p.parent_path().string();
  return Text{std::make_shared<Source>(Source{p.string(), dir, false, identity, confined,
                                              confined ? from->include_dir : std::string()}),
              std::move(file.text)};
}

// A Hugging Face config.json as the tree of a model file (config/hf_config.hpp).
Node json_model_tree(const Text& file, FileKind kind, Diags& diags) {
  if (kind != FileKind::Model) {
    diags.error(file.source, "a .json file is read as a Hugging Face config.json, which is a model, not a " +
                                 std::string(kind_name(kind)) + " file");
    return Node{};
  }
  const std::size_t before = diags.size();
  Node json = parse_json(file.text, file.source, diags);
  if (diags.size() != before) return Node{};
  return hf_model_tree(json, file.source->display, HfOptions{}, diags).model;
}

// The merged tree of `text` after following its `extends:` chain.
Node load_tree(const Text& file, FileKind kind, Diags& diags, std::vector<std::string>& chain) {
  if (is_json_path(file.source->display)) return json_model_tree(file, kind, diags);
  Node root = parse_yaml(file.text, file.source, diags);
  if (!root.is_map()) return root;
  const Node* ext = root.find("extends");
  if (ext == nullptr) return root;
  Loc at = ext->loc;
  if (!ext->is_scalar()) {
    diags.error(at, "`extends` takes one preset name or path");
    root.erase("extends");
    return root;
  }
  std::string ref = ext->scalar;
  root.erase("extends");
  auto base_text = resolve(ref, kind, at, diags);
  if (!base_text) return root;
  if (std::find(chain.begin(), chain.end(), base_text->source->identity) != chain.end()) {
    std::string cycle;
    for (const std::string& c : chain) cycle += c + " -> ";
    diags.error(at, "`extends` cycle: " + cycle + base_text->source->identity);
    return root;
  }
  if (static_cast<int>(chain.size()) >= kMaxExtendsDepth) {
    diags.error(at, "`extends` chain longer than " + std::to_string(kMaxExtendsDepth) + " files");
    return root;
  }
  chain.push_back(base_text->source->identity);
  const std::size_t before = diags.size();
  Node base = load_tree(*base_text, kind, diags, chain);
  chain.pop_back();
  if (!base.is_map()) {
    // Only a map of keys can be extended. Said at the `extends:` line, without quoting the
    // file: it may be anything (/etc/passwd), and its own errors, if any, were reported.
    if (diags.size() == before) {
      diags.error(at, "`extends: " + ref + "`: " +
                          (base.is_null() ? std::string("the file is empty")
                                          : std::string("the file is not a map of `key: value` lines")) +
                          "; `extends` takes a " + std::string(kind_name(kind)) + " file or preset");
    }
    return root;
  }
  merge_into(base, std::move(root));
  return base;
}

Node load_root(const std::string& ref, FileKind kind, const Loc& at, Diags& diags,
               std::shared_ptr<const Source>* source_out = nullptr) {
  auto text = resolve(ref, kind, at, diags);
  if (!text) return Node{};
  if (source_out != nullptr) *source_out = text->source;
  std::vector<std::string> chain{text->source->identity};
  return load_tree(*text, kind, diags, chain);
}

// The kind a file's own keys show, if they show one.
std::optional<FileKind> guess_kind(const Node& root) {
  if (!root.is_map()) return std::nullopt;
  auto has = [&](std::initializer_list<std::string_view> keys) {
    return std::any_of(keys.begin(), keys.end(), [&](std::string_view k) { return root.find(k) != nullptr; });
  };
  if (has({"device", "network", "host"})) return FileKind::Hardware;
  if (has({"layers", "hidden", "attention", "ffn", "vocab", "mtp_depth"})) return FileKind::Model;
  if (has({"objective", "top", "memory_headroom"})) return FileKind::Space;
  if (!has({"hardware", "model", "nodes", "parallel", "training", "schedule", "overlap"})) {
    return std::nullopt;
  }
  // A list or `auto` anywhere in the strategy keys makes it a space.
  bool listy = false;
  auto scan = [&](const Node& map, auto& self) -> void {
    for (const auto& [key, value] : map.entries) {
      if (key == "sources") continue;
      if (value.is_seq() && key != "recompute") listy = true;
      if (value.is_scalar() && value.scalar == "auto") listy = true;
      if (value.is_map()) self(value, self);
    }
  };
  scan(root, scan);
  return listy ? FileKind::Space : FileKind::Strategy;
}

// Loads hardware and model named by a strategy or space, reporting at their keys.
template <typename Out>
void load_refs(const Node& root, const std::string& hw_ref, const std::string& model_ref,
               Out& out, Diags& diags) {
  if (const Node* h = root.find("hardware"); h != nullptr && !hw_ref.empty()) {
    std::size_t before = diags.size();
    Node tree = load_root(hw_ref, FileKind::Hardware, h->loc, diags);
    if (diags.size() == before) out.hardware = read_hardware(tree, diags);
  }
  if (const Node* m = root.find("model"); m != nullptr && !model_ref.empty()) {
    std::size_t before = diags.size();
    Node tree = load_root(model_ref, FileKind::Model, m->loc, diags);
    if (diags.size() == before) out.model = read_model(tree, diags);
  }
}

// The location of a dotted key ("parallel.tp"), or the nearest existing parent.
Loc loc_of_key(const Node& root, const std::string& dotted) {
  const Node* cur = &root;
  Loc best = root.loc;
  std::size_t start = 0;
  while (start <= dotted.size()) {
    std::size_t dot = dotted.find('.', start);
    std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->is_map()) break;
    bool found = false;
    for (std::size_t i = 0; i < cur->entries.size(); ++i) {
      if (cur->entries[i].first == key) {
        best = cur->entries[i].second.is_null() ? cur->key_locs[i] : cur->entries[i].second.loc;
        cur = &cur->entries[i].second;
        found = true;
        break;
      }
    }
    if (!found || dot == std::string::npos) break;
    start = dot + 1;
  }
  return best;
}

Plan plan_from_root(const Node& root, const std::shared_ptr<const Source>& source, Diags& diags) {
  Plan plan;
  plan.strategy = read_strategy(root, diags);
  if (plan.strategy.name.empty() && source) plan.strategy.name = preset_stem(source->display);
  std::size_t before = diags.size();
  load_refs(root, plan.strategy.hardware, plan.strategy.model, plan, diags);
  if (diags.size() == before && diags.empty()) {
    for (const RuleViolation& v : check_rules(plan.strategy, plan.hardware, plan.model)) {
      diags.error(loc_of_key(root, v.key), "strategy breaks rule `" + v.rule + "`: " + v.message);
    }
  }
  return plan;
}

SpacePlan space_from_root(const Node& root, const std::shared_ptr<const Source>& source,
                          Diags& diags) {
  SpacePlan sp;
  sp.space = read_space(root, diags);
  if (sp.space.name.empty() && source) sp.space.name = preset_stem(source->display);
  load_refs(root, sp.space.hardware, sp.space.model, sp, diags);
  return sp;
}

std::shared_ptr<const Source> text_source(const std::string& display, const std::string& base_dir) {
  return std::make_shared<Source>(Source{display, base_dir, false, display});
}

// Untrusted text: references reach built-in presets, and files under the include folder
// (canonical; relative paths resolve against it). Throws when the folder is not one.
std::shared_ptr<const Source> confined_source(const std::string& display, const IncludeScope& scope) {
  std::string dir;
  if (!scope.include_dir.empty()) {
    std::error_code ec;
    const fs::path canonical = fs::canonical(scope.include_dir, ec);
    if (ec || !fs::is_directory(canonical, ec)) {
      throw ConfigError({Diagnostic{display, 0, 0,
                                    "include directory `" + scope.include_dir + "` is not a directory"}});
    }
    dir = canonical.string();
  }
  return std::make_shared<Source>(Source{display, dir, false, display, true, dir});
}

Node tree_from_text(std::string_view yaml, const std::shared_ptr<const Source>& source,
                    FileKind kind, Diags& diags) {
  std::vector<std::string> chain{source->identity};
  return load_tree(Text{source, std::string(yaml)}, kind, diags, chain);
}

}  // namespace
}  // namespace config

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = [] {
    std::vector<Preset> out;
    for (const config::BuiltinFile& f : config::builtin_files()) {
      std::string_view path = f.path;
      if (path.rfind("calibration/", 0) == 0) continue;  // profile maps, not specs
      FileKind kind = FileKind::Strategy;
      if (path.rfind("hardware/", 0) == 0) kind = FileKind::Hardware;
      else if (path.rfind("models/", 0) == 0) kind = FileKind::Model;
      else if (util::ends_with(path, ".space.yaml")) kind = FileKind::Space;
      out.push_back(Preset{kind, config::preset_stem(path), std::string(path),
                           config::description_of(f.text), f.text});
    }
    std::stable_sort(out.begin(), out.end(), [](const Preset& a, const Preset& b) {
      return std::tie(a.kind, a.name) < std::tie(b.kind, b.name);
    });
    return out;
  }();
  return all;
}

namespace config {
namespace {

// Loads `ref` (following `extends:`), reads it with `read(root, source, diags)` and throws
// every diagnostic of both steps.
template <typename Read>
auto load_and_read(const std::string& ref, FileKind kind, Read read) {
  Diags diags;
  std::shared_ptr<const Source> source;
  Node root = load_root(ref, kind, {}, diags, &source);
  diags.throw_if_any();
  auto out = read(root, source, diags);
  diags.throw_if_any();
  return out;
}

// The same for YAML text from `source` (text_source or confined_source).
template <typename Read>
auto parse_and_read(std::string_view yaml, const std::shared_ptr<const Source>& source, FileKind kind,
                    Read read) {
  Diags diags;
  Node root = tree_from_text(yaml, source, kind, diags);
  diags.throw_if_any();
  auto out = read(root, source, diags);
  diags.throw_if_any();
  return out;
}

HardwareSpec read_hardware_at(const Node& root, const std::shared_ptr<const Source>&, Diags& d) {
  return read_hardware(root, d);
}
ModelSpec read_model_at(const Node& root, const std::shared_ptr<const Source>&, Diags& d) {
  return read_model(root, d);
}

}  // namespace
}  // namespace config

HardwareSpec load_hardware(const std::string& ref) {
  return config::load_and_read(ref, FileKind::Hardware, config::read_hardware_at);
}
ModelSpec load_model(const std::string& ref) {
  return config::load_and_read(ref, FileKind::Model, config::read_model_at);
}
namespace config {
namespace {

// Applies `a.b.c=value` to a tree: creates missing maps, replaces the value. Problems are
// reported against the pseudo-file "--set".
void apply_sets(Node& root, const std::vector<std::string>& sets, Diags& diags) {
  auto source = std::make_shared<Source>(Source{"--set", "", false, "--set"});
  for (const std::string& set : sets) {
    const std::size_t eq = set.find('=');
    if (eq == std::string::npos || eq == 0) {
      diags.error(source, "`" + set + "` is not key=value (e.g. parallel.ep=32)");
      continue;
    }
    const std::string path = std::string(util::trim(std::string_view(set).substr(0, eq)));
    Node value = parse_yaml(set.substr(eq + 1), source, diags);
    if (value.is_null()) {
      // `parallel.ep=` would replace the file's value by nothing, read as absent: the
      // default, silently (ep 16 became ep 1).
      diags.error(source, "`" + set + "`: the value is empty (or null); give one");
      continue;
    }
    if (!root.is_map()) {
      root.type = Node::Type::Map;
    }
    Node* cur = &root;
    std::size_t start = 0;
    while (true) {
      const std::size_t dot = path.find('.', start);
      const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (key.empty()) {
        diags.error(source, "`" + set + "`: empty key");
        break;
      }
      Node* next = cur->find(key);
      if (next == nullptr) {
        Node fresh;
        fresh.type = dot == std::string::npos ? Node::Type::Null : Node::Type::Map;
        fresh.loc = value.loc;
        cur->entries.emplace_back(key, std::move(fresh));
        cur->key_locs.push_back(value.loc);
        next = &cur->entries.back().second;
      }
      if (dot == std::string::npos) {
        *next = value;
        break;
      }
      if (!next->is_map()) {
        next->type = Node::Type::Map;
        next->scalar.clear();
        next->items.clear();
      }
      cur = next;
      start = dot + 1;
    }
  }
}

}  // namespace
}  // namespace config

Plan load_plan(const std::string& ref, const std::vector<std::string>& sets) {
  config::Diags diags;
  std::shared_ptr<const config::Source> source;
  config::Node root = config::load_root(ref, FileKind::Strategy, {}, diags, &source);
  config::apply_sets(root, sets, diags);
  diags.throw_if_any();
  Plan plan = config::plan_from_root(root, source, diags);
  diags.throw_if_any();
  return plan;
}

SpacePlan load_space(const std::string& ref, const std::vector<std::string>& sets) {
  config::Diags diags;
  std::shared_ptr<const config::Source> source;
  config::Node root = config::load_root(ref, FileKind::Space, {}, diags, &source);
  config::apply_sets(root, sets, diags);
  diags.throw_if_any();
  SpacePlan sp = config::space_from_root(root, source, diags);
  diags.throw_if_any();
  return sp;
}

Plan load_plan(const std::string& ref) {
  return config::load_and_read(ref, FileKind::Strategy, config::plan_from_root);
}
SpacePlan load_space(const std::string& ref) {
  return config::load_and_read(ref, FileKind::Space, config::space_from_root);
}

HardwareSpec parse_hardware(std::string_view yaml, const std::string& display_name,
                            const std::string& base_dir) {
  return config::parse_and_read(yaml, config::text_source(display_name, base_dir), FileKind::Hardware,
                                config::read_hardware_at);
}
HardwareSpec parse_hardware(std::string_view yaml, const std::string& display_name,
                            const IncludeScope& scope) {
  return config::parse_and_read(yaml, config::confined_source(display_name, scope), FileKind::Hardware,
                                config::read_hardware_at);
}
ModelSpec parse_model(std::string_view yaml, const std::string& display_name,
                      const std::string& base_dir) {
  return config::parse_and_read(yaml, config::text_source(display_name, base_dir), FileKind::Model,
                                config::read_model_at);
}
ModelSpec parse_model(std::string_view yaml, const std::string& display_name, const IncludeScope& scope) {
  return config::parse_and_read(yaml, config::confined_source(display_name, scope), FileKind::Model,
                                config::read_model_at);
}
Plan parse_plan(std::string_view yaml, const std::string& display_name, const std::string& base_dir) {
  return config::parse_and_read(yaml, config::text_source(display_name, base_dir), FileKind::Strategy,
                                config::plan_from_root);
}
SpacePlan parse_space(std::string_view yaml, const std::string& display_name,
                      const std::string& base_dir) {
  return config::parse_and_read(yaml, config::text_source(display_name, base_dir), FileKind::Space,
                                config::space_from_root);
}

namespace config {
namespace {

// Strategy keys without their own hardware/model: placeholders satisfy the readers.
void add_placeholders(Node& root) {
  if (!root.is_map()) return;
  for (const char* key : {"hardware", "model"}) {
    if (root.find(key) != nullptr) continue;
    Node v;
    v.type = Node::Type::Scalar;
    v.scalar = "(given)";
    v.loc = root.loc;
    root.entries.emplace_back(key, v);
    root.key_locs.push_back(root.loc);
  }
}

}  // namespace
}  // namespace config

namespace config {
namespace {

Strategy strategy_from_text(std::string_view yaml, const std::shared_ptr<const Source>& source,
                            const HardwareSpec& hw, const ModelSpec& model) {
  config::Diags diags;
  config::Node root = config::tree_from_text(yaml, source, FileKind::Strategy, diags);
  diags.throw_if_any();
  config::add_placeholders(root);
  Strategy s = config::read_strategy(root, diags);
  diags.throw_if_any();
  for (const RuleViolation& v : check_rules(s, hw, model)) {
    diags.error(config::loc_of_key(root, v.key), "strategy breaks rule `" + v.rule + "`: " + v.message);
  }
  diags.throw_if_any();
  return s;
}

SearchSpace space_from_text(std::string_view yaml, const std::shared_ptr<const Source>& source) {
  config::Diags diags;
  config::Node root = config::tree_from_text(yaml, source, FileKind::Space, diags);
  diags.throw_if_any();
  config::add_placeholders(root);
  SearchSpace sp = config::read_space(root, diags);
  diags.throw_if_any();
  return sp;
}

}  // namespace
}  // namespace config

Strategy parse_strategy(std::string_view yaml, const std::string& display_name, const HardwareSpec& hw,
                        const ModelSpec& model) {
  return config::strategy_from_text(yaml, config::text_source(display_name, ""), hw, model);
}
Strategy parse_strategy(std::string_view yaml, const std::string& display_name, const HardwareSpec& hw,
                        const ModelSpec& model, const IncludeScope& scope) {
  return config::strategy_from_text(yaml, config::confined_source(display_name, scope), hw, model);
}
SearchSpace parse_search_space(std::string_view yaml, const std::string& display_name) {
  return config::space_from_text(yaml, config::text_source(display_name, ""));
}
SearchSpace parse_search_space(std::string_view yaml, const std::string& display_name,
                               const IncludeScope& scope) {
  return config::space_from_text(yaml, config::confined_source(display_name, scope));
}

FileKind detect_kind(const std::string& ref) {
  config::Diags diags;
  std::string cur = ref;
  config::Loc at;  // where `cur` was written; empty for the argument itself
  std::vector<std::string> seen;
  for (int depth = 0; depth <= config::kMaxExtendsDepth; ++depth) {
    if (!config::is_path(cur)) {
      // A bare name: the kind of the preset that has it.
      for (const Preset& p : presets()) {
        if (p.name == cur) return p.kind;
      }
      std::vector<std::string> names;
      for (const Preset& p : presets()) names.push_back(p.name);
      std::string msg = "no built-in preset named `" + cur + "`";
      if (auto near = util::nearest(cur, names); !near.empty()) msg += "; did you mean `" + near + "`?";
      msg += " (`paraplan list` shows them; a file path must end in .yaml)";
      if (at.source) {
        diags.error(at, std::move(msg));
      } else {
        diags.error(std::make_shared<config::Source>(config::Source{cur, "", false, cur}), std::move(msg));
      }
      diags.throw_if_any();
    }
    if (config::is_json_path(cur)) return FileKind::Model;  // a Hugging Face config.json
    auto text = config::resolve(cur, FileKind::Strategy, at, diags);
    diags.throw_if_any();
    if (std::find(seen.begin(), seen.end(), text->source->identity) != seen.end()) {
      // An `extends` cycle: let the loader report it where it closes.
      (void)config::load_root(ref, FileKind::Hardware, {}, diags);
      diags.throw_if_any();
      break;
    }
    seen.push_back(text->source->identity);
    config::Node root = config::parse_yaml(text->text, text->source, diags);
    diags.throw_if_any();
    if (auto kind = config::guess_kind(root)) return *kind;
    const config::Node* ext = root.find("extends");
    if (ext == nullptr || !ext->is_scalar()) break;
    cur = ext->scalar;
    at = ext->loc;
  }
  diags.error(std::make_shared<config::Source>(config::Source{ref, "", false, ref}),
              "cannot tell what this file is: a hardware file has `device:`, a model `layers:`, "
              "a strategy `parallel:` and a search space lists or `auto` values");
  diags.throw_if_any();
  return FileKind::Strategy;
}

std::vector<std::string> hf_model_types() { return config::hf_model_types(); }

namespace config {
namespace {

HfImport import_text(const Text& file, const HfImportOptions& options) {
  Diags diags;
  Node json = parse_json(file.text, file.source, diags);
  diags.throw_if_any();
  HfTree tree = hf_model_tree(json, file.source->display,
                              HfOptions{options.name, options.seq_len, options.command}, diags);
  diags.throw_if_any();
  HfImport out;
  out.model = read_model(tree.model, diags);
  diags.throw_if_any();
  out.yaml = std::move(tree.yaml);
  out.model_type = std::move(tree.model_type);
  out.unmapped = std::move(tree.unmapped);
  out.notes = std::move(tree.notes);
  return out;
}

}  // namespace
}  // namespace config

HfImport import_hf_config(const std::string& path, const HfImportOptions& options) {
  config::Diags diags;
  // Any name is a file here, not a preset: "config.json" or "./my-config".
  auto text = config::resolve(config::is_path(path) ? path : "./" + path, FileKind::Model, {}, diags);
  diags.throw_if_any();
  return config::import_text(*text, options);
}

HfImport parse_hf_config(std::string_view json, const std::string& display_name, const HfImportOptions& options) {
  return config::import_text(config::Text{config::text_source(display_name, ""), std::string(json)}, options);
}

FileKind check_file(const std::string& ref) {
  FileKind kind = detect_kind(ref);
  switch (kind) {
    case FileKind::Hardware: (void)load_hardware(ref); break;
    case FileKind::Model: (void)load_model(ref); break;
    case FileKind::Strategy: (void)load_plan(ref); break;
    case FileKind::Space: (void)load_space(ref); break;
  }
  return kind;
}

}  // namespace paraplan

// ---- validation cases -------------------------------------------------------------------

namespace paraplan {
namespace config {
namespace {

const EnumNames<Metric> kMetricNames{{"step_time_s", Metric::StepTime},
                                     {"tokens_per_device_per_s", Metric::Tgs},
                                     {"model_tflops_per_device", Metric::ModelTflops},
                                     {"megatron_tflops_per_device", Metric::MegatronTflops},
                                     {"moe_layer_forward_ms", Metric::MoeLayerForwardMs},
                                     {"moe_layer_backward_ms", Metric::MoeLayerBackwardMs},
                                     {"layer_forward_ms", Metric::LayerForwardMs},
                                     {"layer_backward_ms", Metric::LayerBackwardMs},
                                     {"collective_time_us", Metric::CollectiveUs},
                                     {"rdma_bandwidth_gbps", Metric::RdmaBandwidth},
                                     {"memory_per_device_gib", Metric::MemoryGib}};


ValidationCase read_case(const Node& root, const std::shared_ptr<const Source>& source, Diags& diags) {
  ValidationCase c;
  c.file = source->display;
  MapReader r(&root, diags, "");
  if (r.node() == nullptr) return c;
  if (auto v = r.text("name", Need::Required)) c.name = *v;
  if (auto v = r.enumeration("category", EnumNames<std::string>{{"dense", "dense"}, {"moe", "moe"}, {"micro", "micro"}, {"memory", "memory"}},
                             Need::Required)) {
    c.category = *v;
  }
  for (const std::string& s : r.text_list("source")) c.source += (c.source.empty() ? "" : "; ") + s;
  if (c.source.empty()) r.get("source", Need::Required);
  c.assumptions = r.text_list("assumptions");
  if (auto v = r.boolean("calibration")) c.calibration = *v;
  if (auto v = r.boolean("isolated")) c.isolated = *v;
  if (auto v = r.number("bound", 0.0, 1000.0, Need::Required)) c.bound_pct = *v;
  {
    const Node* m = r.get("measured", Need::Required);
    MapReader mr(m, diags, "measured", r.loc());
    if (m != nullptr) {
      if (auto v = mr.enumeration("metric", kMetricNames, Need::Required)) c.metric = *v;
      if (auto v = mr.number("value", 1e-12, 1e300, Need::Required)) c.measured = *v;
      if (auto v = mr.text("definition", Need::Required)) c.definition = *v;
      c.ops = mr.text_list("ops");
    }
    mr.finish();
  }
  // Hardware: a reference resolved against the case file.
  std::size_t before = diags.size();
  if (const Node* h = r.get("hardware", Need::Required)) {
    if (auto ref = ScalarReader(diags).text(*h, "hardware")) {
      Node tree = load_root(*ref, FileKind::Hardware, h->loc, diags);
      if (diags.size() == before) c.plan.hardware = read_hardware(tree, diags);
    }
  }
  if (const Node* coll = r.get("collective")) {
    c.is_collective = true;
    MapReader cr(coll, diags, "collective");
    if (auto v = cr.enumeration("op", kCollectiveNames, Need::Required)) c.collective.op = *v;
    if (auto v = cr.quantity("size", units::Quantity::Size, Need::Required)) c.collective.bytes = *v;
    if (auto v = cr.count("ranks", Need::Required, 1, 1 << 20)) c.collective.ranks = *v;
    if (auto v = cr.count("stride", Need::Optional, 1, 1 << 20)) c.collective.stride = *v;
    cr.finish();
    r.known("model");
    r.known("strategy");
    r.finish();
    return c;
  }
  // Model: a reference, or an inline model map (models/ schema).
  before = diags.size();
  if (const Node* m = r.get("model", Need::Required)) {
    if (m->is_map()) {
      c.plan.model = read_model(*m, diags);
    } else if (auto ref = ScalarReader(diags).text(*m, "model")) {
      Node tree = load_root(*ref, FileKind::Model, m->loc, diags);
      if (diags.size() == before) c.plan.model = read_model(tree, diags);
    }
  }
  // Strategy: the strategy keys without hardware/model (they are the case's).
  if (const Node* st = r.get("strategy", Need::Required)) {
    if (!st->is_map()) {
      diags.error(st->loc, "`strategy` must be a map of strategy keys (docs/inputs.md)");
    } else {
      Node copy = *st;
      for (const char* key : {"hardware", "model"}) {
        if (copy.find(key) != nullptr) {
          diags.error(copy.find(key)->loc, std::string("`strategy.") + key + "` is the case's own `" + key + "` key");
          copy.erase(key);
        }
        Node v;
        v.type = Node::Type::Scalar;
        v.scalar = "(case)";
        v.loc = st->loc;
        copy.entries.emplace_back(key, v);
        copy.key_locs.push_back(st->loc);
      }
      c.plan.strategy = read_strategy(copy, diags);
      c.plan.strategy.name = c.name;
      if (diags.empty()) {
        for (const RuleViolation& v : check_rules(c.plan.strategy, c.plan.hardware, c.plan.model)) {
          diags.error(loc_of_key(*st, v.key), "strategy breaks rule `" + v.rule + "`: " + v.message);
        }
      }
    }
  }
  r.finish();
  return c;
}

}  // namespace
}  // namespace config

std::vector<ValidationCase> load_cases(const std::string& dir) {
  namespace fs = std::filesystem;
  config::Diags diags;
  std::vector<ValidationCase> out;
  std::error_code ec;
  std::vector<fs::path> files;
  if (fs::is_regular_file(dir, ec)) {
    files.push_back(dir);  // one case file
  } else if (!fs::is_directory(dir, ec)) {
    diags.error(std::make_shared<config::Source>(config::Source{dir, "", false, dir}),
                "not a validation case file or a folder of them");
    diags.throw_if_any();
  }
  if (files.empty()) {
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".yaml" || e.path().extension() == ".yml") files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    diags.error(std::make_shared<config::Source>(config::Source{dir, "", false, dir}),
                "no validation case files (*.yaml) in the folder");
    diags.throw_if_any();
  }
  for (const fs::path& f : files) {
    std::shared_ptr<const config::Source> source;
    config::Node root = config::load_root(f.string(), FileKind::Strategy, {}, diags, &source);
    if (!source) continue;
    out.push_back(config::read_case(root, source, diags));
  }
  diags.throw_if_any();
  return out;
}

}  // namespace paraplan
