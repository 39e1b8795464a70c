#pragma once
// A Hugging Face `config.json` as a paraplan model: the JSON tree (config/json.cpp) is
// mapped key by key onto the models/*.yaml schema. The result is a tree like a model file's
// whose values keep the location of the JSON value each came from, so read_model reports
// a bad value at its place in config.json, and the same tree printed as YAML.

#include <string>
#include <vector>

#include "config/tree.hpp"

namespace paraplan::config {

/// Settings of one import.
struct HfOptions {
  std::string name;     ///< the model's `name:`; empty = hf_name_from_path(display)
  int seq_len = 0;      ///< `seq_len:`; 0 = max_position_embeddings
  std::string command;  ///< how it was asked for, for the YAML header ("paraplan import-hf ...")
};

/// What a config.json became.
struct HfTree {
  Node model;                         ///< models/ schema, located in the JSON
  std::string model_type;             ///< config.json's model_type
  std::vector<std::string> unmapped;  ///< top-level keys not mapped, in file order
  std::vector<std::string> notes;     ///< what the schema cannot say exactly, and what was assumed
  std::string yaml;  ///< `model` as a model file, each value's source key in a comment
};

/// The model_types hf_model_tree reads, in alphabetical order.
const std::vector<std::string>& hf_model_types();

/// Maps the parsed config.json `root` (from `display`, its path as given). Every problem
/// (not an object, a missing or malformed key, an unknown model_type) goes into `diags`.
HfTree hf_model_tree(const Node& root, const std::string& display, const HfOptions& options,
                     Diags& diags);

/// The model name a path suggests: the folder's name for ".../NAME/config.json" (the
/// layout of a Hugging Face repository), otherwise the file's stem; lower case.
std::string hf_name_from_path(const std::string& path);

/// True for a path that names a JSON file (ends in `.json`).
bool is_json_path(std::string_view path);

}  // namespace paraplan::config
