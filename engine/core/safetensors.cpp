#include "safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

namespace ddpdesk {
namespace {

using nlohmann::json;

// A JSON value as it appears in the file, shortened so that an error stays one readable line.
std::string excerpt(const json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string range_text(std::uint64_t begin, std::uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

[[noreturn]] void fail(const std::string& message) {
  throw TensorFileError(message);
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; the tag means nothing to a
// person who only wrote a data file.
std::string json_message(const char* what) {
  std::string s = what;
  if (!s.empty() && s.front() == '[') {
    const auto close = s.find("] ");
    if (close != std::string::npos) s.erase(0, close + 2);
  }
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

SafetensorsEntry parse_entry(const std::string& name, const json& v) {
  const std::string who = "tensor '" + name + "': ";
  if (!v.is_object())
    fail(who + "entry is " + std::string(v.type_name()) + " " + excerpt(v) +
         ", not an object with dtype, shape and data_offsets");
  SafetensorsEntry e;
  e.name = name;

  const auto dtype = v.find("dtype");
  if (dtype == v.end()) fail(who + "no \"dtype\"");
  if (!dtype->is_string()) fail(who + "dtype " + excerpt(*dtype) + " is not a string");
  e.dtype = dtype->get<std::string>();
  const std::size_t element = safetensors_element_size(e.dtype);
  if (element == 0)
    fail(who + "dtype " + e.dtype +
         " is not supported (ddpdesk reads BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64)");

  const auto shape = v.find("shape");
  if (shape == v.end()) fail(who + "no \"shape\"");
  if (!shape->is_array())
    fail(who + "shape " + excerpt(*shape) + " is not an array of non-negative integers");
  for (const auto& d : *shape) {
    // Unsigned values above int64 and negative values are both refused: Torch sizes are int64.
    if (d.is_number_unsigned()) {
      if (d.get<std::uint64_t>() >
          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        fail(who + "shape " + excerpt(*shape) + " has a dimension too large");
      e.shape.push_back(static_cast<std::int64_t>(d.get<std::uint64_t>()));
    } else if (d.is_number_integer()) {
      fail(who + "shape " + excerpt(*shape) + " has a negative dimension");
    } else {
      fail(who + "shape " + excerpt(*shape) + " has a dimension " + excerpt(d) +
           " that is not an integer");
    }
  }

  const auto offsets = v.find("data_offsets");
  if (offsets == v.end()) fail(who + "no \"data_offsets\"");
  if (!offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
      !(*offsets)[1].is_number_unsigned())
    fail(who + "data_offsets " + excerpt(*offsets) +
         " is not a pair [begin, end] of non-negative integers");
  e.begin = (*offsets)[0].get<std::uint64_t>();
  e.end = (*offsets)[1].get<std::uint64_t>();
  if (e.begin > e.end)
    fail(who + "data_offsets " + range_text(e.begin, e.end) + " begin after they end");

  // numel * element size without wrapping: a forged shape must not pass as a small tensor.
  std::uint64_t needed = element;
  bool overflow = false;
  bool empty = false;
  for (const std::int64_t d : e.shape) {
    if (d == 0) empty = true;
    if (!overflow && __builtin_mul_overflow(needed, static_cast<std::uint64_t>(d), &needed))
      overflow = true;
  }
  if (empty) {
    needed = 0;
  } else if (overflow) {
    fail(who + e.dtype + " " + shape_text(e.shape) + " needs more than 2^64 bytes");
  }
  if (e.end - e.begin != needed)
    fail(who + "data_offsets " + range_text(e.begin, e.end) + " hold " +
         std::to_string(e.end - e.begin) + " bytes but " + e.dtype + " " + shape_text(e.shape) +
         " needs " + std::to_string(needed));
  return e;
}

}  // namespace

std::size_t safetensors_element_size(const std::string& dtype) {
  static const std::map<std::string, std::size_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},   {"I16", 2}, {"I32", 4},
      {"I64", 8},  {"F16", 2}, {"BF16", 2}, {"F32", 4}, {"F64", 8},
  };
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

SafetensorsHeader parse_safetensors(const unsigned char* data, std::size_t size) {
  if (size == 0) fail("file is empty");
  if (size < 8)
    fail("file is " + std::to_string(size) +
         " bytes, too short for a safetensors header (8-byte length, then JSON)");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];
  if (n > kSafetensorsMaxHeader)
    fail("header length " + std::to_string(n) + " exceeds the limit of " +
         std::to_string(kSafetensorsMaxHeader) + " bytes (not a safetensors file?)");
  if (8 + n > size)
    fail("header length " + std::to_string(n) + " exceeds the file size " + std::to_string(size) +
         " (truncated file?)");

  // Duplicate names would otherwise be dropped silently by the parser (the last one wins).
  std::set<std::string> names;
  std::string duplicate;
  const json::parser_callback_t on_event = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1 && duplicate.empty() &&
        !names.insert(parsed.get<std::string>()).second)
      duplicate = parsed.get<std::string>();
    return true;
  };
  const char* text = reinterpret_cast<const char*>(data + 8);
  json header;
  try {
    header = json::parse(text, text + n, on_event);
  } catch (const json::exception& e) {
    fail("header is not valid JSON: " + json_message(e.what()));
  }
  if (!header.is_object())
    fail("header is " + std::string(header.type_name()) + " " + excerpt(header) +
         ", not a JSON object");
  if (!duplicate.empty()) fail("header names '" + duplicate + "' twice");

  SafetensorsHeader out;
  out.data_offset = 8 + n;
  const std::uint64_t data_size = size - out.data_offset;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object())
        fail("__metadata__ is " + std::string(value.type_name()) + ", not an object of strings");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string())
          fail("__metadata__ '" + mk + "' is " + std::string(mv.type_name()) + " " + excerpt(mv) +
               ", not a string");
        out.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    SafetensorsEntry e = parse_entry(key, value);
    if (e.end > data_size)
      fail("tensor '" + key + "': data_offsets " + range_text(e.begin, e.end) +
           " run past the end of the data (" + std::to_string(data_size) +
           " bytes; truncated file?)");
    out.tensors.push_back(std::move(e));
  }

  std::sort(out.tensors.begin(), out.tensors.end(), [](const auto& a, const auto& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.name < b.name;
  });
  // Sorted by begin, two non-empty ranges overlap exactly when one starts before the furthest
  // end seen so far. Empty ranges hold no bytes and cannot overlap anything.
  const SafetensorsEntry* furthest = nullptr;
  for (const auto& e : out.tensors) {
    if (e.begin == e.end) continue;
    if (furthest && e.begin < furthest->end)
      fail("tensors '" + furthest->name + "' " + range_text(furthest->begin, furthest->end) +
           " and '" + e.name + "' " + range_text(e.begin, e.end) + " overlap");
    if (!furthest || e.end > furthest->end) furthest = &e;
  }
  return out;
}

MappedFile::MappedFile(const std::string& path) {
  // O_NONBLOCK: a FIFO given by mistake must fail below, not wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) fail("no such file");
    if (err == EACCES) fail("permission denied");
    fail(std::string("cannot open: ") + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail(std::string("cannot stat: ") + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(S_ISDIR(st.st_mode) ? "is a directory" : "is not a regular file");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ == 0) {  // mmap refuses a zero length; an empty file simply has no data.
    ::close(fd);
    return;
  }
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);  // The mapping keeps the file referenced.
  if (p == MAP_FAILED) fail(std::string("cannot map: ") + std::strerror(err));
  data_ = static_cast<const unsigned char*>(p);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<unsigned char*>(data_), size_);
}

}  // namespace ddpdesk
