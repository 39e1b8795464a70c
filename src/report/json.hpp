#pragma once
// A small JSON writer: objects, arrays, strings with escapes, finite numbers (non-finite
// numbers become null), pretty-printed with two-space indentation.

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace paraplan::report {

class JsonWriter {
 public:
  JsonWriter& begin_object() { open('{'); return *this; }
  JsonWriter& end_object() { close('}'); return *this; }
  JsonWriter& begin_array() { open('['); return *this; }
  JsonWriter& end_array() { close(']'); return *this; }

  /// The key of the next value inside an object.
  JsonWriter& key(std::string_view k) {
    separator();
    write_string(k);
    out_ += ": ";
    after_key_ = true;
    return *this;
  }
  JsonWriter& value(std::string_view s) { separator(); write_string(s); return *this; }
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b) { separator(); out_ += b ? "true" : "false"; return *this; }
  JsonWriter& value(double d) {
    separator();
    if (!std::isfinite(d)) {
      out_ += "null";
    } else if (d == std::floor(d) && std::fabs(d) < 1e15) {
      out_ += std::to_string(static_cast<long long>(d));
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.10g", d);
      out_ += buf;
    }
    return *this;
  }
  JsonWriter& value(int i) { return value(static_cast<double>(i)); }
  JsonWriter& value(long long i) { separator(); out_ += std::to_string(i); return *this; }
  JsonWriter& value(long i) { return value(static_cast<long long>(i)); }

  template <typename T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

  [[nodiscard]] const std::string& str() const { return out_; }

 private:
  void open(char c) {
    separator();
    out_ += c;
    first_.push_back(true);
  }
  void close(char c) {
    bool empty = first_.back();
    first_.pop_back();
    if (!empty) newline();
    out_ += c;
  }
  void separator() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (first_.empty()) return;
    if (!first_.back()) out_ += ',';
    first_.back() = false;
    newline();
  }
  void newline() {
    out_ += '\n';
    out_.append(2 * first_.size(), ' ');
  }
  void write_string(std::string_view s) {
    out_ += '"';
    for (char ch : s) {
      unsigned char c = static_cast<unsigned char>(ch);
      switch (ch) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\n': out_ += "\\n"; break;
        case '\t': out_ += "\\t"; break;
        case '\r': out_ += "\\r"; break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out_ += buf;
          } else {
            out_ += ch;
          }
      }
    }
    out_ += '"';
  }

  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace paraplan::report
