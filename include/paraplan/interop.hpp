#pragma once
/// Interoperation with the frameworks models and plans come from and go to: a Hugging Face
/// `config.json` read as a model, and a plan written as Megatron-LM or torchtitan launch
/// settings. docs/interop.md describes both.
///
/// A `.json` path is read as a Hugging Face config.json wherever a model is expected
/// (load_model, a strategy's `model:`, `--set model=...`, a model file's `extends:`).

#include <string>
#include <string_view>
#include <vector>

#include "paraplan/export.hpp"
#include "paraplan/spec.hpp"

namespace paraplan {

/// Settings of a config.json import.
struct HfImportOptions {
  std::string
      name;  ///< the model's name; empty = the folder of `.../NAME/config.json`, else the stem
  int seq_len = 0;      ///< sequence length; 0 = max_position_embeddings
  std::string command;  ///< the command line, recorded in the YAML's header comment
};

/// A Hugging Face config.json read as a paraplan model.
struct HfImport {
  ModelSpec model;         ///< as load_model would give it from `yaml`
  std::string yaml;        ///< a models/*.yaml file; each value names its config.json key
  std::string model_type;  ///< config.json's `model_type`
  std::vector<std::string> unmapped;  ///< top-level config.json keys not mapped, in file order
  std::vector<std::string>
      notes;  ///< what the model schema cannot say exactly, and what was assumed
};

/// The `model_type`s an import reads: deepseek_v2, deepseek_v3, gpt_neox, gpt_oss, llama,
/// mistral, mixtral, qwen3, qwen3_moe.
[[nodiscard]] PARAPLAN_EXPORT std::vector<std::string> hf_model_types();

/// Reads a config.json file. Throws ConfigError located in the JSON (`file:line:col`) when
/// it is not JSON, lacks a key its model_type needs, has a malformed value, or names a
/// model_type not supported.
[[nodiscard]] PARAPLAN_EXPORT HfImport import_hf_config(const std::string& path,
                                                        const HfImportOptions& options = {});
/// The same from JSON text; `display_name` is used in diagnostics and the model's name.
[[nodiscard]] PARAPLAN_EXPORT HfImport parse_hf_config(std::string_view json,
                                                       const std::string& display_name,
                                                       const HfImportOptions& options = {});

/// Training frameworks a plan can be exported to.
enum class LaunchTarget {
  Megatron,    ///< Megatron-LM pretrain_gpt.py arguments, as a bash array
  Torchtitan,  ///< a torchtitan job TOML: [parallelism], [training], [activation_checkpoint]
};

/// The launch settings of `plan` for `target`. Settings the target has no way to express
/// are written as comments `# not expressible: ...` naming the setting and, where there is
/// one, the nearest thing the target offers. Pure; never throws for a loaded plan.
[[nodiscard]] PARAPLAN_EXPORT std::string launch_settings(const Plan& plan, LaunchTarget target);

}  // namespace paraplan
