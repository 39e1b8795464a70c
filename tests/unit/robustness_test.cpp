// No input, however broken, crashes paraplan: truncated and mutated copies of every preset,
// binary junk, deep nesting, alias bombs, huge numbers and NaN either load or fail with a
// ConfigError (in process), and `paraplan check` exits 0 or 2, never by a signal. What
// loads evaluates to finite numbers: no `nan` or `inf` in any report. Special files (a
// FIFO, /dev/zero, a folder), numbers that would divide to infinity, and arguments that
// used to be silent no-ops are exit 2 with their message (#21).
// Mutations come from a fixed-seed generator, so every run tests the same inputs.

#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "paraplan/calibrate.hpp"
#include "paraplan/config.hpp"
#include "paraplan/errors.hpp"
#include "paraplan/planner.hpp"
#include "paraplan/report.hpp"

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

/// What one run of the CLI did.
struct Run {
  int code = -1;           ///< exit status; -1 when killed by a signal or the time limit
  bool timed_out = false;  ///< still running after the limit (then killed)
  double seconds = 0;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Runs `paraplan ARGS...` in `cwd` with stdin closed, killing it after `limit_s`; standard
/// output goes to `stdout_to` when given (then `out` is empty).
Run run_cli(const std::vector<std::string>& args, const fs::path& cwd, double limit_s = 20,
            const char* stdout_to = nullptr) {
  const fs::path out_file = cwd / ".run.out", err_file = cwd / ".run.err";
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (chdir(cwd.c_str()) != 0) _exit(127);
    int in = open("/dev/null", O_RDONLY);
    int out = stdout_to != nullptr ? open(stdout_to, O_WRONLY) : open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0) _exit(127);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> argv{const_cast<char*>(PARAPLAN_CLI)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(PARAPLAN_CLI, argv.data());
    _exit(127);
  }
  Run r;
  int status = 0;
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (done == pid) break;
    if (r.seconds > limit_s) {
      r.timed_out = true;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!r.timed_out && WIFEXITED(status)) r.code = WEXITSTATUS(status);
  if (stdout_to == nullptr) r.out = slurp(out_file);
  r.err = slurp(err_file);
  return r;
}

