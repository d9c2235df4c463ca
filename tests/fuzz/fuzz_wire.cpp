// libFuzzer target: the wire decoder must never crash, hang or throw on any bytes; a line is
// blank, decoded, ignored (unknown type) or rejected, exactly one of them, as its kind says;
// whatever it accepts must re-encode to a line it accepts again, with no field the decoder does
// not know.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "wire.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view line(reinterpret_cast<const char*>(data), size);
  ddpdesk::wire::Decoded d = ddpdesk::wire::decode(line);
  using Kind = ddpdesk::wire::Decoded::Kind;
  const int outcomes = int(d.message.has_value()) + int(!d.ignored.empty()) + int(!d.error.empty());
  if (outcomes != (d.kind == Kind::Blank ? 0 : 1)) std::abort();
  if ((d.kind == Kind::Message) != d.message.has_value() ||
      (d.kind == Kind::Ignored) != !d.ignored.empty() ||
      (d.kind == Kind::Malformed) != !d.error.empty())
    std::abort();
  if (!d.message && d.unknown_fields != 0) std::abort();
  if (d.message) {
    const std::string again = ddpdesk::wire::encode(*d.message);
    const ddpdesk::wire::Decoded back = ddpdesk::wire::decode(again);
    if (!back.message || back.unknown_fields != 0) std::abort();
  }
  return 0;
}
