// ddpdesk-worker under Debian's torchrun (python3 -m torch.distributed.run, static rendezvous
// with the agent's store): both ranks train and agree.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "rank_launcher.h"

using namespace ddpdesk::test;

TEST(Torchrun, TwoRanksUnderTorchrun) {
  if (std::system("/usr/bin/python3 -c 'import torch.distributed.run' 2>/dev/null") != 0)
    GTEST_FAIL() << "python3-torch is missing: scripts/install-deps.sh installs it";
  const std::string dir = temp_dir("torchrun");
  // TMPDIR: torchrun keeps its agent's logs in a torchelastic_* directory of its own under the
  // temporary directory and leaves it there; in `dir` it goes when the test's directories do.
  const std::string cmd = "cd " + dir + " && TMPDIR=" + dir +
                          " timeout 300 /usr/bin/python3 -m torch.distributed.run --redirects 2 "
                          "--tee 2 --no_python --nproc_per_node 2 --master_port " +
                          std::to_string(free_port()) + " " + worker_path() +
                          " --task seed --epochs 1 --dataset-size 400 --metrics-file " + dir +
                          "/m{rank}.jsonl > " + dir + "/out.txt 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "see " << dir << "/out.txt";
  auto steps = read_messages(dir + "/m0.jsonl", "step");
  for (const auto& s : read_messages(dir + "/m1.jsonl", "step")) steps.push_back(s);
  ASSERT_EQ(steps.size(),
            2u * 50u);  // each rank wrote every step to its own file ({rank} in the path)
  std::map<std::int64_t, double> by_step;
  for (const auto& s : steps) {
    const std::int64_t k = s["step"];
    if (by_step.count(k)) {
      EXPECT_EQ(by_step[k], s["global_loss"].get<double>());
    }
    by_step[k] = s["global_loss"];
  }
  EXPECT_EQ(steps.front()["samples"], 8);
}
