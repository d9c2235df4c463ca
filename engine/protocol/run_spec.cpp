#include "run_spec.h"

#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

namespace ddpdesk {
namespace {

using json = nlohmann::json;

enum class Kind { Int, Real, Text, Bool };

// One row per field: how to read/write it and what values are allowed. The checker returns the
// "allowed" text when the current value is bad, or an empty string when it is fine.
struct Field {
  const char* key;
  Kind kind;
  const char* help;
  std::function<json(const RunSpec&)> get;
  std::function<void(RunSpec&, const json&)> set;
  std::function<std::string(const RunSpec&)> check;
};

template <typename T>
std::string check_range(T v, T lo, T hi, const char* what) {
  if (v >= lo && v <= hi) return {};
  std::ostringstream os;
  os << "must be " << what << " from " << lo << " to " << hi;
  return os.str();
}

std::string check_real(double v, double lo, double hi, bool lo_open) {
  bool ok = std::isfinite(v) && (lo_open ? v > lo : v >= lo) && v <= hi;
  if (ok) return {};
  std::ostringstream os;
  os << "must be a number " << (lo_open ? "greater than " : "from ") << lo
     << (lo_open ? " and at most " : " to ") << hi;
  return os.str();
}

constexpr std::int64_t kMaxI64 = std::numeric_limits<std::int64_t>::max();

#define INT_FIELD(member, key, help, lo, hi)                                                       \
  Field {                                                                                          \
    key, Kind::Int, help, [](const RunSpec& s) { return json(s.member); },                         \
        [](RunSpec& s, const json& v) { s.member = v.get<decltype(RunSpec::member)>(); },          \
        [](const RunSpec& s) { return check_range<std::int64_t>(s.member, lo, hi, "an integer"); } \
  }

#define TEXT_FIELD(member, key, help)                                       \
  Field {                                                                   \
    key, Kind::Text, help, [](const RunSpec& s) { return json(s.member); }, \
        [](RunSpec& s, const json& v) { s.member = v.get<std::string>(); }, \
        [](const RunSpec&) { return std::string(); }                        \
  }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

// Slurm names (partition, account): what sbatch takes without quoting trouble.
std::string check_slurm_name(const std::string& name) {
  if (name.size() > 64) return "must be at most 64 characters of letters, digits, '_', '-', '.'";
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
      return "must be empty (the default) or letters, digits, '_', '-', '.'";
  return {};
}

std::string check_tensor_name(const std::string& name) {
  return !name.empty() && name.size() <= 256 ? "" : "must be a tensor name of 1 to 256 characters";
}

const std::vector<Field>& fields() {
  static const std::vector<Field> table = {
      {"task", Kind::Text, "seed | fmnist-mlp | fmnist-cnn | script (your TorchScript model)",
       [](const RunSpec& s) { return json(s.task); },
       [](RunSpec& s, const json& v) { s.task = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         return find_task(s.task) ? "" : "must be one of " + join(known_tasks());
       }},
      {"device", Kind::Text, "cpu | cuda", [](const RunSpec& s) { return json(s.device); },
       [](RunSpec& s, const json& v) { s.device = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         return s.device == "cpu" || s.device == "cuda" ? "" : "must be cpu or cuda";
       }},
      INT_FIELD(nproc, "nproc", "ranks (processes) on this machine", 1, kMaxLocalRanks),
      INT_FIELD(batch_size, "batch_size", "samples per rank per micro-step", 1, 65536),
      INT_FIELD(accum_steps, "accum_steps", "micro-steps per optimizer step", 1, 65536),
      INT_FIELD(epochs, "epochs", "passes over the training set", 1, 100000),
      {"lr", Kind::Real, "Adam learning rate", [](const RunSpec& s) { return json(s.lr); },
       [](RunSpec& s, const json& v) { s.lr = v.get<double>(); },
       [](const RunSpec& s) { return check_real(s.lr, 0.0, 10.0, true); }},
      {"weight_decay", Kind::Real, "Adam L2 weight decay",
       [](const RunSpec& s) { return json(s.weight_decay); },
       [](RunSpec& s, const json& v) { s.weight_decay = v.get<double>(); },
       [](const RunSpec& s) { return check_real(s.weight_decay, 0.0, 1.0, false); }},
      INT_FIELD(seed, "seed", "seed for data, shuffling and initialisation", 0, kMaxI64),
      INT_FIELD(dataset_size, "dataset_size",
                "training samples (seed: generated; fmnist: first N images); 0 = task default", 0,
                100000000),
      INT_FIELD(log_interval, "log_interval", "optimizer steps between step messages", 1, 1000000),
      {"run_dir", Kind::Text, "directory for checkpoints (empty: none)",
       [](const RunSpec& s) { return json(s.run_dir); },
       [](RunSpec& s, const json& v) { s.run_dir = v.get<std::string>(); },
       [](const RunSpec&) { return std::string(); }},
      {"resume", Kind::Text, "run directory or checkpoint file to continue from",
       [](const RunSpec& s) { return json(s.resume); },
       [](RunSpec& s, const json& v) { s.resume = v.get<std::string>(); },
       [](const RunSpec&) { return std::string(); }},
      {"metrics_file", Kind::Text, "JSONL file receiving every wire message of this rank",
       [](const RunSpec& s) { return json(s.metrics_file); },
       [](RunSpec& s, const json& v) { s.metrics_file = v.get<std::string>(); },
       [](const RunSpec&) { return std::string(); }},
      INT_FIELD(checkpoint_every, "checkpoint_every",
                "optimizer steps between periodic checkpoints (0: off)", 0, 100000000),
      {"checkpoint_minutes", Kind::Real, "minutes between periodic checkpoints (0: off)",
       [](const RunSpec& s) { return json(s.checkpoint_minutes); },
       [](RunSpec& s, const json& v) { s.checkpoint_minutes = v.get<double>(); },
       [](const RunSpec& s) { return check_real(s.checkpoint_minutes, 0.0, 100000.0, false); }},
      INT_FIELD(keep_checkpoints, "keep_checkpoints", "periodic checkpoints kept", 1, 1000),
      {"collective_timeout", Kind::Real, "seconds a collective waits for a peer",
       [](const RunSpec& s) { return json(s.collective_timeout); },
       [](RunSpec& s, const json& v) { s.collective_timeout = v.get<double>(); },
       [](const RunSpec& s) { return check_real(s.collective_timeout, 0.5, 86400.0, false); }},
      {"system_interval", Kind::Real, "seconds between samples of CPU, memory and GPU use (0: off)",
       [](const RunSpec& s) { return json(s.system_interval); },
       [](RunSpec& s, const json& v) { s.system_interval = v.get<double>(); },
       [](const RunSpec& s) -> std::string {
         // Sampling faster than 10 Hz would cost more than it tells; 0 switches it off.
         if (s.system_interval == 0 || check_real(s.system_interval, 0.1, 3600.0, false).empty())
           return "";
         return "must be 0 (off) or a number from 0.1 to 3600";
       }},
      {"tensorboard", Kind::Bool, "1: write TensorBoard event files into <run_dir>/tb (0: off)",
       [](const RunSpec& s) { return json(s.tensorboard ? 1 : 0); },
       [](RunSpec& s, const json& v) { s.tensorboard = v.get<int>() != 0; },
       [](const RunSpec&) { return std::string(); }},
      {"name", Kind::Text, "label for the run", [](const RunSpec& s) { return json(s.name); },
       [](RunSpec& s, const json& v) { s.name = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         return s.name.size() <= 64 && s.name.find('/') == std::string::npos
                    ? ""
                    : "must be at most 64 characters without '/'";
       }},
      TEXT_FIELD(model, "model", "task script: TorchScript model file (torch.jit.script(m).save)"),
      TEXT_FIELD(train_data, "train_data",
                 "task script: training tensors (.safetensors or torch.save zip)"),
      TEXT_FIELD(eval_data, "eval_data", "task script: validation tensors (optional)"),
      {"loss", Kind::Text, "task script: cross_entropy | mse | bce | model (per_sample_loss)",
       [](const RunSpec& s) { return json(s.loss); },
       [](RunSpec& s, const json& v) { s.loss = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         for (const auto& l : known_losses())
           if (s.loss == l) return {};
         return "must be one of " + join(known_losses());
       }},
      {"input_name", Kind::Text, "task script: name of the input tensor in the data files",
       [](const RunSpec& s) { return json(s.input_name); },
       [](RunSpec& s, const json& v) { s.input_name = v.get<std::string>(); },
       [](const RunSpec& s) { return check_tensor_name(s.input_name); }},
      {"target_name", Kind::Text, "task script: name of the target tensor in the data files",
       [](const RunSpec& s) { return json(s.target_name); },
       [](RunSpec& s, const json& v) { s.target_name = v.get<std::string>(); },
       [](const RunSpec& s) { return check_tensor_name(s.target_name); }},
      {"launcher", Kind::Text, "local (processes on this machine) | slurm (an sbatch job)",
       [](const RunSpec& s) { return json(s.launcher); },
       [](RunSpec& s, const json& v) { s.launcher = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         return s.launcher == "local" || s.launcher == "slurm" ? "" : "must be local or slurm";
       }},
      INT_FIELD(slurm_nodes, "slurm_nodes", "slurm: nodes of the job", 1, 100000),
      INT_FIELD(slurm_tasks_per_node, "slurm_tasks_per_node", "slurm: ranks per node", 1,
                kMaxLocalRanks),
      {"slurm_partition", Kind::Text, "slurm: partition (empty: the cluster's default)",
       [](const RunSpec& s) { return json(s.slurm_partition); },
       [](RunSpec& s, const json& v) { s.slurm_partition = v.get<std::string>(); },
       [](const RunSpec& s) { return check_slurm_name(s.slurm_partition); }},
      {"slurm_time", Kind::Text, "slurm: time limit, e.g. 30, 1:30:00, 2-0 (empty: the default)",
       [](const RunSpec& s) { return json(s.slurm_time); },
       [](RunSpec& s, const json& v) { s.slurm_time = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         return is_slurm_time(s.slurm_time)
                    ? ""
                    : "must be empty or minutes, M:S, H:M:S, D-H, D-H:M or D-H:M:S (sbatch --time)";
       }},
      {"slurm_account", Kind::Text, "slurm: account to charge (empty: your default)",
       [](const RunSpec& s) { return json(s.slurm_account); },
       [](RunSpec& s, const json& v) { s.slurm_account = v.get<std::string>(); },
       [](const RunSpec& s) { return check_slurm_name(s.slurm_account); }},
      {"slurm_extra", Kind::Text,
       "slurm: more sbatch options, ';' between them (e.g. --qos=debug;--gres=gpu:4)",
       [](const RunSpec& s) { return json(s.slurm_extra); },
       [](RunSpec& s, const json& v) { s.slurm_extra = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         for (const auto& o : slurm_extra_options(s.slurm_extra)) {
           // One #SBATCH line each: an option, and nothing a line break could smuggle in.
           if (o.size() < 2 || o[0] != '-') return "must be sbatch options starting with '-'";
           if (o.find('\'') != std::string::npos || o.find('"') != std::string::npos)
             return "must not contain quotes (each option becomes one #SBATCH line)";
         }
         return {};
       }},
  };
  return table;
}

const Field* find_field(const std::string& key) {
  for (const auto& f : fields())
    if (key == f.key) return &f;
  return nullptr;
}

std::string value_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) {  // dump() would print a NaN as null
    std::ostringstream os;
    os << v.get<double>();
    return os.str();
  }
  return v.dump();
}

