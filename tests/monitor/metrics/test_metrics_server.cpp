// MetricsServer through real local sockets: the hello/token gate, partial frames, many lines per
// read, oversized lines dropping only their own connection, malformed lines counted.
#include <QFileInfo>
#include <QLocalSocket>
#include <QSignalSpy>
#include <QtTest>
#include <memory>

#include "metrics/metrics_server.h"
#include "qt_test_main.h"
#include "wire.h"

using namespace ddpdesk;

namespace {

QByteArray line(const wire::Message& m) {
  return QByteArray::fromStdString(wire::encode(m) + "\n");
}

QByteArray hello(const QString& token, int rank, int world = 2) {
  return line(
      wire::Hello{wire::kVersion, token.toStdString(), rank, world, 1000 + rank, "h", "cpu"});
}

QByteArray step(int rank, std::int64_t n) {
  wire::Step s;
  s.rank = rank;
  s.step = n;
  s.loss = 1.0 / double(n + 1);
  s.global_loss = s.loss;
  s.samples = n * 8;
  s.time = double(n);
  return line(s);
}

}  // namespace

class TestMetricsServer : public QObject {
  Q_OBJECT

  const QString token = QStringLiteral("0123456789abcdef");
  std::unique_ptr<MetricsServer> server;
  std::vector<wire::Message> received;
  int batches = 0;

  std::unique_ptr<QLocalSocket> connectClient() {
    auto s = std::make_unique<QLocalSocket>();
    s->connectToServer(server->socketPath());
    if (!s->waitForConnected(10000)) return nullptr;
    return s;
  }
  void send(QLocalSocket& s, const QByteArray& bytes) {
    s.write(bytes);
    s.flush();
  }
  int steps() const {
    int n = 0;
    for (const auto& m : received) n += std::holds_alternative<wire::Step>(m);
    return n;
  }

 private Q_SLOTS:
  void init() {
    server = std::make_unique<MetricsServer>();
    QString error;
    QVERIFY2(server->listen(token, 2, &error), qPrintable(error));
    received.clear();
    batches = 0;
    connect(server.get(), &MetricsServer::messagesReceived,
            [this](const std::vector<wire::Message>& batch, const QByteArray&) {
              ++batches;
              received.insert(received.end(), batch.begin(), batch.end());
            });
  }
  void cleanup() { server.reset(); }

  void socketLivesInPrivateDirectory() {
    const QFileInfo dir(QFileInfo(server->socketPath()).absolutePath());
    QCOMPARE(dir.permissions() &
                 (QFileDevice::ReadGroup | QFileDevice::WriteGroup | QFileDevice::ExeGroup |
                  QFileDevice::ReadOther | QFileDevice::WriteOther | QFileDevice::ExeOther),
             QFileDevice::Permissions());
    QVERIFY(dir.permissions() & QFileDevice::ExeOwner);
    const QString path = server->socketPath();
    server->close();
    QVERIFY(!QFileInfo::exists(path));
    QVERIFY(!QFileInfo::exists(dir.absoluteFilePath()));
  }

  void acceptsRightTokenAndDeliversMessages() {
    QSignalSpy auth(server.get(), &MetricsServer::peerAuthenticated);
    auto c = connectClient();
    QVERIFY(c);
    send(*c, hello(token, 1) + step(1, 1) + step(1, 2));
    QTRY_COMPARE_WITH_TIMEOUT(steps(), 2, 10000);
    QCOMPARE(auth.count(), 1);
    QCOMPARE(auth.at(0).at(0).value<wire::Hello>().rank, 1);
    QVERIFY(auth.at(0).at(0).value<wire::Hello>().token.empty());  // never passed on
    QCOMPARE(server->counters().authenticated, 1);
  }

  void recordedLinesHideTheToken() {
    QByteArray recorded;
    connect(server.get(), &MetricsServer::messagesReceived,
            [&](const std::vector<wire::Message>&, const QByteArray& l) { recorded += l; });
    auto c = connectClient();
    send(*c, hello(token, 0) + step(0, 1));
    QTRY_COMPARE_WITH_TIMEOUT(steps(), 1, 10000);
    QVERIFY(!recorded.contains(token.toUtf8()));
    QCOMPARE(recorded.count('\n'), 2);
    QVERIFY(recorded.endsWith(step(0, 1)));
  }

  void dropsWrongToken() {
    QSignalSpy dropped(server.get(), &MetricsServer::connectionDropped);
    auto c = connectClient();
    QVERIFY(c);
    send(*c, hello(QStringLiteral("wrong-token-0000"), 0) + step(0, 1));
    QTRY_COMPARE_WITH_TIMEOUT(dropped.count(), 1, 10000);
    QCOMPARE(dropped.at(0).at(0).toInt(), -1);
    QVERIFY(dropped.at(0).at(1).toString().contains(QLatin1String("token")));
    QTRY_COMPARE_WITH_TIMEOUT(c->state(), QLocalSocket::UnconnectedState, 10000);
    QCOMPARE(steps(), 0);
  }

