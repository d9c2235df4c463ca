// The Python client (python/ddpdesk) against the monitor's real MetricsServer and MetricsStore,
// wired as RunController wires them: real python3 processes with the client on PYTHONPATH and the
// environment a rank gets. The store must hold exactly the losses and scalars each rank's script
// logged (the script also writes them to a file), odd values and names included; the rank's
// metrics file must load into a store the same way, and a RunFollower (what `--attach` runs) must
// read ranks that have only a run directory, their endings included; a wrong token and a
// client of a newer wire version are refused while their scripts train on.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <limits>
#include <memory>

#include "follow/run_follower.h"
#include "metrics/metrics_server.h"
#include "metrics/metrics_store.h"
#include "qt_test_main.h"
#include "wire.h"

using namespace ddpdesk;

namespace {

constexpr int kTimeout = 120000;  // small shared machines: never a timing test
constexpr int kSteps = 40;

// The scripts the ranks run (tests/python/ranks/).
QString rankScript(const char* name) {
  return QStringLiteral(DDPDESK_PYTHON_TESTS_DIR "/ranks/") + QLatin1String(name);
}

QJsonObject readJson(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(f.readAll()).object();
}

// The values of one column, as a list (a rank's series, or a gauge's).
QList<double> values(const Column& c) {
  QList<double> out;
  for (std::size_t i = 0; i < c.size(); ++i) out.append(c[i]);
  return out;
}

QList<double> numbers(const QJsonArray& a) {
  QList<double> out;
  for (const auto& v : a) out.append(v.toDouble());
  return out;
}

}  // namespace

class TestPythonClient : public QObject {
  Q_OBJECT

  const QString token = QStringLiteral("c0ffee0123456789");
  QTemporaryDir dir;

