#pragma once
// Event simulation of one training step's pipeline: every (rank, chunk, micro-batch)
// forward F, input-gradient backward B and weight-gradient W as a task on its rank, in the
// order the schedule runs them, with the pipeline send/recv between ranks on the edges.
// Schedules (docs/cost-model.md, "Schedule simulation"):
//   1F1B          Narayanan et al. 2021 (PipeDream-Flush): warm-up p - r - 1 forwards, then
//                 one forward, one backward (B and W together); cool-down backwards.
//   interleaved   Megatron-LM's interleaved 1F1B over v chunks per rank (Narayanan et al. 2021);
//                 with `lockstep`, torch.distributed.pipelining's ScheduleInterleaved1F1B: its
//                 grid of time steps, each rank's transfers of a step batched and waited on
//                 before the next step (PipelineScheduleMulti._step_microbatches).
//   zero_bubble   ZB-H1 (Qi et al. 2023): 1F1B with W split from B; rank r defers up to
//                 p - r - 1 weight gradients into its cool-down, the same peak memory as 1F1B.
//   dualpipe      DeepSeek's DualPipe (deepseek-ai/DualPipe dualpipe.py): two directions,
//                 rank r holding stage r of one and stage p - 1 - r of the other, its eight
//                 steps including paired forward-backward chunks and zero-bubble W.
//   dualpipev     DualPipeV: DualPipe's "cut-in-half" V shape, chunks r and 2p - 1 - r of 2p.
// The simulation is the step's pipeline part; DP, optimizer and offload terms are added by
// the caller as in the closed form.

#include <string>
#include <vector>

#include "paraplan/spec.hpp"

namespace paraplan::schedule {

/// Durations of one micro-batch through one chunk of one rank (exposed communication
/// included): forward, input-gradient backward (with any recompute), weight gradient.
struct ChunkTimes {
  double f = 0, b = 0, w = 0;
};

/// What the simulation needs: per rank its chunks' times in the order rank_chunks() lists
/// them, the send/recv time of one micro-batch between neighbouring chunks, and whether that
/// send runs beside compute.
struct Pipeline {
  std::vector<std::vector<ChunkTimes>> ranks;
  double p2p_s = 0;
  bool p2p_overlapped = true;
  /// torch.distributed.pipelining's time steps (Overlap::pp_lockstep): the interleaved
  /// schedule runs torch's order of time steps, each rank's transfers of a step waited on
  /// before its next (other schedules: transfers not overlapped, as p2p_overlapped false).
  bool lockstep = false;
  int micro_batches = 1;
};

/// One executed task, for timelines.
struct Event {
  int rank = 0;
  char kind = 'F';   ///< 'F', 'B', 'W' or 'S' (a blocking send)
  int chunk = 0;     ///< the rank's chunk (local index)
  int micro = 0;     ///< micro-batch (per direction for DualPipe)
  double start = 0, end = 0;
};

/// Result of a simulation.
struct Simulation {
  double makespan = 0;              ///< first task start to last task end, seconds
  std::vector<double> busy;         ///< per rank: time running tasks
  std::vector<double> peak_sets;    ///< per rank: most (micro-batch, chunk) activation sets held
  std::vector<Event> events;        ///< filled when asked for
  bool ok = true;                   ///< false: the order deadlocked (a schedule bug)
  std::string error;
};

/// Simulates `p` under `schedule` (vpp chunks per rank for interleaved). `record` keeps the
/// events. Pure function.
Simulation simulate(Schedule schedule, const Pipeline& p, bool record = false);

}  // namespace paraplan::schedule
