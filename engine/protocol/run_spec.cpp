// RunSpec's rules and conversions: apply_fields (JSON or CLI text onto a spec), validate (each
// field's own rule from the field table, then the cross-field rules, here and nowhere else),
// to_json, and the Slurm launcher's value checks. The field table is in run_spec_fields.cpp,
// the task catalog in task_catalog.cpp.
#include "run_spec.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <regex>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "run_spec_fields.h"

namespace ddpdesk {
namespace {

using json = nlohmann::json;
using spec_fields::Field;
using spec_fields::find_field;
using spec_fields::Kind;

// Converts a JSON value (or CLI string) to the field's kind; nullopt when it cannot. An integer
// beyond std::int64_t, or a number's text beyond a double (1e400, 1e-400), sets *too_large, so
// its message names the range instead of the kind.
std::optional<json> convert(const Field& f, const json& v, bool* too_large) {
  *too_large = false;
  switch (f.kind) {
    case Kind::Text:
      if (v.is_string()) return v;
      return std::nullopt;
    case Kind::Int: {
      // JSON keeps integers above INT64_MAX as unsigned: read as int64 they would wrap negative.
      if (v.is_number_unsigned() &&
          v.get<std::uint64_t>() >
              static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        *too_large = true;
        return std::nullopt;
      }
      if (v.is_number_integer()) return v;
      if (v.is_number_float()) {
        double d = v.get<double>();
        if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9e15)
          return json(static_cast<std::int64_t>(d));
        *too_large = std::isfinite(d) && std::floor(d) == d;
        return std::nullopt;
      }
      if (v.is_string()) {
        const std::string s = v.get<std::string>();
        if (s.empty()) return std::nullopt;
        std::size_t pos = 0;
        try {
          long long n = std::stoll(s, &pos, 10);
          if (pos != s.size()) return std::nullopt;
          return json(static_cast<std::int64_t>(n));
        } catch (const std::out_of_range&) {
          // All digits, only too many of them ("+"/"-" first is what stoll reads too).
          const std::size_t first = s[0] == '-' || s[0] == '+' ? 1 : 0;
          *too_large =
              s.size() > first && s.find_first_not_of("0123456789", first) == std::string::npos;
          return std::nullopt;
        } catch (...) {
          return std::nullopt;
        }
      }
      return std::nullopt;
    }
    case Kind::Bool: {
      // 0 and 1 as the flags take them; true and false as JSON writes them.
      if (v.is_boolean()) return json(v.get<bool>() ? 1 : 0);
      if (v.is_number() && (v.get<double>() == 0 || v.get<double>() == 1))
        return json(v.get<double>() == 1 ? 1 : 0);
      if (v.is_string()) {
        const std::string s = v.get<std::string>();
        if (s == "0" || s == "false") return json(0);
        if (s == "1" || s == "true") return json(1);
      }
      return std::nullopt;
    }
    case Kind::Real: {
      if (v.is_number()) return json(v.get<double>());
      if (v.is_string()) {
        const std::string s = v.get<std::string>();
        if (s.empty()) return std::nullopt;
        std::size_t pos = 0;
        try {
          double d = std::stod(s, &pos);
          if (pos != s.size()) return std::nullopt;
          return json(d);
        } catch (const std::out_of_range&) {
          *too_large = true;  // beyond a double either way: real_range_text says which
          return std::nullopt;
        } catch (...) {
          return std::nullopt;
        }
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

const char* kind_text(Kind k) {
  switch (k) {
    case Kind::Int:
      return "must be an integer";
    case Kind::Real:
      return "must be a number";
    case Kind::Text:
      return "must be a string";
    case Kind::Bool:
      return "must be 0 or 1";
  }
  return "";
}

// A Real field's text that a double cannot hold: too large, or too close to 0 (strtod's ERANGE
// either way), with the field's own rule where it has one for such a value.
std::string real_range_text(const Field& f, const std::string& text) {
  const double d = std::strtod(text.c_str(), nullptr);
  const bool tiny = std::fabs(d) < 1.0;
  std::string why = tiny ? "is too close to 0 for a number" : "is too large for a number";
  RunSpec probe;
  f.set(probe, json(tiny ? 0.0 : d));
  if (const std::string rule = f.check ? f.check(probe) : ""; !rule.empty()) why += "; " + rule;
  return why;
}

// Integers that do not fit the member's type are caught here, before the narrowing get<>().
bool fits_member(const Field& f, const json& v) {
  if (f.kind != Kind::Int) return true;
  std::int64_t n = v.get<std::int64_t>();
  const std::string key = f.key;
  if (key == "seed" || key == "dataset_size") return true;
  return n >= std::numeric_limits<int>::min() && n <= std::numeric_limits<int>::max();
}

}  // namespace

std::int64_t RunSpec::resolved_dataset_size() const {
  if (dataset_size > 0) return dataset_size;
  if (task == "seed") return 900;
  if (task == "script") return 0;  // every sample of the data file
  return kFmnistTrainImages;
}

bool RunSpec::is_classification() const {
  const TaskInfo* t = find_task(task);
  if (t && t->user_files) return loss == "cross_entropy" || loss == "bce";
  return t && t->classification;
}

bool is_launcher_field(const std::string& key) {
  return key == "launcher" || key.rfind("slurm_", 0) == 0;
}

bool is_monitor_field(const std::string& key) {
  return key == "nproc" || key == "on_end" || key == "max_restarts" || key == "restart_backoff";
}

std::string check_slurm_login(const std::string& text) {
  // What ssh takes as a destination without options or quoting: no '-' first, no blanks.
  static const std::regex login(
      R"(([A-Za-z0-9_.][A-Za-z0-9_.-]*@)?[A-Za-z0-9_.][A-Za-z0-9_.-]*(:\d{1,5})?)");
  if (text.empty()) return {};
  if (!std::regex_match(text, login))
    return "must be [user@]host[:port] (letters, digits, '.', '_', '-'), or empty for sbatch here";
  const auto colon = text.rfind(':');
  if (colon != std::string::npos) {
    const long port = std::stol(text.substr(colon + 1));
    if (port < 1 || port > 65535) return "must have a port from 1 to 65535";
  }
  return {};
}

bool is_slurm_time(const std::string& text) {
  // [D-]H[:M[:S]] with a day part, else M, M:S or H:M:S.
  static const std::regex with_days(R"(\d{1,4}-\d{1,2}(:\d{1,2}(:\d{1,2})?)?)");
  static const std::regex without(R"(\d{1,7}(:\d{1,2}(:\d{1,2})?)?)");
  return text.empty() || std::regex_match(text, with_days) || std::regex_match(text, without);
}

std::vector<std::string> slurm_extra_options(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  auto flush = [&] {
    const auto b = item.find_first_not_of(" \t\r");
    const auto e = item.find_last_not_of(" \t\r");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
    item.clear();
  };
  for (char c : text) {
    if (c == ';' || c == '\n')
      flush();
    else
      item += c;
  }
  flush();
  return out;
}

std::string field_label(const std::string& key, Spelling spelling) {
  if (spelling == Spelling::JsonKey) return key;
  std::string flag = "--" + key;
  for (auto& c : flag)
    if (c == '_') c = '-';
  return flag;
}

std::string format_error(const FieldError& e, Spelling spelling) {
  return "invalid " + field_label(e.field, spelling) + " '" + e.value + "': " + e.allowed +
         (e.source.empty() ? "" : " (in " + e.source + ")");
}

std::string format_error(const FieldError& e) {
  return format_error(e, e.source.empty() ? Spelling::Flag : Spelling::JsonKey);
}

std::vector<FieldError> validate_field(const RunSpec& spec, const std::string& key) {
  std::vector<FieldError> out;
  const Field* f = find_field(key);
  if (!f) return out;
  std::string allowed = f->check(spec);
  if (!allowed.empty()) out.push_back({f->key, field_value_text(f->get(spec)), allowed});
  return out;
}

std::vector<FieldError> validate(const RunSpec& spec) {
  std::vector<FieldError> out;
  for (const auto& f : spec_fields::fields()) {
    auto e = validate_field(spec, f.key);
    out.insert(out.end(), e.begin(), e.end());
  }
  // Cross-field rule: a data set smaller than one global micro-batch cannot train.
  // The seed task precomputes its samples in memory (about 44 bytes each).
  if (out.empty() && spec.task == "seed" && spec.dataset_size > 1000000) {
    out.push_back({"dataset_size", std::to_string(spec.dataset_size),
                   "must be at most 1000000 for the seed task"});
  }
  if (out.empty() && (spec.task == "fmnist-mlp" || spec.task == "fmnist-cnn") &&
      spec.dataset_size > kFmnistTrainImages) {
    out.push_back({"dataset_size", std::to_string(spec.dataset_size),
                   "must be at most " + std::to_string(kFmnistTrainImages) +
                       " for Fashion-MNIST (its training images)"});
  }
  // The user's task needs its files named; whether they hold the right things is checked by the
  // worker's dry run (it needs LibTorch to read them).
  const TaskInfo* task = find_task(spec.task);
  if (task && task->user_files) {
    if (spec.model.empty())
      out.push_back(
          {"model", "", "is required with task script: a torch.jit.script(...).save() file"});
    if (spec.train_data.empty())
      out.push_back(
          {"train_data", "", "is required with task script: a .safetensors or torch.save file"});
  }
  if (task && task->python_script && spec.script.empty())
    out.push_back({"script", "", "is required with task python: the training script to run"});
  // Through a login node the script's files are the cluster's: named by absolute paths there.
  if (task && task->python_script && spec.is_slurm_via_login()) {
    const auto onCluster = [&out](const char* field, const std::string& path) {
      if (!path.empty() && path.front() != '/')
        out.push_back({field, path,
                       "must be an absolute path on the cluster with slurm_login (the login "
                       "node's files, not this machine's)"});
    };
    onCluster("script", spec.script);
    onCluster("workdir", spec.workdir);
    onCluster("logdir", spec.logdir);
    if (spec.python.find('/') != std::string::npos) onCluster("python", spec.python);
  }
  if (out.empty() && spec.dataset_size > 0 &&
      spec.dataset_size < static_cast<std::int64_t>(spec.world_size())) {
    out.push_back({"dataset_size", std::to_string(spec.dataset_size),
                   std::string("must be 0 or at least ") +
                       (spec.is_slurm() ? "the Slurm job's ranks (" : "nproc (") +
                       std::to_string(spec.world_size()) + ")"});
  }
  if (out.empty() && spec.is_slurm() &&
      static_cast<std::int64_t>(spec.slurm_nodes) * spec.slurm_tasks_per_node > 1000000)
    out.push_back({"slurm_nodes", std::to_string(spec.slurm_nodes),
                   "times slurm_tasks_per_node must be at most 1000000 ranks"});
  return out;
}

RunSpec with_restart_checkpoints(RunSpec spec) {
  if ((spec.max_restarts > 0 || spec.slurm_requeue) && spec.checkpoint_every == 0 &&
      spec.checkpoint_minutes == 0)
    spec.checkpoint_minutes = kRestartCheckpointMinutes;
  return spec;
}

std::vector<FieldError> validate_gpus(const RunSpec& spec, int ranks_here, int gpus) {
  if (spec.device != "cuda") return {};
  if (gpus <= 0) return {{"device", spec.device, "needs a CUDA GPU and this machine has none"}};
  if (ranks_here > gpus)
    return {{"nproc", std::to_string(ranks_here),
             "must be at most " + std::to_string(gpus) +
                 ": a CUDA run uses one GPU per rank and this machine has " + std::to_string(gpus) +
                 " GPU(s)"}};
  return {};
}

std::vector<FieldError> validate_for_worker(const RunSpec& spec) {
  std::vector<FieldError> out;
  if (const TaskInfo* t = find_task(spec.task); t && t->python_script)
    out.push_back({"task", spec.task,
                   "runs your Python script as the ranks: start it with ddpdesk (or torchrun), "
                   "not ddpdesk-worker"});
  if (spec.tensorboard && spec.run_dir.empty())
    out.push_back({"tensorboard", "1",
                   "needs a run directory (run_dir): the event files go to <run_dir>/tb"});
  return out;
}

std::vector<FieldError> apply_fields(const nlohmann::json& obj, RunSpec& spec) {
  std::vector<FieldError> out;
  if (!obj.is_object()) {
    out.push_back({"config", obj.dump(), "must be a JSON object of run spec fields"});
    return out;
  }
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const Field* f = find_field(it.key());
    if (!f) {
      out.push_back({it.key(), field_value_text(it.value()), "is not a run spec field"});
      continue;
    }
    bool too_large = false;
    auto v = convert(*f, it.value(), &too_large);
    if (too_large && f->kind == Kind::Real) {
      out.push_back({f->key, field_value_text(it.value()),
                     real_range_text(*f, it.value().get<std::string>())});
      continue;
    }
    if (too_large || (v && !fits_member(*f, *v))) {
      // Quoted as given: the converted number would be wrapped or clipped.
      out.push_back(
          {f->key, field_value_text(it.value()), spec_fields::integer_range_text(f->lo, f->hi)});
      continue;
    }
    if (!v) {
      out.push_back({f->key, field_value_text(it.value()), kind_text(f->kind)});
      continue;
    }
    f->set(spec, *v);
  }
  return out;
}

nlohmann::json to_json(const RunSpec& spec) {
  json j = json::object();
  for (const auto& f : spec_fields::fields()) j[f.key] = f.get(spec);
  return j;
}

std::string to_json_text(const RunSpec& spec, int indent) {
  return to_json(spec).dump(indent);
}

SpecResult parse_run_spec(const std::string& text) {
  SpecResult r;
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    r.parse_error = "not valid JSON";
    return r;
  }
  if (!j.is_object()) {
    r.parse_error = "must be a JSON object of run spec fields";
    return r;
  }
  r.errors = apply_fields(j, r.spec);
  if (r.errors.empty()) r.errors = validate(r.spec);
  return r;
}

const std::vector<FieldInfo>& run_spec_fields() {
  static const std::vector<FieldInfo> infos = [] {
    std::vector<FieldInfo> v;
    for (const auto& f : spec_fields::fields())
      v.push_back(
          {f.key, f.help, f.kind == Kind::Bool, f.kind == Kind::Int || f.kind == Kind::Real});
    return v;
  }();
  return infos;
}

std::string field_value_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float() && !std::isfinite(v.get<double>())) {  // dump() would print null
    std::ostringstream os;
    os << v.get<double>();
    return os.str();
  }
  std::string text = v.dump();
  if (v.is_number_float() && text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0)
    text.resize(text.size() - 2);
  return text;
}

}  // namespace ddpdesk
