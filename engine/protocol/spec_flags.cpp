#include "spec_flags.h"

#include "run_layout.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace ddpdesk {

SpecFlags::SpecFlags(CLI::App& app, bool with_nproc) {
  app.add_option("--config", config_path_, "JSON run spec; flags given as well override it");
  for (const auto& f : run_spec_fields()) {
    const std::string key = f.key;
    if (key == "nproc" && !with_nproc) continue;
    // Values are taken as text and converted by the shared RunSpec rules, so a bad number gets
    // the same message from a flag as from a config file or the GUI.
    const std::string flag = field_label(key, Spelling::Flag);
    options_[key] = app.add_option(flag, values_[key], f.help);
    if (!f.boolean) continue;
    // An on/off field is a flag: given alone it is on (`--tensorboard --name x`); a value
    // right after it (`--tensorboard 0`, `--tensorboard=1`) still says which; `--no-X` is off.
    options_[key]->expected(0, 1)->type_name("[0|1]");
    negations_[key] = app.add_flag("--no-" + flag.substr(2))
                          ->description("the same as " + flag + " 0")
                          ->excludes(options_[key]);
  }
  // The monitor (the one with --nproc) always gives its ranks a run directory.
  if (with_nproc)
    options_.at("run_dir")->description(
        "the run's directory: spec, metrics, logs, checkpoints (empty: a new one in the run "
        "history); one holding another run is refused unless --resume continues that run");
}

std::string spec_text_problem(const std::string& text) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return "is empty";
  try {
    if (!nlohmann::json::parse(text).is_object()) return "must be a JSON object of run spec fields";
  } catch (const nlohmann::json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 9: syntax error ..."
    std::string why = e.what();
    const std::size_t at = why.find(" at line ");
    why = at == std::string::npos ? why.substr(why.find(']') + 1) : why.substr(at + 1);
    return "is not valid JSON (" + why + ")";
  }
  return {};
}

std::vector<FieldError> SpecFlags::build(RunSpec& out) const {
  std::vector<FieldError> problems;
  RunSpec spec = config_path_.empty() && resume_given().empty() ? base_ : RunSpec();
  std::set<std::string> from_flags;
  // Without --config, resuming a run directory starts from the spec that run was started with
  // (its spec.json), so `--resume DIR` alone continues the run as it was and a flag given as
  // well (say --epochs) changes just that.
  std::string config_path = config_path_;
  bool from_run_dir = false;
  std::string text;
  if (config_path.empty() && !resume_spec_.empty()) {
    text = resume_spec_;
    config_path = resume_source_;
  } else if (config_path.empty() && options_.count("resume") &&
             options_.at("resume")->count() > 0) {
    const std::string candidate = run_layout::spec_file(values_.at("resume"));
    from_run_dir = static_cast<bool>(std::ifstream(candidate));
    if (from_run_dir) config_path = candidate;
  }
  // A problem with the file itself is the flag's that named it: --config, or --resume for the
  // spec.json of the run directory it names.
  auto file_problem = [&](const std::string& why) {
    if (from_run_dir)
      problems.push_back({"resume", values_.at("resume"), "its spec.json " + why});
    else
      problems.push_back({"config", config_path, why});
    return problems;
  };
  if (!config_path.empty() && text.empty()) {
    std::error_code ec;
    if (std::filesystem::is_directory(config_path, ec))
      return file_problem("is a directory, not a JSON file");
    std::ifstream in(config_path);
    if (!in) return file_problem("cannot be read");
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  if (!config_path.empty()) {
    if (const std::string why = spec_text_problem(text); !why.empty()) return file_problem(why);
    const nlohmann::json j = nlohmann::json::parse(text);
    for (auto e : apply_fields(j, spec)) {
      e.source = config_path;
      problems.push_back(e);
    }
    // The directory may have been moved since: it continues where it is now. One on another
    // host is no directory here.
    if (from_run_dir) spec.run_dir = values_.at("resume");
    if (!resume_spec_.empty() && config_path_.empty()) spec.run_dir.clear();
  }
  nlohmann::json given = nlohmann::json::object();
  for (const auto& [key, opt] : options_) {
    const auto negation = negations_.find(key);
    if (negation != negations_.end() && negation->second->count() > 0) {
      given[key] = "0";
    } else if (opt->count() > 0) {
      // An on/off flag given alone carries no text: it means on.
      const bool alone = negation != negations_.end() && values_.at(key).empty();
      given[key] = alone ? "1" : values_.at(key);
    } else {
      continue;
    }
    from_flags.insert(key);
  }
  for (const auto& e : apply_fields(given, spec)) problems.push_back(e);
  if (!problems.empty()) return problems;
  for (auto e : validate(spec)) {
    if (!from_flags.count(e.field)) e.source = config_path;  // empty without a config
    problems.push_back(e);
  }
  if (problems.empty()) out = spec;
  return problems;
}

std::string SpecFlags::resume_given() const {
  const auto it = options_.find("resume");
  return it != options_.end() && it->second->count() > 0 ? values_.at("resume") : std::string();
}

void SpecFlags::set_resume_spec(std::string text, std::string source) {
  resume_spec_ = std::move(text);
  resume_source_ = std::move(source);
}

}  // namespace ddpdesk
