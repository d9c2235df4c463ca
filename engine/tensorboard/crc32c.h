// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of TFRecord files, and
// TensorBoard's "masked" form of it. Masking exists because a CRC stored next to the data it
// covers is a poor checksum when the data itself contains CRCs (TFRecords inside TFRecords).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ddpdesk::tb {

// `crc` continues an earlier computation (0 to start).
std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc = 0);
inline std::uint32_t crc32c(std::string_view bytes) {
  return crc32c(bytes.data(), bytes.size());
}

// ((crc >> 15) | (crc << 17)) + 0xa282ead8, modulo 2^32.
inline std::uint32_t mask_crc(std::uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
inline std::uint32_t unmask_crc(std::uint32_t masked) {
  const std::uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

}  // namespace ddpdesk::tb
