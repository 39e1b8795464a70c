#pragma once
// Writes a MemoryEstimate's keys into an open JSON object, so that a combined estimate
// (the `evaluate` command) can carry the pinned `memory_bytes` keys at its top level.

#include "paraplan/estimate.hpp"
#include "report/json.hpp"

namespace paraplan::report {

/// Adds `memory_bytes`, `worst_stage`, `micro_batches`, `host` and `stages` to the object
/// `w` is inside (not `feasible` / `infeasible_reasons`, which a combined estimate merges
/// with its other checks).
void write_memory_fields(JsonWriter& w, const MemoryEstimate& m);

}  // namespace paraplan::report
