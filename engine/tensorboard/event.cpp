#include "event.h"

#include <cstring>

#include "crc32c.h"
#include "protobuf.h"

namespace ddpdesk::tb {
namespace {

// tensorflow/core/framework/types.proto
constexpr std::uint64_t kDtFloat = 1;
constexpr std::uint64_t kDtDouble = 2;

std::size_t varint_size(std::uint64_t v) {
  std::size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}

void put_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

bool nonzero(double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, 8);
  return bits != 0;
}

void put_event_head(std::string& out, double wall_time, std::int64_t step) {
  if (nonzero(wall_time)) pb::put_double(out, 1, wall_time);
  if (step != 0) pb::put_int64(out, 2, step);
}

// Elements in a TensorShapeProto (1 for a scalar, which has no dims); -1 when malformed.
std::int64_t element_count(std::string_view shape) {
  pb::Reader r(shape);
  pb::Field f;
  std::int64_t n = 1;
  while (r.next(&f)) {
    if (f.number == 3 && f.type == pb::Varint && f.varint) return -1;  // unknown_rank
    if (f.number != 2 || f.type != pb::Bytes) continue;
    pb::Reader dim(f.bytes);
    pb::Field d;
    std::int64_t size = 0;
    while (dim.next(&d))
      if (d.number == 1 && d.type == pb::Varint) size = static_cast<std::int64_t>(d.varint);
    if (!dim.error().empty()) return -1;
    n *= size;
  }
  return r.error().empty() ? n : -1;
}

// One occurrence of a repeated float (float_val) or double (double_val) field, packed or one
// element per field as older writers did: its first element and element count.
bool repeated_first(const pb::Field& f, bool is_float, double* first, std::size_t* n) {
  if (f.type == pb::Bytes) {
    if (!is_float) return pb::first_double(f.bytes, first, n);
    float v = 0;
    if (!pb::first_float(f.bytes, &v, n)) return false;
    *first = v;
    return true;
  }
  if (f.type != (is_float ? pb::Fixed32 : pb::Fixed64)) return false;
  *first = is_float ? double(f.as_float()) : f.as_double();
  *n = 1;
  return true;
}

// A TensorProto holding one float or double: its value. False for anything else (histograms,
// text, images, integer tensors, more than one element).
bool tensor_scalar(std::string_view tensor, double* value) {
  pb::Reader r(tensor);
  pb::Field f;
  std::uint64_t dtype = 0;
  std::int64_t elements = 1;      // no tensor_shape: a scalar
  std::size_t count[2] = {0, 0};  // float_val, double_val elements
  double first[2] = {0, 0};
  std::string_view content;
  while (r.next(&f)) {
    if (f.number == 1 && f.type == pb::Varint) {
      dtype = f.varint;
    } else if (f.number == 2 && f.type == pb::Bytes) {
      elements = element_count(f.bytes);
    } else if (f.number == 4 && f.type == pb::Bytes) {
      content = f.bytes;
    } else if (f.number == 5 || f.number == 6) {
      const int k = f.number - 5;
      double v = 0;
      std::size_t n = 0;
      if (!repeated_first(f, k == 0, &v, &n)) return false;
      if (count[k] == 0) first[k] = v;
      count[k] += n;
    }
  }
  if (!r.error().empty() || elements != 1) return false;
  if (dtype != kDtFloat && dtype != kDtDouble) return false;
  const int k = dtype == kDtFloat ? 0 : 1;
  // tensor_content (raw little-endian bytes) is used when the typed list is empty.
  if (count[k] == 0 && !content.empty()) {
    if (k == 0) {
      float v = 0;
      if (!pb::first_float(content, &v, &count[0])) return false;
      first[0] = v;
    } else if (!pb::first_double(content, &first[1], &count[1])) {
      return false;
    }
  }
  if (count[k] != 1) return false;
  *value = first[k];
  return true;
}

// The plugin a summary value belongs to ("scalars", "histograms", ...), empty when unnamed.
std::string plugin_name(std::string_view metadata) {
  pb::Reader r(metadata);
  pb::Field f;
  while (r.next(&f)) {
    if (f.number != 1 || f.type != pb::Bytes) continue;
    pb::Reader pd(f.bytes);
    pb::Field g;
    while (pd.next(&g))
      if (g.number == 1 && g.type == pb::Bytes) return std::string(g.bytes);
  }
  return {};
}

// One Summary.Value: appended to `out` when it is a scalar. Returns an error line or "".
std::string decode_value(std::string_view bytes, std::vector<Scalar>* out) {
  pb::Reader r(bytes);
  pb::Field f;
  Scalar s;
  bool simple = false, tensor_ok = false;
  double tensor_value = 0;
  std::string plugin;
  while (r.next(&f)) {
    if (f.number == 1 && f.type == pb::Bytes) {
      s.tag.assign(f.bytes);
    } else if (f.number == 2 && f.type == pb::Fixed32) {
      s.value = f.as_float();
      simple = true;
    } else if (f.number == 8 && f.type == pb::Bytes) {
      tensor_ok = tensor_scalar(f.bytes, &tensor_value);
    } else if (f.number == 9 && f.type == pb::Bytes) {
      plugin = plugin_name(f.bytes);
    }
  }
  if (!r.error().empty()) return "malformed Summary.Value: " + r.error();
  // A one-element float tensor of another plugin (a one-bin histogram, say) is not a scalar.
  if (!simple && tensor_ok && (plugin.empty() || plugin == "scalars")) {
    s.value = tensor_value;
    simple = true;
  }
  if (simple) out->push_back(std::move(s));
  return {};
}

}  // namespace

