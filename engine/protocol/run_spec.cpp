#include "run_spec.h"

#include <cmath>
#include <functional>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

namespace ddpdesk {
namespace {

using json = nlohmann::json;

enum class Kind { Int, Real, Text };

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

const std::vector<Field>& fields() {
  static const std::vector<Field> table = {
      {"task", Kind::Text, "seed | fmnist-mlp | fmnist-cnn",
       [](const RunSpec& s) { return json(s.task); },
       [](RunSpec& s, const json& v) { s.task = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         for (const auto& t : known_tasks())
           if (s.task == t) return {};
         return "must be one of seed, fmnist-mlp, fmnist-cnn";
       }},
      {"device", Kind::Text, "cpu | cuda", [](const RunSpec& s) { return json(s.device); },
       [](RunSpec& s, const json& v) { s.device = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         return s.device == "cpu" || s.device == "cuda" ? "" : "must be cpu or cuda";
       }},
      INT_FIELD(nproc, "nproc", "ranks (processes) on this machine", 1, 256),
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
      {"name", Kind::Text, "label for the run", [](const RunSpec& s) { return json(s.name); },
       [](RunSpec& s, const json& v) { s.name = v.get<std::string>(); },
       [](const RunSpec& s) -> std::string {
         return s.name.size() <= 64 && s.name.find('/') == std::string::npos
                    ? ""
                    : "must be at most 64 characters without '/'";
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
  return task == "seed" ? 900 : 60000;
}

const std::vector<std::string>& known_tasks() {
  static const std::vector<std::string> tasks = {"seed", "fmnist-mlp", "fmnist-cnn"};
  return tasks;
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
  if (out.empty() && spec.dataset_size > 0 &&
      spec.dataset_size < static_cast<std::int64_t>(spec.nproc)) {
    out.push_back({"dataset_size", std::to_string(spec.dataset_size),
                   "must be 0 or at least nproc (" + std::to_string(spec.nproc) + ")"});
  }
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
    for (const auto& f : fields()) v.push_back({f.key, f.help});
    return v;
  }();
  return infos;
}

}  // namespace ddpdesk
