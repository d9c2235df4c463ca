// `ddpdesk-worker --probe` names the OpenBLAS kernel set the rank computes with, so a slow CPU
// run can be traced to a pinned OPENBLAS_CORETYPE. Skipped (and shown as skipped) where the
// BLAS is not OpenBLAS.
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "rank_launcher.h"

namespace ddpdesk::test {
namespace {

std::string probed_core(const std::map<std::string, std::string>& env) {
  LaunchOptions o;
  o.args = {"--probe"};
  o.env = env;
  RankRun r = launch_ranks(o);
  EXPECT_EQ(r.exit_codes[0], 0) << r.stderr_text[0];
  const auto j = nlohmann::json::parse(r.stdout_text[0]);
  return j.value("openblas_core", std::string("(missing)"));
}

TEST(WorkerBlas, ProbeNamesTheKernelSetOpenblasRuns) {
  const std::string pinned = probed_core({{"OPENBLAS_CORETYPE", "Sandybridge"}});
  if (pinned.empty()) GTEST_SKIP() << "the BLAS is not OpenBLAS";
  EXPECT_EQ(pinned, "Sandybridge");
  // A name OpenBLAS does not know leaves the choice to it: the probe must report that choice,
  // not echo the variable.
  const std::string chosen = probed_core({{"OPENBLAS_CORETYPE", "NoSuchCore"}});
  EXPECT_NE(chosen, "NoSuchCore");
  EXPECT_FALSE(chosen.empty());
}

}  // namespace
}  // namespace ddpdesk::test
