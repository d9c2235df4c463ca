// The second half of wire::decode: the rules that turn a line's slots (wire_slots.h) into a
// message, the same rules the codec has always applied to a parsed DOM: same messages, same
// errors, same unknown-field counts. Internal to the wire decoder.
#pragma once

#include "wire.h"
#include "wire_slots.h"

namespace ddpdesk::wire::detail {

// Fills d.message (or d.ignored for a type this codec does not know) and the unknown-field
// count. Throws std::runtime_error naming the field when the slots break a rule.
void applyRules(const LineSlots& slots, Decoded& d);

}  // namespace ddpdesk::wire::detail
