#include "slurm_env.h"

#include <cctype>

namespace ddpdesk::slurm {
namespace {

// Reads a run of decimal digits at `pos`; nullopt when there is none or it is absurdly long.
std::optional<long long> read_number(const std::string& s, std::size_t& pos) {
  const std::size_t start = pos;
  long long n = 0;
  while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
    n = n * 10 + (s[pos] - '0');
    if (++pos - start > 9) return std::nullopt;
  }
  if (pos == start) return std::nullopt;
  return n;
}

}  // namespace

std::optional<std::vector<int>> expand_tasks_per_node(const std::string& text) {
  std::vector<int> counts;
  std::size_t pos = 0;
  while (true) {
    auto count = read_number(text, pos);
    if (!count || *count < 1) return std::nullopt;
    long long repeat = 1;
    if (pos < text.size() && text[pos] == '(') {
      if (text.compare(pos, 2, "(x") != 0) return std::nullopt;
      pos += 2;
      auto r = read_number(text, pos);
      if (!r || *r < 1 || pos >= text.size() || text[pos] != ')') return std::nullopt;
      ++pos;
      repeat = *r;
    }
    if (counts.size() + static_cast<std::size_t>(repeat) > (1u << 20)) return std::nullopt;
    counts.insert(counts.end(), static_cast<std::size_t>(repeat), static_cast<int>(*count));
    if (pos == text.size()) return counts;
    if (text[pos] != ',') return std::nullopt;
    ++pos;
  }
}

std::optional<std::string> first_host(const std::string& nodelist) {
  std::string host;
  bool in_group = false;      // between '[' and ']'
  bool group_digits = false;  // the group's first number has begun
  bool group_done = false;    // ... and ended ('-' or ',' seen): the rest of the group is skipped
  for (char c : nodelist) {
    if (!in_group) {
      if (c == ',') break;  // the first top-level entry names the first host
      if (c == '[') {
        in_group = true;
        group_digits = group_done = false;
      } else if (c == ']' || std::isspace(static_cast<unsigned char>(c))) {
        return std::nullopt;
      } else {
        host += c;
      }
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      group_digits = true;
      if (!group_done) host += c;
    } else if ((c == '-' || c == ',') && group_digits) {
      group_done = true;
    } else if (c == ']' && group_digits) {
      in_group = false;
    } else {
      return std::nullopt;  // "node[]", "node[a]", "node[1" or a nested '['
    }
  }
  if (in_group || host.empty()) return std::nullopt;
  return host;
}

int port_for_job(long long job_id) {
  return kPortBase + static_cast<int>(job_id % kPortSpan);
}

}  // namespace ddpdesk::slurm
