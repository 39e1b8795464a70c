#pragma once
// The pipeline layout of a schedule: which layers each rank's chunks hold, how many
// micro-batches a step runs, and how many activation sets a rank holds at its peak. Step
// time (closed form and simulation) and memory both read it.

#include <algorithm>
#include <memory>
#include <vector>

#include "paraplan/spec.hpp"

namespace paraplan::schedule {

/// A contiguous slice of the model that one pipeline rank runs (a stage, or a virtual stage
/// of an interleaved / V-shaped schedule).
struct Chunk {
  int first_layer = 0;     ///< index of its first transformer layer
  int layers = 0;          ///< transformer layers in it
  bool embedding = false;  ///< holds the input embedding (the first chunk)
  bool head = false;       ///< holds final norm, LM head and loss (the last chunk)
  bool mtp = false;        ///< holds the MTP layers (with the head unless a layout says otherwise)
  /// Of its layers, those among the model's first `model_dense` (the dense ones come first).
  [[nodiscard]] int dense_layers(int model_dense) const {
    return std::max(0, std::min(first_layer + layers, model_dense) - first_layer);
  }
  /// Of its layers, those that recompute when `recompute_layers` of each chunk do (its first
  /// ones, Megatron's block method; 0 = every layer), and of those the dense ones.
  [[nodiscard]] int recomputed(int recompute_layers) const {
    return recompute_layers > 0 ? std::min(recompute_layers, layers) : layers;
  }
  [[nodiscard]] int recomputed_dense(int recompute_layers, int model_dense) const {
    return std::min(recomputed(recompute_layers), dense_layers(model_dense));
  }
};

/// Layers per chunk in model order: L layers over V chunks as evenly as possible; the
/// V - L % V chunks one layer short are the outermost ones (first, last, second, second-
/// to-last, ...), which also hold the embedding and the head. With V = L + 1 or L + 2 the
/// outermost chunks hold only the embedding / the head. `first` / `last` > 0 fix the first
/// / last chunk's layers (Megatron's decoder_first/last_pipeline_num_layers); `embedding` /
/// `loss` count the embedding / head as one more layer in the spread (Megatron's
/// account_for_embedding/loss_in_pipeline_split).
std::vector<int> chunk_layer_counts(int layers, int chunks, int first = 0, int last = 0,
                                    bool embedding = false, bool loss = false);

/// The chunks each pipeline rank holds. A `parallel.pipeline_model_parallel_layout` gives
/// every chunk's contents (the rules have checked it against the model and the schedule);
/// otherwise chunk_layer_counts spreads the layers. 1F1B / zero-bubble: chunk r. Interleaved: chunks
/// r, r + pp, ... (Megatron). DualPipe: stages r and pp - 1 - r (two copies of the model).
/// DualPipeV: chunks r and 2 pp - 1 - r of 2 pp (one copy).
/// Memoized per thread by what the layout depends on (layers, pp, vpp, schedule, first /
/// last stage layers, embedding / loss in the split): the search asks for a few layouts
/// hundreds of thousands of times. The memo holds at most 64 layouts; the pointer keeps
/// its layout alive.
std::shared_ptr<const std::vector<std::vector<Chunk>>> rank_chunks(const ModelSpec& m, const Strategy& s);

/// Transformer layers of the model that recompute, dense and MoE: every one, or with
/// training.recompute_layers the first that many of each model chunk (each chunk once, though
/// DualPipe places it on two ranks). Under `recompute: none` what would recompute.
std::pair<int, int> recomputed_layers(const ModelSpec& m, const Strategy& s);

/// Runs of consecutive pipeline ranks whose chunks hold the same: per chunk in order its
/// dense and MoE layer counts (`dense_layers` = the model's dense layers, which come first),
/// embedding, head and MTP flags. Such ranks cost the same time per micro-batch and hold the
/// same parameters; only their in-flight activation sets differ, and those never grow with
/// the rank (in_flight_sets). The search's fast paths visit one rank per run. Memoized per
/// thread beside rank_chunks (at most 64 entries).
struct RankRuns {
  std::shared_ptr<const std::vector<std::vector<Chunk>>> ranks;  ///< rank_chunks(m, s)
  std::vector<int> starts;  ///< the first rank of each run, ascending, from 0
  /// What a rank's chunks hold together (rank_held).
  struct Held {
    int dense = 0, moe = 0;       ///< transformer layers of each kind
    int embedding = 0, head = 0;  ///< chunks holding the embedding, the head
    int mtp = 0;                  ///< chunks holding the MTP layers
    /// Chunks, on a rank without the embedding, with the head only, the MTP layers only, or
    /// both (each may need its own copy of a tied or MTP embedding).
    int head_apart = 0, mtp_apart = 0, both_apart = 0;
    std::size_t chunks = 0;
  };
  std::vector<Held> held;  ///< of each run's first rank, one per start
};
std::shared_ptr<const RankRuns> rank_runs(const ModelSpec& m, const Strategy& s, int dense_layers);
/// What the chunks of one rank hold together; `dense_layers` = the model's leading dense layers.
RankRuns::Held rank_held(const std::vector<Chunk>& chunks, int dense_layers);

/// Micro-batches per step per DP rank: global_batch / (dp x micro_batch).
int micro_batches(const Strategy& s);

/// Runs of the pipeline schedule per step (training.pipeline_runs, at least 1): each with its
/// own fill and drain. Inline: the step reads it for every candidate.
inline int pipeline_runs(const Strategy& s) { return std::max(1, s.training.pipeline_runs); }

/// Micro-batches of one run of the pipeline schedule: micro_batches / pipeline_runs.
int run_micro_batches(const Strategy& s);

/// DP synchronisations per step: one per run of the schedule under pipelining (torch's
/// stage reduces its gradients after its last backward of each schedule step,
/// PipelineStage.backward_maybe_with_nosync, pytorch/pytorch@88fa1e7
/// torch/distributed/pipelining/stage.py), one without.
inline int dp_syncs(const Strategy& s) { return s.parallel.pp > 1 ? pipeline_runs(s) : 1; }

/// Activation sets (micro-batch x chunk) rank r holds at its peak:
/// 1F1B and zero-bubble (ZB-H1): min(pp - r, m);
/// interleaved: min(2 (pp - r - 1) + (vpp - 1) pp + 1, m vpp) (Megatron's warm-up + 1);
/// DualPipe: min(pp + 1, m) stage sets; DualPipeV: min(2 pp + 1, 2 m) chunk sets.
double in_flight_sets(const Strategy& s, int rank, int micro_batches);

}  // namespace paraplan::schedule
