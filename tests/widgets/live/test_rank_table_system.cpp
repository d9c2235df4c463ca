// The rank table's system columns: each rank's latest CPU %, RSS and (when it has a GPU) GPU
// utilisation and memory, from the store's gauges; blank for a rank that sent none; hasGpu()
// says whether the GPU columns have anything to show.
#include <QtTest>
#include <cmath>

#include "live/rank_table.h"
#include "metrics/metrics_store.h"
#include "qt_test_main.h"
#include "system_gauges.h"
#include "wire.h"

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

  // A CUDA worker's caching-allocator gauges, as lines on the wire: the "GPU tensors" column
  // says allocated / reserved (peak), and alone they count as a GPU for hasGpu().
  void allocatorColumnFromWireLines() {
    MetricsStore store;
    store.setWorld(2);
    for (
        const char* line :
        {R"({"type":"gauge","rank":1,"name":"gpu_allocated_bytes","value":3221225472,"unit":"B","time":2.0,"step":20})",
         R"({"type":"gauge","rank":1,"name":"gpu_reserved_bytes","value":4294967296,"unit":"B","time":2.0,"step":20})",
         R"({"type":"gauge","rank":1,"name":"gpu_peak_bytes","value":5476083302,"unit":"B","time":2.0,"step":20})"}) {
      const wire::Decoded d = wire::decode(line);
      QVERIFY2(d.message.has_value(), line);
      store.ingest(*d.message);
    }
    RankTableModel model;
    model.setRows(buildRankRows({}, store));
    QVERIFY(model.hasGpu());
    auto text = [&](int row, int c) {
      return model.data(model.index(row, c), Qt::DisplayRole).toString();
    };
    QCOMPARE(text(1, RankTableModel::GpuAllocator),
             QStringLiteral("3.00 GiB / 4.00 GiB (peak 5.10 GiB)"));
    QCOMPARE(text(0, RankTableModel::GpuAllocator), QString());
    QCOMPARE(text(1, RankTableModel::GpuMemory), QString());  // no NVML figures were sent
    QCOMPARE(
        model.headerData(RankTableModel::GpuAllocator, Qt::Horizontal, Qt::DisplayRole).toString(),
        QStringLiteral("GPU tensors"));
    QVERIFY(!model.headerData(RankTableModel::GpuAllocator, Qt::Horizontal, Qt::ToolTipRole)
                 .toString()
                 .isEmpty());
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestRankTableSystem)
#include "test_rank_table_system.moc"
