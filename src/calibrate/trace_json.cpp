#include "calibrate/trace_json.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace paraplan::calibrate {
namespace {

// A small recursive-descent JSON reader that keeps only the event fields.
class Reader {
 public:
  Reader(std::string_view t, TraceError& e) : text_(t), error_(e) {}

  bool failed() const { return !error_.message.empty(); }

  void fail(std::string msg) {
    if (failed()) return;
    int line = 1, col = 1;
    for (std::size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    error_ = {line, col, std::move(msg)};
  }

  int line_here() const {
    int line = 1;
    for (std::size_t i = last_line_pos_; i < pos_ && i < text_.size(); ++i) line += text_[i] == '\n';
    last_line_ = last_line_ + line - 1;
    last_line_pos_ = pos_;
    return last_line_;
  }

  void ws() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    ws();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  char peek() {
    ws();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }

  std::string string() {
    std::string out;
    if (!eat('"')) {
      fail("expected a string");
      return out;
    }
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = text_[pos_++];
      if (c == '\\' && pos_ < text_.size()) {
        const char e = text_[pos_++];
        switch (e) {
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case 'u': pos_ += 4; out += '?'; break;  // names need no exact non-ASCII
          default: out += e; break;
        }
      } else {
        out += c;
      }
    }
    if (pos_ >= text_.size()) {
      fail("unterminated string");
      return out;
    }
    ++pos_;
    return out;
  }

  double number() {
    ws();
    const char* begin = text_.data() + pos_;
    char* end = nullptr;
    const double v = std::strtod(begin, &end);
    if (end == begin) {
      fail("expected a number");
      return 0;
    }
    pos_ += static_cast<std::size_t>(end - begin);
    return v;
  }

  // Skips any value.
  void skip(int depth = 0) {
    if (depth > 64) {
      fail("nesting deeper than 64 levels");
      return;
    }
    const char c = peek();
    if (c == '"') {
      string();
    } else if (c == '{') {
      ++pos_;
      if (eat('}')) return;
      do {
        string();
        if (!eat(':')) return fail("expected ':'");
        skip(depth + 1);
      } while (!failed() && eat(','));
      if (!eat('}')) fail("expected ',' or '}'");
    } else if (c == '[') {
      ++pos_;
      if (eat(']')) return;
      do skip(depth + 1);
      while (!failed() && eat(','));
      if (!eat(']')) fail("expected ',' or ']'");
    } else if (c == 't' || c == 'f' || c == 'n') {
      const std::string_view rest = text_.substr(pos_);
      for (std::string_view w : {"true", "false", "null"}) {
        if (rest.substr(0, w.size()) == w) {
          pos_ += w.size();
          return;
        }
      }
      fail("unexpected token");
    } else {
      number();
    }
  }

  // One event object.
  TraceEvent event() {
    TraceEvent e;
    e.line = line_here();
    if (!eat('{')) {
      fail("expected an event object");
      return e;
    }
    if (eat('}')) return e;
    do {
      const std::string key = string();
      if (!eat(':')) {
        fail("expected ':'");
        return e;
      }
      if (key == "name" && peek() == '"') {
        e.name = string();
      } else if (key == "cat" && peek() == '"') {
        e.cat = string();
      } else if (key == "ph" && peek() == '"') {
        e.ph = string();
      } else if (key == "ts" && peek() != '"') {
        e.ts_us = number();
      } else if (key == "dur" && peek() != '"') {
        e.dur_us = number();
      } else if (key == "pid" || key == "tid") {
        // Numbers or strings (Chrome traces write either); only equality matters.
        std::string id;
        if (peek() == '"') {
          id = string();
        } else {
          const double v = number();
          id = std::fabs(v) < 9e18 ? std::to_string(static_cast<long long>(v)) : std::to_string(v);
        }
        (key == "pid" ? e.pid : e.tid) = std::move(id);
      } else {
        skip();
      }
    } while (!failed() && eat(','));
    if (!eat('}')) fail("expected ',' or '}' in an event");
    return e;
  }

  std::vector<TraceEvent> events_array() {
    std::vector<TraceEvent> out;
    if (!eat('[')) {
      fail("expected the array of trace events");
      return out;
    }
    if (eat(']')) return out;
    do out.push_back(event());
    while (!failed() && eat(','));
    if (!failed() && !eat(']')) fail("expected ',' or ']' after an event");
    return out;
  }

  std::vector<TraceEvent> document() {
    if (peek() == '[') return events_array();
    if (!eat('{')) {
      fail("a trace is a JSON object with \"traceEvents\" or an array of events");
      return {};
    }
    std::vector<TraceEvent> out;
    bool found = false;
    if (!eat('}')) {
      do {
        const std::string key = string();
        if (!eat(':')) {
          fail("expected ':'");
          break;
        }
        if (key == "traceEvents") {
          out = events_array();
          found = true;
        } else {
          skip();
        }
      } while (!failed() && eat(','));
      if (!failed() && !eat('}')) fail("expected ',' or '}'");
    }
    if (!failed() && !found) fail("no \"traceEvents\" in the trace");
    return out;
  }

 private:
  std::string_view text_;
  TraceError& error_;
  std::size_t pos_ = 0;
  mutable std::size_t last_line_pos_ = 0;
  mutable int last_line_ = 1;
};

}  // namespace

std::vector<TraceEvent> read_trace_events(std::string_view text, TraceError& error) {
  Reader r(text, error);
  return r.document();
}

}  // namespace paraplan::calibrate
