// libFuzzer target: the C API's string entry points, as a scheduler would call them with
// text from elsewhere. The input splits at NUL bytes into hardware, model and strategy
// YAML (the rest is ignored); every call must return a status (never crash), and with no include
// directory no string may reach a file outside the built-in presets.

#include <cstdint>
#include <string>
#include <vector>

#include "paraplan/paraplan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  std::vector<std::string> parts(4);
  std::size_t k = 0;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0 && k + 1 < parts.size()) {
      ++k;
      continue;
    }
    parts[k] += static_cast<char>(data[i]);
  }
  // Empty parts fall back to built-in presets, so that the later calls are reached.
  const std::string hw = parts[0].empty() ? "extends: h100-sxm-ib\n" : parts[0];
  const std::string model = parts[1].empty() ? "extends: llama3-70b\n" : parts[1];
  paraplan_planner* p = nullptr;
  char* error = nullptr;
  if (paraplan_planner_from_strings(hw.c_str(), model.c_str(), &p, &error) == PARAPLAN_OK) {
    char* json = nullptr;
    char* err2 = nullptr;
    (void)paraplan_evaluate(p, parts[2].c_str(), &json, &err2);
    paraplan_free(json);
    paraplan_free(err2);
    paraplan_planner_free(p);
  }
  paraplan_free(error);
  return 0;
}
