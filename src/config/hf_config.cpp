// Hugging Face config.json -> models/*.yaml schema. The keys each model_type's
// configuration class defines (transformers' LlamaConfig, Qwen3Config, Qwen3MoeConfig,
// MixtralConfig, GPTNeoXConfig, DeepseekV2Config / DeepseekV3Config) and how its modeling
// code uses them decide each mapping; docs/interop.md lists them.

#include "config/hf_config.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "config/reader.hpp"
#include "util/strings.hpp"

namespace paraplan::config {
namespace {

enum class Family { DeepseekV2, DeepseekV3, GptNeox, GptOss, Llama, Mistral, Mixtral, Qwen3, Qwen3Moe };

const std::vector<std::pair<std::string, Family>>& families() {
  static const std::vector<std::pair<std::string, Family>> all{
      {"deepseek_v2", Family::DeepseekV2}, {"deepseek_v3", Family::DeepseekV3},
      {"gpt_neox", Family::GptNeox},       {"gpt_oss", Family::GptOss},
      {"llama", Family::Llama},
      {"mistral", Family::Mistral},        {"mixtral", Family::Mixtral},
      {"qwen3", Family::Qwen3},
      {"qwen3_moe", Family::Qwen3Moe}};
  return all;
}

// The transformers configuration class of a family, for "default of ..." comments.
const char* class_name(Family f) {
  switch (f) {
    case Family::DeepseekV2:
      return "DeepseekV2Config";
    case Family::DeepseekV3:
      return "DeepseekV3Config";
    case Family::GptNeox:
      return "GPTNeoXConfig";
    case Family::GptOss:
      return "GptOssConfig";
    case Family::Llama:
      return "LlamaConfig";
    case Family::Mistral:
      return "MistralConfig";
    case Family::Mixtral:
      return "MixtralConfig";
    case Family::Qwen3:
      return "Qwen3Config";
    case Family::Qwen3Moe:
      return "Qwen3MoeConfig";
  }
  return "?";
}

constexpr int kMaxDim = 1 << 24;

// Double-quoted YAML string (a JSON string literal is one).
std::string yaml_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Builds the model tree in schema order, remembering each value's source for the YAML.
class Builder {
 public:
  /// Sets `dotted` ("attention.heads") to `value` located at `at`; `from` is the comment.
  void put(const std::string& dotted, std::string value, const Loc& at, std::string from) {
    Node* cur = &tree_;
    cur->type = Node::Type::Map;
    std::size_t start = 0;
    while (true) {
      const std::size_t dot = dotted.find('.', start);
      const std::string key =
          dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      Node* next = cur->find(key);
      if (next == nullptr) {
        Node fresh;
        fresh.type = dot == std::string::npos ? Node::Type::Scalar : Node::Type::Map;
        fresh.loc = at;
        cur->entries.emplace_back(key, std::move(fresh));
        cur->key_locs.push_back(at);
        next = &cur->entries.back().second;
      }
      if (dot == std::string::npos) {
        next->type = Node::Type::Scalar;
        next->scalar = std::move(value);
        next->loc = at;
        break;
      }
      cur = next;
      start = dot + 1;
    }
    comments_[dotted] = std::move(from);
  }
  /// A value that is text, quoted in the YAML.
  void put_text(const std::string& dotted, std::string value, const Loc& at) {
    quoted_.insert(dotted);
    put(dotted, std::move(value), at, "");
  }
  void put_list(const std::string& key, const std::vector<std::string>& values, const Loc& at) {
    Node list;
    list.type = Node::Type::Seq;
    list.loc = at;
    for (const std::string& v : values) {
      Node item;
      item.type = Node::Type::Scalar;
      item.scalar = v;
      item.loc = at;
      list.items.push_back(std::move(item));
    }
    tree_.type = Node::Type::Map;
    tree_.entries.emplace_back(key, std::move(list));
    tree_.key_locs.push_back(at);
  }
  void erase(const std::string& top_key) { tree_.erase(top_key); }

