// The previous wire decoder (nlohmann-json DOM), the benchmarks' peer; see the .cpp.
#pragma once

#include <string_view>

#include "wire.h"

namespace ddpdesk::bench {

wire::Decoded decodeWithNlohmann(std::string_view line);

}  // namespace ddpdesk::bench
