// libFuzzer target: the YAML loaders (hardware, model, strategy, search space from text),
// then the full evaluation of every strategy that loads. A loader may only accept or throw
// ConfigError; an accepted strategy must evaluate to finite numbers (the planner's last
// guard throws paraplan::Error otherwise, which is a finding here). Input: a kind byte,
// then the YAML text.

#include <cstdint>
#include <cstdlib>
#include <string>

#include "paraplan/paraplan.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 64 * 1024) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 4) {
      case 0: (void)paraplan::parse_hardware(text, "fuzz.yaml"); break;
      case 1: (void)paraplan::parse_model(text, "fuzz.yaml"); break;
      case 2: {
        const paraplan::Plan plan = paraplan::parse_plan(text, "fuzz.yaml");
        (void)paraplan::Planner(plan.hardware, plan.model).explain(plan.strategy);
        break;
      }
      default: (void)paraplan::parse_space(text, "fuzz.yaml"); break;
    }
  } catch (const paraplan::ConfigError&) {
    // refused with located diagnostics: fine
  }
  return 0;
}
