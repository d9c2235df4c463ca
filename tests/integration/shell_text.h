// What the integration tests that drive the worker through a shell share: a word quoted for
// /bin/sh, and a file's whole text.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace ddpdesk::test {

// `s` as one /bin/sh word: in single quotes, each ' written as '\''.
inline std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The file's text; empty when it cannot be read.
inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ddpdesk::test