  [[nodiscard]] const Node& tree() const { return tree_; }

  /// The tree as a model file: `key: value  # source`, maps indented by two.
  [[nodiscard]] std::string yaml() const {
    std::string out;
    emit(tree_, "", 0, out);
    return out;
  }

 private:
  void emit(const Node& map, const std::string& prefix, int indent, std::string& out) const {
    const std::string pad(static_cast<std::size_t>(indent), ' ');
    for (const auto& [key, value] : map.entries) {
      const std::string dotted = prefix.empty() ? key : prefix + "." + key;
      if (value.is_map()) {
        out += pad + key + ":\n";
        emit(value, dotted, indent + 2, out);
        continue;
      }
      if (value.is_seq()) {
        out += pad + key + ":\n";
        for (const Node& item : value.items) out += pad + "  - " + yaml_string(item.scalar) + "\n";
        continue;
      }
      std::string line =
          pad + key + ": " + (quoted_.count(dotted) ? yaml_string(value.scalar) : value.scalar);
      const auto c = comments_.find(dotted);
      if (c != comments_.end() && !c->second.empty()) {
        line += std::string(line.size() < 30 ? 30 - line.size() : 1, ' ') + "# " + c->second;
      }
      out += line + "\n";
    }
  }

  Node tree_;
  std::map<std::string, std::string> comments_;
  std::set<std::string> quoted_;
};

// Reads the config's keys (through MapReader: typed, located) and remembers which ones a
// mapping used.
class Keys {
 public:
  Keys(const Node& root, Diags& diags) : root_(root), reader_(&root, diags, "") {}

  /// Marks `key` as mapped (its value shaped the model).
  void use(std::string_view key) { used_.insert(std::string(key)); }
  [[nodiscard]] bool present(std::string_view key) const {
    const Node* n = root_.find(key);
    return n != nullptr && !n->is_null();
  }
  /// Present, with the value null.
  [[nodiscard]] bool null(std::string_view key) const {
    const Node* n = root_.find(key);
    return n != nullptr && n->is_null();
  }
  [[nodiscard]] Loc loc(std::string_view key) const {
    const Node* n = root_.find(key);
    return n != nullptr ? n->loc : root_.loc;
  }
  [[nodiscard]] const Loc& root_loc() const { return root_.loc; }
  [[nodiscard]] Diags& diags() const { return reader_.diags(); }

  std::optional<int> count(std::string_view key, Need need, int lo = 1, int hi = kMaxDim) {
    use(key);
    return reader_.count(key, need, lo, hi);
  }
  std::optional<bool> flag(std::string_view key) {
    use(key);
    return reader_.boolean(key);
  }
  std::optional<double> number(std::string_view key, double lo, double hi) {
    use(key);
    return reader_.number(key, lo, hi);
  }
  /// Text without marking the key used (for notes about keys that are not mapped).
  std::optional<std::string> peek_text(std::string_view key) {
    const Node* n = root_.find(key);
    if (n == nullptr || n->is_null()) return std::nullopt;
    return reader_.scalars().text(*n, key);
  }
  std::optional<std::string> text(std::string_view key, Need need) {
    use(key);
    return reader_.text(key, need);
  }
  /// A list of whole numbers in [lo, hi]; absent or null = empty.
  std::vector<int> int_list(std::string_view key, int lo, int hi) {
    std::vector<int> out;
    for (const Node& item : list_items(key, "a list of layer numbers")) {
      if (auto v = reader_.scalars().integer(item, key, lo, hi)) out.push_back(static_cast<int>(*v));
    }
    return out;
  }

  /// A list of strings; absent or null = empty.
  std::vector<std::string> text_list(std::string_view key) {
    std::vector<std::string> out;
    for (const Node& item : list_items(key, "a list")) {
      if (auto v = reader_.scalars().text(item, key)) out.push_back(*v);
    }
    return out;
  }

