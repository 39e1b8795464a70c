#include "cost/queueing.hpp"

#include <algorithm>

namespace paraplan::cost {

double kingman_wait(double rho, double ca, double cs, double service_s) {
  rho = std::clamp(rho, 0.0, 0.99);
  return rho / (1.0 - rho) * (ca * ca + cs * cs) / 2.0 * service_s;
}

double pipeline_queueing(double service_s, double interarrival_s, double ca, double cs) {
  if (service_s <= 0 || interarrival_s <= 0) return 0.0;
  return kingman_wait(service_s / interarrival_s, ca, cs, service_s);
}

}  // namespace paraplan::cost
