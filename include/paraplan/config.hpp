#pragma once
/// Loading input files into spec structs. Every function throws paraplan::ConfigError
/// carrying all diagnostics of the file (`file:line:col: error: ...`); none prints.
///
/// A reference (`extends:`, a strategy's `hardware:` / `model:`, or a command-line
/// argument) is a path when it contains '/' or ends in `.yaml` / `.yml`, and otherwise the
/// name of a built-in preset of the expected kind. Relative paths resolve against the
/// directory of the file that holds the reference (the working directory for arguments).

#include <string>
#include <string_view>
#include <vector>

#include "paraplan/export.hpp"
#include "paraplan/spec.hpp"

namespace paraplan {

/// The four kinds of input file.
enum class FileKind { Hardware, Model, Strategy, Space };

/// A preset compiled into the library.
struct Preset {
  FileKind kind;
  std::string name;         ///< e.g. "br166-ubbv2"
  std::string path;         ///< e.g. "hardware/br166-ubbv2.yaml"
  std::string description;  ///< the file's `description:` line
  std::string_view text;    ///< the YAML source
};

/// All built-in presets, in a stable order (kind, then name).
[[nodiscard]] PARAPLAN_EXPORT const std::vector<Preset>& presets();

/// Hardware from a file path or a built-in name.
[[nodiscard]] PARAPLAN_EXPORT HardwareSpec load_hardware(const std::string& ref);
/// Model from a file path or a built-in name.
[[nodiscard]] PARAPLAN_EXPORT ModelSpec load_model(const std::string& ref);
/// Strategy with its hardware and model, from a file path or a built-in name.
/// Rule violations (check_rules) are reported as diagnostics at the strategy's keys.
[[nodiscard]] PARAPLAN_EXPORT Plan load_plan(const std::string& ref);
/// The same with `key.path=value` overrides applied on top of the file (the CLI's `--set`),
/// e.g. "parallel.ep=32", "training.recompute=[core_attn, mla_up_proj]". Values are YAML.
[[nodiscard]] PARAPLAN_EXPORT Plan load_plan(const std::string& ref, const std::vector<std::string>& sets);
/// Search space with `--set`-style overrides (lists allowed: "nodes=[16, 32]").
[[nodiscard]] PARAPLAN_EXPORT SpacePlan load_space(const std::string& ref, const std::vector<std::string>& sets);
/// Search space with its hardware and model.
[[nodiscard]] PARAPLAN_EXPORT SpacePlan load_space(const std::string& ref);

/// The same from YAML text; `display_name` is used in diagnostics, relative references
/// resolve against `base_dir` (empty = working directory).
[[nodiscard]] PARAPLAN_EXPORT HardwareSpec parse_hardware(std::string_view yaml,
                                                          const std::string& display_name,
                                                          const std::string& base_dir = {});
[[nodiscard]] PARAPLAN_EXPORT ModelSpec parse_model(std::string_view yaml,
                                                    const std::string& display_name,
                                                    const std::string& base_dir = {});
[[nodiscard]] PARAPLAN_EXPORT Plan parse_plan(std::string_view yaml,
                                              const std::string& display_name,
                                              const std::string& base_dir = {});
[[nodiscard]] PARAPLAN_EXPORT SpacePlan parse_space(std::string_view yaml,
                                                    const std::string& display_name,
                                                    const std::string& base_dir = {});

/// What YAML text from an untrusted source (the C API's strings) may open through
/// `extends:` and a strategy's `hardware:` / `model:`: built-in presets, and regular files
/// under `include_dir` (after resolving symlinks and `..`) when it is not empty; relative
/// paths resolve against it. Nothing else is opened, so no message can show anything of a
/// file outside it. A folder that is not one is a ConfigError.
struct IncludeScope {
  std::string include_dir;  ///< empty: built-in presets only
};

/// parse_hardware, parse_model, parse_strategy and parse_search_space for untrusted text:
/// references stay within `scope`.
[[nodiscard]] PARAPLAN_EXPORT HardwareSpec parse_hardware(std::string_view yaml,
                                                          const std::string& display_name,
                                                          const IncludeScope& scope);
[[nodiscard]] PARAPLAN_EXPORT ModelSpec parse_model(std::string_view yaml,
                                                    const std::string& display_name,
                                                    const IncludeScope& scope);

/// A strategy from YAML text for a given hardware and model (library users that hold the
/// specs already): `hardware:` / `model:` keys may be absent and are ignored; the rules are
/// checked against `hw` and `model`.
[[nodiscard]] PARAPLAN_EXPORT Strategy parse_strategy(std::string_view yaml, const std::string& display_name,
                                                      const HardwareSpec& hw, const ModelSpec& model);
/// A search space from YAML text; `hardware:` / `model:` keys may be absent.
[[nodiscard]] PARAPLAN_EXPORT SearchSpace parse_search_space(std::string_view yaml,
                                                             const std::string& display_name);
/// The same two for untrusted text, references within `scope` (IncludeScope).
[[nodiscard]] PARAPLAN_EXPORT Strategy parse_strategy(std::string_view yaml, const std::string& display_name,
                                                      const HardwareSpec& hw, const ModelSpec& model,
                                                      const IncludeScope& scope);
[[nodiscard]] PARAPLAN_EXPORT SearchSpace parse_search_space(std::string_view yaml,
                                                             const std::string& display_name,
                                                             const IncludeScope& scope);

/// What a file is, guessed from its keys (a strategy has `parallel:`, a model `layers:`,
/// a hardware file `device:`, a space lists or `auto` values or `objective:`), following
/// `extends:`. Throws ConfigError when it cannot tell.
[[nodiscard]] PARAPLAN_EXPORT FileKind detect_kind(const std::string& ref);

/// Loads any input file, whatever its kind; throws ConfigError on any problem.
/// Returns the detected kind.
PARAPLAN_EXPORT FileKind check_file(const std::string& ref);

/// Name of a kind: "hardware", "model", "strategy", "space".
[[nodiscard]] PARAPLAN_EXPORT std::string_view kind_name(FileKind kind) noexcept;

}  // namespace paraplan
