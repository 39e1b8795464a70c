// A strict JSON reader into the same located tree the YAML files give (config/tree.hpp),
// so that a Hugging Face config.json is read with file:line:col diagnostics like any input.
// Strings are decoded (\uXXXX and surrogate pairs to UTF-8); numbers keep their text as
// written; true / false become the scalars "true" / "false"; null is a Null node. Python's
// json module also writes NaN, Infinity and -Infinity: they are read as scalars.

#include <string>

#include "config/tree.hpp"

namespace paraplan::config {
namespace {

constexpr int kMaxDepth = 64;

class JsonReader {
 public:
  JsonReader(std::string_view text, const std::shared_ptr<const Source>& source, Diags& diags)
      : text_(text), source_(source), diags_(diags) {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") advance(3);  // UTF-8 byte-order mark
  }

  Node document() {
    ws();
    if (at_end()) {
      fail("not JSON: the file is empty");
      Node empty;
      empty.loc = here();
      return empty;
    }
    Node root = value(0);
    ws();
    if (!failed_ && !at_end()) fail("not JSON: unexpected text after the top-level value");
    return root;
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  Loc here() const { return Loc{source_, line_, col_}; }

  void advance(std::size_t n = 1) {
    for (std::size_t i = 0; i < n && pos_ < text_.size(); ++i) {
      // Columns count characters: UTF-8 continuation bytes do not start one.
      const unsigned char c = static_cast<unsigned char>(text_[pos_++]);
      if (c == '\n') {
        ++line_;
        col_ = 1;
      } else if ((c & 0xC0) != 0x80) {
        ++col_;
      }
    }
  }

  void fail(std::string message) { fail_at(here(), std::move(message)); }
  void fail_at(const Loc& at, std::string message) {
    if (failed_) return;  // the first error; what follows it is noise
    failed_ = true;
    diags_.error(at, std::move(message));
  }

  void ws() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
      advance();
  }

  std::string describe_here() const {
    if (at_end()) return "the end of the file";
    const char c = peek();
    if (static_cast<unsigned char>(c) < 0x20) return "a control character";
    return std::string("`") + c + "`";
  }

  Node value(int depth) {
    ws();
    Node out;
    out.loc = here();
    if (depth > kMaxDepth) {
      fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels is not supported");
      return out;
    }
    const char c = peek();
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') {
      out.type = Node::Type::Scalar;
      out.scalar = string();
      return out;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      if (text_.substr(pos_, 9) == "-Infinity") {
        advance(9);
        out.type = Node::Type::Scalar;
        out.scalar = "-Infinity";
        return out;
      }
      out.type = Node::Type::Scalar;
      out.scalar = number();
      return out;
    }
    for (std::string_view word : {"true", "false", "null", "NaN", "Infinity"}) {
      if (text_.substr(pos_, word.size()) == word) {
        advance(word.size());
        out.type = word == "null" ? Node::Type::Null : Node::Type::Scalar;
        if (word != "null") out.scalar = std::string(word);
        return out;
      }
    }
    fail(
        "not JSON: expected a value (an object, array, string, number, true, false or null), "
        "found " +
        describe_here());
    return out;
  }

  Node object(int depth) {
    Node out;
    out.type = Node::Type::Map;
    out.loc = here();
    advance();  // {
    ws();
    if (peek() == '}') {
      advance();
      return out;
    }
    while (!failed_) {
      ws();
      const Loc key_loc = here();
      if (peek() != '"') {
        fail("not JSON: expected a key in double quotes, found " + describe_here());
        break;
      }
      std::string key = string();
      if (failed_) break;
      ws();
      if (peek() != ':') {
        fail("not JSON: expected `:` after the key \"" + key + "\", found " + describe_here());
        break;
      }
      advance();
      Node v = value(depth + 1);
      if (failed_) break;
      bool duplicate = false;
      for (std::size_t i = 0; i < out.entries.size(); ++i) {
        if (out.entries[i].first == key) {
          diags_.error(key_loc, "duplicate key \"" + key + "\" (first at line " +
                                    std::to_string(out.key_locs[i].line) + ")");
          duplicate = true;
        }
      }
      if (!duplicate) {
        out.entries.emplace_back(std::move(key), std::move(v));
        out.key_locs.push_back(key_loc);
      }
      ws();
      if (peek() == ',') {
        advance();
        continue;
      }
      if (peek() == '}') {
        advance();
        break;
      }
      fail("not JSON: expected `,` or `}` in the object, found " + describe_here());
    }
    return out;
  }

