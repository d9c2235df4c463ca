#include "metrics/chunked_array.h"

#include <sys/mman.h>

#include <new>

// GCC says so with __SANITIZE_ADDRESS__, clang (before 18) only through __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define DDPDESK_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DDPDESK_ADDRESS_SANITIZER 1
#endif
#endif

namespace ddpdesk::chunk_memory {

std::shared_ptr<unsigned char[]> allocate(std::size_t bytes, bool populate) {
#if defined(DDPDESK_ADDRESS_SANITIZER)
  // AddressSanitizer watches heap blocks, not mappings: an index past a chunk's end must hit
  // its redzone in the sanitizer build.
  (void)populate;
  return std::shared_ptr<unsigned char[]>(new unsigned char[bytes]());
#else
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return std::shared_ptr<unsigned char[]>(static_cast<unsigned char*>(p),
                                          [bytes](unsigned char* q) { munmap(q, bytes); });
#endif
}

}  // namespace ddpdesk::chunk_memory
