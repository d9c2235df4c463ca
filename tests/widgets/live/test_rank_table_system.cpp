// The rank table's system columns: each rank's latest CPU %, RSS and (when it has a GPU) GPU
// utilisation and memory, from the store's gauges; blank for a rank that sent none; hasGpu()
// says whether the GPU columns have anything to show.
#include <QtTest>
#include <cmath>

#include "live/rank_table.h"
#include "metrics/metrics_store.h"
#include "qt_test_main.h"
#include "system_gauges.h"

using namespace ddpdesk;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

void gauge(MetricsStore& store, int rank, const char* name, double value) {
  store.ingest(wire::Gauge{rank, name, value, "", 1.0, 1});
}

}  // namespace

class TestRankTableSystem : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void rowsCarryTheLatestSystemValues() {
    MetricsStore store;
    store.setWorld(2);
    gauge(store, 0, gauges::kCpuPercent, 40);
    gauge(store, 0, gauges::kCpuPercent, 97.4);  // the latest counts
    gauge(store, 0, gauges::kRssBytes, 312 * kMiB);
    const auto rows = buildRankRows({}, store);
    QCOMPARE(rows.size(), std::size_t(2));
    QCOMPARE(rows[0].cpuPercent, 97.4);
    QCOMPARE(rows[0].rssBytes, 312 * kMiB);
    QVERIFY(std::isnan(rows[0].gpuUtilPercent));
    QVERIFY(std::isnan(rows[1].cpuPercent));  // rank 1 sent nothing

    RankTableModel model;
    model.setRows(rows);
    QVERIFY(!model.hasGpu());
    auto text = [&](int row, int c) {
      return model.data(model.index(row, c), Qt::DisplayRole).toString();
    };
    QCOMPARE(text(0, RankTableModel::CpuPercent), QStringLiteral("97"));
    QCOMPARE(text(0, RankTableModel::Rss), QStringLiteral("312 MiB"));
    QCOMPARE(text(0, RankTableModel::GpuUtil), QString());
    QCOMPARE(text(1, RankTableModel::CpuPercent), QString());
    QCOMPARE(text(1, RankTableModel::Rss), QString());
    QCOMPARE(
        model.headerData(RankTableModel::CpuPercent, Qt::Horizontal, Qt::DisplayRole).toString(),
        QStringLiteral("CPU %"));
    QCOMPARE(model.headerData(RankTableModel::Rss, Qt::Horizontal, Qt::DisplayRole).toString(),
             QStringLiteral("RSS"));
    QVERIFY(!model.headerData(RankTableModel::CpuPercent, Qt::Horizontal, Qt::ToolTipRole)
                 .toString()
                 .isEmpty());
  }

  void gpuColumnsWhenARankHasAGpu() {
    MetricsStore store;
    gauge(store, 1, gauges::kGpuUtilPercent, 88);
    gauge(store, 1, gauges::kGpuMemoryUsedBytes, 12.5 * 1024 * kMiB);
    gauge(store, 1, gauges::kGpuMemoryTotalBytes, 80 * 1024 * kMiB);
    RankTableModel model;
    model.setRows(buildRankRows({}, store));
    QVERIFY(model.hasGpu());
    auto text = [&](int row, int c) {
      return model.data(model.index(row, c), Qt::DisplayRole).toString();
    };
    QCOMPARE(text(1, RankTableModel::GpuUtil), QStringLiteral("88"));
    QCOMPARE(text(1, RankTableModel::GpuMemory), QStringLiteral("12.50 GiB / 80.00 GiB"));
    QCOMPARE(text(0, RankTableModel::GpuMemory), QString());
    QCOMPARE(
        model.headerData(RankTableModel::GpuMemory, Qt::Horizontal, Qt::DisplayRole).toString(),
        QStringLiteral("GPU memory"));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestRankTableSystem)
#include "test_rank_table_system.moc"