std::string encode_file_version_event(double wall_time) {
  std::string out;
  put_event_head(out, wall_time, 0);
  pb::put_bytes(out, 3, kFileVersion);
  return out;
}

std::string encode_scalar_event(double wall_time, std::int64_t step, std::string_view tag,
                                float value) {
  std::string v;
  pb::put_bytes(v, 1, tag);
  pb::put_float(v, 2, value);
  std::string summary;
  pb::put_bytes(summary, 1, v);
  std::string out;
  put_event_head(out, wall_time, step);
  pb::put_bytes(out, 5, summary);
  return out;
}

void append_scalar_record(std::string& out, double wall_time, std::int64_t step,
                          std::string_view tag, float value) {
  // The nested messages' lengths come first on the wire, so they are worked out up front.
  const std::size_t value_len = 1 + varint_size(tag.size()) + tag.size() + 5;
  const std::size_t summary_len = 1 + varint_size(value_len) + value_len;
  std::size_t event_len = 1 + varint_size(summary_len) + summary_len;
  if (nonzero(wall_time)) event_len += 9;
  if (step != 0) event_len += 1 + varint_size(static_cast<std::uint64_t>(step));
  const std::size_t start = out.size();
  put_le(out, event_len, 8);
  put_le(out, mask_crc(crc32c(out.data() + start, 8)), 4);
  const std::size_t data = out.size();
  put_event_head(out, wall_time, step);
  pb::put_key(out, 5, pb::Bytes);
  pb::put_varint(out, summary_len);
  pb::put_key(out, 1, pb::Bytes);
  pb::put_varint(out, value_len);
  pb::put_bytes(out, 1, tag);
  pb::put_float(out, 2, value);
  put_le(out, mask_crc(crc32c(out.data() + data, out.size() - data)), 4);
}

std::string decode_event(std::string_view bytes, Event* out) {
  *out = Event();
  pb::Reader r(bytes);
  pb::Field f;
  while (r.next(&f)) {
    if (f.number == 1 && f.type == pb::Fixed64) {
      out->wall_time = f.as_double();
    } else if (f.number == 2 && f.type == pb::Varint) {
      out->step = static_cast<std::int64_t>(f.varint);
    } else if (f.number == 3 && f.type == pb::Bytes) {
      out->file_version.assign(f.bytes);
    } else if (f.number == 5 && f.type == pb::Bytes) {
      pb::Reader summary(f.bytes);
      pb::Field v;
      while (summary.next(&v)) {
        if (v.number != 1 || v.type != pb::Bytes) continue;
        if (std::string e = decode_value(v.bytes, &out->scalars); !e.empty()) return e;
      }
      if (!summary.error().empty()) return "malformed Summary: " + summary.error();
    }
  }
  if (!r.error().empty()) return "malformed Event: " + r.error();
  return {};
}

}  // namespace ddpdesk::tb
