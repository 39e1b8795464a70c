#include "paraplan/report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "config/parse.hpp"
#include "report/json.hpp"
#include "paraplan/planner.hpp"

namespace paraplan {
namespace {

using report::JsonWriter;

int stream_id(const std::string& stream) {
  if (stream == "compute") return 0;
  if (stream == "p2p") return 1;
  return 2;
}

std::string task_name(const TimelineEvent& e, bool chunks) {
  if (e.stream != "compute" || e.kind == "optimizer") return e.kind;
  std::string n = e.kind + std::to_string(e.micro);
  if (chunks) n += ".c" + std::to_string(e.chunk);
  return n;
}

bool several_chunks(const Timeline& tl) {
  return std::any_of(tl.events.begin(), tl.events.end(), [](const TimelineEvent& e) { return e.chunk > 0; });
}

}  // namespace

std::string chrome_trace(const Timeline& tl, const std::string& title) {
  JsonWriter w;
  w.begin_object();
  w.field("displayTimeUnit", "ms");
  w.key("otherData").begin_object();
  w.field("title", title);
  w.field("schedule", config::spelling(config::kScheduleNames, tl.schedule));
  w.field("stages", tl.stages).field("micro_batches", tl.micro_batches);
  w.field("step_time_s", tl.step_time_s).field("pipeline_s", tl.pipeline_s);
  w.end_object();
  w.key("traceEvents").begin_array();
  const bool chunks = several_chunks(tl);
  for (int r = 0; r < tl.stages; ++r) {
    w.begin_object().field("ph", "M").field("name", "process_name").field("pid", r);
    w.key("args").begin_object().field("name", "stage " + std::to_string(r)).end_object();
    w.end_object();
    w.begin_object().field("ph", "M").field("name", "process_sort_index").field("pid", r);
    w.key("args").begin_object().field("sort_index", r).end_object();
    w.end_object();
    for (const char* s : {"compute", "p2p", "dp"}) {
      w.begin_object().field("ph", "M").field("name", "thread_name").field("pid", r).field("tid", stream_id(s));
      w.key("args").begin_object().field("name", s).end_object();
      w.end_object();
    }
  }
  for (const TimelineEvent& e : tl.events) {
    w.begin_object();
    w.field("name", task_name(e, chunks)).field("cat", e.stream).field("ph", "X");
    w.field("ts", e.start_s * 1e6).field("dur", (e.end_s - e.start_s) * 1e6);
    w.field("pid", e.stage).field("tid", stream_id(e.stream));
    w.key("args").begin_object().field("micro_batch", e.micro).field("chunk", e.chunk).end_object();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

std::string gantt(const Timeline& tl, int micro) {
  std::ostringstream out;
  const int shown = std::min(tl.micro_batches, std::max(1, micro));
  out << "```mermaid\ngantt\n  title " << config::spelling(config::kScheduleNames, tl.schedule) << " pipeline, "
      << tl.stages << " stages, " << (shown < tl.micro_batches ? "first " + std::to_string(shown) + " of " : "")
      << tl.micro_batches << " micro-batches (simulated; ms)\n  dateFormat x\n  axisFormat %S.%L\n";
  const bool chunks = several_chunks(tl);
  std::map<int, std::ostringstream> sections;
  // Only compute tasks of the first micro-batches: the chart is for the shape of the schedule.
  for (const TimelineEvent& e : tl.events) {
    if (e.stream != "compute" || e.kind == "optimizer" || e.micro >= shown) continue;
    const long start = std::lround(e.start_s * 1e3);
    const long end = std::max(std::lround(e.end_s * 1e3), start + 1);
    sections[e.stage] << "  " << task_name(e, chunks) << " : " << start << ", " << end << "\n";
  }
  for (auto& [stage, s] : sections) out << "  section stage " << stage << "\n" << s.str();
  out << "```\n";
  return out.str();
}

}  // namespace paraplan
