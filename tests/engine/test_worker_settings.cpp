// The worker's DDPDESK_* switches, read once: defaults, every switch parsed, malformed values
// one line naming the variable, and the fault variables honoured only in builds that have them.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "worker_settings.h"

using namespace ddpdesk;

namespace {

WorkerSettingsResult read(const std::map<std::string, std::string>& vars) {
  return read_worker_settings([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST(WorkerSettings, NothingSetGivesTheDefaults) {
  const auto r = read({});
  ASSERT_TRUE(r.ok()) << r.error;
  const WorkerSettings& s = r.settings;
  EXPECT_TRUE(s.monitor.empty());
  EXPECT_TRUE(s.token.empty());
  EXPECT_TRUE(s.fmnist_dir.empty());
  EXPECT_EQ(s.cpu_comm, WorkerSettings::CpuComm::Auto);
  EXPECT_FALSE(s.force_comm);
  EXPECT_FALSE(s.overlap.has_value());
  EXPECT_EQ(s.gloo_mode, "auto");
  EXPECT_FALSE(s.debug_steps);
  EXPECT_EQ(s.faults.nan_at_step, -1);
  EXPECT_EQ(s.faults.slow_rank, -1);
  EXPECT_EQ(s.faults.kill_in_checkpoint, -1);
}

TEST(WorkerSettings, EverySwitchIsRead) {
  const auto r = read({{"DDPDESK_MONITOR", "/run/user/1/ddpdesk/m.sock"},
                       {"DDPDESK_TOKEN", "abc"},
                       {"DDPDESK_STOP_FILE", "/shared/run/stop-requested"},
                       {"DDPDESK_FMNIST_DIR", "/data/fmnist"},
                       {"GLOO_SOCKET_IFNAME", "eth1"},
                       {"DDPDESK_COMM", "gloo"},
                       {"DDPDESK_FORCE_COMM", "1"},
                       {"DDPDESK_OVERLAP", "0"},
                       {"DDPDESK_GLOO_MODE", "busy"},
                       {"DDPDESK_DEBUG_STEPS", "1"}});
  ASSERT_TRUE(r.ok()) << r.error;
  const WorkerSettings& s = r.settings;
  EXPECT_EQ(s.monitor, "/run/user/1/ddpdesk/m.sock");
  EXPECT_EQ(s.token, "abc");
  EXPECT_EQ(s.stop_file, "/shared/run/stop-requested");
  EXPECT_EQ(s.fmnist_dir, "/data/fmnist");
  EXPECT_EQ(s.gloo_socket_ifname, "eth1");
  EXPECT_EQ(s.cpu_comm, WorkerSettings::CpuComm::Gloo);
  EXPECT_TRUE(s.force_comm);
  ASSERT_TRUE(s.overlap.has_value());
  EXPECT_FALSE(*s.overlap);
  EXPECT_EQ(s.gloo_mode, "busy");
  EXPECT_TRUE(s.debug_steps);
  EXPECT_EQ(read({{"DDPDESK_COMM", "shm"}}).settings.cpu_comm, WorkerSettings::CpuComm::Shm);
  EXPECT_EQ(read({{"DDPDESK_OVERLAP", "1"}}).settings.overlap, std::optional<bool>(true));
  // Empty means unset, as the test launchers pass it.
  EXPECT_TRUE(read({{"DDPDESK_COMM", ""}, {"DDPDESK_OVERLAP", ""}}).ok());
}

TEST(WorkerSettings, MalformedValuesAreOneLineNamingTheVariable) {
  const std::map<std::string, std::string> cases = {
      {"DDPDESK_COMM", "invalid environment DDPDESK_COMM='tcp': must be one of auto, shm, gloo"},
      {"DDPDESK_OVERLAP", "invalid environment DDPDESK_OVERLAP='tcp': must be one of 0, 1"},
      {"DDPDESK_GLOO_MODE",
       "invalid environment DDPDESK_GLOO_MODE='tcp': must be one of auto, async, sync, busy"},
      {"DDPDESK_DEBUG_STEPS", "invalid environment DDPDESK_DEBUG_STEPS='tcp': must be one of 0, 1"},
      {"DDPDESK_FORCE_COMM", "invalid environment DDPDESK_FORCE_COMM='tcp': must be one of 0, 1"},
  };
  for (const auto& [name, line] : cases) {
    const auto r = read({{name, "tcp"}});
    EXPECT_EQ(r.error, line);
  }
}

TEST(WorkerSettings, FaultsAreBuiltExactlyWhenCMakeSaysSo) {
  EXPECT_EQ(fault_injection_built(), static_cast<bool>(DDPDESK_FAULTS_EXPECTED));
}

TEST(WorkerSettings, FaultsOnlyInBuildsThatHaveThem) {
  const auto r = read({{"DDPDESK_FAULT_NAN_AT_STEP", "37"},
                       {"DDPDESK_FAULT_SLOW_RANK", "1:20"},
                       {"DDPDESK_FAULT_KILL_IN_CHECKPOINT", "200"}});
  if (!fault_injection_built()) {
    EXPECT_EQ(r.error,
              "invalid environment DDPDESK_FAULT_NAN_AT_STEP='37': fault injection is not built "
              "in (configure with -DDDPDESK_FAULT_INJECTION=ON)");
    return;
  }
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.settings.faults.nan_at_step, 37);
  EXPECT_EQ(r.settings.faults.slow_rank, 1);
  EXPECT_EQ(r.settings.faults.slow_ms, 20.0);
  EXPECT_EQ(r.settings.faults.kill_in_checkpoint, 200);
  EXPECT_EQ(read({{"DDPDESK_FAULT_SLOW_RANK", "1"}}).error,
            "invalid environment DDPDESK_FAULT_SLOW_RANK='1': must be RANK:MS (e.g. 1:20)");
  EXPECT_EQ(read({{"DDPDESK_FAULT_NAN_AT_STEP", "x"}}).error,
            "invalid environment DDPDESK_FAULT_NAN_AT_STEP='x': must be an optimizer step from 1");
}

TEST(WorkerSettings, HoldRankFaultIsRankAndStep) {
  const auto r = read({{"DDPDESK_FAULT_HOLD_RANK", "3:5"}});
  if (!fault_injection_built()) {
    EXPECT_EQ(r.error,
              "invalid environment DDPDESK_FAULT_HOLD_RANK='3:5': fault injection is not built "
              "in (configure with -DDDPDESK_FAULT_INJECTION=ON)");
    return;
  }
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.settings.faults.hold_rank, 3);
  EXPECT_EQ(r.settings.faults.hold_step, 5);
  EXPECT_EQ(read({}).settings.faults.hold_rank, -1);
  for (const char* bad : {"3", "3:", ":5", "3:0", "-1:5", "3:x", "1:5:7"})
    EXPECT_EQ(read({{"DDPDESK_FAULT_HOLD_RANK", bad}}).error,
              std::string("invalid environment DDPDESK_FAULT_HOLD_RANK='") + bad +
                  "': must be RANK:STEP (e.g. 1:5)")
        << bad;
}

TEST(WorkerSettings, OutOfMemoryFaultIsSizeRankAndStep) {
  const auto r = read({{"DDPDESK_FAULT_OOM_ABOVE", "16:1:5"}});
  if (!fault_injection_built()) {
    EXPECT_EQ(r.error,
              "invalid environment DDPDESK_FAULT_OOM_ABOVE='16:1:5': fault injection is not built "
              "in (configure with -DDDPDESK_FAULT_INJECTION=ON)");
    return;
  }
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.settings.faults.oom_above, 16);
  EXPECT_EQ(r.settings.faults.oom_rank, 1);
  EXPECT_EQ(r.settings.faults.oom_step, 5);
  // The rank and the step are optional: every rank, from the first step.
  const auto every = read({{"DDPDESK_FAULT_OOM_ABOVE", "8"}});
  ASSERT_TRUE(every.ok()) << every.error;
  EXPECT_EQ(every.settings.faults.oom_above, 8);
  EXPECT_EQ(every.settings.faults.oom_rank, -1);
  EXPECT_EQ(every.settings.faults.oom_step, 1);
  const auto ranked = read({{"DDPDESK_FAULT_OOM_ABOVE", "8:0"}});
  ASSERT_TRUE(ranked.ok()) << ranked.error;
  EXPECT_EQ(ranked.settings.faults.oom_rank, 0);
  EXPECT_EQ(ranked.settings.faults.oom_step, 1);
  const auto every_from = read({{"DDPDESK_FAULT_OOM_ABOVE", "0:*:4"}});
  ASSERT_TRUE(every_from.ok()) << every_from.error;
  EXPECT_EQ(every_from.settings.faults.oom_above, 0);
  EXPECT_EQ(every_from.settings.faults.oom_rank, -1);
  EXPECT_EQ(every_from.settings.faults.oom_step, 4);
  EXPECT_EQ(read({}).settings.faults.oom_above, -1);
  for (const char* bad :
       {"-1", "x", "8:", ":1", "8:-1", "8:1:", "8:1:0", "8:1:5:2", "8::5", "8:**"})
    EXPECT_EQ(
        read({{"DDPDESK_FAULT_OOM_ABOVE", bad}}).error,
        std::string("invalid environment DDPDESK_FAULT_OOM_ABOVE='") + bad +
            "': must be N, N:RANK or N:RANK:STEP (e.g. 16:1:5 or 16:*:5), N from 0, STEP from 1")
        << bad;
}
