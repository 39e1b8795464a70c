// No input, however broken, crashes paraplan: truncated and mutated copies of every preset,
// binary junk, deep nesting, alias bombs, huge numbers and NaN either load or fail with a
// ConfigError (in process), and `paraplan check` exits 0 or 2, never by a signal.
// Mutations come from a fixed-seed generator, so every run tests the same inputs.

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "paraplan/config.hpp"
#include "paraplan/errors.hpp"

namespace fs = std::filesystem;
using namespace paraplan;

namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

/// Deterministic mutants of one text.
std::vector<std::string> mutants(const std::string& text, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  // Truncations at evenly spaced offsets.
  for (int i = 0; i < 24; ++i) out.push_back(text.substr(0, text.size() * i / 24));
  const std::string junk[] = {":", "-", "[", "]", "{", "}", "&a", "*a", "!", "|", ">", "'",
                              "\"", "#", "\t", "\n", std::string(1, '\0'), "\xff\xfe", "%",
                              "@", "`", "?", ",", "  ", "\xc3\x28"};
  // Random byte edits.
  for (int i = 0; i < 40 && !text.empty(); ++i) {
    std::string m = text;
    int edits = 1 + static_cast<int>(rng() % 6);
    for (int e = 0; e < edits; ++e) {
      std::size_t pos = rng() % m.size();
      m.replace(pos, 1, junk[rng() % std::size(junk)]);
    }
    out.push_back(std::move(m));
  }
  // Values replaced by hostile ones: after the first ": " of a line.
  const std::string hostile[] = {"nan", ".nan", ".inf", "-.inf", "-1", "0", "1e999",
                                 "99999999999999999999", "-99999999999999999999 GB", "[1, 2]",
                                 "{a: 1}", "~", "\"\"", "*undefined_alias", "!!binary AAAA",
                                 "1e-320 GB/s", "0x10", "true", "1e308 PB", "auto"};
  std::vector<std::string> lines = split_lines(text);
  for (int i = 0; i < 60 && !lines.empty(); ++i) {
    std::vector<std::string> m = lines;
    std::size_t li = rng() % m.size();
    std::size_t colon = m[li].find(": ");
    if (colon == std::string::npos) continue;
    m[li] = m[li].substr(0, colon + 2) + hostile[rng() % std::size(hostile)];
    out.push_back(join_lines(m));
  }
  // Line deletions, duplications and indentation shifts.
  for (int i = 0; i < 20 && lines.size() > 1; ++i) {
    std::vector<std::string> m = lines;
    std::size_t li = rng() % m.size();
    switch (i % 3) {
      case 0: m.erase(m.begin() + static_cast<std::ptrdiff_t>(li)); break;
      case 1: m.insert(m.begin() + static_cast<std::ptrdiff_t>(li), m[li]); break;
      default: m[li] = "   " + m[li]; break;
    }
    out.push_back(join_lines(m));
  }
  return out;
}

/// Documents that attack the parser itself rather than the schema.
std::vector<std::string> hostile_documents() {
  std::vector<std::string> out{
      "",
      "---",
      "--- !!map\n...",
      "~",
      "[]",
      "just a string",
      std::string(100000, '['),
      std::string(100000, '{'),
      [] {
        std::string s;
        for (int i = 0; i < 3000; ++i) s += std::string(static_cast<std::size_t>(i), ' ') + "a:\n";
        return s;
      }(),
      [] {  // billion laughs: each level doubles ten times
        std::string s = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
        for (int i = 1; i < 12; ++i) {
          s += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
          for (int j = 0; j < 10; ++j) s += std::string(j ? ", " : "") + "*a" + std::to_string(i - 1);
          s += "]\n";
        }
        return s;
      }(),
      std::string(1 << 20, 'x'),
      "name: " + std::string(1 << 16, 'y'),
      "extends: br166-ubbv2\nextends: h100-sxm-ib\n",
      "extends: [a, b]\nname: x\n",
      "extends: /\n",
      "extends: /dev/null.yaml\n",
      "hardware: /proc/self/mem.yaml\nmodel: deepseek-v3\nnodes: 1\nparallel: {}\ntraining: {}\n",
      "layers: 1\nlayers: 2\n",
      "? [a, b]\n: c\n",
      "device: {memory: 1e308 PB, memory_bandwidth: -0 B/s}\n",
  };
  std::mt19937 rng(12345);
  for (int i = 0; i < 8; ++i) {
    std::string bin(4096, '\0');
    for (char& c : bin) c = static_cast<char>(rng() & 0xff);
    out.push_back(bin);
  }
  return out;
}