  /// Top-level keys not used, in file order.
  [[nodiscard]] std::vector<std::string> unused() const {
    std::vector<std::string> out;
    for (const auto& [key, value] : root_.entries) {
      if (used_.count(key) == 0) out.push_back(key);
    }
    return out;
  }

 private:
  // The items of list `key`, marked used; none when absent or null, and an error (`what`
  // the key must be) when it is not a list.
  const std::vector<Node>& list_items(std::string_view key, const char* what) {
    static const std::vector<Node> none;
    use(key);
    const Node* n = reader_.get(key);
    if (n == nullptr) return none;
    if (!n->is_seq()) {
      reader_.diags().error(n->loc, "`" + std::string(key) + "` must be " + what);
      return none;
    }
    return n->items;
  }

  const Node& root_;
  MapReader reader_;
  std::set<std::string> used_;
};

std::string str(long long v) { return std::to_string(v); }

// `text` as `# ` comment lines of at most 100 columns, broken between words.
std::string comment_lines(const std::string& text) {
  std::string out, line = "#";
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (line.size() > 2 && line.size() + 1 + word.size() > 100) {
      out += line + "\n";
      line = "#  ";
    }
    line += " " + word;
    start = end + 1;
  }
  return out + line + "\n";
}

// Which layers are dense (not MoE), from the family's rule.
std::vector<bool> dense_mask(int layers, const std::function<bool(int)>& is_moe) {
  std::vector<bool> dense(static_cast<std::size_t>(layers));
  for (int i = 0; i < layers; ++i) dense[static_cast<std::size_t>(i)] = !is_moe(i);
  return dense;
}

}  // namespace

const std::vector<std::string>& hf_model_types() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, family] : families()) out.push_back(name);
    return out;
  }();
  return names;
}

bool is_json_path(std::string_view path) { return util::ends_with(path, ".json"); }

std::string hf_name_from_path(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  std::string name = p.stem().string();
  if (name == "config" && p.has_parent_path()) {
    const std::string dir = p.parent_path().lexically_normal().filename().string();
    if (!dir.empty() && dir != "." && dir != "..") name = dir;
  }
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name.empty() ? std::string("imported") : name;
}

