#pragma once
// Waiting at a shared resource (a NIC, an expert queue) fed by a stream of chunks.
//
// Kingman's G/G/1 approximation (Kingman 1961; SEED_DIGEST.md sec. 7.1):
//   E[W] = (rho / (1 - rho)) x ((ca^2 + cs^2) / 2) x tau
// rho: utilisation, ca / cs: coefficients of variation of inter-arrival and service
// times, tau: mean service time. Exact for M/M/1 (ca = cs = 1).

namespace paraplan::cost {

/// Expected wait in queue; rho is clamped to [0, 0.99] (at rho >= 1 the resource is the
/// bottleneck and its time is already the stage time, not a wait).
double kingman_wait(double rho, double ca, double cs, double service_s);

/// Waiting of a chunked pipeline stage: `chunks` chunks of mean service `service_s` each,
/// arriving every `interarrival_s`, chunk-size variability `ca`, link variability `cs`.
/// Returns the extra time the stage's last chunk finishes late on average (one mean wait).
double pipeline_queueing(double service_s, double interarrival_s, double ca, double cs);

}  // namespace paraplan::cost
