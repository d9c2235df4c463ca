// The `ddpdesk` command line, defined once for both front ends: the window (gui_app.cpp) and the
// terminal (headless_runner.cpp) offer the same flags — --headless, --start, --attach, the queue's
// (--queue, --sweep, --stop-on-failure) and every run spec flag (SpecFlags) — and make the same
// checks on them, each problem one line "ddpdesk: ..." and exit code 2. (`--headless --compare`
// is a command line of its own: compare_headless.h.)
#pragma once

#include <memory>
#include <string>

#include "headless/headless_queue.h"
#include "spec_flags.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace ddpdesk {

class CommandLine {
 public:
  // `footer`: the front end's pointer to what else there is (printed under --help).
  explicit CommandLine(const std::string& footer);
  ~CommandLine();
  CommandLine(const CommandLine&) = delete;

  // Parses (parse_cli's policy: --help prints, exit 0; a parse problem one line, exit 2) and
  // then checks: --attach with nothing else but --headless, and naming a directory here or a
  // valid ssh:// URL; --queue or --sweep with no run spec flags. Returns -1 when fine, else the
  // exit code, its line printed.
  int parse(int argc, char** argv);

  bool start() const { return start_; }
  bool attaching() const;
  const std::string& attach() const { return attach_; }
  // Any run spec flag or --config given (the window then shows that spec in its form).
  bool specGiven() const;
  SpecFlags& specFlags() { return *flags_; }
  QueueOptions& queue() { return *queue_; }

 private:
  int check() const;

  std::unique_ptr<CLI::App> app_;
  bool headless_ = false;
  bool start_ = false;
  std::string attach_;
  CLI::Option* headlessOption_ = nullptr;
  CLI::Option* startOption_ = nullptr;
  CLI::Option* attachOption_ = nullptr;
  std::unique_ptr<QueueOptions> queue_;
  std::unique_ptr<SpecFlags> flags_;
};

}  // namespace ddpdesk