// Converts a JSON value (or CLI string) to the field's kind; nullopt when it cannot.
std::optional<json> convert(const Field& f, const json& v) {
  switch (f.kind) {
    case Kind::Text:
      if (v.is_string()) return v;
      return std::nullopt;
    case Kind::Int: {
      if (v.is_number_integer()) return v;
      if (v.is_number_float()) {
        double d = v.get<double>();
        if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9e15)
          return json(static_cast<std::int64_t>(d));
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

const std::vector<TaskInfo>& task_catalog() {
  static const std::vector<TaskInfo> tasks = {
      {"seed", "the seed script's regression: variable-length samples, masked max", false, false},
      {"fmnist-mlp", "Fashion-MNIST, 784-512-256-10 MLP", true, false},
      {"fmnist-cnn", "Fashion-MNIST, two conv layers + two linear", true, false},
      {"script", "your TorchScript model on your tensor data", false, true},
  };
  return tasks;
}

const TaskInfo* find_task(const std::string& name) {
  for (const auto& t : task_catalog())
    if (name == t.name) return &t;
  return nullptr;
}

const std::vector<std::string>& known_tasks() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& t : task_catalog()) v.push_back(t.name);
    return v;
  }();
  return names;
}

const std::vector<std::string>& known_losses() {
  static const std::vector<std::string> losses = {"cross_entropy", "mse", "bce", "model"};
  return losses;
}

