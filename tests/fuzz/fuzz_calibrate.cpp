// libFuzzer target: the calibration parsers (nccl-tests logs and size tables, GEMM sweep
// CSVs, DeepEP logs, per-op CSVs and Chrome/PyTorch trace JSON, the attention, memory-bound
// and launch benchmark CSVs with their fits). They read files, so the
// input is written to one first; each parser may only return or throw ConfigError.

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "paraplan/calibrate.hpp"
#include "paraplan/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 256 * 1024) return 0;
  static const std::string path = "/tmp/paraplan_fuzz_calibrate_" + std::to_string(getpid());
  const int kind = data[0] % 8;
  static const char* suffix[] = {".log", ".csv", ".log", ".csv", ".json", ".csv", ".csv", ".csv"};
  const std::string file = path + suffix[kind];
  if (FILE* f = std::fopen(file.c_str(), "wb")) {
    std::fwrite(data + 1, 1, size - 1, f);
    std::fclose(f);
  } else {
    return 0;
  }
  try {
    switch (kind) {
      case 0: (void)paraplan::calibrate_collective(paraplan::parse_collective_log(file, "")); break;
      case 1: (void)paraplan::read_gemm_rows(file, 989e12); break;
      case 2: (void)paraplan::parse_deepep_log(file); break;
      case 5: (void)paraplan::calibrate_attention(paraplan::read_attention_rows(file, 989e12), 132); break;
      case 6: (void)paraplan::calibrate_memory(paraplan::read_memory_rows(file), 3.35e12); break;
      case 7: (void)paraplan::read_launch(file); break;
      default: (void)paraplan::read_profile(file); break;
    }
  } catch (const paraplan::ConfigError&) {
    // refused with a located message: fine
  }
  std::remove(file.c_str());
  return 0;
}
