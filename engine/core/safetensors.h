// The safetensors file layout, checked without LibTorch: an 8-byte little-endian header length N,
// N bytes of JSON naming each tensor's dtype, shape and byte range, then the data. Kept Torch-free
// so the whole validation is plain C++ that a fuzzer or a tool can run without the engine.
// Also the read-only file mapping the engine builds tensors on: ranks on one machine then share
// the page cache instead of each copying a large data file into its own memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace ddpdesk {

// A data file that cannot be used. what() is one line without the path, so that callers can
// prefix the flag and path they know ("invalid --train-data 'PATH': ").
class TensorFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SafetensorsEntry {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  // Byte range [begin, end) relative to SafetensorsHeader::data_offset.
  std::uint64_t begin = 0, end = 0;
};

struct SafetensorsHeader {
  // Where the data section starts in the file: 8 + header length.
  std::uint64_t data_offset = 0;
  // In data order (by begin, then name).
  std::vector<SafetensorsEntry> tensors;
  std::map<std::string, std::string> metadata;
};

// The format's own limit on the header length (as in the reference implementation).
inline constexpr std::uint64_t kSafetensorsMaxHeader = 100'000'000;

// Validates the layout of a whole file held in [data, data + size) and returns its header.
// Throws TensorFileError naming the first problem found.
SafetensorsHeader parse_safetensors(const unsigned char* data, std::size_t size);

// Bytes per element of a dtype ddpdesk accepts (BOOL, U8, I8, I16, I32, I64, F16, BF16, F32,
// F64); 0 for any other name.
std::size_t safetensors_element_size(const std::string& dtype);

// A whole file mapped read-only (MAP_PRIVATE). An empty file maps to data() == nullptr, size 0.
// Writing through data() faults: the memory is shared with the page cache.
class MappedFile {
 public:
  // Throws TensorFileError ("no such file", "permission denied", "is a directory", ...).
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  const unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace ddpdesk
