#include "worker.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "communicator.h"
#include "exit_record.h"
#include "gpu_memory.h"
#include "rank_env.h"
#include "resume.h"
#include "run_layout.h"
#include "run_spec.h"
#include "spec_flags.h"
#include "stop_signals.h"
#include "task.h"
#include "telemetry.h"
#include "torch_message.h"
#include "trainer.h"
#include "worker_probe.h"
#include "worker_settings.h"

namespace ddpdesk {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_stop_signal{0};  // the signal that asked for the stop, for the exit record

// Made in main's first lines, with the process that started the rank; used on the stop-signal
// thread only (stop_signals.h), never in a signal handler.
std::optional<StopRequests> g_requests;

// The first stop signal asks for a coordinated stop (a checkpoint at the next step boundary); a
// second request means "now"; the same one delivered again means nothing (StopRequests). The
// signal is recorded before the stop flag is set, so whoever sees the flag sees which signal.
void on_stop_signal(int sig, pid_t sender) {
  switch (g_requests->take(sig, sender, monotonic_ns())) {
    case StopRequests::Action::Stop:
      g_stop_signal = sig;
      g_stop = true;
      return;
    case StopRequests::Action::ExitNow:
      _exit(128 + sig);
    case StopRequests::Action::Repeat:
      return;
  }
}

std::string hostname() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return host;
}

// Once a task may have loaded (TorchScript compilation units, mapped data), the process ends
// the way a run does: flush and _exit, without global destructors, which only repeat work the
// kernel does anyway and, for LibTorch's JIT singletons, are not written to run at exit.
[[noreturn]] void leave(int rc) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(rc);
}

int fail_input(const std::string& line) {
  std::cerr << "ddpdesk-worker: " << line << "\n";
  return 2;
}

// The line of a LibTorch message that says what went wrong (torch_message.h).
std::string first_line(const std::string& s) {
  return torch_message_line(s);
}

// --check's answer: one JSON line on stdout (the GUI and headless mode read it).
void print_check(const nlohmann::json& j) {
  std::cout << j.dump() << std::endl;
}

// --check's bad-input answer: the field (JSON key), the value and why (what the window shows
// under the field; empty for a line that is no value's), and the whole line.
nlohmann::json check_failure(const FieldError& e, const std::string& line) {
  return {
      {"ok", false}, {"field", e.field}, {"value", e.value}, {"why", e.allowed}, {"error", line}};
}

nlohmann::json tensor_json(const TensorInfo& t) {
  return {{"dtype", t.dtype}, {"shape", t.shape}};
}

nlohmann::json check_summary(const RunSpec& spec, const Task& task) {
  const TaskSummary s = task.summary();
  return {{"ok", true},
          {"task", spec.task},
          {"parameters", s.parameters},
          {"parameter_tensors", s.parameter_tensors},
          {"buffers", s.buffers},
          {"train_samples", s.train_samples},
          {"eval_samples", s.eval_samples},
          {"input", tensor_json(s.input)},
          {"target", tensor_json(s.target)},
          {"output_shape", s.output_shape},
          {"loss", spec.task == "script" ? spec.loss : std::string("built-in")},
          {"classification", task.classification()},
          {"draws_random_numbers", task.draws_random_numbers()},
          {"warnings", s.warnings}};
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    default:
      return "";
  }
}

// The rank's exit record in the run directory (see exit_record.h).
void record_exit(const std::string& run_dir, const RankEnv& e, const std::string& host,
                 const TrainResult& r, int rc, bool monitor_gone, std::int64_t monitor_dropped) {
  ExitRecord rec;
  rec.rank = e.rank;
  rec.world = e.world;
  rec.pid = getpid();
  rec.host = host;
  rec.outcome = r.kind == TrainResult::Finished  ? "finished"
                : r.kind == TrainResult::Stopped ? "stopped"
                                                 : "failed";
  rec.exit_code = rc;
  rec.reason = r.message;
  rec.step = r.step;
  rec.epoch = r.epoch;
  rec.checkpoint = r.checkpoint;
  rec.stop_signal = signal_name(g_stop_signal);
  rec.monitor_gone = monitor_gone;
  rec.monitor_dropped = monitor_dropped;
  if (r.kind == TrainResult::Stopped && rec.reason.empty())
    rec.reason = monitor_gone ? "stopped because the monitor died"
                 : !rec.stop_signal.empty()
                     ? "stopped by " + rec.stop_signal
                     : "stopped with the other ranks (one was asked to stop)";
  std::string error;
  if (!write_exit_record(run_dir, rec, &error))
    std::cerr << "ddpdesk-worker[" << e.rank << "] cannot write its exit record: " << error << "\n";
}

}  // namespace

