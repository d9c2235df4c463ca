// Splits a byte stream into '\n'-terminated lines. Complete lines inside one chunk are handed out
// as views into that chunk (no copy); only a line cut by a read boundary is copied, so a reader
// that receives many lines per read pays almost nothing per line.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace ddpdesk {

class LineBuffer {
 public:
  // Longer lines: Reject stops at the first one (a misbehaving peer); Split hands the first
  // max_line bytes out as a line of their own and goes on (log capture must never lose output).
  enum class Overflow { Reject, Split };

  explicit LineBuffer(std::size_t max_line, Overflow overflow = Overflow::Reject)
      : max_(max_line), overflow_(overflow) {}

  // Calls on_line(std::string_view) for every complete line, without its '\n'. Returns false
  // (and stops) when a line exceeds the limit in Reject mode.
  template <typename F>
  bool feed(const char* data, std::size_t n, F&& on_line) {
    const char* p = data;
    const char* end = data + n;
    while (p < end) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
      const std::size_t len = (nl ? nl : end) - p;
      if (partial_.size() + len > max_) {
        if (overflow_ == Overflow::Reject) return false;
        const std::size_t take = max_ - partial_.size();
        partial_.append(p, take);
        on_line(std::string_view(partial_));
        partial_.clear();
        p += take;
        continue;
      }
      if (!nl) {
        partial_.append(p, len);
        break;
      }
      if (partial_.empty()) {
        on_line(std::string_view(p, len));
      } else {
        partial_.append(p, len);
        on_line(std::string_view(partial_));
        partial_.clear();
      }
      p = nl + 1;
    }
    return true;
  }

  // Bytes of an unfinished line (hand them out when the stream ends).
  std::string_view pending() const { return partial_; }
  void clear() { partial_.clear(); }

 private:
  std::string partial_;
  std::size_t max_;
  Overflow overflow_;
};

}  // namespace ddpdesk
