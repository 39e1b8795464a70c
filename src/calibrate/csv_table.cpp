#include "calibrate/csv_table.hpp"

#include <charconv>
#include <cmath>
#include <sstream>

#include "util/files.hpp"
#include "util/strings.hpp"

namespace paraplan::calib {

int CsvTable::column(std::initializer_list<std::string_view> names) const {
  for (std::size_t c = 0; c < header.size(); ++c) {
    for (std::string_view n : names) {
      if (header[c] == n) return static_cast<int>(c);
    }
  }
  return -1;
}

int CsvTable::at(const Row& row, int col) const {
  int pos = 1;
  for (int c = 0; c < col; ++c) {
    const std::size_t comma = row.text.find(',', static_cast<std::size_t>(pos - 1));
    if (comma == std::string::npos) return pos;
    pos = static_cast<int>(comma) + 2;
  }
  // Past leading blanks: where the value itself starts.
  while (pos <= static_cast<int>(row.text.size()) && row.text[static_cast<std::size_t>(pos - 1)] == ' ') ++pos;
  return pos;
}

void CsvTable::error(int line, int col, std::string message) { diags.push_back({file, line, col, std::move(message)}); }

bool CsvTable::number(const Row& row, int col, const char* what, double& v) {
  if (col < 0) return false;
  if (static_cast<std::size_t>(col) >= row.cells.size()) {
    error(row.line, static_cast<int>(row.text.size()) + 1,
          std::string("missing `") + what + "` (expected " + std::to_string(header.size()) + " columns, got " +
              std::to_string(row.cells.size()) + ")");
    return false;
  }
  const std::string& t = row.cells[static_cast<std::size_t>(col)];
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size() || !std::isfinite(v)) {
    error(row.line, at(row, col), std::string("`") + what + "`: `" + t + "` is not a number");
    return false;
  }
  return true;
}

void CsvTable::throw_if_any() const {
  if (!diags.empty()) throw ConfigError(diags);
}

CsvTable read_csv_table(const std::string& path, const char* what) {
  CsvTable t;
  t.file = path;
  util::FileText file = util::read_regular_file(path, util::kMaxDataBytes, what);
  if (!file.ok()) {
    t.error(0, 0, file.message(path));
    t.throw_if_any();
  }
  std::istringstream in(std::move(file.text));
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string_view trimmed = util::trim(line);
    if (trimmed.empty() || trimmed.front() == '#') continue;
    CsvTable::Row row;
    row.line = n;
    row.text = line;
    // RFC 4180 quoting: a field in double quotes may hold commas, doubled quotes and line
    // breaks (benchmark tools write their error messages so); the record then runs on over
    // the following lines, and the row keeps its first line for locations.
    std::string cell;
    bool quoted = false, was_quoted = false;
    for (std::size_t i = 0;; ++i) {
      if (i == line.size()) {
        if (quoted && std::getline(in, line)) {
          ++n;
          if (!line.empty() && line.back() == '\r') line.pop_back();
          cell += '\n';
          i = static_cast<std::size_t>(-1);
          continue;
        }
        if (quoted) t.error(row.line, 1, "a quoted field is not closed before the end of the file");
        row.cells.emplace_back(was_quoted ? cell : std::string(util::trim(cell)));
        break;
      }
      const char ch = line[i];
      if (quoted) {
        if (ch != '"') {
          cell += ch;
        } else if (i + 1 < line.size() && line[i + 1] == '"') {
          cell += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else if (ch == '"' && util::trim(cell).empty()) {
        cell.clear();
        quoted = was_quoted = true;
      } else if (ch == ',') {
        row.cells.emplace_back(was_quoted ? cell : std::string(util::trim(cell)));
        cell.clear();
        was_quoted = false;
      } else {
        cell += ch;
      }
    }
    if (t.header.empty()) {
      t.header = std::move(row.cells);
      t.header_line = n;
    } else {
      t.rows.push_back(std::move(row));
    }
  }
  if (t.header.empty()) {
    t.error(0, 0, std::string("no header line: ") + what + " starts with a line naming its columns");
    t.throw_if_any();
  }
  return t;
}

TimeColumn time_column(const CsvTable& t) {
  TimeColumn tc;
  if ((tc.col = t.column({"time_us"})) >= 0) {
    tc.to_seconds = 1e-6;
  } else if ((tc.col = t.column({"time_ms"})) >= 0) {
    tc.to_seconds = 1e-3;
  } else if ((tc.col = t.column({"time_s"})) >= 0) {
    tc.to_seconds = 1.0;
  }
  return tc;
}

}  // namespace paraplan::calib
