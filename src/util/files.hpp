#pragma once
// Reading input files safely: only regular files (never a FIFO, a device or a folder, which
// could block or never end), and only up to a size limit, read in one bounded pass.

#include <cstdint>
#include <string>

namespace paraplan::util {

/// Size limit of one YAML input file (hardware, model, strategy, space, case, map).
inline constexpr std::uintmax_t kMaxYamlBytes = std::uintmax_t{16} << 20;
/// Size limit of one measurement file (profile, trace, benchmark log, sweep CSV).
inline constexpr std::uintmax_t kMaxDataBytes = std::uintmax_t{256} << 20;

/// What reading a file gave.
struct FileText {
  enum class Status { Ok, CannotOpen, NotRegular, TooLarge, ReadFailed };
  Status status = Status::Ok;
  std::string text;    ///< the whole file when Ok
  std::string detail;  ///< otherwise: "no such file", "a FIFO", "larger than 16 MiB", ...
  [[nodiscard]] bool ok() const { return status == Status::Ok; }
  /// `detail` as a sentence about `path`: "cannot open `x`: no such file", "`x` is not a
  /// regular file (a FIFO)", "`x` is larger than 16 MiB, the limit for a YAML input".
  [[nodiscard]] std::string message(const std::string& path) const;
};

/// The whole text of `path` if it is a regular file of at most `max_bytes`. The file is
/// opened without blocking and checked on the open descriptor, so a FIFO or a device put in
/// its place is never read. `what` names the kind of file in the size message ("a YAML input").
FileText read_regular_file(const std::string& path, std::uintmax_t max_bytes, const char* what);

}  // namespace paraplan::util
