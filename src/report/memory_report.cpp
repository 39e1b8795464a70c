#include "report/memory_report.hpp"

#include <cstdio>
#include <string>

#include "config/parse.hpp"
#include "paraplan/report.hpp"
#include "util/strings.hpp"
#include "paraplan/units.hpp"

namespace paraplan {
namespace report {

void write_memory_fields(JsonWriter& w, const MemoryEstimate& m) {
  w.key("memory_bytes").begin_object();
  if (!m.stages.empty()) {
    const StageMemory& s = m.stages[static_cast<std::size_t>(m.worst_stage)];
    w.field("weights", s.weights).field("gradients", s.gradients);
    w.field("optimizer_states", s.optimizer_states).field("activations", s.activations);
    w.field("buffers", s.buffers).field("reserve", s.reserve).field("total", s.total);
  }
  w.field("capacity", m.capacity);
  w.end_object();
  w.field("worst_stage", m.worst_stage);
  w.field("micro_batches", m.micro_batches);
  w.key("host").begin_object();
  w.field("bytes_per_node", m.host_bytes_per_node).field("capacity", m.host_capacity);
  w.end_object();
  w.key("stages").begin_array();
  for (const StageMemory& s : m.stages) {
    w.begin_object();
    w.field("stage", s.stage).field("layers", s.layers);
    w.field("dense_layers", s.dense_layers).field("moe_layers", s.moe_layers);
    w.field("embedding", s.embedding).field("head", s.head);
    w.field("dense_params", s.dense_params).field("expert_params", s.expert_params);
    w.field("in_flight", s.in_flight);
    w.field("weights", s.weights).field("gradients", s.gradients);
    w.field("optimizer_states", s.optimizer_states).field("activations", s.activations);
    w.field("buffers", s.buffers).field("reserve", s.reserve).field("total", s.total);
    w.field("allocator_excess", s.allocator_excess);
    w.field("host_bytes", s.host_bytes);
    w.key("activations_by_module").begin_object();
    for (const MemoryPart& p : s.activation_parts) w.field(p.name, p.bytes);
    w.end_object();
    w.key("buffers_by_kind").begin_object();
    for (const MemoryPart& p : s.buffer_parts) w.field(p.name, p.bytes);
    w.end_object();
    w.end_object();
  }
  w.end_array();
}

}  // namespace report

namespace {

using util::fmt;

std::string pad(std::string s, std::size_t width, bool right = true) { return util::pad(std::move(s), width, right); }

std::string gb(double bytes) { return fmt("%.2f", bytes / 1e9); }

}  // namespace

std::string memory_json(const Plan&, const MemoryEstimate& m) {
  report::JsonWriter w;
  w.begin_object();
  w.field("feasible", m.feasible);
  w.key("infeasible_reasons").begin_array();
  for (const std::string& r : m.infeasible_reasons) w.value(r);
  w.end_array();
  report::write_memory_fields(w, m);
  w.end_object();
  return w.str() + "\n";
}

std::string memory_text(const Plan& plan, const MemoryEstimate& m) {
  const Strategy& s = plan.strategy;
  std::string out;
  out += "Memory per device (GB = 1e9 bytes), " + std::to_string(m.micro_batches) +
         " micro-batches per step, schedule " +
         std::string(config::spelling(config::kScheduleNames, s.schedule)) + ", ZeRO-" +
         std::to_string(s.training.zero) + ", " +
         std::string(config::spelling(config::kOptimizerNames, s.training.optimizer)) +
         (s.training.optimizer_offload ? " (offloaded)" : "") + ", recompute " +
         config::recompute_label(s.training) +
         (s.training.activation_offload ? ", activation offload" : "") + "\n";
  out += pad("stage", 6, false) + pad("layers", 10) + pad("in-flight", 11) + pad("weights", 10) +
         pad("grads", 10) + pad("optim", 10) + pad("activ", 10) + pad("buffers", 10) +
         pad("reserve", 9) + pad("total", 10) + "\n";
  for (const StageMemory& st : m.stages) {
    std::string layers =
        std::to_string(st.dense_layers) + "d+" + std::to_string(st.moe_layers) + "m";
    if (st.embedding) layers = "E " + layers;
    if (st.head) layers += " H";
    out += pad(std::to_string(st.stage) + (st.stage == m.worst_stage ? "*" : ""), 6, false) +
           pad(layers, 10) + pad(fmt("%.1f", st.in_flight), 11) + pad(gb(st.weights), 10) +
           pad(gb(st.gradients), 10) + pad(gb(st.optimizer_states), 10) +
           pad(gb(st.activations), 10) + pad(gb(st.buffers), 10) + pad(gb(st.reserve), 9) +
           pad(gb(st.total), 10) + "\n";
  }
  out += "(E = embedding, H = head/loss/MTP, d/m = dense/MoE layers, * = worst stage)\n";
  if (!m.stages.empty()) {
    const StageMemory& w = m.stages[static_cast<std::size_t>(m.worst_stage)];
    out += "\nWorst stage " + std::to_string(w.stage) + ": " + units::format_size(w.total) +
           " of " + units::format_size_binary(m.capacity) + " (" + units::format_size(m.capacity) +
           "); " + fmt("%.3g", w.dense_params / 1e9) + " B dense and " +
           fmt("%.3g", w.expert_params / 1e9) + " B expert parameters on the device\n";
    out += "  activations by module (" + fmt("%.1f", w.in_flight) + " in-flight sets):\n";
    for (const MemoryPart& p : w.activation_parts) {
      out += "    " + pad(p.name, 24, false) + pad(units::format_size(p.bytes), 12) + "\n";
    }
    out += "  buffers:\n";
    for (const MemoryPart& p : w.buffer_parts) {
      out += "    " + pad(p.name, 24, false) + pad(units::format_size(p.bytes), 12) + "\n";
    }
    if (w.allocator_excess != 0) {
      out += "  reserve: " + units::format_size(w.reserve - w.allocator_excess) +
             " memory_reserve, " + units::format_size(w.allocator_excess) +
             " held by the caching allocator beyond the transient tensors (activations and buffers"
             " x calibration.allocator - 1)\n";
    }
  }
  if (m.host_bytes_per_node > 0) {
    out +=
        "\nHost memory (offload): " + units::format_size(m.host_bytes_per_node) + " per node of " +
        (m.host_capacity > 0 ? units::format_size(m.host_capacity) : std::string("unknown")) + "\n";
  }
  out += m.feasible ? "\nfits in memory\n" : "\ndoes not fit:\n";
  for (const std::string& r : m.infeasible_reasons) out += "  " + r + "\n";
  return out;
}

}  // namespace paraplan