  // Env of a rank started by the monitor (as LocalRankLauncher sets it), plus DDPDESK_RUN_DIR.
  QProcessEnvironment rankEnv(const MetricsServer& server, int rank, int world,
                              const QString& tok) const {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("PYTHONPATH"), QStringLiteral(DDPDESK_PYTHON_DIR));
    env.insert(QStringLiteral("PYTHONDONTWRITEBYTECODE"), QStringLiteral("1"));
    env.insert(QStringLiteral("RANK"), QString::number(rank));
    env.insert(QStringLiteral("WORLD_SIZE"), QString::number(world));
    env.insert(QStringLiteral("LOCAL_RANK"), QString::number(rank));
    env.insert(QStringLiteral("LOCAL_WORLD_SIZE"), QString::number(world));
    env.insert(QStringLiteral("MASTER_ADDR"), QStringLiteral("127.0.0.1"));
    env.insert(QStringLiteral("MASTER_PORT"), QStringLiteral("29555"));
    env.insert(QStringLiteral("DDPDESK_MONITOR"), server.socketPath());
    env.insert(QStringLiteral("DDPDESK_TOKEN"), tok);
    env.insert(QStringLiteral("DDPDESK_RUN_DIR"), dir.path());
    return env;
  }

  static std::unique_ptr<QProcess> startPython(const QStringList& args,
                                               const QProcessEnvironment& env) {
    auto p = std::make_unique<QProcess>();
    p->setProcessEnvironment(env);
    p->start(QStringLiteral(DDPDESK_PYTHON3), args);
    return p;
  }

  QByteArray lastErr;  // the stderr of the process expectFinished() waited for

  void expectFinished(QProcess& p) {
    QVERIFY2(p.waitForFinished(kTimeout), "python did not finish");
    lastErr = p.readAllStandardError();
    QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, lastErr.constData());
  }

  // What both ranks logged is what the store holds, per rank, value for value.
  static void expectLogged(const MetricsStore& store, const QString& runDir) {
    for (int r = 0; r < 2; ++r) {
      const QJsonObject logged = readJson(runDir + QStringLiteral("/logged-rank-%1.json").arg(r));
      QCOMPARE(logged.value(QStringLiteral("loss")).toArray().size(), kSteps);
      const StepSeries& s = store.rankSeries(r);
      QCOMPARE(int(s.size()), kSteps);
      QCOMPARE(values(s.loss), numbers(logged.value(QStringLiteral("loss")).toArray()));
      QList<double> steps, samples;
      for (int k = 1; k <= kSteps; ++k) {
        steps.append(k);
        samples.append(k * 64);
      }
      QCOMPARE(values(s.step), steps);
      QCOMPARE(values(s.samples), samples);
      for (const char* name : {"lr", "grad_norm"}) {
        const GaugeSeries* g = store.gauges().find(r, name);
        QVERIFY2(g, name);
        QCOMPARE(values(g->value), numbers(logged.value(QLatin1String(name)).toArray()));
        QCOMPARE(values(g->step), steps);
      }
      // Step 7's bad input: non-finite values arrive as gaps, the others exactly.
      auto only = [&](const char* name) {
        const GaugeSeries* g = store.gauges().find(r, name);
        return g && g->size() == 1 && g->step[0] == 7 ? g->value[0] : -1.0;
      };
      QVERIFY(std::isnan(only("nan scalar")));
      QVERIFY(std::isnan(only("inf")));
      QVERIFY(std::isnan(only("bigint")));
      QCOMPARE(only("huge"), std::numeric_limits<double>::max());
      QCOMPARE(only("odd name é/σ \"q\""), 42.5);
      QCOMPARE(only(std::string(wire::kMaxGaugeName, 'x').c_str()), 1.0);
      // lr, grad_norm and five of the seven odd ones (the empty name is not sent).
      int names = 0;
      for (const std::string& n : store.gauges().names())
        names += store.gauges().find(r, n) != nullptr;
      QCOMPARE(names, 2 + 6);
      QCOMPARE(store.rankInfo(r).lastEvent, QStringLiteral("finished"));
      QCOMPARE(store.rankInfo(r).device, QStringLiteral("cpu"));
    }
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir.isValid());
    if (!QFileInfo(QStringLiteral(DDPDESK_PYTHON3)).isExecutable())
      QSKIP("no python3 (" DDPDESK_PYTHON3 ")");
  }

  void storeHoldsWhatEachRankLogged() {
    MetricsServer server;
    MetricsStore store;
    QString error;
    QVERIFY2(server.listen(token, 2, &error), qPrintable(error));
    // As RunController::onMessages: every batch into the store.
    connect(&server, &MetricsServer::messagesReceived, &store,
            [&](const std::vector<wire::Message>& m, const QByteArray&) { store.ingest(m); });
    QSignalSpy malformed(&server, &MetricsServer::malformedLines);
    QSignalSpy disconnected(&server, &MetricsServer::peerDisconnected);
    std::unique_ptr<QProcess> ranks[2];
    for (int r = 0; r < 2; ++r)
      ranks[r] = startPython({rankScript("logging_rank.py"), QString::number(kSteps)},
                             rankEnv(server, r, 2, token));
    for (auto& p : ranks) expectFinished(*p);
    QTRY_COMPARE_WITH_TIMEOUT(disconnected.count(), 2, kTimeout);
    store.flush();
    QCOMPARE(malformed.count(), 0);
    QCOMPARE(server.counters().malformed, 0);
    QCOMPARE(server.counters().authenticated, 2);
    QCOMPARE(server.counters().dropped, 0);
    expectLogged(store, dir.path());

    // What `--attach` reads: each rank's metrics file, through the same decoder, into a store.
    for (int r = 0; r < 2; ++r) {
      MetricsStore fromFile;
      const MetricsStore::LoadResult loaded =
          fromFile.loadJsonl(dir.filePath(QStringLiteral("metrics/rank-%1.jsonl").arg(r)));
      QVERIFY2(loaded.ok, qPrintable(loaded.error));
      QCOMPARE(loaded.malformed, 0);
      QCOMPARE(loaded.unknownFields, 0);
      QCOMPARE(values(fromFile.rankSeries(r).loss), values(store.rankSeries(r).loss));
      QCOMPARE(values(fromFile.gauges().find(r, "grad_norm")->value),
               values(store.gauges().find(r, "grad_norm")->value));
    }
  }

  // Ranks with a run directory and no monitor (as under srun): what `--attach` follows. One
  // finishes; the other raises, and its error is its last word.
  void followerReadsScriptRanks() {
    QTemporaryDir runDir;
    QVERIFY(runDir.isValid());
    RunFollower follower;
    follower.setPollInterval(50);
    MetricsStore store;
    connect(&follower, &RunFollower::messagesReceived, &store,
            [&](const std::vector<wire::Message>& m, const QByteArray&) { store.ingest(m); });
    QSignalSpy ended(&follower, &RunFollower::runEnded);
    QVERIFY(follower.follow(runDir.path()));
    std::unique_ptr<QProcess> ranks[2];
    for (int r = 0; r < 2; ++r) {
      QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
      env.insert(QStringLiteral("PYTHONPATH"), QStringLiteral(DDPDESK_PYTHON_DIR));
      env.insert(QStringLiteral("PYTHONDONTWRITEBYTECODE"), QStringLiteral("1"));
      env.insert(QStringLiteral("RANK"), QString::number(r));
      env.insert(QStringLiteral("WORLD_SIZE"), QStringLiteral("2"));
      env.insert(QStringLiteral("DDPDESK_RUN_DIR"), runDir.path());
      env.remove(QStringLiteral("DDPDESK_MONITOR"));
      if (r == 1) env.insert(QStringLiteral("FAIL_AT"), QStringLiteral("11"));
      ranks[r] = startPython({rankScript("logging_rank.py"), QString::number(kSteps)}, env);
    }
    QVERIFY(ranks[0]->waitForFinished(kTimeout));
    QCOMPARE(ranks[0]->exitCode(), 0);
    QVERIFY(ranks[1]->waitForFinished(kTimeout));
    QCOMPARE(ranks[1]->exitCode(), 1);
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, kTimeout);
    QCOMPARE(follower.world(), 2);
    QCOMPARE(follower.ranks().at(0).lastWord, QStringLiteral("finished"));
    QCOMPARE(follower.ranks().at(1).lastWord, QStringLiteral("error"));
    QCOMPARE(follower.ranks().at(1).error, QStringLiteral("RuntimeError: boom at step 11"));
    QCOMPARE(follower.counters().malformed, 0);
    for (int r = 0; r < 2; ++r) {
      const QJsonObject logged =
          readJson(runDir.filePath(QStringLiteral("logged-rank-%1.json").arg(r)));
      QCOMPARE(values(store.rankSeries(r).loss),
               numbers(logged.value(QStringLiteral("loss")).toArray()));
    }
    QCOMPARE(int(store.rankSeries(1).size()), 10);
  }

  void wrongTokenIsRefused() {
    MetricsServer server;
    QString error;
    QVERIFY2(server.listen(token, 1, &error), qPrintable(error));
    int received = 0;
    connect(
        &server, &MetricsServer::messagesReceived,
        [&](const std::vector<wire::Message>& m, const QByteArray&) { received += int(m.size()); });
    QSignalSpy dropped(&server, &MetricsServer::connectionDropped);
    QProcessEnvironment env = rankEnv(server, 0, 1, token);
    env.insert(QStringLiteral("TEST_MONITOR"), server.socketPath());
    env.insert(QStringLiteral("TEST_TOKEN"), QStringLiteral("not-the-token"));
    env.remove(QStringLiteral("DDPDESK_MONITOR"));
    env.remove(QStringLiteral("DDPDESK_RUN_DIR"));
    auto p = startPython({rankScript("refused_client.py")}, env);
    QTRY_COMPARE_WITH_TIMEOUT(dropped.count(), 1, kTimeout);
    QCOMPARE(dropped.at(0).at(0).toInt(), -1);
    QCOMPARE(dropped.at(0).at(1).toString(), QStringLiteral("wrong token"));
    expectFinished(*p);
    QCOMPARE(p->readAllStandardOutput().trimmed(), QByteArray("trained on"));
    QVERIFY2(lastErr.contains("the monitor closed its connection"), lastErr.constData());
    QCOMPARE(received, 0);
    QCOMPARE(server.counters().authenticated, 0);
  }

  // A client newer than the monitor: its hello's range (2..3) does not overlap the monitor's
  // (1..1), so the monitor refuses it and says why; the script trains on (the file would keep
  // every line).
  void newerClientIsRefusedByItsVersionRange() {
    MetricsServer server;
    QString error;
    QVERIFY2(server.listen(token, 1, &error), qPrintable(error));
    QSignalSpy dropped(&server, &MetricsServer::connectionDropped);
    QProcessEnvironment env = rankEnv(server, 0, 1, token);
    env.insert(QStringLiteral("TEST_MONITOR"), server.socketPath());
    env.insert(QStringLiteral("TEST_TOKEN"), token);
    env.insert(QStringLiteral("VERSIONS"), QStringLiteral("2..3"));
    env.remove(QStringLiteral("DDPDESK_MONITOR"));
    env.remove(QStringLiteral("DDPDESK_RUN_DIR"));
    auto p = startPython({rankScript("refused_client.py")}, env);
    QTRY_COMPARE_WITH_TIMEOUT(dropped.count(), 1, kTimeout);
    QCOMPARE(dropped.at(0).at(1).toString(),
             QStringLiteral("rank 0 speaks wire versions 2..3; this monitor reads 1..1"));
    expectFinished(*p);
    QCOMPARE(p->readAllStandardOutput().trimmed(), QByteArray("trained on"));
    QVERIFY2(lastErr.contains("the monitor closed its connection"), lastErr.constData());
  }
};

DDPDESK_TEST_MAIN(TestPythonClient)
#include "test_python_client.moc"