bool is_user_task_field(const std::string& key) {
  return key == "model" || key == "train_data" || key == "eval_data" || key == "loss" ||
         key == "input_name" || key == "target_name";
}

bool is_launcher_field(const std::string& key) {
  return key == "launcher" || key.rfind("slurm_", 0) == 0;
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
  return "invalid " + field_label(e.field, spelling) + " '" + e.value + "': " + e.allowed;
}

std::vector<FieldError> validate_field(const RunSpec& spec, const std::string& key) {
  std::vector<FieldError> out;
  const Field* f = find_field(key);
  if (!f) return out;
  std::string allowed = f->check(spec);
  if (!allowed.empty()) out.push_back({f->key, value_text(f->get(spec)), allowed});
  return out;
}

std::vector<FieldError> validate(const RunSpec& spec) {
  std::vector<FieldError> out;
  for (const auto& f : fields()) {
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
      out.push_back({it.key(), value_text(it.value()), "is not a run spec field"});
      continue;
    }
    auto v = convert(*f, it.value());
    if (!v || !fits_member(*f, *v)) {
      out.push_back({f->key, value_text(it.value()), kind_text(f->kind)});
      continue;
    }
    f->set(spec, *v);
  }
  return out;
}

nlohmann::json to_json(const RunSpec& spec) {
  json j = json::object();
  for (const auto& f : fields()) j[f.key] = f.get(spec);
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
    for (const auto& f : fields())
      v.push_back(
          {f.key, f.help, f.kind == Kind::Bool, f.kind == Kind::Int || f.kind == Kind::Real});
    return v;
  }();
  return infos;
}

}  // namespace ddpdesk
