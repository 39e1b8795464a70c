#include "config/pipeline_layout.hpp"

#include <algorithm>
#include <cctype>

namespace paraplan::config {

int model_chunks(int pp, int vpp, Schedule schedule) {
  pp = std::max(1, pp);
  if (schedule == Schedule::Interleaved) return pp * std::max(1, vpp);
  if (schedule == Schedule::DualPipeV) return 2 * pp;
  return pp;
}

int model_chunks(const Strategy& s) { return model_chunks(s.parallel.pp, s.parallel.vpp, s.schedule); }

namespace {

// Recursive descent over the layout grammar:
//   sequence := item*        item := ( '(' sequence ')' | symbol ) [ '*' count ]
// expanding repetitions into a flat string of symbols and `|` separators.
struct Expander {
  const std::string& s;
  std::size_t i = 0;
  std::string error;
  std::size_t error_at = 0;
  int depth = 0;
  static constexpr std::size_t kMaxSymbols = 1 << 20;  // a layout of a million layers is a typo
  static constexpr int kMaxDepth = 32;                  // groups nest no deeper (no stack blow-up)

  bool fail(const std::string& what, std::size_t at) {
    if (error.empty()) {
      error = what;
      error_at = at;
    }
    return false;
  }
  void skip_separators() {
    while (i < s.size() && (s[i] == ',' || s[i] == ' ')) ++i;
  }
  // `*n` after an item (none: 1).
  bool repeat(int& n) {
    n = 1;
    skip_separators();
    if (i >= s.size() || s[i] != '*') return true;
    const std::size_t at = i++;
    long long v = 0;
    std::size_t digits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      v = v * 10 + (s[i++] - '0');
      if (v > static_cast<long long>(kMaxSymbols)) return fail("repeat count too large", at);
      ++digits;
    }
    if (digits == 0) return fail("`*` must be followed by a count", at);
    n = static_cast<int>(v);
    return true;
  }
  bool sequence(std::string& out, bool nested) {
    for (;;) {
      skip_separators();
      if (i >= s.size()) return nested ? fail("`(` is never closed", s.size()) : true;
      const char c = s[i];
      std::string item;
      if (c == ')') {
        if (!nested) return fail("`)` without `(`", i);
        return true;
      }
      if (c == '(') {
        const std::size_t open = i++;
        if (++depth > kMaxDepth) return fail("groups nested too deeply", open);
        if (!sequence(item, true)) return false;
        --depth;
        ++i;  // the `)`
        if (item.empty()) return fail("empty group", open);
      } else if (c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|') {
        item = std::string(1, c);
        ++i;
      } else {
        return fail(std::string("unknown symbol `") + c + "` (E embedding, t layer, m MTP, L loss, | next chunk)", i);
      }
      int n = 1;
      if (!repeat(n)) return false;
      if (out.size() + item.size() * static_cast<std::size_t>(n) > kMaxSymbols) return fail("layout too long", i);
      for (int k = 0; k < n; ++k) out += item;
    }
  }
};

}  // namespace

std::vector<LayoutChunk> parse_pipeline_layout(const std::string& text, std::string& error, std::size_t& error_at) {
  Expander x{text, 0, {}, 0, 0};
  std::string flat;
  error.clear();
  error_at = 0;
  if (!x.sequence(flat, false)) {
    error = x.error;
    error_at = x.error_at;
    return {};
  }
  std::vector<LayoutChunk> chunks(1);
  for (char c : flat) {
    LayoutChunk& ch = chunks.back();
    switch (c) {
      case '|': chunks.emplace_back(); break;
      case 't': ++ch.layers; break;
      case 'm': ++ch.mtp; break;
      case 'E': ++ch.embedding; break;
      case 'L': ++ch.loss; break;
      default: break;
    }
  }
  return chunks;
}

const std::vector<LayoutChunk>& layout_chunks(const std::string& text) {
  thread_local std::string last;
  thread_local std::vector<LayoutChunk> chunks;
  if (text != last || chunks.empty()) {
    std::string error;
    std::size_t at = 0;
    chunks = parse_pipeline_layout(text, error, at);
    last = text;
  }
  return chunks;
}

}  // namespace paraplan::config
