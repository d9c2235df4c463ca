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

// The library LibTorch's matrix products run on in the worker: oneDNN where the build found it and
// its kernels for this CPU have AVX-512 (oneDNN's avx512_core: F, BW, VL and DQ), the BLAS
// otherwise; capped below AVX-512 (oneDNN's own DNNL_MAX_CPU_ISA), the BLAS on any machine.
TEST(WorkerBlas, ProbeNamesTheMatrixProductLibraryForThisBuildAndCpu) {
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  const std::string build = DDPDESK_GEMM_BACKEND;
  EXPECT_EQ(probe().value("gemm", std::string("(missing)")),
            build == "oneDNN" && avx512 ? "oneDNN" : "BLAS");
  EXPECT_EQ(probe({{"DNNL_MAX_CPU_ISA", "AVX2"}}).value("gemm", std::string("(missing)")), "BLAS");
}

}  // namespace
}  // namespace ddpdesk::test