int worker_main(int argc, char** argv) {
  // Before anything can start a thread: every thread the rank ever has inherits the block.
  block_stop_signals();
  g_requests.emplace(getppid());
  CLI::App app{"ddpdesk-worker: one rank of a ddpdesk data-parallel training run",
               "ddpdesk-worker"};
  SpecFlags flags(app, /*with_nproc=*/false);
  bool want_probe = false;
  app.add_flag("--probe", want_probe, "print the devices this build can use as JSON and exit");
  bool want_check = false;
  app.add_flag("--check", want_check,
               "load the task as a run would (model, data, one batch through forward and loss), "
               "print a JSON summary and exit: 0 good, 2 bad input");
  if (int rc = parse_cli(app, argc, argv); rc >= 0) return rc;
  // A question (--probe, --check) is no run to stop: SIGTERM ends it as it ends any program.
  // A run takes SIGINT and SIGTERM as a stop request from here on, while it loads its data too
  // (under Slurm, scancel's SIGTERM may come that early).
  if (want_probe || want_check) {
    unblock_stop_signals();
  } else {
    take_stop_signals(on_stop_signal);
    // Our stdout/stderr are pipes to the monitor: when it dies, a progress line must not kill
    // the rank (SIGPIPE) in the middle of its graceful stop; the write just fails.
    signal(SIGPIPE, SIG_IGN);
  }
  if (want_probe) {
    std::cout << probe().dump() << std::endl;
    return 0;
  }

  RunSpec spec;
  auto problems = flags.build(spec);
  if (!problems.empty()) {
    if (want_check) print_check(check_failure(problems[0], format_error(problems[0])));
    for (const auto& p : problems) std::cerr << "ddpdesk-worker: " << format_error(p) << "\n";
    return 2;
  }
  // What a rank writes of its own (TensorBoard files) needs the run directory it was given.
  if (const auto errors = validate_for_worker(spec); !errors.empty() && !want_check)
    return fail_input(format_error(errors.front(), Spelling::Flag));
  RankEnvResult env = read_rank_env();
  if (!env.env && want_check) env.env = RankEnv{};  // a check needs no place in a job
  if (!env.env) return fail_input(env.error);
  // Every DDPDESK_* switch, read here once (docs/environment.md).
  const WorkerSettingsResult settings = read_worker_settings();
  if (!settings.ok()) {
    if (want_check) print_check(check_failure({}, settings.error));
    return fail_input(settings.error);
  }
  const WorkerSettings& ws = settings.settings;
  // A rank its launcher started again (torchrun --max-restarts, a requeued Slurm job) continues
  // from the newest checkpoint of its run directory, not from scratch: its steps are then the
  // uninterrupted run's (docs/recovery.md). Every rank of the attempt sees the same checkpoints:
  // the launcher starts none before every rank of the previous attempt is gone.
  if (!want_check && env.env->restart_count > 0 && spec.resume.empty() && !spec.run_dir.empty()) {
    if (const auto found = list_checkpoints(spec.run_dir); !found.empty()) {
      spec.resume = spec.run_dir;
      if (env.env->rank == 0)
        std::cerr << "ddpdesk-worker: restart " << env.env->restart_count << ": resuming from "
                  << found.back() << "\n";
    }
  }
  // Setting up, part one: the task (model and data) loads before anything is written, so bad
  // input leaves no trace. Only here and around TrainingRun's set-up is BadInput caught.
  torch::Device device(torch::kCPU);
  std::unique_ptr<Task> task;
  std::string setup_failure;
  try {
    device = choose_device(spec, *env.env);
    task = make_task(spec, device, ws.fmnist_dir);
  } catch (const BadInput& bad) {
    if (want_check) print_check(check_failure(bad.error(), bad.what()));
    leave(fail_input(bad.what()));
  } catch (const std::exception& ex) {
    setup_failure = first_line(ex.what());  // the machine's fault, not the input's: exit 1
  }
  if (want_check) {
    if (!setup_failure.empty()) {
      std::cerr << "ddpdesk-worker: " << setup_failure << "\n";
      leave(1);
    }
    // A resume is checked as the ranks would take it: its checkpoint found, loaded into this
    // task's model and optimizer, and not already past the epochs.
    if (!spec.resume.empty()) {
      try {
        check_resume(spec, *task);
      } catch (const BadInput& bad) {
        print_check(check_failure(bad.error(), bad.what()));
        leave(fail_input(bad.what()));
      }
    }
    print_check(check_summary(spec, *task));
    leave(0);
  }
  if (!spec.run_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(spec.run_dir, ec);
    const std::string probe_file = spec.run_dir + "/.write-test-" + std::to_string(getpid());
    std::FILE* f = ec ? nullptr : std::fopen(probe_file.c_str(), "w");
    if (!f) return fail_input(format_error({"run_dir", spec.run_dir, "not a writable directory"}));
    std::fclose(f);
    std::remove(probe_file.c_str());
    remove_exit_record(spec.run_dir, env.env->rank);
  }

  // Started by the monitor: stop gracefully (and checkpoint) if it dies.
  const bool has_monitor = !ws.monitor.empty();
  const pid_t monitor_pid = getppid();
  if (has_monitor) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1) g_stop = true;  // the monitor died before prctl took effect
    // The hang doctor attaches gdb or eu-stack, the monitor's children, to this rank: a kernel
    // with Yama's ptrace_scope 1 lets only a declared tracer and its descendants attach. (Not
    // Yama: EINVAL, nothing to declare.)
    prctl(PR_SET_PTRACER, monitor_pid, 0, 0, 0);
  }
  // A stop asked for before this rank started: the signal reached only ranks already running.
  if (!ws.stop_file.empty() && std::filesystem::exists(ws.stop_file)) g_stop = true;

  const RankEnv& e = *env.env;
  Telemetry::Options topts;
  topts.hello.token = ws.token;
  topts.hello.rank = e.rank;
  topts.hello.world = e.world;
  topts.hello.pid = getpid();
  topts.hello.host = hostname();
  topts.hello.device =
      spec.device == "cuda" ? "cuda:" + std::to_string(e.local_rank) : std::string("cpu");
  topts.monitor_path = ws.monitor;
  if (spec.tensorboard) topts.tensorboard_dir = spec.run_dir + "/tb";
  topts.system_interval = spec.system_interval;
  topts.system.gpu_pci_bus_id = pci_bus_id(device);
  if (device.is_cuda()) topts.more_system = [device] { return gpu_memory_gauges(device); };
  // "{rank}" in the path gives each rank its own file (handy under torchrun and srun).
  topts.metrics_file = spec.metrics_file;
  for (std::size_t p; (p = topts.metrics_file.find("{rank}")) != std::string::npos;)
    topts.metrics_file.replace(p, 6, std::to_string(e.rank));
  // With a run directory, every rank keeps its messages in it (unless told another file), so
  // the run can be followed from any machine that sees the directory (`ddpdesk --attach`).
  if (topts.metrics_file.empty() && !spec.run_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(run_layout::rank_metrics_dir(spec.run_dir), ec);
    topts.metrics_file = run_layout::rank_metrics(spec.run_dir, e.rank);
  }
  std::unique_ptr<Telemetry> telemetry;
  try {
    telemetry = std::make_unique<Telemetry>(topts);
  } catch (const std::exception& ex) {
    return fail_input(ex.what());
  }

  TrainerOptions to;
  to.spec = spec;
  to.env = e;
  to.settings = ws;
  to.task = task.get();
  to.device = device;
  to.telemetry = telemetry.get();
  to.stop_requested = &g_stop;

  // Setting up, part two (resume, communicator, rank 0's weights), then the run. The exit code
  // follows the phase, not the exception's type: BadInput from the set-up is exit 2; anything
  // else, and everything that goes wrong once training runs (run() never throws), is exit 1 —
  // except running out of memory in training, exit 3 (exit_record.h).
  int rc = 0;
  TrainResult r;
  std::unique_ptr<TrainingRun> training;
  if (!setup_failure.empty()) {
    r = {TrainResult::Failed, setup_failure};
  } else {
    try {
      training = std::make_unique<TrainingRun>(to);
    } catch (const BadInput& bad) {
      telemetry->send(wire::Error{e.rank, bad.what()});
      std::cerr << "ddpdesk-worker: " << bad.what() << "\n";
      r = {TrainResult::Failed, bad.what()};
      rc = kExitBadInput;
    } catch (const std::exception& ex) {
      if (g_stop) {
        // Asked to stop before training: the rendezvous gave up waiting for its peers
        // (StopRequested), or a peer that stopped first left it half done. Either way the rank
        // stops as it would at a step, only with nothing trained to checkpoint.
        r = {TrainResult::Stopped, {}};
        wire::Event stopped;
        stopped.rank = e.rank;
        stopped.event = "stopped";
        stopped.detail = "stop requested before training started";
        telemetry->send(stopped);
        std::cerr << "ddpdesk-worker[" << e.rank << "] stopped before training started\n";
      } else {
        r = {TrainResult::Failed, first_line(ex.what())};
      }
    }
  }
  if (training) r = training->run();
  if (r.kind == TrainResult::Failed && rc == 0) {
    telemetry->send(wire::Error{e.rank, r.message, r.peer_lost});
    std::cerr << "ddpdesk-worker[" << e.rank << "] error: " << r.message << "\n";
    rc = r.out_of_memory ? kExitOutOfMemory : 1;
  }
  telemetry->close();
  if (const std::int64_t dropped = telemetry->dropped(); dropped > 0)
    std::cerr << "ddpdesk-worker[" << e.rank << "] " << dropped
              << " message(s) for the monitor were dropped (it did not read them in time); the "
                 "metrics file has every one\n";
  if (!spec.run_dir.empty())
    record_exit(spec.run_dir, e, topts.hello.host, r, rc, has_monitor && getppid() != monitor_pid,
                telemetry->dropped());
  std::fflush(stdout);
  std::fflush(stderr);
  // Skip global destructors: a communicator whose peer died can block in teardown, and nothing
  // is left to flush.
  _exit(rc);
}

}  // namespace ddpdesk
