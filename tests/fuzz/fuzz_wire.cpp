// libFuzzer target: the wire decoder must never crash, hang or throw on any bytes, and whatever
// it accepts must re-encode to a line it accepts again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "wire.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view line(reinterpret_cast<const char*>(data), size);
  ddpdesk::wire::Decoded d = ddpdesk::wire::decode(line);
  if (d.message) {
    const std::string again = ddpdesk::wire::encode(*d.message);
    if (!ddpdesk::wire::decode(again).message) std::abort();
  }
  return 0;
}
