// ddpdesk-fake-worker: a Torch-free stand-in for ddpdesk-worker that follows the same contract, so
// the monitor can be tested fast and deterministically, including the ways a rank goes wrong.
//
// Contract (same as the real worker): `--config <spec.json> --run-dir <dir> [--resume <path>]`,
// rank and world from RANK / WORLD_SIZE; connects to the Unix socket in DDPDESK_MONITOR and sends
// hello (with DDPDESK_TOKEN), event started (total_steps), one step per optimizer step, eval and
// event epoch per epoch, event finished; on SIGTERM/SIGINT: event stopping at the next step
// boundary, a checkpoint (rank 0), event stopped, exit 0 (a second signal: exit 128+signal at
// once). A rank that finished or stopped writes its exit record (rank-N.exit.json) as it exits.
// Failure: an error message, exit 1.
// Bad input: exit 2. Progress goes to stderr.
//
// Scripted by environment variables (all optional):
//   FAKE_STEPS=20            optimizer steps of the whole run
//   FAKE_STEP_MS=2           time per step
//   FAKE_CRASH_STEP=k        fail when reaching step k ...
//   FAKE_CRASH_RANK=r        ... on rank r only (default 0; -1 = every rank)
//   FAKE_CRASH_MODE=exit     exit (error message, then FAKE_CRASH_CODE, default 1) | abort | segv
//   FAKE_HANG_RANK=r         rank r ignores SIGTERM/SIGINT from the start and stops making
//                            progress at FAKE_HANG_STEP (default 1): only SIGKILL ends it
//   FAKE_GARBAGE=1           sends two malformed lines with every step
//   FAKE_OVERSIZE_STEP=k     at step k sends one line longer than wire::kMaxLineBytes
//   FAKE_TOKEN=x             sends this token instead of DDPDESK_TOKEN
//   FAKE_SLOW=1              writes every message in small pieces with pauses (partial frames)
//   FAKE_RANKS=a,b           the FAKE_* behaviours above apply only to these ranks (default all)
//   FAKE_GPUS=n              `--probe` reports n CUDA GPUs (default 0)
//   FAKE_GAUGES=1            with every step, system gauges: cpu_percent 20 + 10*rank + 10*(step
//                            odd) (so a mean of 25 + 10*rank over an even step count) and
//                            rss_bytes (100 + 50*rank + step) MiB
//   FAKE_NEWER=1             talks like a newer worker: with every step, a line of an unknown
//                            message type, and one unknown field in the step itself
//   FAKE_WIRE_RANGE=lo,hi    the hello says it speaks wire versions lo..hi (and writes lo)
//
// `--check <spec flags>` (the dry run) answers one JSON line like the real worker, canned:
// invalid flags are bad input (exit 2, the field named); so is a --model, --train-data or
// --eval-data that does not exist, or a file whose first line is "bad <message>" (the message
// becomes the error), or a --resume of a directory without a readable checkpoint ("step N" in
// its newest).
// Otherwise ok (exit 0): FAKE_CHECK_PARAMS parameters (default 535818),
// 60000 train samples (or --dataset-size), 10000 eval samples with --eval-data, inputs
// float32 [N,1,28,28], targets int64 [N]; the model file's path comes back as "model".
//   FAKE_CHECK_MS=t          answer after t ms
//   FAKE_CHECK_WAIT=f        answer once file f exists (after at most 60 s regardless)
//   FAKE_CHECK_PIDFILE=f     write the check's pid to f first (tests that it gets killed)
//   FAKE_CHECK_MODE=m        garbage (no JSON, exit 0) | crash (message, exit 1) | hang
#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "exit_record.h"
#include "run_spec.h"
#include "wire.h"

namespace {

using namespace ddpdesk;

volatile std::sig_atomic_t g_stop = 0;
// Like the real worker: the first signal asks for a graceful stop, a second one means "now".
extern "C" void onStop(int sig) {
  if (g_stop) _exit(128 + sig);
  g_stop = 1;
}

long envInt(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtol(v, nullptr, 10) : fallback;
}

std::string envStr(const char* name, const std::string& fallback = {}) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : fallback;
}

