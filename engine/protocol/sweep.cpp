#include "sweep.h"

#include <algorithm>
#include <set>

namespace ddpdesk {
namespace {

using json = nlohmann::json;

// Room for "-<k>" after the sweep's name inside the 64 characters a run name may have.
constexpr std::size_t kMaxSweepName = 56;

std::string invalid(const std::string& field, const json& value, const std::string& allowed) {
  return format_error({field, field_value_text(value), allowed}, Spelling::JsonKey);
}

const FieldInfo* numeric_field(const std::string& key) {
  for (const FieldInfo& f : run_spec_fields())
    if (key == f.key && f.numeric) return &f;
  return nullptr;
}

bool is_field(const std::string& key) {
  for (const FieldInfo& f : run_spec_fields())
    if (key == f.key) return true;
  return false;
}

std::string numeric_field_names() {
  std::string out;
  for (const FieldInfo& f : run_spec_fields())
    if (f.numeric) out += (out.empty() ? "" : ", ") + std::string(f.key);
  return out;
}

// "accum_steps=2, batch_size=64": a combination in a message.
std::string describe(const json& fields) {
  std::string out;
  for (auto it = fields.begin(); it != fields.end(); ++it)
    // Every digit of a number (dump), so two runs' values never read alike.
    out += (out.empty() ? "" : ", ") + it.key() + "=" +
           (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  return out;
}

// One value of a grid field applied to `spec`: "" when it converts and lies in the field's
// range, else the error line.
std::string apply_value(const std::string& key, const json& value, RunSpec& spec) {
  json one = json::object();
  one[key] = value;
  const auto errors = apply_fields(one, spec);
  if (!errors.empty()) return invalid("grid." + key, value, errors.front().allowed);
  const auto range = validate_field(spec, key);
  if (!range.empty()) return invalid("grid." + key, value, range.front().allowed);
  return {};
}

struct Grid {
  std::vector<std::string> keys;
  std::vector<std::vector<json>> values;
};

// Reads and checks the definition's options into `plan`; returns the grid, or sets plan.error.
Grid read_definition(const json& def, const std::vector<std::string>& order, SweepPlan& plan,
                     RunSpec& base) {
  Grid grid;
  auto fail = [&](std::string line) {
    plan.error = std::move(line);
    return grid;
  };
  if (!def.is_object()) return fail("invalid sweep: must be a JSON object (name, base, grid, ...)");
  for (auto it = def.begin(); it != def.end(); ++it) {
    const auto& keys = sweep_keys();
    if (std::find(keys.begin(), keys.end(), it.key()) == keys.end())
      return fail(invalid(it.key(), it.value(),
                          "is not a sweep key (name, base, grid, effective_batch, derive, "
                          "stop_on_failure)"));
  }
  if (def.contains("name")) {
    const json& n = def["name"];
    if (!n.is_string() || n.get<std::string>().empty() ||
        n.get<std::string>().size() > kMaxSweepName ||
        n.get<std::string>().find('/') != std::string::npos)
      return fail(invalid("name", n, "must be a text of 1 to 56 characters without '/'"));
    plan.name = n.get<std::string>();
  }
  if (def.contains("stop_on_failure")) {
    if (!def["stop_on_failure"].is_boolean())
      return fail(invalid("stop_on_failure", def["stop_on_failure"], "must be true or false"));
    plan.stop_on_failure = def["stop_on_failure"].get<bool>();
  }
  if (def.contains("base")) {
    const json& b = def["base"];
    if (!b.is_object()) return fail(invalid("base", b, "must be a JSON object of run spec fields"));
    for (const char* own : {"run_dir", "resume", "name"})
      if (b.contains(own))
        return fail(invalid(std::string("base.") + own, b[own],
                            "is set by the sweep for each run; leave it out"));
    const auto errors = apply_fields(b, base);
    if (!errors.empty())
      return fail(
          invalid("base." + errors.front().field, errors.front().value, errors.front().allowed));
    const auto problems = validate(base);
    if (!problems.empty())
      return fail(invalid("base." + problems.front().field, problems.front().value,
                          problems.front().allowed));
  }
  if (!def.contains("grid") || !def["grid"].is_object() || def["grid"].empty())
    return fail(invalid("grid", def.contains("grid") ? def["grid"] : json("(missing)"),
                        "must be an object of numeric run spec fields, each with a list of "
                        "values, e.g. {\"accum_steps\": [1, 2, 4]}"));
  const json& g = def["grid"];
  std::vector<std::string> keys;
  for (const auto& k : order)
    if (g.contains(k) && std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  for (auto it = g.begin(); it != g.end(); ++it)
    if (std::find(keys.begin(), keys.end(), it.key()) == keys.end()) keys.push_back(it.key());
  std::size_t combinations = 1;
  for (const auto& key : keys) {
    const json& values = g[key];
    if (!is_field(key)) return fail(invalid("grid." + key, values, "is not a run spec field"));
    if (!numeric_field(key))
      return fail(
          invalid("grid." + key, values,
                  "cannot be swept: a grid takes numeric fields (" + numeric_field_names() + ")"));
    if (!values.is_array() || values.empty())
      return fail(invalid("grid." + key, values, "must be a non-empty list of values"));
    std::vector<json> list;
    for (const json& v : values) {
      RunSpec probe = base;
      if (std::string e = apply_value(key, v, probe); !e.empty()) return fail(e);
      list.push_back(v);
    }
    combinations *= list.size();
    if (combinations > kMaxSweepRuns)
      return fail(
          invalid("grid", g, "expands to more than " + std::to_string(kMaxSweepRuns) + " runs"));
    grid.keys.push_back(key);
    grid.values.push_back(std::move(list));
  }
  return grid;
}

}  // namespace

const std::vector<std::string>& sweep_keys() {
  static const std::vector<std::string> keys = {
      "name", "base", "grid", "effective_batch", "derive", "stop_on_failure"};
  return keys;
}

SweepPlan expand_sweep(const json& def, const std::vector<std::string>& order) {
  SweepPlan plan;
  RunSpec base;
  const Grid grid = read_definition(def, order, plan, base);
  if (!plan.ok()) return plan;

  // Keeping nproc x batch x accum constant: which factor gives way, and at what product.
  std::int64_t effective = 0;
  std::string derive = "batch_size";
  if (def.contains("derive")) {
    const json& d = def["derive"];
    if (!d.is_string() || (d != "batch_size" && d != "accum_steps")) {
      plan.error = invalid("derive", d, "must be batch_size or accum_steps");
      return plan;
    }
    derive = d.get<std::string>();
  }
  if (def.contains("effective_batch")) {
    const json& e = def["effective_batch"];
    if (e.is_boolean()) {
      effective = e.get<bool>() ? base.effective_batch() : 0;
    } else if (e.is_number_integer() && e.get<std::int64_t>() >= 1 &&
               e.get<std::int64_t>() <= 1000000000) {
      effective = e.get<std::int64_t>();
    } else {
      plan.error = invalid("effective_batch", e,
                           "must be true (the base spec's), false, or an integer from 1 to "
                           "1000000000");
      return plan;
    }
    if (effective > 0 && std::find(grid.keys.begin(), grid.keys.end(), derive) != grid.keys.end()) {
      plan.error = invalid("derive", json(derive),
                           "is derived from effective_batch, so it cannot be in the grid as well; "
                           "derive the other one (batch_size or accum_steps)");
      return plan;
    }
  } else if (def.contains("derive")) {
    plan.error = invalid("derive", def["derive"], "needs effective_batch");
    return plan;
  }

  std::vector<std::size_t> at(grid.keys.size(), 0);
  for (bool more = true; more;) {
    RunSpec spec = base;
    json fields = json::object();
    for (std::size_t i = 0; i < grid.keys.size(); ++i) {
      apply_value(grid.keys[i], grid.values[i][at[i]], spec);  // checked while reading
      fields[grid.keys[i]] = grid.values[i][at[i]];
    }
    std::string skip;
    if (effective > 0) {
      const std::string other = derive == "batch_size" ? "accum_steps" : "batch_size";
      const std::int64_t factor =
          std::int64_t(spec.nproc) * (derive == "batch_size" ? spec.accum_steps : spec.batch_size);
      if (effective % factor != 0) {
        skip = "effective batch " + std::to_string(effective) + " is not a multiple of nproc " +
               std::to_string(spec.nproc) + " x " + other + " " +
               std::to_string(derive == "batch_size" ? spec.accum_steps : spec.batch_size) + " = " +
               std::to_string(factor);
      } else {
        const std::int64_t value = effective / factor;
        json one = json::object();
        one[derive] = value;
        apply_fields(one, spec);  // an integer onto an integer field: converts
        if (const auto range = validate_field(spec, derive); !range.empty()) {
          plan.error = "run " + std::to_string(plan.runs.size() + 1) + " (" + describe(fields) +
                       "): invalid " + derive + " '" + std::to_string(value) +
                       "' (derived from effective_batch " + std::to_string(effective) +
                       "): " + range.front().allowed;
          return plan;
        }
        fields[derive] = value;
      }
    }
    if (!skip.empty()) {
      plan.skipped.push_back({fields, skip});
    } else {
      const int k = int(plan.runs.size()) + 1;
      spec.name = plan.name + "-" + std::to_string(k);
      const auto problems = validate(spec);
      if (!problems.empty()) {
        plan.error = "run " + std::to_string(k) + " (" + describe(fields) +
                     "): " + format_error(problems.front(), Spelling::JsonKey);
        return plan;
      }
      plan.runs.push_back({spec, fields});
    }
    // Next combination: the last key varies fastest.
    more = false;
    for (std::size_t i = grid.keys.size(); i-- > 0;) {
      if (++at[i] < grid.values[i].size()) {
        more = true;
        break;
      }
      at[i] = 0;
    }
  }
  if (plan.runs.empty())
    plan.error = invalid(
        "effective_batch", json(effective),
        "leaves no run: every combination was skipped (" + plan.skipped.front().reason + ")");
  return plan;
}

SweepPlan parse_sweep(const std::string& text) {
  const json def = json::parse(text, nullptr, false);
  if (def.is_discarded()) {
    SweepPlan plan;
    plan.error = "invalid sweep: not valid JSON";
    return plan;
  }
  // The grid's key order as written: ordered_json keeps it where json sorts keys.
  std::vector<std::string> order;
  const auto ordered = nlohmann::ordered_json::parse(text, nullptr, false);
  if (ordered.is_object() && ordered.contains("grid") && ordered["grid"].is_object())
    for (auto it = ordered["grid"].begin(); it != ordered["grid"].end(); ++it)
      order.push_back(it.key());
  return expand_sweep(def, order);
}

}  // namespace ddpdesk
