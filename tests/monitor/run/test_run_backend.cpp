// The run-backend seam (run/run_backend.h): a backend of the test's own begins a run through
// RunController::begin()/beginRun() and ends it, and what every run has comes from the
// controller alone: the states and their signals, status.json and monitor.log written once
// however often the backend reports the end, stop()/kill() reaching the backend once the run is
// active, the rank table the backend's, and the next run's backend replacing this one.
#include <QFile>
#include <QPointer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <memory>

#include "metrics/metrics_store.h"
#include "qt_test_main.h"
#include "run/run_backend.h"
#include "run/run_controller.h"
#include "run/run_directory.h"

using namespace ddpdesk;
using State = RunController::State;

namespace {

// A run of two ranks that never exist: the test says when it ends.
class FakeBackend : public RunBackend {
 public:
  using RunBackend::RunBackend;
  int stops = 0;
  int kills = 0;
  bool start(const RunSpec& given, const QString&, QString* error) override {
    RunSpec spec = given;
    auto dir = std::make_unique<RunDirectory>();
    if (!dir->create(spec, error)) return false;
    spec.run_dir = dir->path().toStdString();
    dir->writeSpec(spec, error);
    beginRun(spec, std::move(dir), 0, 2);
    setState(State::Starting);
    return true;
  }
  void stop() override { ++stops; }
  void kill() override { ++kills; }
  std::vector<RankState> ranks() const override {
    std::vector<RankState> out(2);
    out[0].rank = 0;
    out[0].pid = 4242;
    out[1].rank = 1;
    out[1].pid = 4343;
    return out;
  }
  // What a backend does when it learns the run is over.
  void end(State final, const QString& why) {
    RunStatus s;
    s.exitCodes = {0, 0};
    s.termSignals = {0, 0};
    endRun(final, why, s, QStringLiteral("fake ended; "));
  }
};

int count(const QString& text, const QString& what) {
  return int(text.count(what));
}

}  // namespace

class TestRunBackend : public QObject {
  Q_OBJECT
  QTemporaryDir data;

  RunSpec spec(const QString& name) const {
    RunSpec s;
    s.nproc = 2;
    s.run_dir = (data.path() + QLatin1Char('/') + name).toStdString();
    return s;
  }
  static QString monitorLog(const QString& dir) {
    QFile f(RunDirectory::monitorLogPath(dir));
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
  }
  // Starts a run on a FakeBackend; the backend, owned by `c`.
  static FakeBackend* startFake(RunController& c, const RunSpec& s) {
    FakeBackend* fake = nullptr;
    auto backend = std::make_unique<FakeBackend>(c);
    fake = backend.get();
    QString err;
    const bool began =
        c.begin(std::move(backend), [&](RunBackend& b) { return b.start(s, QString(), &err); });
    return began ? fake : nullptr;
  }

 private Q_SLOTS:
  void endingReachesStatusAndHistoryOnce() {
    RunController c;
    QSignalSpy stopped(&c, &RunController::stopped);
    QSignalSpy finished(&c, &RunController::finished);
    QSignalSpy changes(&c, &RunController::stateChanged);
    FakeBackend* fake = startFake(c, spec(QStringLiteral("a")));
    QVERIFY(fake);
    QCOMPARE(c.state(), State::Starting);
    QCOMPARE(c.worldSize(), 2);
    QCOMPARE(c.pids(), (QList<qint64>{4242, 4343}));

    c.stop();
    c.stop();  // once the run is stopping, a second stop is not the backend's
    QCOMPARE(fake->stops, 1);
    QVERIFY(c.stopRequested());
    c.kill();
    QCOMPARE(fake->kills, 1);

    fake->end(State::Stopped, QStringLiteral("stopped by the fake"));
    fake->end(State::Failed, QStringLiteral("a second ending"));  // too late: ignored
    QCOMPARE(c.state(), State::Stopped);
    QCOMPARE(c.reason(), QStringLiteral("stopped by the fake"));
    QCOMPARE(stopped.count(), 1);
    QCOMPARE(finished.count(), 0);
    QCOMPARE(changes.count(), 2);  // Starting, Stopped
    QVERIFY(c.endedAt().isValid());

    // The history reads the one ending, and monitor.log says it once.
    const auto record = RunDirectory::readRecord(c.runDirectory());
    QVERIFY(record && record->status);
    QCOMPARE(record->status->state, QStringLiteral("Stopped"));
    QCOMPARE(record->status->reason, QStringLiteral("stopped by the fake"));
    QCOMPARE(record->status->exitCodes, (QList<int>{0, 0}));
    const QString log = monitorLog(c.runDirectory());
    QCOMPARE(count(log, QStringLiteral("fake ended; run Stopped: stopped by the fake")), 1);
    QCOMPARE(count(log, QStringLiteral("run Failed")), 0);

    // After the end, stop and kill no longer reach the backend.
    c.stop();
    c.kill();
    QCOMPARE(fake->stops, 1);
    QCOMPARE(fake->kills, 1);
  }

  void nextRunReplacesTheBackend() {
    RunController c;
    QPointer<FakeBackend> first = startFake(c, spec(QStringLiteral("b")));
    QVERIFY(first);
    first->end(State::Finished, QString());
    QCOMPARE(c.state(), State::Finished);
    QCOMPARE(RunDirectory::readStatus(c.runDirectory())->state, QStringLiteral("Finished"));

    // A run that cannot begin leaves the last one's backend and state in place.
    auto refused = std::make_unique<FakeBackend>(c);
    QVERIFY(!c.begin(std::move(refused), [](RunBackend&) { return false; }));
    QCOMPARE(c.pids(), (QList<qint64>{4242, 4343}));
    QVERIFY(first);

    FakeBackend* second = startFake(c, spec(QStringLiteral("c")));
    QVERIFY(second);
    QCOMPARE(c.state(), State::Starting);
    QVERIFY(c.reason().isEmpty());
    QVERIFY(!c.stopRequested());
    QTRY_VERIFY(!first);  // the previous run's backend goes once the event loop turns
    second->end(State::Finished, QString());
    QCOMPARE(c.state(), State::Finished);
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestRunBackend)
#include "test_run_backend.moc"