void sleepMs(long ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// The monitor connection; sending never fails the run (like the real worker's sender).
class Sink {
 public:
  explicit Sink(bool slow) : slow_(slow) {}
  void connectTo(const std::string& path) {
    if (path.empty() || path.size() >= sizeof(sockaddr_un::sun_path)) return;
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      std::fprintf(stderr, "fake-worker: cannot connect to %s: %s\n", path.c_str(),
                   std::strerror(errno));
      ::close(fd_);
      fd_ = -1;
    }
  }
  void send(const wire::Message& m) { raw(wire::encode(m) + "\n"); }
  void raw(const std::string& bytes) {
    if (fd_ < 0) return;
    if (!slow_) {
      write(bytes.data(), bytes.size());
      return;
    }
    // A few bytes at a time so the reader sees lines cut at arbitrary points.
    for (std::size_t i = 0; i < bytes.size() && fd_ >= 0; i += 7) {
      write(bytes.data() + i, std::min<std::size_t>(7, bytes.size() - i));
      sleepMs(1);
    }
  }

 private:
  void write(const char* p, std::size_t n) {
    while (n > 0 && fd_ >= 0) {
      const ssize_t w = ::send(fd_, p, n, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {  // the monitor dropped us or is gone: keep training without it
        ::close(fd_);
        fd_ = -1;
        return;
      }
      p += w;
      n -= std::size_t(w);
    }
  }
  int fd_ = -1;
  bool slow_;
};

bool appliesTo(int rank) {
  const std::string ranks = envStr("FAKE_RANKS");
  if (ranks.empty()) return true;
  std::stringstream ss(ranks);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty() && std::atoi(item.c_str()) == rank) return true;
  return false;
}

// Checkpoints go where the engine puts them: <run-dir>/checkpoints/step-%08ld.pt. This fake
// one only holds "step N".
std::string checkpointPath(const std::string& runDir, long step) {
  char name[64];
  std::snprintf(name, sizeof name, "/checkpoints/step-%08ld.pt", step);
  return runDir + name;
}

// Resume point: "step N" in the newest checkpoint of a run directory, or in the given file.
long readResumeStep(const std::string& path) {
  std::string file = path;
  if (DIR* d = ::opendir((path + "/checkpoints").c_str())) {
    long best = -1;
    while (dirent* e = ::readdir(d)) {
      long n = -1;
      if (std::sscanf(e->d_name, "step-%ld.pt", &n) == 1 && n > best) {
        best = n;
        file = checkpointPath(path, n);
      }
    }
    ::closedir(d);
    if (best < 0) return -1;
  }
  std::ifstream in(file);
  std::string word;
  long step = -1;
  if (!(in >> word >> step) || word != "step") return -1;
  return step;
}

// The bad-input answer of --check: JSON on stdout, the same line on stderr, exit 2.
int checkRejects(const FieldError& e) {
  const std::string error = format_error(e, Spelling::Flag);
  const nlohmann::json answer = {
      {"ok", false}, {"field", e.field}, {"value", e.value}, {"why", e.allowed}, {"error", error}};
  std::printf("%s\n", answer.dump().c_str());
  std::fprintf(stderr, "ddpdesk-worker: %s\n", error.c_str());
  return 2;
}

// A user-task file: missing, or its first line "bad <why>", is bad input; empty = fine.
std::string fileProblem(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "no such file";
  std::string line;
  std::getline(in, line);
  return line.rfind("bad ", 0) == 0 ? line.substr(4) : std::string();
}

// As the real worker, a rank that finished or stopped says so in its exit record (exit_record.h).
void writeExitRecord(const std::string& runDir, int rank, int world, const char* outcome,
                     long step) {
  if (runDir.empty()) return;
  ExitRecord r;
  r.rank = rank;
  r.world = world;
  r.pid = long(::getpid());
  r.outcome = outcome;
  r.step = step;
  write_exit_record(runDir, r);
}

