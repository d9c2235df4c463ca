// The run spec's field table: one row per RunSpec field with its JSON key, kind, help line, how
// to read and write it, and its own range/choice rule. Internal to the protocol library: only
// run_spec.cpp (apply_fields, validate_field, to_json) and the table itself include it; callers
// see the table through run_spec_fields() in run_spec.h.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_spec.h"

namespace ddpdesk::spec_fields {

enum class Kind { Int, Real, Text, Bool };

// One row per field: how to read/write it and what values are allowed. The checker returns the
// "allowed" text when the current value is bad, or an empty string when it is fine.
struct Field {
  const char* key;
  Kind kind;
  const char* help;
  std::function<nlohmann::json(const RunSpec&)> get;
  std::function<void(RunSpec&, const nlohmann::json&)> set;
  std::function<std::string(const RunSpec&)> check;
  // Int fields: the allowed range, so a number too large for any integer type is still told
  // the range rather than misread as something that is no integer.
  std::int64_t lo = 0;
  std::int64_t hi = 0;
};

// "must be an integer from LO to HI": an Int field's rule, worded once.
std::string integer_range_text(std::int64_t lo, std::int64_t hi);

// Every field, in display order.
const std::vector<Field>& fields();
// The row of a JSON key; nullptr for a key that is no field.
const Field* find_field(const std::string& key);

}  // namespace ddpdesk::spec_fields
