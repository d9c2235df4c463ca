// `ddpdesk-worker --probe` names the OpenBLAS kernel set the rank computes with, so a slow CPU
// run can be traced to a pinned OPENBLAS_CORETYPE (skipped, and shown as skipped, where the BLAS
// is not OpenBLAS), and the library its matrix products run on (engine/gemm).
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "rank_launcher.h"

namespace ddpdesk::test {
namespace {

nlohmann::json probe(const std::map<std::string, std::string>& env = {}) {
  LaunchOptions o;
  o.args = {"--probe"};
  o.env = env;
  RankRun r = launch_ranks(o);
  EXPECT_EQ(r.exit_codes[0], 0) << r.stderr_text[0];
  return nlohmann::json::parse(r.stdout_text[0]);
}

std::string probed_core(const std::map<std::string, std::string>& env) {
  return probe(env).value("openblas_core", std::string("(missing)"));
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

// The library LibTorch's matrix products run on in the worker: oneDNN where the build found it.
TEST(WorkerBlas, ProbeNamesTheMatrixProductLibraryTheBuildChose) {
  EXPECT_EQ(probe().value("gemm", std::string("(missing)")), DDPDESK_GEMM_BACKEND);
}

}  // namespace
}  // namespace ddpdesk::test
