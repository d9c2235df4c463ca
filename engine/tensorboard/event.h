// TensorBoard's Event protobuf, the part of it that carries scalars, encoded and decoded by hand.
// Field numbers as in TensorBoard's event.proto, summary.proto and tensor.proto:
//   Event          { double wall_time = 1; int64 step = 2; string file_version = 3;
//                    Summary summary = 5; ... }
//   Summary        { repeated Value value = 1; }
//   Summary.Value  { string tag = 1; oneof { float simple_value = 2; TensorProto tensor = 8; ... }
//                    SummaryMetadata metadata = 9; }
//   SummaryMetadata{ PluginData plugin_data = 1 { string plugin_name = 1; } }
//   TensorProto    { DataType dtype = 1; TensorShapeProto tensor_shape = 2; bytes tensor_content =
//   4;
//                    repeated float float_val = 5 [packed]; repeated double double_val = 6
//                    [packed]; }
//   TensorShapeProto { repeated Dim dim = 2 { int64 size = 1; } }
// Scalars are written the classic way (simple_value) and read both ways: simple_value, and the
// one-element float/double tensors of the "scalars" plugin that PyTorch's SummaryWriter writes
// with new_style=True.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ddpdesk::tb {

constexpr const char* kFileVersion = "brain.Event:2";

// Proto3 leaves fields at their default out, as every protobuf library does: a step of 0 or a
// wall time of 0 is not written, so these bytes equal what PyTorch's SummaryWriter writes.
std::string encode_file_version_event(double wall_time);
std::string encode_scalar_event(double wall_time, std::int64_t step, std::string_view tag,
                                float value);
// The same event framed as a TFRecord (append_record(out, encode_scalar_event(...))), appended
// to `out` in place: no temporary strings, which made up most of a writer's time per point.
void append_scalar_record(std::string& out, double wall_time, std::int64_t step,
                          std::string_view tag, float value);

struct Scalar {
  std::string tag;
  double value = 0;
};

struct Event {
  double wall_time = 0;
  std::int64_t step = 0;
  std::string file_version;
  std::vector<Scalar> scalars;  // this event's scalar summary values; others are skipped
};

// Decodes one record's payload. Returns an empty string on success, otherwise one line saying
// why the bytes are not an Event. Fields and summary values that are not scalars are skipped.
std::string decode_event(std::string_view bytes, Event* out);

}  // namespace ddpdesk::tb