  Node array(int depth) {
    Node out;
    out.type = Node::Type::Seq;
    out.loc = here();
    advance();  // [
    ws();
    if (peek() == ']') {
      advance();
      return out;
    }
    while (!failed_) {
      out.items.push_back(value(depth + 1));
      if (failed_) break;
      ws();
      if (peek() == ',') {
        advance();
        continue;
      }
      if (peek() == ']') {
        advance();
        break;
      }
      fail("not JSON: expected `,` or `]` in the array, found " + describe_here());
    }
    return out;
  }

  static void append_utf8(std::string& out, unsigned long cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // Four hex digits after "\u"; -1 (and an error) when they are not.
  long hex4() {
    long v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = peek();
      int d = -1;
      if (c >= '0' && c <= '9') d = c - '0';
      if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      if (d < 0) {
        fail("not JSON: `\\u` takes four hex digits");
        return -1;
      }
      v = v * 16 + d;
      advance();
    }
    return v;
  }

  std::string string() {
    const Loc start = here();
    advance();  // opening quote
    std::string out;
    while (!failed_) {
      if (at_end()) {
        fail_at(start, "not JSON: string not closed by `\"`");
        break;
      }
      const char c = peek();
      if (c == '"') {
        advance();
        break;
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        fail(
            "not JSON: a control character (a line break?) inside a string; write it as an escape");
        break;
      }
      if (c != '\\') {
        out += c;
        advance();
        continue;
      }
      advance();
      const char e = peek();
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          advance();
          long cp = hex4();
          if (cp < 0) return out;
          if (cp >= 0xD800 && cp <= 0xDBFF && text_.substr(pos_, 2) == "\\u") {
            advance(2);
            const long low = hex4();
            if (low < 0) return out;
            if (low >= 0xDC00 && low <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            } else {
              append_utf8(out, 0xFFFD);
              cp = low;
            }
          }
          if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;  // a lone surrogate
          append_utf8(out, static_cast<unsigned long>(cp));
          continue;  // hex4 advanced past the digits
        }
        default:
          fail(std::string("not JSON: unknown escape `\\") + (e == '\0' ? ' ' : e) +
               "` in a string");
          return out;
      }
      advance();
    }
    return out;
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? as written.
  std::string number() {
    const std::size_t begin = pos_;
    auto digits = [&] {
      std::size_t n = 0;
      while (!at_end() && peek() >= '0' && peek() <= '9') {
        advance();
        ++n;
      }
      return n;
    };
    if (peek() == '-') advance();
    if (peek() == '0') {
      advance();
    } else if (digits() == 0) {
      fail("not JSON: a number needs digits");
      return {};
    }
    if (peek() == '.') {
      advance();
      if (digits() == 0) {
        fail("not JSON: a number needs digits after `.`");
        return {};
      }
    }
    if (peek() == 'e' || peek() == 'E') {
      advance();
      if (peek() == '+' || peek() == '-') advance();
      if (digits() == 0) {
        fail("not JSON: a number needs digits in its exponent");
        return {};
      }
    }
    return std::string(text_.substr(begin, pos_ - begin));
  }

  std::string_view text_;
  const std::shared_ptr<const Source>& source_;
  Diags& diags_;
  std::size_t pos_ = 0;
  int line_ = 1, col_ = 1;
  bool failed_ = false;
};

}  // namespace

Node parse_json(std::string_view text, const std::shared_ptr<const Source>& source, Diags& diags) {
  JsonReader reader(text, source, diags);
  return reader.document();
}

}  // namespace paraplan::config
