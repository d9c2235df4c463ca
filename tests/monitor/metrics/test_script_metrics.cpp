// What the monitor measures itself for a Python-script run (ScriptMetrics), without a run: event
// files written with ddpdesk's encoder become the right rank's messages (a rank<N> folder is rank
// N's, others rank 0's; the first training-loss tag is the loss, evaluation tags evaluations,
// others gauges with the script's steps); printed losses count until event files give the loss,
// through a custom pattern when the spec has one; a connected rank's files and output are not
// read; a running process's system metrics come by its pid as that rank's gauges.
#include <unistd.h>
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "event.h"
#include "metrics/script_metrics.h"
#include "qt_test_main.h"
#include "system_gauges.h"

using namespace ddpdesk;

namespace {

void appendRecord(const QString& path, std::int64_t step, const std::string& tag, float value) {
  std::string bytes;
  tb::append_scalar_record(bytes, 1.7e9 + double(step), step, tag, value);
  QDir().mkpath(QFileInfo(path).absolutePath());
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Append));
  f.write(bytes.data(), qint64(bytes.size()));
}

struct Collected {
  std::vector<wire::Step> steps;
  std::vector<wire::Eval> evals;
  std::vector<wire::Gauge> gauges;
  int batches = 0;  // calls of the sink
  void add(const std::vector<wire::Message>& messages) {
    ++batches;
    for (const wire::Message& m : messages) {
      if (const auto* s = std::get_if<wire::Step>(&m)) steps.push_back(*s);
      if (const auto* e = std::get_if<wire::Eval>(&m)) evals.push_back(*e);
      if (const auto* g = std::get_if<wire::Gauge>(&m)) gauges.push_back(*g);
    }
  }
};

RunSpec scriptSpec(const QString& logdir, const std::string& lossPattern = {}) {
  RunSpec spec;
  spec.task = "python";
  spec.nproc = 2;
  spec.logdir = logdir.toStdString();
  spec.loss_pattern = lossPattern;
  return spec;
}

}  // namespace

class TestScriptMetrics : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void eventFilesBecomeTheRanksMessages() {
    QTemporaryDir logdir;
    Collected got;
    std::vector<bool> connected{false, false};
    ScriptMetrics m(
        scriptSpec(logdir.path()), logdir.path(), [&](int r) { return connected[r]; },
        [](int) { return 0; }, [&](const auto& messages) { got.add(messages); });
    const QString rank0 = logdir.filePath("events.out.tfevents.1.h");
    const QString rank1 = logdir.filePath("exp/rank-1/events.out.tfevents.2.h");
    appendRecord(rank0, 10, "train/loss", 0.5f);
    appendRecord(rank0, 10, "train/loss_aux", 0.75f);  // a second loss tag: a scalar
    appendRecord(rank0, 10, "train/learning_rate", 1e-3f);
    appendRecord(rank0, 10, "eval/loss", 0.625f);
    appendRecord(rank0, 10, "Loss/validation", 0.6875f);
    appendRecord(rank1, 10, "loss", 0.25f);
    m.poll();

    QCOMPARE(int(got.steps.size()), 2);
    QCOMPARE(got.steps[0].rank, 0);
    QCOMPARE(got.steps[0].step, std::int64_t(10));
    QCOMPARE(got.steps[0].loss, 0.5);
    QCOMPARE(got.steps[0].global_loss, 0.375);  // the run's curve: the mean over the ranks
    QCOMPARE(got.steps[1].rank, 1);
    QCOMPARE(got.steps[1].loss, 0.25);
    QCOMPARE(got.steps[1].global_loss, 0.375);
    QCOMPARE(m.lossTag(0), std::string("train/loss"));
    QCOMPARE(m.lossTag(1), std::string("loss"));
    QCOMPARE(int(got.evals.size()), 2);
    QCOMPARE(got.evals[0].loss, 0.625);
    QCOMPARE(got.evals[1].loss, 0.6875);
    QCOMPARE(int(got.gauges.size()), 2);
    QCOMPARE(got.gauges[0].name, std::string("train/loss_aux"));
    QCOMPARE(got.gauges[1].name, std::string("train/learning_rate"));
    QCOMPARE(got.gauges[1].value, double(1e-3f));
    QCOMPARE(got.gauges[1].step, std::int64_t(10));
    QCOMPARE(got.gauges[1].rank, 0);

    // Rank 0's loss comes from its files now: what it prints is no longer a point; rank 1 that
    // has connected (the client) reports for itself, its files are not read.
    connected[1] = true;
    got = Collected();
    m.line(0, QStringLiteral("step 11 loss=9.5"));
    appendRecord(rank1, 11, "loss", 0.125f);
    appendRecord(rank0, 11, "train/loss", 0.375f);
    m.poll();
    QCOMPARE(int(got.steps.size()), 1);
    QCOMPARE(got.steps[0].rank, 0);
    QCOMPARE(got.steps[0].loss, 0.375);

