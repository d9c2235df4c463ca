// PastRunLoader: runs from the history are read on a worker thread; the charts get them once all
// are in, with every point exactly once; unreadable runs are reported and left out; a newer open
// supersedes an older one; the live run is taken from memory.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QThreadPool>
#include <QtTest>

#include "history/past_run_loader.h"
#include "metrics/metrics_store.h"
#include "qt_test_main.h"
#include "run/run_directory.h"
#include "wire.h"

using namespace ddpdesk;

namespace {

wire::Step step(int rank, int n) {
  wire::Step s;
  s.rank = rank;
  s.step = n;
  s.loss = 1.0 / n + rank;
  s.global_loss = 1.0 / n;
  s.samples = n * 8;
  s.time = n * 0.1;
  return s;
}

// A run directory with `n` steps from each of `ranks` ranks.
QString makeRun(const QTemporaryDir& root, const QString& name, int ranks, int n) {
  const QString dir = root.filePath(name);
  QDir().mkpath(dir);
  QFile f(RunDirectory::metricsPath(dir));
  if (!f.open(QIODevice::WriteOnly)) return {};
  for (int i = 1; i <= n; ++i)
    for (int r = 0; r < ranks; ++r)
      f.write(QByteArray::fromStdString(wire::encode(step(r, i)) + "\n"));
  return dir;
}

}  // namespace

class TestPastRunLoader : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void opensEveryPointOnce() {
    QTemporaryDir root;
    const QString a = makeRun(root, "a", 2, 30000), b = makeRun(root, "b", 3, 10);
    PastRunLoader opener;
    QSignalSpy opening(&opener, &PastRunLoader::opening);
    QSignalSpy problems(&opener, &PastRunLoader::problems);
    ChartSources got;
    connect(&opener, &PastRunLoader::opened, this, [&](const ChartSources& s) { got = s; });
    opener.open({a, root.filePath("missing"), b}, QString(), nullptr);
    QCOMPARE(opening.count(), 1);
    QCOMPARE(opening.at(0).at(0).toStringList(), (QStringList{"a", "missing", "b"}));
    QVERIFY(opener.busy());
    QTRY_VERIFY_WITH_TIMEOUT(!opener.busy(), 60000);
    QCOMPARE(problems.count(), 1);
    QVERIFY(problems.at(0).at(0).toString().contains("missing"));
    QCOMPARE(got.size(), std::size_t(2));
    QCOMPARE(got[0].label, QStringLiteral("a"));
    QCOMPARE(got[1].label, QStringLiteral("b"));
    const StepSeries& s = got[0].store->rankSeries(1);
    QCOMPARE(int(s.size()), 30000);
    for (int i = 0; i < 30000; ++i) QCOMPARE(s.step[std::size_t(i)], double(i + 1));
    QCOMPARE(int(got[1].store->global().size()), 10);
  }

  void newerOpenSupersedesAndLiveComesFromMemory() {
    QTemporaryDir root;
    const QString a = makeRun(root, "a", 2, 20000), b = makeRun(root, "b", 1, 5);
    MetricsStore live;
    live.ingest(step(0, 1));
    PastRunLoader opener;
    std::vector<ChartSources> got;
    connect(&opener, &PastRunLoader::opened, this,
            [&](const ChartSources& s) { got.push_back(s); });
    opener.open({a}, QString(), nullptr);
    opener.open({b, root.filePath("live")}, root.filePath("live"), &live);
    QTRY_VERIFY(!opener.busy());
    // The first open's read (on the global pool) has ended, and whatever it posted back to this
    // thread was delivered: it ended into nothing.
    QThreadPool::globalInstance()->waitForDone();
    QCoreApplication::sendPostedEvents();
    QCOMPARE(got.size(), std::size_t(1));
    QCOMPARE(got[0].size(), std::size_t(2));
    QCOMPARE(int(got[0][0].store->global().size()), 5);
    QCOMPARE(got[0][1].store, &live);
  }

  void nothingReadableKeepsWhatIsShown() {
    QTemporaryDir root;
    const QString a = makeRun(root, "a", 1, 5);
    PastRunLoader opener;
    ChartSources shown;
    connect(&opener, &PastRunLoader::opened, this, [&](const ChartSources& s) {
      if (!s.empty()) shown = s;
    });
    opener.open({a}, QString(), nullptr);
    QTRY_COMPARE(shown.size(), std::size_t(1));
    opener.open({root.filePath("missing")}, QString(), nullptr);
    QTRY_VERIFY(!opener.busy());
    QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);  // any deleteLater ran
    QCOMPARE(int(shown[0].store->global().size()), 5);                    // still alive
  }
};

DDPDESK_TEST_MAIN(TestPastRunLoader)
#include "test_past_run_loader.moc"
