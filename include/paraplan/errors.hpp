#pragma once
/// Error types of paraplan. The library throws; only the CLI prints and picks exit codes.

#include <stdexcept>
#include <string>
#include <vector>

#include "paraplan/export.hpp"

namespace paraplan {

/// Root of every error paraplan throws.
class PARAPLAN_EXPORT Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One message about an input file, located at `file:line:col` (1-based; 0 = unknown).
struct Diagnostic {
  std::string file;     ///< path as the user gave it, or `builtin:hardware/NAME.yaml`
  int line = 0;         ///< 1-based line, 0 when the whole file is meant
  int col = 0;          ///< 1-based column, 0 when the whole line is meant
  std::string message;  ///< without the location and the `error:` prefix

  /// `file:line:col: error: message`, the format compilers use.
  [[nodiscard]] PARAPLAN_EXPORT std::string str() const;
};

/// Bad input: every diagnostic found in the input, thrown after a whole file was read.
class PARAPLAN_EXPORT ConfigError : public Error {
 public:
  explicit ConfigError(std::vector<Diagnostic> diagnostics);

  /// All diagnostics, in file order; never empty.
  [[nodiscard]] const std::vector<Diagnostic>& diagnostics() const noexcept { return diags_; }
  /// Location of the first diagnostic.
  [[nodiscard]] const std::string& file() const noexcept { return diags_.front().file; }
  [[nodiscard]] int line() const noexcept { return diags_.front().line; }
  [[nodiscard]] int col() const noexcept { return diags_.front().col; }

 private:
  std::vector<Diagnostic> diags_;
};

}  // namespace paraplan