    // A rank folder beyond the world is nobody's in particular: rank 0's.
    got = Collected();
    appendRecord(logdir.filePath("rank7/events.out.tfevents.3.h"), 12, "train/loss", 0.0625f);
    m.finish();
    QCOMPARE(int(got.steps.size()), 1);
    QCOMPARE(got.steps[0].rank, 0);
  }

  // Event files' training losses are the run's curve as their mean over the ranks that write
  // them: rank 0's alone go out at once (no rank is waited for that never wrote one); once rank
  // 1's files give a loss, a step waits for both; a rank that ended is waited for no more.
  void eventFileLossesAreTheMeanOverTheRanksThatWriteThem() {
    QTemporaryDir logdir;
    Collected got;
    ScriptMetrics m(
        scriptSpec(logdir.path()), logdir.path(), [](int) { return false; }, [](int) { return 0; },
        [&](const auto& messages) { got.add(messages); });
    const QString rank0 = logdir.filePath("rank0/events.out.tfevents.1.h");
    const QString rank1 = logdir.filePath("rank1/events.out.tfevents.2.h");
    appendRecord(rank0, 1, "loss", 1.0f);
    appendRecord(rank0, 2, "loss", 2.0f);
    m.poll();
    QCOMPARE(int(got.steps.size()), 2);
    QCOMPARE(got.steps[1].global_loss, 2.0);

    got = Collected();
    appendRecord(rank0, 3, "loss", 1.0f);
    appendRecord(rank1, 3, "loss", 3.0f);
    appendRecord(rank0, 4, "loss", 0.5f);
    m.poll();
    QCOMPARE(int(got.steps.size()), 2);  // step 4 waits for rank 1
    QCOMPARE(got.steps[0].global_loss, 2.0);
    QCOMPARE(got.steps[1].global_loss, 2.0);

    got = Collected();
    appendRecord(rank1, 4, "loss", 1.5f);
    m.poll();
    QCOMPARE(int(got.steps.size()), 2);
    QCOMPARE(got.steps[0].step, std::int64_t(4));
    QCOMPARE(got.steps[0].global_loss, 1.0);

    got = Collected();
    m.rankStarted(1, getpid());
    m.rankEnded(1);
    appendRecord(rank0, 5, "loss", 0.25f);
    m.poll();
    QCOMPARE(int(got.steps.size()), 1);
    QCOMPARE(got.steps[0].global_loss, 0.25);
  }

  void printedLossesThroughTheSpecsPattern() {
    QTemporaryDir logdir;
    Collected got;
    ScriptMetrics m(
        scriptSpec(logdir.path(), "iter (?<step>\\d+) \\| objective (?<loss>[-0-9.eE+]+)"),
        logdir.path(), [](int) { return false; }, [](int) { return 0; },
        [&](const auto& messages) { got.add(messages); });
    m.line(1, QStringLiteral("iter 5 | objective 0.25"));
    m.line(1, QStringLiteral("step 6 loss=0.5"));  // the built-in forms are replaced
    m.line(0, QStringLiteral("iter 5 | objective 1e-2"));
    // The lines of one event-loop pass reach the sink together, once the pass ends; the run's
    // loss at the step both ranks printed is their mean.
    QCOMPARE(int(got.steps.size()), 0);
    QTRY_COMPARE(int(got.steps.size()), 2);
    QCOMPARE(got.batches, 1);
    QCOMPARE(got.steps[0].rank, 1);
    QCOMPARE(got.steps[0].step, std::int64_t(5));
    QCOMPARE(got.steps[0].loss, 0.25);
    QCOMPARE(got.steps[1].rank, 0);
    QCOMPARE(got.steps[1].step, std::int64_t(5));
    QCOMPARE(got.steps[1].loss, 0.01);
    QCOMPARE(got.steps[0].global_loss, 0.13);
    QCOMPARE(got.steps[1].global_loss, 0.13);
  }

  // The monitor's own process stands in for a rank: its system metrics arrive as rank 1's
  // gauges, with the rank's last step; after the rank ended, nothing more is sampled.
  void aRunningRanksSystemMetricsByPid() {
    QTemporaryDir logdir;
    Collected got;
    ScriptMetrics m(
        scriptSpec(logdir.path()), logdir.path(), [](int) { return true; },
        [](int rank) { return rank == 1 ? 42 : 0; },
        [&](const auto& messages) { got.add(messages); });
    m.rankStarted(1, qint64(::getpid()));
    m.poll();
    std::map<std::string, wire::Gauge> byName;
    for (const wire::Gauge& g : got.gauges) byName[g.name] = g;
    QVERIFY(byName.count(gauges::kRssBytes));
    QVERIFY(byName.count(gauges::kThreads));
    QCOMPARE(byName[gauges::kRssBytes].rank, 1);
    QCOMPARE(byName[gauges::kRssBytes].step, std::int64_t(42));
    QVERIFY(byName[gauges::kRssBytes].value > 1e6);
    QVERIFY(byName[gauges::kThreads].value >= 1);
    for (const wire::Gauge& g : got.gauges) QCOMPARE(g.rank, 1);

    m.rankEnded(1);
    got = Collected();
    m.poll();
    QVERIFY(got.gauges.empty());
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestScriptMetrics)
#include "test_script_metrics.moc"
