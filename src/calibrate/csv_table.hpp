#pragma once
// A header-driven CSV file of benchmark output, read for calibration: `#` lines and blank
// lines are skipped, the first other line names the columns, every error is located at
// file:line:col and all of them are thrown together (ConfigError).

#include <string>
#include <string_view>
#include <vector>

#include "paraplan/errors.hpp"

namespace paraplan::calib {

struct CsvTable {
  struct Row {
    int line = 0;                    ///< 1-based line in the file
    std::string text;                ///< the line as written
    std::vector<std::string> cells;  ///< trimmed
  };
  std::string file;
  int header_line = 0;
  std::vector<std::string> header;
  std::vector<Row> rows;
  std::vector<Diagnostic> diags;

  /// The column named `name` (or any of `names`), -1 when absent.
  [[nodiscard]] int column(std::initializer_list<std::string_view> names) const;
  /// The 1-based character column where cell `col` of `row` starts.
  [[nodiscard]] int at(const Row& row, int col) const;
  void error(int line, int col, std::string message);
  /// Cell `col` of `row` as a finite number; a located error (naming `what`) otherwise.
  bool number(const Row& row, int col, const char* what, double& v);
  /// Throws every recorded error at once.
  void throw_if_any() const;
};

/// Reads `path` (at most util::kMaxDataBytes) as a CsvTable; `what` names the file in errors
/// ("an attention benchmark"). A file without a header line is an error.
CsvTable read_csv_table(const std::string& path, const char* what);

/// A time column (time_us, time_ms or time_s): its index and the factor to seconds; -1 when
/// the header names none.
struct TimeColumn {
  int col = -1;
  double to_seconds = 1e-6;
};
TimeColumn time_column(const CsvTable& t);

}  // namespace paraplan::calib