  void dropsWhenFirstLineIsNotHello() {
    QSignalSpy dropped(server.get(), &MetricsServer::connectionDropped);
    auto c = connectClient();
    send(*c, step(0, 1) + hello(token, 0));
    QTRY_COMPARE_WITH_TIMEOUT(dropped.count(), 1, 10000);
    QCOMPARE(steps(), 0);
  }

  void dropsWorldMismatch() {
    QSignalSpy dropped(server.get(), &MetricsServer::connectionDropped);
    auto c = connectClient();
    send(*c, hello(token, 0, 3));
    QTRY_COMPARE_WITH_TIMEOUT(dropped.count(), 1, 10000);
    QVERIFY(dropped.at(0).at(1).toString().contains(QLatin1String("world")));
  }

  // A hello is believed when its version range overlaps the monitor's; the refusal says both.
  void versionRangesMustOverlap() {
    QSignalSpy dropped(server.get(), &MetricsServer::connectionDropped);
    QSignalSpy auth(server.get(), &MetricsServer::peerAuthenticated);
    wire::Hello newer{wire::kMaxVersion + 1, token.toStdString(), 0, 2, 1, "h", "cpu"};
    newer.v_min = wire::kMaxVersion;  // writes a newer version, still speaks ours
    newer.v_max = wire::kMaxVersion + 1;
    auto ok = connectClient();
    send(*ok, line(newer) + step(0, 1));
    QTRY_COMPARE_WITH_TIMEOUT(steps(), 1, 10000);
    QCOMPARE(auth.count(), 1);

    wire::Hello future = newer;
    future.rank = 1;
    future.v_min = wire::kMaxVersion + 1;  // nothing in common
    auto refused = connectClient();
    send(*refused, line(future) + step(1, 1));
    QTRY_COMPARE_WITH_TIMEOUT(dropped.count(), 1, 10000);
    QCOMPARE(dropped.at(0).at(0).toInt(), -1);
    const QString why = dropped.at(0).at(1).toString();
    QCOMPARE(why, QStringLiteral("rank 1 speaks wire versions %1..%2; this monitor reads %3..%4")
                      .arg(wire::kMaxVersion + 1)
                      .arg(wire::kMaxVersion + 1)
                      .arg(wire::kMinVersion)
                      .arg(wire::kMaxVersion));
    QCOMPARE(steps(), 1);  // nothing from the refused one
  }

  // A newer worker's message types and fields: counted, named once per connection, never
  // malformed; the unknown lines travel on with the recorded lines (for metrics.jsonl).
  void unknownTypesAndFieldsAreCountedAndIgnored() {
    QByteArray recorded;
    connect(server.get(), &MetricsServer::messagesReceived,
            [&](const std::vector<wire::Message>&, const QByteArray& l) { recorded += l; });
    QSignalSpy ignored(server.get(), &MetricsServer::ignoredInput);
    QSignalSpy malformed(server.get(), &MetricsServer::malformedLines);
    auto c = connectClient();
    const QByteArray histogram = R"({"type":"histogram","rank":0,"bins":[1,2]})"
                                 "\n";
    QByteArray withField = step(0, 1);
    withField.insert(withField.size() - 2, R"(,"h2d_ms":0.5)");
    send(*c, hello(token, 0) + histogram + withField + histogram + step(0, 2));
    QTRY_COMPARE_WITH_TIMEOUT(steps(), 2, 10000);
    QTRY_COMPARE_WITH_TIMEOUT(server->counters().ignored, 2, 10000);
    QCOMPARE(server->counters().unknownFields, 1);
    QCOMPARE(server->counters().malformed, 0);
    QCOMPARE(malformed.count(), 0);
    QCOMPARE(std::get<wire::Step>(received.back()).step, 2);
    QStringList named;
    for (const auto& args : ignored) {
      QCOMPARE(args.at(0).toInt(), 0);
      named << args.at(1).toString();
    }
    named.sort();
    QCOMPARE(named, (QStringList{QStringLiteral("unknown field 'h2d_ms' in step"),
                                 QStringLiteral("unknown type 'histogram'")}));
    QCOMPARE(recorded.count("histogram"), 2);
    QVERIFY(recorded.contains("h2d_ms"));
  }