HfTree hf_model_tree(const Node& root, const std::string& display, const HfOptions& options,
                     Diags& diags) {
  HfTree out;
  if (!root.is_map()) {
    if (!root.is_null() || root.loc.line > 0) {
      diags.error(root.loc,
                  "a Hugging Face config.json is one JSON object of model settings "
                  "({\"model_type\": ...})");
    }
    return out;
  }
  Keys k(root, diags);
  const std::optional<std::string> type = k.text("model_type", Need::Required);
  if (!type) return out;
  out.model_type = *type;
  const auto fam_it = std::find_if(families().begin(), families().end(),
                                   [&](const auto& f) { return f.first == *type; });
  if (fam_it == families().end()) {
    std::string msg = "unknown model_type `" + *type + "`";
    if (auto near = util::nearest(*type, hf_model_types()); !near.empty())
      msg += "; did you mean `" + near + "`?";
    msg += " (paraplan imports " + util::join(hf_model_types(), ", ") + ")";
    diags.error(k.loc("model_type"), std::move(msg));
    return out;
  }
  const Family fam = fam_it->second;
  const bool deepseek = fam == Family::DeepseekV2 || fam == Family::DeepseekV3;
  const std::string cls = class_name(fam);
  const Loc at_root = k.root_loc();
  auto default_of = [&](const std::string& key) { return key + " absent: " + cls + "'s default"; };

  Builder b;
  const std::string name = options.name.empty() ? hf_name_from_path(display) : options.name;
  b.put_text("name", name, at_root);
  b.put_text("description", *type + " model from a Hugging Face config.json (" + display + ")",
             at_root);
  b.put_list("sources", {display + " (model_type " + *type + "), imported by paraplan import-hf"},
             at_root);

  // ---- sizes --------------------------------------------------------------------------
  const std::optional<int> layers = k.count("num_hidden_layers", Need::Required, 1, 1 << 16);
  if (layers) b.put("layers", str(*layers), k.loc("num_hidden_layers"), "num_hidden_layers");
  const std::optional<int> hidden = k.count("hidden_size", Need::Required);
  if (hidden) b.put("hidden", str(*hidden), k.loc("hidden_size"), "hidden_size");
  if (auto v = k.count("vocab_size", Need::Required, 1, 1 << 28)) {
    b.put("vocab", str(*v), k.loc("vocab_size"), "vocab_size");
  }
  if (options.seq_len > 0) {
    b.put("seq_len", str(options.seq_len), at_root, "--seq-len");
  } else if (auto v = k.count("max_position_embeddings", Need::Required, 1, 1 << 28)) {
    b.put("seq_len", str(*v), k.loc("max_position_embeddings"),
          "max_position_embeddings (the longest context; pre-training often used less)");
  }
  if (auto v = k.flag("tie_word_embeddings")) {
    b.put("tied_embeddings", *v ? "true" : "false", k.loc("tie_word_embeddings"),
          "tie_word_embeddings");
  } else {
    b.put("tied_embeddings", "false", at_root, default_of("tie_word_embeddings"));
  }
  const bool neox = fam == Family::GptNeox;
  const bool gpt_oss = fam == Family::GptOss;
  b.put("norm", neox ? "layernorm" : "rmsnorm", at_root, "model_type " + *type);

  // Biases: the schema has one switch for every linear layer.
  {
    const bool attn_default = neox;  // GPT-NeoX: attention_bias True; the others False
    const bool attn = k.present("attention_bias") ? k.flag("attention_bias").value_or(attn_default)
                                                  : attn_default;
    // GPT-NeoX's MLP always has biases, GPT-OSS's experts and router too; Llama's follow
    // mlp_bias.
    bool mlp = neox || gpt_oss;
    std::string mlp_from = neox      ? "GPT-NeoX MLP"
                           : gpt_oss ? "GPT-OSS experts and router (gate_up_proj_bias, down_proj_bias, router bias)"
                                     : "no MLP biases";
    if (fam == Family::Llama) {
      mlp = k.present("mlp_bias") ? k.flag("mlp_bias").value_or(false) : false;
      mlp_from = k.present("mlp_bias") ? "mlp_bias" : default_of("mlp_bias");
    }
    const std::string attn_from =
        k.present("attention_bias") ? "attention_bias" : default_of("attention_bias");
    if (attn == mlp) {
      b.put("bias", attn ? "true" : "false",
            k.present("attention_bias") ? k.loc("attention_bias") : at_root,
            attn_from + ", " + mlp_from);
    } else {
      b.put("bias", "false", k.present("attention_bias") ? k.loc("attention_bias") : at_root,
            attn_from + ", " + mlp_from + " (only one of them)");
      out.notes.push_back(
          std::string(attn ? "attention" : "MLP") +
          " biases are not counted: the model schema has one bias switch for every linear layer");
    }
  }
  b.put("position_embedding", "rope", at_root, "model_type " + *type);

  // ---- attention ----------------------------------------------------------------------
  const std::optional<int> heads = k.count("num_attention_heads", Need::Required);
  if (deepseek) {
    b.put("attention.kind", "mla", at_root, "model_type " + *type);
    if (heads)
      b.put("attention.heads", str(*heads), k.loc("num_attention_heads"), "num_attention_heads");
    if (k.null("q_lora_rank")) {
      k.use("q_lora_rank");
      b.put("attention.q_lora_rank", "0", k.loc("q_lora_rank"),
            "q_lora_rank null: no query compression");
    } else if (auto v = k.count("q_lora_rank", Need::Required, 0)) {
      b.put("attention.q_lora_rank", str(*v), k.loc("q_lora_rank"), "q_lora_rank");
    }
    for (const char* key : {"kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}) {
      if (auto v =
              k.count(key, Need::Required, std::string_view(key) == "qk_rope_head_dim" ? 0 : 1)) {
        b.put(std::string("attention.") + key, str(*v), k.loc(key), key);
      }
    }
    // MLA gives every head its own keys and values; the key is the head count again.
    if (k.present("num_key_value_heads")) {
      const std::optional<int> kv = k.count("num_key_value_heads", Need::Optional);
      if (kv && heads && *kv != *heads) {
        out.notes.push_back("num_key_value_heads " + str(*kv) +
                            " is not used: MLA has a key and a value per head");
      }
    }
    // transformers' DeepseekV3Config defines head_dim = qk_rope_head_dim; nothing to map.
    if (k.present("head_dim")) k.use("head_dim");
  } else {
    int kv_heads = heads.value_or(0);
    std::string kv_from = "num_key_value_heads absent: one per head";
    Loc kv_loc = at_root;
    if (!neox && k.present("num_key_value_heads")) {
      if (auto v = k.count("num_key_value_heads", Need::Optional)) kv_heads = *v;
      kv_from = "num_key_value_heads";
      kv_loc = k.loc("num_key_value_heads");
    }
    const bool gqa = heads && kv_heads != *heads;
    b.put("attention.kind", gqa ? "gqa" : "mha", gqa ? kv_loc : at_root,
          gqa ? "num_key_value_heads < num_attention_heads" : "one key/value head per head");
    if (heads)
      b.put("attention.heads", str(*heads), k.loc("num_attention_heads"), "num_attention_heads");
    if (gqa) b.put("attention.kv_heads", str(kv_heads), kv_loc, kv_from);
    const bool qwen = fam == Family::Qwen3 || fam == Family::Qwen3Moe;
    if (k.present("head_dim") || qwen) {
      if (auto v = k.count("head_dim", qwen ? Need::Required : Need::Optional)) {
        b.put("attention.head_dim", str(*v), k.loc("head_dim"), "head_dim");
      }
    } else if (heads && hidden && *hidden % *heads == 0) {
      b.put("attention.head_dim", str(*hidden / *heads), at_root,
            "hidden_size / num_attention_heads");
    }
    if (qwen) b.put("attention.qk_norm", "true", at_root, "model_type " + *type + ": q_norm and k_norm");

    // Sliding-window attention: which layers attend through `sliding_window`. transformers
    // lists them in `layer_types` where a config has it; Qwen3 (use_sliding_window) windows
    // the layers from max_window_layers on (Qwen3Config builds layer_types so); Mistral and
    // Mixtral window every layer when sliding_window is set (null = none).
    std::optional<int> windowed;
    std::string window_rule;
    Loc window_loc = at_root;
    if (k.present("layer_types")) {
      const std::vector<std::string> types = k.text_list("layer_types");
      windowed = static_cast<int>(std::count(types.begin(), types.end(), "sliding_attention"));
      window_rule = "layer_types: " + str(*windowed) + " of " + str(static_cast<int>(types.size())) +
                    " sliding_attention";
      window_loc = k.loc("layer_types");
      if (layers && static_cast<int>(types.size()) != *layers) {
        k.diags().error(window_loc, "`layer_types` lists " + str(static_cast<int>(types.size())) +
                                        " layers, `num_hidden_layers` is " + str(*layers));
        windowed.reset();
      }
    } else if (qwen) {
      const bool on = k.present("use_sliding_window") && k.flag("use_sliding_window").value_or(false);
      if (on && layers) {
        const int from = k.present("max_window_layers")
                             ? k.count("max_window_layers", Need::Optional, 0, kMaxDim).value_or(0)
                             : 0;
        windowed = std::max(0, *layers - std::min(from, *layers));
        window_rule = "use_sliding_window: layers from max_window_layers " + str(from) + " on";
        window_loc = k.loc("use_sliding_window");
      } else if (k.present("use_sliding_window")) {
        k.use("use_sliding_window");
      }
    } else if ((fam == Family::Mistral || fam == Family::Mixtral) && k.present("sliding_window") && layers) {
      windowed = *layers;
      window_rule = "sliding_window: every layer (" + std::string(class_name(fam)) + ")";
      window_loc = k.loc("sliding_window");
    }
    if (windowed && *windowed > 0) {
      if (auto w = k.count("sliding_window", Need::Required, 1, 1 << 28)) {
        b.put("attention.window", str(*w), k.loc("sliding_window"), "sliding_window");
        b.put("attention.window_layers", str(*windowed), window_loc, window_rule);
      }
    } else if (k.present("sliding_window") || k.null("sliding_window")) {
      k.use("sliding_window");  // no layer attends through it
      if (k.present("max_window_layers")) k.use("max_window_layers");
    }
  }

  // ---- feed-forward -------------------------------------------------------------------
  {
    const std::optional<std::string> act = k.peek_text("hidden_act");
    const bool gated = !neox;
    if (act) k.use("hidden_act");
    std::string from = gated ? "gated MLP (gate, up, down)" : "GPT-NeoX MLP (up, down)";
    if (act) from += ", hidden_act " + *act;
    if (gated && act && *act != "silu" && *act != "swish") {
      out.notes.push_back("hidden_act " + *act +
                          " in a gated MLP is counted as SwiGLU (the same three matrices)");
    }
    b.put("ffn.kind", gated ? "swiglu" : "gelu", act ? k.loc("hidden_act") : at_root, from);
    if (auto v = k.count("intermediate_size", Need::Required)) {
      b.put("ffn.intermediate", str(*v), k.loc("intermediate_size"),
            fam == Family::Mixtral || gpt_oss
                ? "intermediate_size (every layer is MoE: the experts' size)"
            : fam == Family::Qwen3Moe ? "intermediate_size (the dense MLP of mlp_only_layers)"
                                      : "intermediate_size");
    }
    // GPT-OSS clamps the gate to at most swiglu_limit and the linear half to within it.
    if (gpt_oss && k.present("swiglu_limit")) {
      if (k.number("swiglu_limit", 1e-3, 1e6)) {
        b.put("ffn.clamp", root.find("swiglu_limit")->scalar, k.loc("swiglu_limit"),
              "swiglu_limit (the clamped GLU: gate <= limit, linear half within +-limit)");
      }
    }
  }

  // ---- mixture of experts -------------------------------------------------------------
  std::function<bool(int)> is_moe;
  std::string moe_rule;
  Loc moe_loc = at_root;
  if (fam == Family::Mixtral || gpt_oss) {
    const auto experts = k.count("num_local_experts", Need::Required);
    const auto top_k = k.count("num_experts_per_tok", Need::Required);
    if (experts && top_k) {
      const std::string family = gpt_oss ? "GPT-OSS" : "Mixtral";
      b.put("moe.dense_layers", "0", at_root, "every " + family + " layer is MoE");
      b.put("moe.routed_experts", str(*experts), k.loc("num_local_experts"), "num_local_experts");
      b.put("moe.shared_experts", "0", at_root, family + " has no shared expert");
      // GptOssConfig carries the top-k twice (experts_per_token, num_experts_per_tok).
      if (gpt_oss && k.present("experts_per_token")) k.use("experts_per_token");
      b.put("moe.top_k", str(*top_k), k.loc("num_experts_per_tok"), "num_experts_per_tok");
      if (const Node* n = root.find("intermediate_size"); n != nullptr && n->is_scalar()) {
        b.put("moe.expert_intermediate", n->scalar, n->loc, "intermediate_size");
      }
    }
  } else if (fam == Family::Qwen3Moe) {
    const auto experts = k.count("num_experts", Need::Required, 0);
    const auto top_k = k.count("num_experts_per_tok", Need::Required);
    const auto inter = k.count("moe_intermediate_size", Need::Required);
    int step = 1;
    if (k.present("decoder_sparse_step"))
      step = k.count("decoder_sparse_step", Need::Optional).value_or(1);
    std::vector<int> mlp_only = k.int_list("mlp_only_layers", 0, layers ? *layers - 1 : kMaxDim);
    if (experts && *experts > 0 && top_k && inter) {
      // Qwen3MoeDecoderLayer: sparse when not in mlp_only_layers and (i + 1) % step == 0.
      is_moe = [step, mlp_only](int i) {
        return std::find(mlp_only.begin(), mlp_only.end(), i) == mlp_only.end() &&
               (i + 1) % step == 0;
      };
      moe_rule = "decoder_sparse_step " + str(step) + ", mlp_only_layers";
      moe_loc = k.present("decoder_sparse_step") ? k.loc("decoder_sparse_step") : at_root;
      b.put("moe.dense_layers", "0", moe_loc, moe_rule);
      b.put("moe.routed_experts", str(*experts), k.loc("num_experts"), "num_experts");
      b.put("moe.shared_experts", "0", at_root, "Qwen3-MoE has no shared expert");
      b.put("moe.top_k", str(*top_k), k.loc("num_experts_per_tok"), "num_experts_per_tok");
      b.put("moe.expert_intermediate", str(*inter), k.loc("moe_intermediate_size"),
            "moe_intermediate_size");
    }
  } else if (deepseek) {
    if (k.null("n_routed_experts")) {
      k.use("n_routed_experts");
      out.notes.push_back("n_routed_experts is null: a dense model");
    } else {
      const auto experts = k.count("n_routed_experts", Need::Required);
      const auto top_k = k.count("num_experts_per_tok", Need::Required);
      const auto inter = k.count("moe_intermediate_size", Need::Required);
      const auto first_dense = k.count("first_k_dense_replace", Need::Required, 0, 1 << 16);
      int freq = 1;
      if (k.present("moe_layer_freq")) freq = k.count("moe_layer_freq", Need::Optional).value_or(1);
      int shared = 0;
      std::string shared_from = "n_shared_experts";
      if (k.present("n_shared_experts")) {
        shared = k.count("n_shared_experts", Need::Optional, 0).value_or(0);
      } else {
        k.use("n_shared_experts");
        shared_from =
            k.null("n_shared_experts") ? "n_shared_experts null" : "n_shared_experts absent";
      }
      if (experts && top_k && inter && first_dense) {
        // DeepseekV2/V3DecoderLayer: MoE when i >= first_k_dense_replace and i % moe_layer_freq ==
        // 0.
        const int first = *first_dense;
        is_moe = [first, freq](int i) { return i >= first && i % freq == 0; };
        moe_rule =
            "first_k_dense_replace" + std::string(freq > 1 ? ", moe_layer_freq " + str(freq) : "");
        moe_loc = k.loc("first_k_dense_replace");
        b.put("moe.dense_layers", str(first), moe_loc, moe_rule);
        b.put("moe.routed_experts", str(*experts), k.loc("n_routed_experts"), "n_routed_experts");
        b.put("moe.shared_experts", str(shared),
              k.present("n_shared_experts") ? k.loc("n_shared_experts") : at_root, shared_from);
        b.put("moe.top_k", str(*top_k), k.loc("num_experts_per_tok"), "num_experts_per_tok");
        b.put("moe.expert_intermediate", str(*inter), k.loc("moe_intermediate_size"),
              "moe_intermediate_size");
        // Group-limited routing: each token's experts come from at most topk_group of
        // n_group groups; DeepSeek places a group per node (V2: device-limited, V3:
        // node-limited routing, M = topk_group), so it is the node limit.
        const std::optional<std::string> method = k.peek_text("topk_method");
        const bool grouped = method && (*method == "group_limited_greedy" || *method == "noaux_tc");
        if (grouped && k.present("n_group") && k.present("topk_group")) {
          const auto groups = k.count("n_group", Need::Optional);
          const auto topk_group = k.count("topk_group", Need::Optional);
          k.use("topk_method");
          if (groups && topk_group && *topk_group < *groups) {
            b.put("moe.max_nodes_per_token", str(*topk_group), k.loc("topk_group"),
                  "topk_group of n_group " + str(*groups) + " (" + *method + "), a group per node");
          }
        } else if (method) {
          k.use("topk_method");
        }
      }
    }
  }
  if (is_moe && layers) {
    // The schema puts the dense layers first; parameter and FLOP counts only need how many.
    const std::vector<bool> dense = dense_mask(*layers, is_moe);
    const int n_dense = static_cast<int>(std::count(dense.begin(), dense.end(), true));
    const bool leading =
        std::all_of(dense.begin(), dense.begin() + n_dense, [](bool d) { return d; });
    if (n_dense == *layers) {
      b.erase("moe");
      out.notes.push_back("no layer is MoE under " + moe_rule + ": imported as a dense model");
    } else {
      b.put("moe.dense_layers", str(n_dense), moe_loc,
            moe_rule + (leading ? "" : " (positions moved first)"));
      if (!leading) {
        std::vector<std::string> where;
        for (int i = 0; i < *layers; ++i) {
          if (dense[static_cast<std::size_t>(i)]) where.push_back(str(i));
        }
        out.notes.push_back("dense layers " + util::join(where, ", ") +
                            " are not the leading ones; paraplan places its " + str(n_dense) +
                            " dense layers first (counts exact, pipeline placement approximate)");
      }
    }
  }
  if (fam == Family::DeepseekV3) {
    if (auto v = k.count("num_nextn_predict_layers", Need::Optional, 0, 64)) {
      b.put("mtp_depth", str(*v), k.loc("num_nextn_predict_layers"), "num_nextn_predict_layers");
    }
  }
  if (k.present("attention_dropout")) {
    if (auto v = k.number("attention_dropout", 0.0, 0.99)) {
      b.put("attention_dropout", root.find("attention_dropout")->scalar, k.loc("attention_dropout"),
            "attention_dropout");
    }
  }
  if (neox && k.present("hidden_dropout")) {
    if (auto v = k.number("hidden_dropout", 0.0, 0.99)) {
      b.put("hidden_dropout", root.find("hidden_dropout")->scalar, k.loc("hidden_dropout"),
            "hidden_dropout");
    }
  }

  // Things the schema cannot say, worth a line.
  if (gpt_oss) {
    out.notes.push_back(
        "attention sinks (one learnable softmax offset per head, num_attention_heads x "
        "num_hidden_layers parameters) are not counted; attention costs as without them");
  }
  if (neox) {
    if (auto v = k.peek_text("use_parallel_residual"); v && *v == "true") {
      out.notes.push_back(
          "use_parallel_residual: attention and MLP run side by side from one input; costed as a "
          "sequential layer (same parameters and FLOP)");
    }
  }

  out.unmapped = k.unused();
  out.model = b.tree();
  std::string first = name + ": imported from " + display + " (model_type " + *type + ")";
  if (!options.command.empty()) first += " by `" + options.command + "`";
  std::string header =
      comment_lines(first + ". Each value names the config.json key it came from.");
  if (!out.unmapped.empty())
    header += comment_lines("Not mapped: " + util::join(out.unmapped, ", ") + ".");
  for (const std::string& n : out.notes) header += comment_lines("Note: " + n + ".");
  out.yaml = header + b.yaml();
  return out;
}

}  // namespace paraplan::config
