// Rank table rows: the controller's process view merged with the store's metrics view.
#include <QtTest>
#include <cmath>

#include "live/rank_table.h"
#include "metrics/metrics_store.h"
#include "qt_test_main.h"

using namespace ddpdesk;
using RS = RunController::RankState;

namespace {

RS proc(int rank, qint64 pid, bool running, bool connected) {
  RS r;
  r.rank = rank;
  r.pid = pid;
  r.running = running;
  r.connected = connected;
  return r;
}

}  // namespace

class TestRankTable : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void rowsFollowTheRun() {
    MetricsStore store;
    store.setWorld(2);
    std::vector<RS> ranks = {proc(0, 100, true, false), proc(1, 101, true, false)};
    auto rows = buildRankRows(ranks, store);
    QCOMPARE(rows.size(), std::size_t(2));
    QCOMPARE(rows[0].state, QStringLiteral("starting"));
    QCOMPARE(rows[1].pid, qint64(101));
    QVERIFY(std::isnan(rows[0].loss));

    store.ingest(wire::Hello{wire::kVersion, "", 0, 2, 100, "h", "cpu"});
    wire::Step s;
    s.rank = 0;
    s.step = 7;
    s.loss = 0.25;
    s.samples_per_s = 800;  // the last interval's global rate: not what the table shows
    s.samples = 7 * 128;    // 64 of this rank's samples a step ...
    wire::StepTimes t;
    t.step = 20;  // ... in 20 ms of its own step time: 3200 samples/s
    t.steps = 7;
    s.times = t;
    store.ingest(s);
    ranks[0].connected = true;
    rows = buildRankRows(ranks, store);
    QCOMPARE(rows[0].state, QStringLiteral("running"));
    QCOMPARE(rows[0].device, QStringLiteral("cpu"));
    QCOMPARE(rows[0].step, qint64(7));
    QCOMPARE(rows[0].loss, 0.25);
    QCOMPARE(rows[0].samplesPerSec, 3200.0);  // its own average training throughput
    QVERIFY(rows[0].exitCode.isEmpty());

    wire::Event fin;
    fin.rank = 0;
    fin.event = "finished";
    store.ingest(fin);
    ranks[0].running = false;
    ranks[0].exited = true;
    ranks[0].exitCode = 0;
    ranks[1].running = false;
    ranks[1].exited = true;
    ranks[1].crashed = true;
    ranks[1].signal = 9;
    rows = buildRankRows(ranks, store);
    QCOMPARE(rows[0].state, QStringLiteral("finished"));
    QCOMPARE(rows[0].exitCode, QStringLiteral("0"));
    QVERIFY(!rows[0].failed);
    QCOMPARE(rows[1].state, QStringLiteral("failed"));
    QCOMPARE(rows[1].exitCode, QStringLiteral("signal 9"));
    QVERIFY(rows[1].failed);
  }

  void withoutProcessesTheStoreGivesTheRows() {
    MetricsStore store;
    for (int r = 0; r < 3; ++r)
      store.ingest(wire::Hello{wire::kVersion, "", r, 3, 10 + r, "h", "cpu"});
    const auto rows = buildRankRows({}, store);
    QCOMPARE(rows.size(), std::size_t(3));
    QCOMPARE(rows[2].pid, qint64(12));
  }

  void modelShowsTheColumns() {
    RankTableModel model;
    RankRow row;
    row.rank = 1;
    row.pid = 4242;
    row.device = "cpu";
    row.state = "failed";
    row.step = 12;
    row.loss = 0.123456;
    row.samplesPerSec = 1500.4;
    row.exitCode = "3";
    row.failed = true;
    model.setRows({row});
    QCOMPARE(model.rowCount(), 1);
    QCOMPARE(model.columnCount(), 16);
    auto text = [&](int c) { return model.data(model.index(0, c), Qt::DisplayRole).toString(); };
    QCOMPARE(text(RankTableModel::Pid), QStringLiteral("4242"));
    QCOMPARE(text(RankTableModel::Loss), QStringLiteral("0.1235"));
    QCOMPARE(text(RankTableModel::SamplesPerSec), QStringLiteral("1500"));
    QCOMPARE(text(RankTableModel::ExitCode), QStringLiteral("3"));
    QVERIFY(model.data(model.index(0, 0), Qt::ForegroundRole).isValid());  // failed: red
    QCOMPARE(model.headerData(RankTableModel::ExitCode, Qt::Horizontal, Qt::DisplayRole).toString(),
             QStringLiteral("exit code"));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestRankTable)
#include "test_rank_table.moc"