  void dropsSilentConnectionAfterTimeout() {
    server->setHelloTimeout(200);
    QSignalSpy dropped(server.get(), &MetricsServer::connectionDropped);
    auto c = connectClient();
    QVERIFY(c);
    QTRY_COMPARE_WITH_TIMEOUT(dropped.count(), 1, 10000);
    QVERIFY(dropped.at(0).at(1).toString().contains(QLatin1String("no hello")));
  }

  void partialFramesAreJoined() {
    auto c = connectClient();
    const QByteArray bytes = hello(token, 0) + step(0, 1) + step(0, 2);
    for (int i = 0; i < bytes.size(); ++i) {
      send(*c, bytes.mid(i, 1));
      // Let the server read what is there, so lines really arrive cut.
      if (i % 13 == 0) QCoreApplication::processEvents();
    }
    QTRY_COMPARE_WITH_TIMEOUT(steps(), 2, 10000);
    QCOMPARE(std::get<wire::Step>(received.back()).step, 2);
    QCOMPARE(server->counters().malformed, 0);
  }

  void manyLinesPerRead() {
    auto c = connectClient();
    QByteArray bytes = hello(token, 1);
    const int n = 5000;
    for (int i = 1; i <= n; ++i) bytes += step(1, i);
    send(*c, bytes);
    QTRY_COMPARE_WITH_TIMEOUT(steps(), n, 20000);
    // Delivered in reads, not line by line.
    QVERIFY2(batches < n / 10, qPrintable(QString::number(batches)));
    for (int i = 0; i < n; ++i)
      QCOMPARE(std::get<wire::Step>(received[std::size_t(i) + 1]).step, i + 1);
  }

  void oversizedLineDropsOnlyThatConnection() {
    QSignalSpy dropped(server.get(), &MetricsServer::connectionDropped);
    auto good = connectClient();
    auto bad = connectClient();
    send(*good, hello(token, 0) + step(0, 1));
    send(*bad, hello(token, 1) + step(1, 1));
    QTRY_COMPARE_WITH_TIMEOUT(steps(), 2, 10000);
    send(*bad, QByteArray(int(wire::kMaxLineBytes) + 100, 'x') + "\n" + step(1, 2));
    QTRY_COMPARE_WITH_TIMEOUT(dropped.count(), 1, 10000);
    QCOMPARE(dropped.at(0).at(0).toInt(), 1);
    QVERIFY(dropped.at(0).at(1).toString().contains(QLatin1String("longer")));
    // The other connection is undisturbed.
    send(*good, step(0, 2) + step(0, 3));
    QTRY_COMPARE_WITH_TIMEOUT(steps(), 4, 10000);
    QCOMPARE(server->connectionCount(), 1);
    QCOMPARE(server->counters().dropped, 1);
  }

  void oversizedPartialLineWithoutNewlineIsDropped() {
    QSignalSpy dropped(server.get(), &MetricsServer::connectionDropped);
    auto bad = connectClient();
    send(*bad, hello(token, 1));
    for (int i = 0; i < 4; ++i) send(*bad, QByteArray(int(wire::kMaxLineBytes) / 3, 'y'));
    QTRY_COMPARE_WITH_TIMEOUT(dropped.count(), 1, 10000);
  }

  void garbageIsCountedNotFatal() {
    QSignalSpy malformed(server.get(), &MetricsServer::malformedLines);
    auto c = connectClient();
    send(*c, hello(token, 0) + "not json\n" + step(0, 1) + "{\"type\":\"step\"}\n" + step(1, 5) +
                 "\n" + step(0, 2));
    QTRY_COMPARE_WITH_TIMEOUT(steps(), 2, 10000);
    QTRY_COMPARE_WITH_TIMEOUT(server->counters().malformed, 3, 10000);  // blank line is not
    QVERIFY(malformed.count() >= 1);
    QCOMPARE(server->connectionCount(), 1);
    QCOMPARE(server->counters().dropped, 0);
  }

  void disconnectSignals() {
    QSignalSpy gone(server.get(), &MetricsServer::peerDisconnected);
    QSignalSpy all(server.get(), &MetricsServer::allDisconnected);
    auto a = connectClient();
    auto b = connectClient();
    send(*a, hello(token, 0));
    send(*b, hello(token, 1) + step(1, 1));
    QTRY_COMPARE_WITH_TIMEOUT(server->counters().authenticated, 2, 10000);
    a->disconnectFromServer();
    QTRY_COMPARE_WITH_TIMEOUT(gone.count(), 1, 10000);
    QCOMPARE(all.count(), 0);
    b->disconnectFromServer();
    QTRY_COMPARE_WITH_TIMEOUT(all.count(), 1, 10000);
    QCOMPARE(steps(), 1);
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestMetricsServer)
#include "test_metrics_server.moc"
