#pragma once
// Tree -> spec for each file kind. Each reads every key it knows, reports every problem
// into Diags and returns what it could read; the caller throws when Diags is not empty.

#include "config/reader.hpp"
#include "config/tree.hpp"
#include "paraplan/spec.hpp"

namespace paraplan::config {

HardwareSpec read_hardware(const Node& root, Diags& diags);
ModelSpec read_model(const Node& root, Diags& diags);
/// Reads everything but `hardware:` / `model:` loading, which the loader does.
Strategy read_strategy(const Node& root, Diags& diags);
SearchSpace read_space(const Node& root, Diags& diags);

/// Enum spellings shared by strategy and space files (docs/inputs.md).
extern const EnumNames<Precision> kPrecisionNames;
extern const EnumNames<Optimizer> kOptimizerNames;
extern const EnumNames<Dispatch> kDispatchNames;
extern const EnumNames<Routing> kRoutingNames;
extern const EnumNames<Schedule> kScheduleNames;
extern const EnumNames<Objective> kObjectiveNames;
extern const EnumNames<CollectiveAlgorithm> kCollectiveAlgorithmNames;
extern const EnumNames<CpComm> kCpCommNames;
extern const EnumNames<Fp8Recipe> kFp8RecipeNames;
extern const EnumNames<Collective> kCollectiveNames;

/// The spelling of an enum value as files write it ("allgather", "1f1b", ...).
template <typename E>
std::string_view spelling(const EnumNames<E>& names, E value) {
  for (const auto& [text, v] : names) {
    if (v == value) return text;
  }
  return "?";
}

/// A recompute setting as a file writes it: "none", "full", or "[mla_up_proj, layernorm]".
std::string recompute_spelling(const Recompute& r);
/// The recompute setting in words: the spelling, and with training.recompute_layers how many
/// of each model chunk's layers ("full, 5 layers per chunk").
std::string recompute_label(const Training& t);

}  // namespace paraplan::config
