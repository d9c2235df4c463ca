// libFuzzer target: the RunSpec parser takes any text; a spec it accepts must validate, survive a
// JSON round trip unchanged, and its effective batch must not overflow.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "run_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ddpdesk::SpecResult r = ddpdesk::parse_run_spec(text);
  for (const auto& e : r.errors) (void)ddpdesk::format_error(e, ddpdesk::Spelling::Flag);
  if (!r.ok()) return 0;
  if (!ddpdesk::validate(r.spec).empty()) std::abort();
  ddpdesk::SpecResult again = ddpdesk::parse_run_spec(ddpdesk::to_json_text(r.spec));
  if (!again.ok() || ddpdesk::to_json(again.spec) != ddpdesk::to_json(r.spec)) std::abort();
  if (r.spec.effective_batch() <= 0) std::abort();
  return 0;
}
