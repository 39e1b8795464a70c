#pragma once
// Reads the events of a Chrome trace / PyTorch profiler JSON file (`{"traceEvents": [...]}`
// or a bare array of events): only what a profile calibration needs, in one pass, with
// line:col positions for errors.

#include <string>
#include <string_view>
#include <vector>

namespace paraplan::calibrate {

/// One trace event.
struct TraceEvent {
  std::string name, cat, ph;
  std::string pid, tid;  ///< as the trace writes them (numbers or strings); only equality matters
  double ts_us = 0, dur_us = 0;
  int line = 0;  ///< where the event object starts
};

/// Parse error with its position (1-based line and column).
struct TraceError {
  int line = 0, col = 0;
  std::string message;
};

/// The events of `text`; on malformed JSON, `error` is set and the events read so far kept.
std::vector<TraceEvent> read_trace_events(std::string_view text, TraceError& error);

}  // namespace paraplan::calibrate
