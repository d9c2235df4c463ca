// Writing a file through a LibTorch serializer (OutputArchive::save_to, jit::Module::save) so
// that a failed write is an exception the caller catches, not the end of the process.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace ddpdesk {

// Creates (or truncates) `path` and hands `serialize` a stream into it, then fsyncs and closes
// the file. LibTorch's zip writer takes a short write (a full disk, EFBIG) as a broken archive
// and throws from its destructor, which ends the process (std::terminate). The stream given here
// never reports a failure to it: the first failed write is remembered, the rest discarded, and
// write_file_through throws std::runtime_error with the system's reason ("No space left on
// device") once the serializer is done. The file is left for the caller to remove.
void write_file_through(const std::string& path,
                        const std::function<void(std::ostream&)>& serialize);

}  // namespace ddpdesk
