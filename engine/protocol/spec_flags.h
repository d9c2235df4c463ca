// Binds every RunSpec field to a CLI11 flag (--batch-size, --accum-steps, ...) plus --config, and
// every on/off field to a flag that is on when given alone (--tensorboard; --no-tensorboard, or a
// value 0/1 after it, still say which), and
// builds the RunSpec from "config file (or a base spec), then flags given on the command line";
// without --config,
// `--resume DIR` of a run directory holding spec.json starts from that spec (or from one the
// caller read elsewhere, set_resume_spec()). Used by both
// ddpdesk-worker and ddpdesk --headless so the flags and their errors are identical.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "run_spec.h"

// CLI11 stays out of this header: only the few files that build a command line include it.
namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace ddpdesk {

class SpecFlags {
 public:
  // with_nproc: whether --nproc is offered (the worker takes its world from the environment).
  SpecFlags(CLI::App& app, bool with_nproc);

  // Call after app.parse(). Fills `out`; returns every problem (empty = ok), each one line
  // through format_error(e): a flag's spelled as the flag, a config file's as its key.
  std::vector<FieldError> build(RunSpec& out) const;

  // The text given to --resume ("" when it was not given).
  std::string resume_given() const;
  // Without --config, build() starts from this spec text instead of <resume>/spec.json: the
  // spec of a run whose directory is on another host, read from there by the caller. `source`
  // names it in messages. Its run_dir is a path on that host, so it is not taken.
  void set_resume_spec(std::string text, std::string source);
  // Without --config or --resume, build() lays the flags given over this spec instead of the
  // defaults (the window: the spec it would open on). A config or a resumed run's spec.json is a
  // whole spec of its own.
  void set_base_spec(const RunSpec& base) { base_ = base; }

 private:
  std::map<std::string, std::string> values_;  // json key -> raw flag text
  std::map<std::string, CLI::Option*> options_;
  std::map<std::string, CLI::Option*> negations_;  // on/off fields: json key -> --no-<flag>
  std::string config_path_;
  std::string resume_spec_;  // set_resume_spec()
  std::string resume_source_;
  RunSpec base_;  // set_base_spec()
};

// Why a spec file's text is not a JSON object, one phrase: "is empty", "is not valid JSON (at
// line 1, column 9: ...)" with the parser's reason, "must be a JSON object of run spec fields";
// empty when it is one (its fields are apply_fields' to judge).
std::string spec_text_problem(const std::string& json_text);

// Runs app.parse() with ddpdesk's error policy: --help prints and returns 0; any parse problem
// prints one line "<prog>: <what>" to stderr and returns 2. Returns -1 when parsing succeeded.
int parse_cli(CLI::App& app, int argc, char** argv);

}  // namespace ddpdesk