/// Loads text as a file of `kind`: true on success, false on ConfigError. Any other
/// exception escapes and fails the test.
bool load_as(FileKind kind, const std::string& text) {
  try {
    switch (kind) {
      case FileKind::Hardware: (void)parse_hardware(text, "mutant.yaml"); break;
      case FileKind::Model: (void)parse_model(text, "mutant.yaml"); break;
      case FileKind::Strategy: (void)parse_plan(text, "mutant.yaml"); break;
      case FileKind::Space: (void)parse_space(text, "mutant.yaml"); break;
    }
    return true;
  } catch (const ConfigError& e) {
    REQUIRE_FALSE(e.diagnostics().empty());
    return false;
  }
}

/// Runs `paraplan check FILE` with output discarded; returns the wait status.
int run_check(const std::string& file) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      dup2(devnull, 1);
      dup2(devnull, 2);
    }
    execl(PARAPLAN_CLI, PARAPLAN_CLI, "check", file.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

}  // namespace

TEST_SUITE("config.robustness") {
  TEST_CASE("mutated presets and hostile documents load or fail with ConfigError, in process") {
    long ok = 0, rejected = 0;
    unsigned seed = 1;
    for (const Preset& p : presets()) {
      CAPTURE(p.name);
      for (const std::string& m : mutants(std::string(p.text), seed++)) {
        (load_as(p.kind, m) ? ok : rejected)++;
      }
    }
    for (const std::string& doc : hostile_documents()) {
      for (FileKind kind : {FileKind::Hardware, FileKind::Model, FileKind::Strategy, FileKind::Space}) {
        (load_as(kind, doc) ? ok : rejected)++;
      }
    }
    MESSAGE("loaded " << ok << ", rejected " << rejected);
    CHECK(rejected > ok);  // most mutants are broken; a generator that breaks nothing tests nothing
  }

  TEST_CASE("`paraplan check` exits 0 or 2 on broken files, never by a signal") {
    const fs::path dir = fs::temp_directory_path() / ("paraplan-robust-" + std::to_string(getpid()));
    fs::create_directories(dir);
    std::vector<std::string> docs = hostile_documents();
    unsigned seed = 1000;
    for (const Preset& p : presets()) {
      std::vector<std::string> m = mutants(std::string(p.text), seed++);
      for (std::size_t i = 0; i < m.size(); i += 12) docs.push_back(m[i]);  // a sample per preset
    }
    int exit0 = 0, exit2 = 0;
    for (std::size_t i = 0; i < docs.size(); ++i) {
      const fs::path file = dir / ("case" + std::to_string(i) + ".yaml");
      std::ofstream(file, std::ios::binary) << docs[i];
      int status = run_check(file.string());
      CAPTURE(file.string());
      REQUIRE_FALSE(WIFSIGNALED(status));
      REQUIRE(WIFEXITED(status));
      int code = WEXITSTATUS(status);
      CHECK((code == 0 || code == 2));
      (code == 0 ? exit0 : exit2)++;
    }
    MESSAGE(docs.size() << " files: " << exit0 << " passed the check, " << exit2 << " exit 2");
    fs::remove_all(dir);
  }
}
