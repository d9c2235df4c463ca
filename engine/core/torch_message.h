// The one line of a LibTorch message a person should read (plain C++, header-only): its first
// line that says something, or, for an error inside a TorchScript model — "The following
// operation failed in the TorchScript interpreter." over two tracebacks — the reason the
// interpreter gave last ("RuntimeError: mat1 and mat2 shapes cannot be multiplied (8x7 and
// 10x32)"), which is what went wrong.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace ddpdesk {

inline std::string torch_message_line(const std::string& what) {
  std::vector<std::string> lines;
  for (std::size_t at = 0; at <= what.size();) {
    std::size_t end = what.find('\n', at);
    if (end == std::string::npos) end = what.size();
    std::string line = what.substr(at, end - at);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    const std::size_t text = line.find_first_not_of(' ');
    if (text != std::string::npos) lines.push_back(line);
    at = end + 1;
  }
  if (lines.empty()) return {};
  if (lines.front().rfind("The following operation failed in the TorchScript interpreter", 0) ==
      0) {
    // The reason: an unindented "RuntimeError: ...", "torch.jit.Error: ..." line.
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
      const std::size_t colon = it->find(": ");
      if (colon == std::string::npos || (*it)[0] == ' ') continue;
      const std::string name = it->substr(0, colon);
      const bool error_name =
          name.find(' ') == std::string::npos &&
          (name.size() >= 5 &&
           (name.compare(name.size() - 5, 5, "Error") == 0 ||
            (name.size() >= 9 && name.compare(name.size() - 9, 9, "Exception") == 0)));
      if (error_name) return *it;
    }
  }
  return lines.front();
}

}  // namespace ddpdesk
