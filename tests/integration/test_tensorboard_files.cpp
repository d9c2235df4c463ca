// --tensorboard with real workers: every rank's event files under <run_dir>/tb hold exactly
// what its metrics file says (step messages as loss / samples_per_s / lr / time_ms/..., gauges
// under their names, rank 0's global loss and validation in tb/global), at the optimizer step,
// stamped with the real time; and without a run directory the flag is bad input.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>

#include "event_file.h"
#include "rank_launcher.h"

using namespace ddpdesk::test;
namespace fs = std::filesystem;

namespace {

// (step, value) in the order written; values as TensorBoard stores them: float32.
using Series = std::vector<std::pair<std::int64_t, double>>;
using Tags = std::map<std::string, Series>;

double as_float(const nlohmann::json& v) {
  return v.is_null() ? std::nan("") : double(static_cast<float>(v.get<double>()));
}

bool same(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

struct Read {
  Tags tags;
  double min_wall = 1e300, max_wall = 0;
};

// The one event file in `dir`, decoded and grouped by tag.
Read read_dir(const std::string& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (ddpdesk::tb::is_event_file_name(e.path().filename().string())) files.push_back(e.path());
  EXPECT_EQ(files.size(), 1u) << dir;
  Read out;
  if (files.empty()) return out;
  const auto f = ddpdesk::tb::read_event_file(files[0].string());
  EXPECT_TRUE(f.ok()) << f.error;
  EXPECT_FALSE(f.truncated) << f.problem();
  EXPECT_EQ(f.file_version, "brain.Event:2");
  for (const auto& p : f.scalars) {
    out.tags[p.tag].push_back({p.step, p.value});
    out.min_wall = std::min(out.min_wall, p.wall_time);
    out.max_wall = std::max(out.max_wall, p.wall_time);
  }
  return out;
}

void expect_series(const Tags& got, const std::string& tag, const Series& want,
                   const std::string& where) {
  SCOPED_TRACE(where + " tag " + tag);
  ASSERT_TRUE(got.count(tag)) << "no tag " << tag;
  const Series& g = got.at(tag);
  ASSERT_EQ(g.size(), want.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    EXPECT_EQ(g[i].first, want[i].first) << "point " << i;
    EXPECT_TRUE(same(g[i].second, want[i].second))
        << "point " << i << ": " << g[i].second << " vs " << want[i].second;
  }
}

double unix_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

void check_run(int world) {
  const std::string dir = temp_dir("tensorboard");
  LaunchOptions o;
  o.world = world;
  o.args = {"--task",        "seed", "--dataset-size", "200",
            "--epochs",      "1",    "--run-dir",      dir + "/run",
            "--tensorboard", "1",    "--metrics-file", dir + "/m{rank}.jsonl"};
  const double before = unix_now();
  RankRun r = launch_ranks(o);
  const double after = unix_now();
  ASSERT_EQ(r.exit_codes, std::vector<int>(world, 0)) << r.stderr_text[0];

  for (int rank = 0; rank < world; ++rank) {
    const std::string where = "world " + std::to_string(world) + " rank " + std::to_string(rank);
    const std::string metrics = dir + "/m" + std::to_string(rank) + ".jsonl";
    Tags want;
    const auto steps = read_messages(metrics, "step");
    ASSERT_FALSE(steps.empty());
    for (const auto& s : steps) {
      const std::int64_t step = s["step"];
      want["loss"].push_back({step, as_float(s["loss"])});
      want["samples_per_s"].push_back({step, as_float(s["samples_per_s"])});
      want["lr"].push_back({step, as_float(s["lr"])});
      if (s.contains("time_ms"))
        for (const char* part :
             {"data", "forward", "backward", "comm", "optimizer", "telemetry", "step"})
          want[std::string("time_ms/") + part].push_back({step, as_float(s["time_ms"][part])});
    }
    for (const auto& g : read_messages(metrics, "gauge"))
      want[g["name"].get<std::string>()].push_back({g["step"], as_float(g["value"])});

    const Read got = read_dir(dir + "/run/tb/rank-" + std::to_string(rank));
    ASSERT_EQ(got.tags.size(), want.size()) << where;  // no tag more, none missing
    for (const auto& [tag, series] : want) expect_series(got.tags, tag, series, where);
    // Real time, not the training clock.
    EXPECT_GE(got.min_wall, before - 1) << where;
    EXPECT_LE(got.max_wall, after + 1) << where;

    if (rank != 0) continue;
    Tags global;
    for (const auto& s : steps) global["loss"].push_back({s["step"], as_float(s["global_loss"])});
    const auto evals = read_messages(metrics, "eval");
    ASSERT_FALSE(evals.empty());
    for (const auto& e : evals) {
      global["validation/loss"].push_back({e["step"], as_float(e["loss"])});
      if (e.contains("accuracy"))
        global["validation/accuracy"].push_back({e["step"], as_float(e["accuracy"])});
    }
    const Read g = read_dir(dir + "/run/tb/global");
    ASSERT_EQ(g.tags.size(), global.size());
    for (const auto& [tag, series] : global) expect_series(g.tags, tag, series, where + " global");
  }
  // The global directory belongs to rank 0 alone: one file, whatever the world size.
  std::size_t global_files = 0;
  for (const auto& e : fs::directory_iterator(dir + "/run/tb/global"))
    global_files += ddpdesk::tb::is_event_file_name(e.path().filename().string());
  EXPECT_EQ(global_files, 1u);
  fs::remove_all(dir);
}

}  // namespace

TEST(TensorBoardFiles, OneRankWritesWhatItsMetricsFileSays) {
  check_run(1);
}

TEST(TensorBoardFiles, TwoRanksEachWriteTheirOwn) {
  check_run(2);
}

TEST(TensorBoardFiles, WithoutARunDirectoryTheFlagIsBadInput) {
  const std::string dir = temp_dir("tensorboard-bad");
  LaunchOptions o;
  o.args = {"--task", "seed", "--tensorboard", "1", "--metrics-file", dir + "/m.jsonl"};
  RankRun r = launch_ranks(o);
  EXPECT_EQ(r.exit_codes, std::vector<int>{2});
  EXPECT_EQ(r.stderr_text[0],
            "ddpdesk-worker: invalid --tensorboard '1': needs a run directory (run_dir): the "
            "event files go to <run_dir>/tb\n");
  EXPECT_TRUE(fs::is_empty(dir)) << "nothing is written";
  fs::remove_all(dir);
}
