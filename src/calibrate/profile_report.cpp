// The words and the overlay file of a profile fit (calibrate profile).

#include <sstream>

#include "paraplan/calibrate.hpp"
#include "paraplan/units.hpp"
#include "util/strings.hpp"

namespace paraplan {

std::string profile_fit_text(const Profile& profile, const ProfileMap& map, const ProfileFit& fit, const Plan& plan,
                             const std::string& layer, bool passes_given) {
  using units::format_time;
  using util::fmt;
  using util::pad;
  std::ostringstream out;
  out << profile.file << ": " << (profile.trace ? "trace, " : "per-op table, ") << profile.rows.size()
      << (profile.trace ? " kernel names" : " rows") << "; map " << map.file << "; strategy " << plan.strategy.name << " ("
      << layer << " layer on " << plan.hardware.name << ")\n";
  if (profile.trace) {
    out << "layer passes in the trace: " << fit.forward_passes << " forward, " << fit.backward_passes << " backward ("
        << (passes_given ? "--passes" : "counted from the attention kernels") << ")\n";
  }
  if (fit.held_share > 0) {
    out << "model compute ops at 1 / (1 - " << fmt("%.3f", fit.held_share)
        << "): the layer's EP kernels held that share of the compute units through the overlapped window, as "
           "`evaluate` runs the layer\n";
  }
  out << "\n" << pad("row", 48, false) << pad("pass", 10, false) << pad("measured", 12, true) << pad("model", 12, true)
      << pad("error", 9, true) << pad("fitted", 12, true) << pad("error", 9, true) << "\n";
  for (const ProfileFitRow& r : fit.rows) {
    out << pad(r.name.substr(0, 47), 48, false) << pad(r.phase, 10, false) << pad(format_time(r.measured_s), 12, true)
        << pad(format_time(r.before_s), 12, true) << pad(fmt("%+.1f%%", 100 * (r.before_s / r.measured_s - 1)), 9, true)
        << pad(format_time(r.after_s), 12, true) << pad(fmt("%+.1f%%", 100 * (r.after_s / r.measured_s - 1)), 9, true)
        << "\n";
  }
  out << "mean |error| per row: " << fmt("%.1f%%", 100 * fit.mean_error_before) << " before, "
      << fmt("%.1f%%", 100 * fit.mean_error_after) << " after\n";
  auto line = [&](const char* pass, double measured, double before, double after) {
    out << "layer " << pass << ": measured " << format_time(measured) << ", model " << format_time(before) << " ("
        << fmt("%+.1f%%", 100 * (before / measured - 1)) << "), fitted " << format_time(after) << " ("
        << fmt("%+.1f%%", 100 * (after / measured - 1)) << ")\n";
  };
  if (fit.measured_forward_s > 0) line("forward ", fit.measured_forward_s, fit.before_forward_s, fit.after_forward_s);
  if (fit.measured_backward_s > 0) line("backward", fit.measured_backward_s, fit.before_backward_s, fit.after_backward_s);
  if (fit.measured_total_s > 0) line("kernels ", fit.measured_total_s, fit.rows_before_s, fit.rows_after_s);
  if (!fit.classes.empty()) {
    out << "\nby op class (each row's measured time shared out as the fitted model splits it):\n";
    out << pad("class", 28, false) << pad("measured", 12, true) << pad("model", 12, true) << pad("error", 9, true)
        << pad("fitted", 12, true) << pad("error", 9, true) << "\n";
    for (const ProfileFitClass& k : fit.classes) {
      if (k.measured_s <= 0) continue;
      out << pad(k.name, 28, false) << pad(format_time(k.measured_s), 12, true) << pad(format_time(k.before_s), 12, true)
          << pad(fmt("%+.1f%%", 100 * (k.before_s / k.measured_s - 1)), 9, true) << pad(format_time(k.after_s), 12, true)
          << pad(fmt("%+.1f%%", 100 * (k.after_s / k.measured_s - 1)), 9, true) << "\n";
    }
  }
  out << "\nfitted time multipliers (1 = the model as derived):\n";
  for (const std::string& f : fit.fitted) out << "  " << f << "\n";
  if (!fit.unmatched_rows.empty()) {
    out << "\nprofile rows no map entry matched (not fitted):\n";
    for (const ProfileRow& r : fit.unmatched_rows) {
      out << "  " << pad(r.name.substr(0, 90), 92, false) << pad(format_time(r.time_s), 12, true)
          << (r.count > 1 ? "  x" + std::to_string(r.count) : std::string()) << "\n";
    }
  }
  if (!fit.ignored_s.empty()) {
    out << "\nkernels the map ignores (not fitted):\n";
    for (const auto& [n, t] : fit.ignored_s) out << "  " << pad(n, 48, false) << pad(format_time(t), 12, true) << "\n";
  }
  if (!fit.unmatched_ops.empty()) {
    out << "\nmodel ops no profile row covers (kept as modelled):\n";
    for (const auto& [n, t] : fit.unmatched_ops) out << "  " << pad(n, 48, false) << pad(format_time(t), 12, true) << "\n";
  }
  return out.str();
}

std::string launch_estimate_text(const LaunchEstimate& l, const Plan& plan, double forward_passes,
                                 double backward_passes, bool adopted) {
  using util::fmt;
  std::ostringstream out;
  if (l.launches_per_kernel <= 0) return out.str();
  const DeviceSpec& d = plan.hardware.device;
  out << "\nkernel launches: " << l.launches << " GPU kernels in the trace for the "
      << fmt("%.0f", l.graph_kernels) << " the op graph counts in its " << fmt("%g", forward_passes) << " forward and "
      << fmt("%g", backward_passes) << " backward passes: " << fmt("%.3g", l.launches_per_kernel)
      << " launches per graph kernel (device.launches_per_kernel; " << plan.hardware.name << ": "
      << fmt("%g", d.launches_per_kernel) << ")\n";
  if (l.host_issue_s > 0) {
    out << "host: " << units::format_time(l.host_busy_s) << " busy on " << l.host_threads
        << " thread(s) (their cpu_op spans merged), " << units::format_time(l.host_issue_s)
        << " per launch (device.host_issue; " << plan.hardware.name << ": " << units::format_time(d.host_issue_s) << ")\n";
  } else {
    out << "host: no cpu_op events in the trace, device.host_issue not measured\n";
  }
  out << (adopted ? "the fit above was made with these (--launches), and the file below carries them\n"
                  : "(--launches fits with them and writes them into the file)\n");
  return out.str();
}

std::string profile_overlay_yaml(const ProfileFit& fit, const std::string& base, const std::string& name,
                                 const std::string& command, const std::string& date, const LaunchEstimate* launches) {
  std::ostringstream y;
  y << "# Written by `paraplan calibrate profile` on " << date << ":\n#   " << command << "\n";
  y << "# " << fit.rows.size() << " profile rows; mean |error| per row " << util::fmt("%.1f", 100 * fit.mean_error_before)
    << "% before the fit, " << util::fmt("%.1f", 100 * fit.mean_error_after) << "% after.\n";
  y << "# Time multipliers of the model, fitted to the measured profile (not derived from physics):\n";
  for (const std::string& f : fit.fitted) y << "#   " << f << "\n";
  if (!fit.classes.empty()) {
    y << "# By op class, measured (each row's time shared out as the fitted model splits it) -> fitted:\n";
    for (const ProfileFitClass& k : fit.classes) {
      if (k.measured_s <= 0) continue;
      y << "#   " << k.name << ": " << units::format_time(k.measured_s) << " -> " << units::format_time(k.after_s) << " ("
        << util::fmt("%+.1f%%", 100 * (k.after_s / k.measured_s - 1)) << ")\n";
    }
  }
  y << "extends: " << base << "\nname: " << name << "\n";
  y << "description: " << base << " calibrated to a measured profile (" << date << ")\n";
  y << "sources:\n  - \"" << command << " (" << date << ")\"\n";
  if (launches != nullptr && launches->launches_per_kernel > 0) {
    y << "device:\n  # " << launches->launches << " kernels in the trace for " << util::fmt("%.0f", launches->graph_kernels)
      << " graph kernels\n  launches_per_kernel: " << util::fmt("%.4g", launches->launches_per_kernel) << "\n";
    if (launches->host_issue_s > 0) {
      y << "  # " << util::fmt("%.4g", launches->host_busy_s * 1e3) << " ms of host threads' cpu_op spans over "
        << launches->launches << " launches\n  host_issue: " << util::fmt("%.4g", launches->host_issue_s * 1e6) << " us\n";
    }
  }
  y << "calibration:\n  source: \"" << command << " (" << date << ")\"\n  compute:\n";
  for (int c = 0; c < kOpClassCount; ++c) {
    const auto& v = fit.calibration.compute[static_cast<std::size_t>(c)];
    if (v[0] == 1 && v[1] == 1 && v[2] == 1) continue;
    y << "    " << kOpClassNames[c] << ": {forward: " << util::fmt("%.4g", v[0]) << ", backward: " << util::fmt("%.4g", v[1]);
    if (v[2] != v[1]) y << ", weight_grad: " << util::fmt("%.4g", v[2]);
    y << "}\n";
  }
  if (!fit.comm.empty()) {
    y << "  communication:\n";
    std::string open;
    for (const ProfileFit::Comm& c : fit.comm) {
      if (c.tier != open) {
        y << "    " << c.tier << ":\n";
        open = c.tier;
      }
      y << "      " << c.collective << ": " << util::fmt("%.4g", c.factor) << "\n";
    }
  }
  return y.str();
}

}  // namespace paraplan
