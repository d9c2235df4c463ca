// The rank table's step breakdown columns (compute ms, wait ms, sync efficiency) and its
// straggler mark (row highlight, the detector's explanation as tooltip).
#include <QBrush>
#include <QtTest>
#include <cmath>

#include "breakdown_test_util.h"
#include "live/rank_table.h"
#include "metrics/metrics_store.h"
#include "metrics/straggler_watch.h"
#include "qt_test_main.h"

using namespace ddpdesk;
using namespace ddpdesk::test;

class TestRankTableBreakdown : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void columnsFromTheLatestBreakdown() {
    MetricsStore store;
    store.setWorld(2);
    auto rows = buildRankRows({}, store);
    QCOMPARE(rows.size(), std::size_t(2));
    QVERIFY(std::isnan(rows[0].computeMs));
    QVERIFY(std::isnan(rows[1].syncEfficiency));

    store.ingest(stepMessage(0, 5, normalTimes()));
    store.ingest(stepMessage(1, 5, slowTimes(&wire::StepTimes::comm, 4.0)));
    rows = buildRankRows({}, store);
    QCOMPARE(rows[0].computeMs, 1.2 + 2.0 + 3.0 + 0.7);
    QCOMPARE(rows[0].waitMs, 1.0);
    QCOMPARE(rows[1].waitMs, 5.0);
    QVERIFY(qFuzzyCompare(rows[1].syncEfficiency, 6.9 / 12.0));

    RankTableModel model;
    model.setRows(rows);
    QCOMPARE(model.headerData(RankTableModel::ComputeMs, Qt::Horizontal, Qt::DisplayRole),
             QVariant(QStringLiteral("compute ms")));
    QCOMPARE(model.headerData(RankTableModel::WaitMs, Qt::Horizontal, Qt::DisplayRole),
             QVariant(QStringLiteral("wait ms")));
    QCOMPARE(model.headerData(RankTableModel::SyncEfficiency, Qt::Horizontal, Qt::DisplayRole),
             QVariant(QStringLiteral("sync eff.")));
    QCOMPARE(model.data(model.index(0, RankTableModel::ComputeMs), Qt::DisplayRole),
             QVariant(QStringLiteral("6.9")));
    QCOMPARE(model.data(model.index(1, RankTableModel::WaitMs), Qt::DisplayRole),
             QVariant(QStringLiteral("5.0")));
    QCOMPARE(model.data(model.index(1, RankTableModel::SyncEfficiency), Qt::DisplayRole),
             QVariant(QStringLiteral("58%")));
    QCOMPARE(model.data(model.index(0, RankTableModel::SyncEfficiency), Qt::DisplayRole),
             QVariant(QStringLiteral("86%")));
    // The exit code is still the last column.
    QCOMPARE(model.headerData(RankTableModel::ExitCode, Qt::Horizontal, Qt::DisplayRole),
             QVariant(QStringLiteral("exit code")));
  }

  void emptyWithoutBreakdown() {
    MetricsStore store;
    store.ingest(stepMessage(0, 5, std::nullopt));
    RankTableModel model;
    model.setRows(buildRankRows({}, store));
    QCOMPARE(model.data(model.index(0, RankTableModel::ComputeMs), Qt::DisplayRole),
             QVariant(QString()));
    QCOMPARE(model.data(model.index(0, RankTableModel::SyncEfficiency), Qt::DisplayRole),
             QVariant(QString()));
    QVERIFY(!model.data(model.index(0, RankTableModel::Rank), Qt::BackgroundRole).isValid());
  }

  void stragglerRowIsMarked() {
    MetricsStore store;
    store.setWorld(3);
    StragglerWatch watch;
    watch.setStore(&store);
    for (int i = 1; i <= 3; ++i)
      for (int r = 0; r < 3; ++r)
        store.ingest(stepMessage(r, 5 * i,
                                 r == 1 ? slowTimes(&wire::StepTimes::forward, 8.0, kStragglerSteps)
                                        : normalTimes(kStragglerSteps)));
    store.flush();
    QVERIFY(watch.isFlagged(1));

    RankTableModel model;
    model.setRows(buildRankRows({}, store, &watch));
    QVERIFY(model.rows()[0].straggler.isEmpty());
    QVERIFY(model.rows()[1].straggler.startsWith(QStringLiteral("rank 1 is a straggler")));
    const QVariant bg = model.data(model.index(1, RankTableModel::ComputeMs), Qt::BackgroundRole);
    QVERIFY(bg.isValid());
    QVERIFY(bg.value<QBrush>().color() != QColor(Qt::white));
    QVERIFY(!model.data(model.index(0, RankTableModel::ComputeMs), Qt::BackgroundRole).isValid());
    QVERIFY(!model.data(model.index(2, RankTableModel::Rank), Qt::BackgroundRole).isValid());
    const QString tip =
        model.data(model.index(1, RankTableModel::Rank), Qt::ToolTipRole).toString();
    QVERIFY(tip.contains(QStringLiteral("mostly forward (+8.0 ms)")));
    QVERIFY(!model.data(model.index(0, RankTableModel::Rank), Qt::ToolTipRole).isValid());

    // Without the watch (a run from disk, say), nothing is marked.
    model.setRows(buildRankRows({}, store));
    QVERIFY(!model.data(model.index(1, RankTableModel::Rank), Qt::BackgroundRole).isValid());
  }
};

DDPDESK_TEST_MAIN(TestRankTableBreakdown)
#include "test_rank_table_breakdown.moc"
