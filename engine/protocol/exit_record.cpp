#include "exit_record.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "run_layout.h"

namespace ddpdesk {

std::string exit_record_path(const std::string& run_dir, int rank) {
  return run_layout::exit_record(run_dir, rank);
}

bool write_exit_record(const std::string& run_dir, const ExitRecord& r, std::string* error) {
  nlohmann::json j{{"rank", r.rank},
                   {"world", r.world},
                   {"pid", r.pid},
                   {"host", r.host},
                   {"outcome", r.outcome},
                   {"exit_code", r.exit_code},
                   {"reason", r.reason},
                   {"step", r.step},
                   {"epoch", r.epoch},
                   {"checkpoint", r.checkpoint},
                   {"stop_signal", r.stop_signal},
                   {"monitor_gone", r.monitor_gone},
                   {"monitor_dropped", r.monitor_dropped}};
  // Replacement characters instead of an exception: a reason may quote bytes from anywhere.
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const std::string path = exit_record_path(run_dir, r.rank);
  const std::string tmp = path + ".tmp-" + std::to_string(getpid());
  auto fail = [&](const char* what) {
    if (error) *error = std::string(what) + " " + tmp + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail("cannot create");
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return fail("cannot write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) return fail("cannot flush");
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("cannot rename");
  return true;
}

void remove_exit_record(const std::string& run_dir, int rank) {
  ::unlink(exit_record_path(run_dir, rank).c_str());
}

std::optional<ExitRecord> read_exit_record(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  try {
    ExitRecord r;
    r.rank = j.at("rank").get<int>();
    r.world = j.at("world").get<int>();
    r.pid = j.at("pid").get<long>();
    r.host = j.at("host").get<std::string>();
    r.outcome = j.at("outcome").get<std::string>();
    r.exit_code = j.at("exit_code").get<int>();
    r.reason = j.at("reason").get<std::string>();
    r.step = j.at("step").get<std::int64_t>();
    r.epoch = j.at("epoch").get<int>();
    r.checkpoint = j.at("checkpoint").get<std::string>();
    r.stop_signal = j.at("stop_signal").get<std::string>();
    r.monitor_gone = j.at("monitor_gone").get<bool>();
    // Absent from the records of earlier versions.
    r.monitor_dropped = j.value("monitor_dropped", std::int64_t{0});
    return r;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace ddpdesk