int fakeCheck(int argc, char** argv) {
  nlohmann::json fields = nlohmann::json::object();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--check") continue;
    if (a.rfind("--", 0) != 0 || i + 1 >= argc)
      return checkRejects({"config", a, "unexpected here"});
    std::string key = a.substr(2);
    std::replace(key.begin(), key.end(), '-', '_');
    fields[key] = argv[++i];
  }
  RunSpec spec;
  auto errors = apply_fields(fields, spec);
  if (errors.empty()) errors = validate(spec);
  if (!errors.empty()) return checkRejects(errors.front());
  if (const std::string pidFile = envStr("FAKE_CHECK_PIDFILE"); !pidFile.empty())
    std::ofstream(pidFile) << ::getpid() << "\n";
  sleepMs(envInt("FAKE_CHECK_MS", 0));
  if (const std::string go = envStr("FAKE_CHECK_WAIT"); !go.empty()) {
    struct stat st {};
    for (int i = 0; i < 6000 && ::stat(go.c_str(), &st) != 0; ++i) sleepMs(10);
  }
  const std::string mode = envStr("FAKE_CHECK_MODE");
  if (mode == "hang")
    for (;;) ::pause();
  if (mode == "garbage") {
    std::printf("loading...\nnot json at all\n");
    return 0;
  }
  if (mode == "crash") {
    std::fprintf(stderr, "ddpdesk-worker: simulated check failure\n");
    return 1;
  }
  if (find_task(spec.task)->user_files) {
    const std::pair<const char*, std::string> files[] = {
        {"model", spec.model}, {"train_data", spec.train_data}, {"eval_data", spec.eval_data}};
    for (const auto& [field, path] : files) {
      if (path.empty()) continue;
      const std::string why = fileProblem(path);
      if (!why.empty()) return checkRejects({field, path, why});
    }
  }
  // Only a directory that is there: the queue's tests make a rank fail with a missing one.
  struct stat dir {};
  if (!spec.resume.empty() && ::stat(spec.resume.c_str(), &dir) == 0 && S_ISDIR(dir.st_mode) &&
      readResumeStep(spec.resume) < 0)
    return checkRejects({"resume", spec.resume, "the run has no checkpoint"});
  const long long train = spec.dataset_size > 0 ? spec.dataset_size : 60000;
  const long long eval = spec.eval_data.empty() ? 0 : 10000;
  const nlohmann::json answer = {{"ok", true},
                                 {"task", spec.task},
                                 {"parameters", envInt("FAKE_CHECK_PARAMS", 535818)},
                                 {"parameter_tensors", 6},
                                 {"buffers", 0},
                                 {"train_samples", train},
                                 {"eval_samples", eval},
                                 {"input", {{"dtype", "float32"}, {"shape", {train, 1, 28, 28}}}},
                                 {"target", {{"dtype", "int64"}, {"shape", {train}}}},
                                 {"output_shape", {10}},
                                 {"loss", spec.loss},
                                 {"classification", spec.is_classification()},
                                 {"warnings", {"fake worker"}},
                                 {"model", spec.model}};
  std::printf("%s\n", answer.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--check") return fakeCheck(argc, argv);
  std::string config, runDir, resume;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : std::string(); };
    if (a == "--config")
      config = value();
    else if (a == "--run-dir")
      runDir = value();
    else if (a == "--resume")
      resume = value();
    else if (a == "--probe") {
      const long gpus = envInt("FAKE_GPUS", 0);
      std::printf("{\"cuda_available\":%s,\"device_count\":%ld,\"devices\":[]}\n",
                  gpus > 0 ? "true" : "false", gpus);
      return 0;
    } else {
      std::fprintf(stderr, "fake-worker: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  std::ifstream in(config);
  std::stringstream text;
  text << in.rdbuf();
  const SpecResult parsed = parse_run_spec(text.str());
  if (!in || !parsed.ok()) {
    std::fprintf(stderr, "fake-worker: invalid --config '%s'\n", config.c_str());
    return 2;
  }
  const RunSpec& spec = parsed.spec;
  const int rank = int(envInt("RANK", 0));
  const int world = int(envInt("WORLD_SIZE", 1));
  const bool scripted = appliesTo(rank);
  auto script = [&](const char* name, long fallback) {
    return scripted ? envInt(name, fallback) : fallback;
  };

  const long hangRank = envInt("FAKE_HANG_RANK", -1);
  // Ignoring from the start (not only once hung) leaves no race with an early SIGTERM.
  std::signal(SIGTERM, rank == hangRank ? SIG_IGN : onStop);
  std::signal(SIGINT, rank == hangRank ? SIG_IGN : onStop);
  // The monitor starts ranks with both blocked (the real worker takes them on a thread of its
  // own); this stand-in takes them in its handler, so it lifts the block, once they have one.
  sigset_t stops;
  sigemptyset(&stops);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGTERM);
  sigprocmask(SIG_UNBLOCK, &stops, nullptr);

  const long steps = envInt("FAKE_STEPS", 20);
  const long stepMs = envInt("FAKE_STEP_MS", 2);
  const long crashStep = script("FAKE_CRASH_STEP", -1);
  const long crashRank = envInt("FAKE_CRASH_RANK", 0);
  const std::string crashMode = envStr("FAKE_CRASH_MODE", "exit");
  const long hangStep = envInt("FAKE_HANG_STEP", 1);
  const bool garbage = script("FAKE_GARBAGE", 0) != 0;
  const bool gauges = script("FAKE_GAUGES", 0) != 0;
  const bool newer = script("FAKE_NEWER", 0) != 0;
  const std::string wireRange = scripted ? envStr("FAKE_WIRE_RANGE") : std::string();
  const long oversizeStep = script("FAKE_OVERSIZE_STEP", -1);
  const std::string token =
      scripted ? envStr("FAKE_TOKEN", envStr("DDPDESK_TOKEN")) : envStr("DDPDESK_TOKEN");
  const long epochs = std::max(1, spec.epochs);
  const long stepsPerEpoch = std::max(1L, (steps + epochs - 1) / epochs);
  const std::int64_t globalBatch = std::int64_t(world) * spec.batch_size * spec.accum_steps;

  long step = 0;
  if (!resume.empty()) {
    step = readResumeStep(resume);
    if (step < 0) {
      std::fprintf(stderr, "fake-worker: no checkpoint to resume from in '%s'\n", resume.c_str());
      return 2;
    }
  }

  std::printf("fake-worker rank %d of %d pid %d\n", rank, world, int(::getpid()));
  // What the launcher gave us, for the tests of the environment contract.
  std::printf(
      "env RANK=%s WORLD_SIZE=%s LOCAL_RANK=%s LOCAL_WORLD_SIZE=%s MASTER_ADDR=%s "
      "MASTER_PORT=%s OMP_NUM_THREADS=%s\n",
      envStr("RANK").c_str(), envStr("WORLD_SIZE").c_str(), envStr("LOCAL_RANK").c_str(),
      envStr("LOCAL_WORLD_SIZE").c_str(), envStr("MASTER_ADDR").c_str(),
      envStr("MASTER_PORT").c_str(), envStr("OMP_NUM_THREADS").c_str());
  std::fflush(stdout);
  Sink sink(script("FAKE_SLOW", 0) != 0);
  sink.connectTo(envStr("DDPDESK_MONITOR"));
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  wire::Hello hello{wire::kVersion, token, rank, world, ::getpid(), host, "cpu"};
  if (int lo = 0, hi = 0; std::sscanf(wireRange.c_str(), "%d,%d", &lo, &hi) == 2) {
    hello.v = hello.v_min = lo;
    hello.v_max = hi;
  }
  sink.send(hello);

  const auto t0 = std::chrono::steady_clock::now();
  auto now = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  auto event = [&](const char* name, long epoch, long at, const std::string& path = {}) {
    wire::Event e;
    e.rank = rank;
    e.event = name;
    e.epoch = int(epoch);
    e.step = at;
    e.path = path;
    e.total_steps = std::string(name) == "started" ? steps : 0;
    e.time = now();
    sink.send(e);
  };
  event("started", step / stepsPerEpoch, step);

  while (step < steps) {
    if (g_stop) {
      // The real worker agrees on this boundary with every rank; here each rank stops alone.
      event("stopping", step / stepsPerEpoch, step);
      if (rank == 0 && !runDir.empty()) {
        const std::string path = checkpointPath(runDir, step);
        ::mkdir((runDir + "/checkpoints").c_str(), 0755);
        std::ofstream(path) << "step " << step << "\n";
        event("checkpoint", step / stepsPerEpoch, step, path);
      }
      event("stopped", step / stepsPerEpoch, step);
      writeExitRecord(runDir, rank, world, "stopped", step);
      std::fprintf(stderr, "fake-worker rank %d: stopped at step %ld\n", rank, step);
      return 0;
    }
    const long next = step + 1;
    if (next == crashStep && (crashRank < 0 || crashRank == rank)) {
      std::fprintf(stderr, "fake-worker rank %d: simulated failure at step %ld\n", rank, next);
      if (crashMode == "abort") std::abort();
      if (crashMode == "segv") std::raise(SIGSEGV);
      sink.send(wire::Error{rank, "simulated failure at step " + std::to_string(next)});
      return int(envInt("FAKE_CRASH_CODE", 1));
    }
    if (rank == hangRank && next >= hangStep) {
      std::fprintf(stderr, "fake-worker rank %d: hanging at step %ld\n", rank, next);
      for (;;) ::pause();
    }
    sleepMs(stepMs);
    step = next;
    const long epoch = (step - 1) / stepsPerEpoch;
    wire::Step s;
    s.rank = rank;
    s.epoch = int(epoch);
    s.step = step;
    s.loss = 1.0 / (1.0 + step) + 0.01 * rank;
    s.global_loss = 1.0 / (1.0 + step) + 0.005 * (world - 1);
    s.samples = step * globalBatch;
    s.lr = spec.lr;
    s.time = now();
    s.samples_per_s = s.time > 0 ? double(s.samples) / s.time : 0.0;
    if (newer) {
      std::string line = wire::encode(s);
      line.insert(line.size() - 1, ",\"h2d_ms\":0.25");
      sink.raw(line + "\n");
      sink.raw("{\"type\":\"histogram\",\"rank\":" + std::to_string(rank) + ",\"bins\":[1,2]}\n");
    } else {
      sink.send(s);
    }
    if (gauges) {
      const double cpu = 20.0 + 10.0 * rank + (step % 2 ? 10.0 : 0.0);
      const double rss = double(100 + 50 * rank + step) * 1024 * 1024;
      sink.send(wire::Gauge{rank, "cpu_percent", cpu, "%", s.time, step});
      sink.send(wire::Gauge{rank, "rss_bytes", rss, "B", s.time, step});
    }
    std::fprintf(stderr, "fake-worker rank %d: step %ld/%ld loss %.4f\n", rank, step, steps,
                 s.loss);
    if (garbage) {
      sink.raw("this is not json\n");
      sink.raw("{\"type\":\"step\",\"rank\":" + std::to_string(rank) + "}\n");
    }
    if (step == oversizeStep) sink.raw(std::string(wire::kMaxLineBytes + 100, 'x') + "\n");
    if (step % stepsPerEpoch == 0 || step == steps) {
      wire::Eval e;
      e.rank = rank;
      e.epoch = int(epoch);
      e.step = step;
      e.loss = s.global_loss * 1.1;
      if (spec.is_classification()) e.accuracy = 1.0 - s.global_loss;
      e.time = now();
      sink.send(e);
      event("epoch", epoch, step);
    }
  }
  event("finished", (steps - 1) / stepsPerEpoch, step);
  writeExitRecord(runDir, rank, world, "finished", step);
  std::fprintf(stderr, "fake-worker rank %d: finished\n", rank);
  return 0;
}
