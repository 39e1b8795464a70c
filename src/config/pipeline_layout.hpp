#pragma once
// Megatron-Core's pipeline layout string (--pipeline-model-parallel-layout, Megatron-LM
// docs/user-guide/features/pipeline_parallel_layout.md): model chunks split by `|`, each a
// run of `E` (embedding), `t` (transformer layer), `m` (MTP layer) and `L` (loss with the
// final norm and output head); `x*n` repeats a symbol, `(...)*n` a group; commas are only
// for reading. "Et|(tt|)*30mL" is 32 chunks: the embedding and one layer, thirty chunks of
// two layers, then the MTP layer and the loss.

#include <string>
#include <vector>

#include "paraplan/spec.hpp"

namespace paraplan::config {

/// Model chunks the strategy's schedule runs: pp; interleaved pp x vpp; DualPipeV 2 pp.
int model_chunks(const Strategy& s);
int model_chunks(int pp, int vpp, Schedule schedule);

/// What one model chunk of a layout holds.
struct LayoutChunk {
  int layers = 0;          ///< transformer layers (`t`)
  int mtp = 0;             ///< MTP layers (`m`)
  int embedding = 0;       ///< `E` (a valid layout has one, in its first chunk)
  int loss = 0;            ///< `L` (a valid layout has one, in its last chunk)
};

/// The chunks of `text` in model order. On a malformed string returns no chunks and sets
/// `error` to what is wrong and `error_at` to its 0-based offset in `text`.
std::vector<LayoutChunk> parse_pipeline_layout(const std::string& text, std::string& error, std::size_t& error_at);

/// The chunks of `text`, parsed once per thread while `text` stays the same (the search
/// checks one layout against every candidate); empty when malformed.
const std::vector<LayoutChunk>& layout_chunks(const std::string& text);

}  // namespace paraplan::config
