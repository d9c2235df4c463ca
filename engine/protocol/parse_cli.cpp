// parse_cli (spec_flags.h): CLI11's parse errors as one line that names the flag and the
// problem, the same for ddpdesk, ddpdesk --headless --compare and ddpdesk-worker: an unknown
// option (with the closest known one when it is near), a flag without its value (also when the
// next flag was taken for it), a flag given twice, a stray argument. Other CLI11 errors keep
// CLI11's text on one line.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "spec_flags.h"

namespace ddpdesk {
namespace {

// Edits (insert, delete, replace, swap two neighbours) from a to b.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The known long option closest to `word` (without its "--"), when it is a slip away from it.
std::string closest_option(const CLI::App& app, const std::string& word) {
  std::string best;
  std::size_t best_distance = std::min<std::size_t>(2, word.size() / 3);
  for (const CLI::Option* o : app.get_options())
    for (const std::string& name : o->get_lnames())
      if (const std::size_t d = edit_distance(word, name); d <= best_distance && d > 0)
        if (best.empty() || d < best_distance) {
          best = "--" + name;
          best_distance = d;
        }
  return best;
}

// How many times `flag` (as --name) was written on the command line, `--name=value` included.
int times_given(const std::string& flag, int argc, char** argv) {
  int n = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string w = argv[i];
    if (w == flag || w.rfind(flag + "=", 0) == 0) ++n;
  }
  return n;
}

// The word just before `word` on the command line (empty when it is first or not there).
std::string word_before(const std::string& word, int argc, char** argv) {
  for (int i = 2; i < argc; ++i)
    if (word == argv[i]) return argv[i - 1];
  return {};
}

// A flag that takes a value written with none, the next flag after it: CLI11 takes that flag
// for the value (`--batch-size --metrics-file m.jsonl` leaves m.jsonl over, or nothing at all
// over). Empty when there is no such pair; `--name=--epochs` still gives that text as a value.
std::string swallowed_flag_line(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string flag = argv[i], next = argv[i + 1];
    if (flag.rfind("--", 0) != 0 || next.rfind("--", 0) != 0) continue;
    const CLI::Option* taker = app.get_option_no_throw(flag);
    if (!taker || taker->get_items_expected_min() < 1) continue;
    const std::string next_name = next.substr(0, next.find('='));
    if (app.get_option_no_throw(next_name))
      return "invalid " + flag + ": needs a value, not the flag " + next_name;
  }
  return {};
}

std::string extras_line(const CLI::App& app, int argc, char** argv) {
  if (const std::string line = swallowed_flag_line(app, argc, argv); !line.empty()) return line;
  const std::vector<std::string> extras = app.remaining();
  if (extras.empty()) return "unexpected arguments";
  const std::string& word = extras.front();
  if (word.size() > 1 && word[0] == '-') {
    const std::string name = word.substr(0, word.find('='));
    std::string line = "unknown option " + name;
    const std::string bare = name.substr(name.find_first_not_of('-'));
    if (const std::string near = closest_option(app, bare); !near.empty())
      line += " (did you mean " + near + "?)";
    return line;
  }
  std::string line = "unexpected argument '" + word + "'";
  if (const std::string before = word_before(word, argc, argv); !before.empty())
    line += " after " + before;
  return line;
}

// CLI11's ArgumentMismatch reads "<flag>: <what>"; the flag named, the what said plainly.
std::string mismatch_line(const CLI::ParseError& e, int argc, char** argv) {
  const std::string what = e.what();
  const std::size_t colon = what.find(": ");
  if (colon == std::string::npos || what.rfind("-", 0) != 0) return what;
  const std::string flag = what.substr(0, colon);
  if (what.find("missing", colon) != std::string::npos)
    return "invalid " + flag + ": needs a value";
  if (const int n = times_given(flag, argc, argv); n > 1)
    return "invalid " + flag + ": given " + std::to_string(n) + " times (once at most)";
  return "invalid " + flag + ": " + what.substr(colon + 2);
}

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

}  // namespace

int parse_cli(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError&) {
    std::cerr << app.get_name() << ": " << extras_line(app, argc, argv) << "\n";
    return 2;
  } catch (const CLI::ArgumentMismatch& e) {
    std::cerr << app.get_name() << ": " << one_line(mismatch_line(e, argc, argv)) << "\n";
    return 2;
  } catch (const CLI::ParseError& e) {
    std::cerr << app.get_name() << ": " << one_line(e.what()) << "\n";
    return 2;
  }
  if (const std::string line = swallowed_flag_line(app, argc, argv); !line.empty()) {
    std::cerr << app.get_name() << ": " << line << "\n";
    return 2;
  }
  return -1;
}

}  // namespace ddpdesk