/// A fresh scratch folder for one test case, removed at the end of it.
struct Scratch {
  fs::path dir;
  explicit Scratch(const std::string& name)
      : dir(fs::temp_directory_path() / ("paraplan-" + name + "-" + std::to_string(getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  fs::path write(const std::string& name, const std::string& text) const {
    const fs::path p = dir / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// The first `nan` or `inf` printed as a number (a word of its own, any case, any sign),
/// or "" when there is none; `infeasible` and `info` do not count.
std::string non_finite_token(const std::string& text) {
  auto letter = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
  for (std::size_t i = 0; i + 3 <= text.size(); ++i) {
    std::string word = text.substr(i, 3);
    for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (word != "nan" && word != "inf") continue;
    if ((i > 0 && letter(text[i - 1])) || (i + 3 < text.size() && letter(text[i + 3]))) continue;
    const std::size_t from = i < 40 ? 0 : i - 40;
    return text.substr(from, 80);
  }
  return {};
}

/// `text` without the free-text names of `plan` that a mutant set to `nan` or `-.inf`
/// (they are names, not numbers).
std::string without_names(std::string text, const Plan& plan) {
  std::vector<std::string> names{plan.hardware.name, plan.hardware.device.name, plan.model.name, plan.strategy.name};
  for (const TierSpec& t : plan.hardware.tiers) {
    names.push_back(t.name);
    for (const FabricLevel& l : t.levels) names.push_back(l.name);
  }
  for (const ExtraLinkSpec& l : plan.hardware.extra_links) names.push_back(l.name);
  for (const std::string& name : names) {
    if (name.empty() || non_finite_token(name).empty()) continue;
    for (std::size_t at; (at = text.find(name)) != std::string::npos;) text.erase(at, name.size());
  }
  return text;
}

/// A strategy each hardware or model preset can be evaluated with: a built-in strategy on
/// it, or a dense TP8 PP4 layout on 4 nodes.
std::string strategy_for(const Preset& p) {
  for (const Preset& s : presets()) {
    if (s.kind != FileKind::Strategy) continue;
    const Plan plan = load_plan(s.name);
    if ((p.kind == FileKind::Hardware && plan.strategy.hardware == p.name) ||
        (p.kind == FileKind::Model && plan.strategy.model == p.name)) {
      return "extends: " + s.name + "\n";
    }
  }
  const std::string hw = p.kind == FileKind::Hardware ? p.name : "h100-sxm-ib";
  const std::string model = p.kind == FileKind::Model ? p.name : "llama3-70b";
  // 32 devices: 4 nodes of 8, or 8 of GB200's 4
  const int nodes = 32 / std::max(1, load_hardware(hw).devices_per_node());
  return "hardware: " + hw + "\nmodel: " + model + "\nnodes: " + std::to_string(nodes) +
         "\nparallel: {tp: 8, pp: 4, dp: 1}\ntraining: {micro_batch: 1, global_batch: 16, recompute: full}\n";
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

TEST_SUITE("config.special_files") {
  // A FIFO without a writer blocks a plain open() forever, /dev/zero never ends and a
  // folder is not text: each is refused at once, before anything is read.
  TEST_CASE("a FIFO, /dev/zero and a folder are refused in a second: exit 2, not a regular file") {
    Scratch s("special");
    REQUIRE(mkfifo((s.dir / "fifo.yaml").c_str(), 0600) == 0);
    const std::vector<std::pair<std::string, std::string>> cases{
        {"fifo.yaml", "`fifo.yaml` is not a regular file (a FIFO)"},
        {"/dev/zero", "`/dev/zero` is not a regular file (a character device)"},
        {s.dir.string(), "is not a regular file (a directory)"},
    };
    for (const auto& [file, message] : cases) {
      CAPTURE(file);
      const Run r = run_cli({"check", file}, s.dir);
      CHECK_FALSE(r.timed_out);
      CHECK(r.seconds < 1.0);
      CHECK(r.code == 2);
      CHECK(contains(r.err, message));
    }
  }

  TEST_CASE("hardware=/dev/zero through --set and through a file: exit 2 within a second") {
    Scratch s("devzero");
    s.write("zero.yaml", "extends: br166-ep16-mb2\nhardware: /dev/zero\n");
    const Run set = run_cli({"evaluate", "br166-ep16-mb2", "--set", "hardware=/dev/zero"}, s.dir);
    CHECK_FALSE(set.timed_out);
    CHECK(set.seconds < 1.0);
    CHECK(set.code == 2);
    CHECK(contains(set.err, "--set:1:1: error: `/dev/zero` is not a regular file (a character device)"));
    const Run file = run_cli({"evaluate", "zero.yaml"}, s.dir);
    CHECK_FALSE(file.timed_out);
    CHECK(file.seconds < 1.0);
    CHECK(file.code == 2);
    CHECK(contains(file.err, "zero.yaml:2:11: error: `/dev/zero` is not a regular file (a character device)"));
  }

  TEST_CASE("measurement files: a FIFO, a folder and a missing file are refused, not waited on") {
    Scratch s("special-data");
    REQUIRE(mkfifo((s.dir / "log.txt").c_str(), 0600) == 0);
    const Run fifo = run_cli({"calibrate", "collective", "log.txt", "-H", "h100-sxm-ib"}, s.dir);
    CHECK_FALSE(fifo.timed_out);
    CHECK(fifo.code == 2);
    CHECK(contains(fifo.err, "log.txt: error: `log.txt` is not a regular file (a FIFO)"));
    const Run trace = run_cli({"calibrate", "profile", "log.txt", "-s", "br166-ep16-mb2"}, s.dir);
    CHECK_FALSE(trace.timed_out);
    CHECK(trace.code == 2);
    CHECK(contains(trace.err, "`log.txt` is not a regular file (a FIFO)"));
    const Run dir = run_cli({"calibrate", "gemm", s.dir.string(), "-H", "h100-sxm-ib"}, s.dir);
    CHECK(dir.code == 2);
    CHECK(contains(dir.err, "is not a regular file (a directory)"));
    const Run missing = run_cli({"calibrate", "collective", "/nonexistent", "-H", "h100-sxm-ib"}, s.dir);
    CHECK(missing.code == 2);
    CHECK(contains(missing.err, "/nonexistent: error: cannot open `/nonexistent`: no such file"));
  }

  TEST_CASE("a YAML file over 16 MiB is refused without being parsed") {
    Scratch s("big");
    s.write("big.yaml", "name: x\n" + std::string((16u << 20) + 1, '#'));
    try {
      (void)load_hardware((s.dir / "big.yaml").string());
      FAIL("a 16 MiB file loaded");
    } catch (const ConfigError& e) {
      CHECK(e.diagnostics().front().message ==
            "`" + (s.dir / "big.yaml").string() +
                "` is larger than 16 MiB, the limit for a YAML input; is it the right file?");
    }
  }

  TEST_CASE("one YAML document per file: a second one is an error at its `---` line") {
    Scratch s("twodoc");
    s.write("two.yaml", "extends: br166-ubbv2\nname: x\n---\nname: y\n");
    s.write("trailing.yaml", "extends: br166-ubbv2\nname: x\n---\n# nothing\n");
    const Run two = run_cli({"check", "two.yaml"}, s.dir);
    CHECK(two.code == 2);
    CHECK(contains(two.err, "two.yaml:3:1: error: a second YAML document; an input file holds one"));
    const Run trailing = run_cli({"check", "trailing.yaml"}, s.dir);  // an empty one drops nothing
    CHECK(trailing.code == 0);
  }

  TEST_CASE("`extends:` takes a map: /dev/null, /etc/passwd, a scalar and an empty file are located errors") {
    Scratch s("extends");
    s.write("scalar.yaml", "just a value\n");
    s.write("empty.yaml", "");
    s.write("passwd.yaml", "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n");
    const std::vector<std::pair<std::string, std::string>> cases{
        {"/dev/null", "a.yaml:1:10: error: `/dev/null` is not a regular file (a character device)"},
        {"passwd.yaml",
         "a.yaml:1:10: error: `extends: passwd.yaml`: the file is not a map of `key: value` lines; "
         "`extends` takes a hardware file or preset"},
        {"scalar.yaml", "a.yaml:1:10: error: `extends: scalar.yaml`: the file is not a map of `key: value` lines"},
        {"empty.yaml", "a.yaml:1:10: error: `extends: empty.yaml`: the file is empty"},
    };
    for (const auto& [base, message] : cases) {
      CAPTURE(base);
      s.write("a.yaml", "extends: " + base + "\nname: x\ndevice: {name: x}\n");
      const Run r = run_cli({"check", "a.yaml"}, s.dir);
      CHECK(r.code == 2);
      CHECK(contains(r.err, message));
      CHECK_FALSE(contains(r.err, "nologin"));  // nothing of the file is quoted
    }
    if (fs::is_regular_file("/etc/passwd")) {
      s.write("a.yaml", "extends: /etc/passwd\nname: x\ndevice: {name: x}\n");
      const Run r = run_cli({"check", "a.yaml"}, s.dir);
      CHECK(r.code == 2);
      CHECK(contains(r.err, "a.yaml:1:10: error: `extends: /etc/passwd`: the file is not a map"));
    }
  }
}

TEST_SUITE("numbers.finite") {
  TEST_CASE("a rate of 1e-320 TB/s and an efficiency of 1e-320 are located errors at load") {
    Scratch s("tiny");
    s.write("bw.yaml", "extends: h100-sxm-ib\nname: x\ndevice:\n  memory_bandwidth: 1e-320 TB/s\n");
    s.write("gemm.yaml", "extends: h100-sxm-ib\nname: x\ndevice:\n  gemm_efficiency:\n    bf16:\n      default: 1e-320\n");
    const Run bw = run_cli({"evaluate", "deepseek-v3-h800", "--set", "hardware=bw.yaml"}, s.dir);
    CHECK(bw.code == 2);
    CHECK(contains(bw.err, "bw.yaml:4:21: error: `device.memory_bandwidth` = `1e-320 TB/s` is below 1 KB/s, "
                           "the smallest rate accepted"));
    CHECK(bw.out.empty());
    const Run gemm = run_cli({"check", "gemm.yaml"}, s.dir);
    CHECK(gemm.code == 2);
    CHECK(contains(gemm.err, "gemm.yaml:6:16: error: `device.gemm_efficiency.bf16.default` = 1e-320 is below "
                             "1e-06, the smallest fraction accepted"));
  }

  // The bounds keep results finite; if a bug still makes one infinite, it is an internal
  // error naming the field, never a number printed as `inf`. Spec structs built in code
  // skip the loader's bounds, so they can reach the guard.
  TEST_CASE("the last guard: a non-finite estimate is an Error naming its field, never a number") {
    Plan plan = load_plan("deepseek-v3-h800");
    plan.hardware.device.memory_bw_bytes_per_s = 1e-320;
    Planner planner(plan.hardware, plan.model);
    auto message_of = [](auto&& call) {
      try {
        call();
      } catch (const ConfigError&) {
        return std::string("ConfigError");
      } catch (const Error& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    const std::string evaluate = message_of([&] { (void)planner.evaluate(plan.strategy); });
    CAPTURE(evaluate);
    CHECK(contains(evaluate, "the estimate of `deepseek-v3-h800` has a non-finite `"));
    CHECK(contains(evaluate, "this is a bug"));
    const std::string explain = message_of([&] { (void)planner.explain(plan.strategy); });
    CHECK(contains(explain, "has a non-finite `"));
    SpacePlan space = load_space("deepseek-v3-h800-cluster");
    const std::string search = message_of([&] { (void)planner.search(space.space, SearchOptions{}); });
    CAPTURE(search);
    CHECK(contains(search, "has a non-finite `"));
  }

  TEST_CASE("calibrate: absurd times and rates are located errors, never -nan or a denormal written") {
    Scratch s("calib");
    s.write("coll.csv", "size,GB/s\n1024,1e-300\n2048,1e-300\n4096,1e-300\n");
    s.write("nccl.log",
            "# Collective test starting: all_reduce_perf\n"
            "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
            "        1024           256     float     sum      -1   1e-300    0.00    0.00      0\n"
            "        2048           512     float     sum      -1   1e-300    0.00    0.00      0\n");
    s.write("zero.log",
            "# Collective test starting: all_reduce_perf\n"
            "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
            "        1024           256     float     sum      -1     10.0    0.00    0.00      0\n"
            "        2048           512     float     sum      -1     10.0    0.00    0.00      0\n");
    s.write("gemm.csv", "m,n,k,tflops\n1024,1024,1024,1e-320\n");
    s.write("slow.csv", "m,n,k,time_us\n1024,1024,1024,1e300\n");
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
        {{"calibrate", "collective", "coll.csv", "-H", "h100-sxm-ib"},
         "coll.csv:2:6: error: bandwidth `1e-300` GB/s is below 1 KB/s, the smallest rate accepted"},
        {{"calibrate", "collective", "nccl.log", "-H", "h100-sxm-ib"},
         "nccl.log:3:56: error: time `1e-300` us is below 0.001 ns, the smallest time accepted"},
        {{"calibrate", "collective", "zero.log", "-H", "h100-sxm-ib"},
         "zero.log: error: no row has a positive busbw: nothing to calibrate a bandwidth from"},
        {{"calibrate", "gemm", "gemm.csv", "-H", "h100-sxm-ib"},
         "gemm.csv:2:1: error: achieved 1e-320 TFLOPS is below 1e-06 of the peak 989 TFLOPS: wrong units or columns?"},
        {{"calibrate", "gemm", "slow.csv", "-H", "h100-sxm-ib"},
         "slow.csv:2:16: error: time `1e300` is above 3600 s, the largest time accepted"},
        {{"calibrate", "mamf", "1e-300", "-H", "h100-sxm-ib"},
         "paraplan calibrate mamf: 1e-300 TFLOP/s is below 1e-06 of the bf16 peak (989 TFLOPS)"},
    };
    for (const auto& [args, message] : cases) {
      CAPTURE(args[2]);
      const Run r = run_cli(args, s.dir);
      CHECK(r.code == 2);
      CHECK(contains(r.err, message));
      CHECK_FALSE(contains(r.out, "nan"));
      CHECK_FALSE(contains(r.out, "e-3"));  // no denormal (or 1e-300) efficiency printed
    }
  }
}

TEST_SUITE("cli.no_silent_noops") {
  // Each of these used to exit 0 having done something other than what was asked.
  TEST_CASE("a result that cannot be written to standard output is exit 2, not a success") {
    // /dev/full fails every write with ENOSPC, as a full disk does.
    Scratch s("stdout-full");
    for (const std::vector<std::string>& args : {std::vector<std::string>{"rank", "--format", "json"},
                                                 std::vector<std::string>{"list"},
                                                 std::vector<std::string>{"evaluate", "br166-ep16-mb2"}}) {
      CAPTURE(args.front());
      const Run r = run_cli(args, s.dir, 20, "/dev/full");
      CHECK(r.code == 2);
      CHECK(contains(r.err, "cannot write to standard output"));
    }
  }

  TEST_CASE("rank -H h800-ib -m deepseek-v3 searches that pair's built-in space: DeepSeek's own plan is in it") {
    // DeepSeek-V3 report sec. 3.2 / 4.2: 2048 H800, TP1 PP16 EP64, DualPipe, batch 15360. The
    // default space's batch (960, the seeds') cannot split over DP 128 (rule batch_dp).
    Scratch s("rank-pair");
    const Run r = run_cli({"rank", "-H", "h800-ib", "-m", "deepseek-v3", "--nodes", "256", "--format", "csv"}, s.dir);
    REQUIRE(r.code == 0);
    CHECK(contains(r.err, "deepseek-v3-h800-cluster"));
    // nodes,tp,pp,dp,ep,...,schedule (column 21),feasible (22)
    auto deepseek_fits = [](const std::string& csv) {
      std::istringstream in(csv);
      for (std::string line; std::getline(in, line);) {
        std::vector<std::string> f;
        std::stringstream ls(line);
        for (std::string x; std::getline(ls, x, ',');) f.push_back(x);
        if (f.size() > 21 && f[1] == "1" && f[2] == "16" && f[4] == "64" && f[20] == "dualpipe" && f[21] == "1") return true;
      }
      return false;
    };
    CHECK(deepseek_fits(r.out));
    const Run d = run_cli({"rank", "-s", "default", "-H", "h800-ib", "-m", "deepseek-v3", "--nodes", "256", "--format", "csv"}, s.dir);
    REQUIRE(d.code == 0);
    CHECK_FALSE(contains(d.err, "deepseek-v3-h800-cluster"));
    CHECK_FALSE(deepseek_fits(d.out));
  }

  TEST_CASE("arguments that would be ignored are exit 2, naming the problem") {
    Scratch s("noops");
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
        {{"evaluate", "br166-ep16-mb2", "--set", "parallel.ep="},
         "--set: error: `parallel.ep=`: the value is empty (or null); give one"},
        {{"rank", "--top", "0"}, "--top: `0` is not a whole number in 1..1000000"},
        {{"rank", "--top", "-5"}, "--top: `-5` is not a whole number in 1..1000000"},
        {{"rank", "-o", ""}, "--output: an empty name; give one, e.g. default"},
        {{"rank", "-o", "reports/"}, "--output: `reports/` names a folder; give a file name in it, e.g. reports/default"},
        {{"evaluate", "br166-ep16-mb2", "--trace", ""}, "--trace: an empty name; give one, e.g. step.json"},
        {{"rank", "--set", "nodes=[16,32]", "--nodes", "64"},
         "paraplan rank: both --nodes and --set nodes=[16,32] were given; use one"},
        {{"rank", "-H", "h800-ib", "--set", "hardware=h100-sxm-ib"},
         "paraplan rank: both -H/--hardware and --set hardware=h100-sxm-ib were given; use one"},
        {{"rank", "--nodes", "100000"},
         "paraplan rank: every node count asked for exceeds br166-ubbv2's cluster (1024 nodes at most)"},
        {{"rank", "--threads", "-3"}, "--threads: `-3` is not a whole number in 0..4096"},
        {{"calibrate", "collective", "/nonexistent", "-H", "h100-sxm-ib"},
         "/nonexistent: error: cannot open `/nonexistent`: no such file"},
        {{"calibrate", "gemm", "x.csv", "-H", "h100-sxm-ib", "--into", ""}, "--into: an empty name"},
    };
    for (const auto& [args, message] : cases) {
      std::string shown;
      for (const std::string& a : args) shown += " " + (a.empty() ? std::string("''") : a);
      CAPTURE(shown);
      const Run r = run_cli(args, s.dir);
      CHECK(r.code == 2);
      CHECK(contains(r.err, message));
      CHECK(r.out.empty());  // nothing printed as if it had worked
    }
    CHECK_FALSE(fs::exists(s.dir / "reports"));
  }
}

TEST_SUITE("numbers.evaluate_mutants") {
  // Mutants that load are evaluated in full (every op, transfer and stage), and the text
  // and JSON reports hold no `nan` or `inf`: the loader's bounds keep every result finite,
  // and the planner's last guard would throw paraplan::Error (failing this test) otherwise.
  TEST_CASE("every loadable mutant of a hardware, model or strategy preset evaluates to finite numbers") {
    long evaluated = 0, refused = 0, broke_rules = 0;
    unsigned seed = 7000;
    for (const Preset& p : presets()) {
      if (p.kind == FileKind::Space) continue;  // a search per mutant is the next test's
      CAPTURE(p.name);
      const Plan base = p.kind == FileKind::Strategy ? Plan{} : parse_plan(strategy_for(p), "base.yaml");
      for (const std::string& m : mutants(std::string(p.text), seed++)) {
        Plan plan;
        try {
          if (p.kind == FileKind::Strategy) {
            plan = parse_plan(m, "mutant.yaml");
          } else {
            plan = base;
            if (p.kind == FileKind::Hardware) plan.hardware = parse_hardware(m, "mutant.yaml");
            if (p.kind == FileKind::Model) plan.model = parse_model(m, "mutant.yaml");
          }
        } catch (const ConfigError&) {
          ++refused;
          continue;
        }
        if (!check_rules(plan.strategy, plan.hardware, plan.model).empty()) {
          ++broke_rules;  // the loader reports these; evaluate never sees them
          continue;
        }
        CAPTURE(m);
        const Evaluation ev = Planner(plan.hardware, plan.model).explain(plan.strategy);
        const std::string text = without_names(evaluation_text(ev, true), plan),
                          json = without_names(evaluation_json(ev), plan);
        CHECK_MESSAGE(non_finite_token(text).empty(), non_finite_token(text));
        CHECK_MESSAGE(non_finite_token(json).empty(), non_finite_token(json));
        ++evaluated;
      }
    }
    MESSAGE("evaluated " << evaluated << ", refused at load " << refused << ", broke a rule " << broke_rules);
    CHECK(evaluated > 300);
  }

  TEST_CASE("a sample of mutated spaces is searched; the ranking holds no nan or inf") {
    long searched = 0;
    unsigned seed = 8000;
    for (const Preset& p : presets()) {
      if (p.kind != FileKind::Space) continue;
      CAPTURE(p.name);
      const std::vector<std::string> all = mutants(std::string(p.text), seed++);
      for (std::size_t i = 0; i < all.size(); i += 23) {
        SpacePlan space;
        try {
          space = parse_space(all[i], "mutant.yaml");
        } catch (const ConfigError&) {
          continue;
        }
        CAPTURE(all[i]);
        SearchOptions opt;
        opt.threads = 2;
        opt.resimulate = 4;
        const SearchResult r = Planner(space.hardware, space.model).search(space.space, opt);
        const std::string json = rank_json(space, r), table = rank_table(r, 10);
        CHECK_MESSAGE(non_finite_token(json).empty(), non_finite_token(json));
        CHECK_MESSAGE(non_finite_token(table).empty(), non_finite_token(table));
        ++searched;
      }
    }
    MESSAGE("searched " << searched << " mutated spaces");
    CHECK(searched > 0);
  }

  TEST_CASE("`paraplan evaluate` on mutated hardware exits 0 or 2 and prints no nan or inf") {
    Scratch s("eval-mutants");
    int exit0 = 0, exit2 = 0;
    unsigned seed = 9000;
    for (const Preset& p : presets()) {
      if (p.kind != FileKind::Hardware) continue;
      s.write("strategy.yaml", strategy_for(p));
      const std::vector<std::string> all = mutants(std::string(p.text), seed++);
      for (std::size_t i = 0; i < all.size(); i += 9) {
        s.write("hw.yaml", all[i]);
        Plan names;  // the mutant's names, which may read `nan` (text, not numbers)
        try {
          names.hardware = parse_hardware(all[i], "hw.yaml");
        } catch (const ConfigError&) {
        }
        for (const char* format : {"table", "json"}) {
          const Run r = run_cli({"evaluate", "strategy.yaml", "--set", "hardware=hw.yaml", "--format", format}, s.dir);
          CAPTURE(all[i]);
          CHECK_FALSE(r.timed_out);
          CHECK((r.code == 0 || r.code == 2));
          const std::string out = without_names(r.out, names);
          CHECK_MESSAGE(non_finite_token(out).empty(), non_finite_token(out));
          (r.code == 0 ? exit0 : exit2)++;
        }
      }
    }
    MESSAGE((exit0 + exit2) << " runs: " << exit0 << " evaluated, " << exit2 << " exit 2");
    CHECK(exit0 > 0);
  }
}

TEST_SUITE("config.encoding") {
  TEST_CASE("a stray UTF-16 byte order mark or invalid UTF-8 is refused at its place, before yaml-cpp sees it") {
    // A mutant of strategies/br166-ep64-64n-mb1.yaml with "\xff\xfe" inside a comment made
    // yaml-cpp build nodes until memory ran out (24 GB, then the OOM killer).
    const std::string text = "name: x\n# recomp\xff\xfete True\nnodes: 1\n";
    try {
      (void)parse_plan(text, "bom.yaml");
      FAIL("accepted");
    } catch (const ConfigError& e) {
      CHECK(e.line() == 2);
      CHECK(e.col() == 9);
      CHECK(std::string(e.what()).find("not UTF-8") != std::string::npos);
    }
    // A byte order mark at the very start is UTF-8's own and stays accepted (then the usual
    // checks of the keys run).
    CHECK_THROWS_AS((void)parse_plan("\xEF\xBB\xBFnodes: 1\n", "bom.yaml"), ConfigError);
    try {
      (void)parse_plan("\xEF\xBB\xBFnodes: 1\n", "bom.yaml");
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()).find("not UTF-8") == std::string::npos);
    }
    // Multi-byte characters pass: the seeds' files are Chinese.
    try {
      (void)parse_plan("description: \"\xE4\xB8\xAD\xE6\x96\x87\"\n", "zh.yaml");
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()).find("not UTF-8") == std::string::npos);
    }
  }
}

TEST_SUITE("config.fuzz_regressions") {
  // The files of tests/data/fuzz-regressions whose names start with `prefix`, as (path,
  // bytes): each a fuzz target's input, a kind byte and then the text.
  std::vector<std::pair<std::string, std::string>> regression_inputs(const std::string& prefix) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& e : fs::directory_iterator(fs::path(PARAPLAN_TEST_DATA) / "fuzz-regressions")) {
      if (e.path().filename().string().rfind(prefix, 0) != 0) continue;
      std::ifstream in(e.path(), std::ios::binary);
      out.emplace_back(e.path().string(),
                       std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
    }
    return out;
  }

  TEST_CASE("every input a fuzz target found stays harmless (tests/data/fuzz-regressions)") {
    // yaml-*.bin: fuzz_yaml's input format (a kind byte, then YAML). The first one made
    // yaml-cpp's LoadAll loop without end on a malformed text after the first document; the
    // loader now tells documents apart itself and parses only the first.
    int n = 0;
    for (const auto& [path, bytes] : regression_inputs("yaml-")) {
      REQUIRE_FALSE(bytes.empty());
      const std::string text = bytes.substr(1);
      CAPTURE(path);
      try {
        switch (static_cast<unsigned char>(bytes[0]) % 4) {
          case 0: (void)parse_hardware(text, "fuzz.yaml"); break;
          case 1: (void)parse_model(text, "fuzz.yaml"); break;
          case 2: (void)parse_plan(text, "fuzz.yaml"); break;
          default: (void)parse_space(text, "fuzz.yaml"); break;
        }
      } catch (const ConfigError&) {
      }
      ++n;
    }
    CHECK(n >= 1);
  }

  TEST_CASE("calibration inputs a fuzz target found stay harmless") {
    // calibrate-*.bin: fuzz_calibrate's format (a kind byte, then the file). The first one
    // had a `groups` column of 2.5e9, converted to int (undefined behaviour, UBSan's report).
    int n = 0;
    for (const auto& [path, bytes] : regression_inputs("calibrate-")) {
      REQUIRE_FALSE(bytes.empty());
      const int kind = static_cast<unsigned char>(bytes[0]) % 5;
      const char* suffix[] = {".log", ".csv", ".log", ".csv", ".json"};
      const fs::path file = fs::temp_directory_path() / ("paraplan_fuzz_regression" + std::string(suffix[kind]));
      std::ofstream(file, std::ios::binary) << bytes.substr(1);
      CAPTURE(path);
      try {
        switch (kind) {
          case 0: (void)calibrate_collective(parse_collective_log(file.string(), "")); break;
          case 1: (void)read_gemm_rows(file.string(), 989e12); break;
          case 2: (void)parse_deepep_log(file.string()); break;
          default: (void)read_profile(file.string()); break;
        }
      } catch (const ConfigError&) {
      }
      fs::remove(file);
      ++n;
    }
    CHECK(n >= 1);
  }
}
