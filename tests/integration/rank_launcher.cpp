#include "rank_launcher.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace ddpdesk::test {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string replace_rank(std::string s, int rank) {
  const std::string key = "{rank}";
  for (std::size_t p; (p = s.find(key)) != std::string::npos;)
    s.replace(p, key.size(), std::to_string(rank));
  return s;
}

}  // namespace

std::string worker_path() {
  return DDPDESK_WORKER_PATH;
}

namespace {

// Every directory temp_dir() made, removed when the test process exits, passed or failed
// (DDPDESK_KEEP_TEST_FILES=1 keeps them to look at). Forked ranks leave through exec or _exit,
// so only the test process itself runs this.
struct TempDirs {
  std::vector<std::string> dirs;
  ~TempDirs() {
    const char* keep = std::getenv("DDPDESK_KEEP_TEST_FILES");
    if (keep && std::string(keep) == "1") return;
    std::error_code ec;
    for (const auto& d : dirs) std::filesystem::remove_all(d, ec);
  }
};
TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}

}  // namespace

std::string temp_dir(const std::string& tag) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ddpdesk-" + tag + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
  temp_dirs().dirs.push_back(buf.data());
  return buf.data();
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

bool process_alive(int pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  auto p = line.rfind(')');
  return p == std::string::npos || line.size() < p + 3 || line[p + 2] != 'Z';
}

RankRun launch_ranks(const LaunchOptions& o) {
  RankRun run;
  const std::string logs = temp_dir("ranklogs");
  const int port = free_port();
  for (int r = 0; r < o.world; ++r) {
    pid_t pid = ::fork();
    if (pid == 0) {
      if (o.torchrun_env) {
        ::setenv("RANK", std::to_string(r).c_str(), 1);
        ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
        ::setenv("WORLD_SIZE", std::to_string(o.world).c_str(), 1);
        ::setenv("LOCAL_WORLD_SIZE", std::to_string(o.world).c_str(), 1);
        ::setenv("MASTER_ADDR", "127.0.0.1", 1);
        ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      } else {
        for (const char* v :
             {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"})
          ::unsetenv(v);
      }
      ::setenv("OMP_NUM_THREADS", "1", 1);
      for (const auto& [k, v] : o.env) ::setenv(k.c_str(), replace_rank(v, r).c_str(), 1);
      std::string err = logs + "/rank" + std::to_string(r) + ".err";
      std::string out = logs + "/rank" + std::to_string(r) + ".out";
      if (!freopen(err.c_str(), "w", stderr) || !freopen(out.c_str(), "w", stdout)) _exit(99);
      std::vector<std::string> args{worker_path()};
      for (const auto& a : o.args) args.push_back(replace_rank(a, r));
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      _exit(127);
    }
    run.pids.push_back(pid);
  }
  run.exit_codes.assign(o.world, -1);
  run.exited_at.assign(o.world, {});
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.timeout_s);
  int left = o.world;
  bool polling = static_cast<bool>(o.while_running);
  while (left > 0) {
    for (int r = 0; r < o.world; ++r) {
      if (run.exit_codes[r] != -1) continue;
      int status = 0;
      if (::waitpid(run.pids[r], &status, WNOHANG) == run.pids[r]) {
        run.exit_codes[r] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        run.exited_at[r] = std::chrono::steady_clock::now();
        --left;
      }
    }
    if (left == 0) break;
    if (polling && o.while_running(run.pids)) polling = false;
    if (std::chrono::steady_clock::now() > deadline) {
      run.timed_out = true;
      for (int r = 0; r < o.world; ++r)
        if (run.exit_codes[r] == -1) ::kill(run.pids[r], SIGKILL);
      deadline = std::chrono::steady_clock::now() + std::chrono::hours(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (int r = 0; r < o.world; ++r) {
    run.stderr_text.push_back(read_file(logs + "/rank" + std::to_string(r) + ".err"));
    run.stdout_text.push_back(read_file(logs + "/rank" + std::to_string(r) + ".out"));
  }
  std::error_code ec;
  std::filesystem::remove_all(logs, ec);  // the text is in `run` now
  return run;
}

RunSteps run_steps(LaunchOptions o, const std::string& tag) {
  const std::string dir = temp_dir(tag);
  o.args.insert(o.args.end(), {"--metrics-file", dir + "/rank{rank}.jsonl"});
  const RankRun r = launch_ranks(o);
  RunSteps out;
  if (r.timed_out) out.failed += "timed out; ";
  for (int k = 0; k < o.world; ++k) {
    if (r.exit_codes[k] != 0)
      out.failed += "rank " + std::to_string(k) + " exited " + std::to_string(r.exit_codes[k]) +
                    ": " + r.stderr_text[k] + "; ";
    out.steps.push_back(read_messages(dir + "/rank" + std::to_string(k) + ".jsonl", "step"));
  }
  return out;
}

std::vector<nlohmann::json> read_messages(const std::string& path, const std::string& type) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.value("type", "") == type) out.push_back(j);
  }
  return out;
}

std::int64_t last_step(const std::string& path) {
  std::int64_t step = 0;
  for (const auto& s : read_messages(path, "step")) step = std::max<std::int64_t>(step, s["step"]);
  return step;
}

std::optional<ExitRecord> exit_record(const std::string& run_dir, int rank) {
  return read_exit_record(exit_record_path(run_dir, rank));
}

}  // namespace ddpdesk::test
