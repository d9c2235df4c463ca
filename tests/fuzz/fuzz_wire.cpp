// libFuzzer target: the wire decoder must never crash, hang or throw on any bytes; a line is
// decoded, ignored (unknown type) or rejected, exactly one of them; whatever it accepts must
// re-encode to a line it accepts again, with no field the decoder does not know.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "wire.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view line(reinterpret_cast<const char*>(data), size);
  ddpdesk::wire::Decoded d = ddpdesk::wire::decode(line);
  const int outcomes = int(d.message.has_value()) + int(!d.ignored.empty()) + int(!d.error.empty());
  if (outcomes != 1) std::abort();
  if (!d.message && d.unknown_fields != 0) std::abort();
  if (d.message) {
    const std::string again = ddpdesk::wire::encode(*d.message);
    const ddpdesk::wire::Decoded back = ddpdesk::wire::decode(again);
    if (!back.message || back.unknown_fields != 0) std::abort();
  }
  return 0;
}
