// Wire codec: every message type round-trips, bad lines are rejected with a reason, never thrown.
#include <QtTest>

#include <cmath>

#include "wire.h"

using namespace ddpdesk::wire;

class TestWire : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void roundTripsEveryType() {
    Hello h{1, "tok", 1, 2, 4242, "host", "cpu"};
    Step s;
    s.rank = 1;
    s.epoch = 2;
    s.step = 300;
    s.loss = 0.25;
    s.global_loss = 0.5;
    s.samples = 4800;
    s.lr = 1e-3;
    s.time = 1.5;
    Eval e;
    e.rank = 0;
    e.epoch = 1;
    e.step = 9;
    e.loss = 0.4;
    e.accuracy = 0.85;
    Event ev;
    ev.event = "checkpoint";
    ev.path = "/tmp/ck.pt";
    ev.step = 5;
    Error er{3, "boom \"quoted\"\nnewline"};
    for (const Message& m : {Message(h), Message(s), Message(e), Message(ev), Message(er)}) {
      std::string line = encode(m);
      QVERIFY(line.find('\n') == std::string::npos);
      Decoded d = decode(line);
      QVERIFY2(d.message.has_value(), d.error.c_str());
      QCOMPARE(d.message->index(), m.index());
      QCOMPARE(encode(*d.message), line);
    }
    Decoded d = decode(encode(s));
    QCOMPARE(std::get<Step>(*d.message).global_loss, 0.5);
    QCOMPARE(std::get<Eval>(*decode(encode(e)).message).accuracy.value(), 0.85);
  }

  void nonFiniteBecomesNull() {
    Step s;
    s.loss = std::nan("");
    std::string line = encode(s);
    QVERIFY(line.find("\"loss\":null") != std::string::npos);
    QVERIFY(std::isnan(std::get<Step>(*decode(line).message).loss));
  }

  void rejectsBadLines_data() {
    QTest::addColumn<QByteArray>("line");
    QTest::newRow("empty") << QByteArray("");
    QTest::newRow("garbage") << QByteArray("\x01\x02garbage");
    QTest::newRow("array") << QByteArray("[1,2]");
    QTest::newRow("no type") << QByteArray(R"({"rank":0})");
    QTest::newRow("unknown type") << QByteArray(R"({"type":"nope","rank":0})");
    QTest::newRow("missing loss") << QByteArray(
        R"({"type":"step","rank":0,"epoch":0,"step":1,"global_loss":1,"samples":1,"lr":1,"time":1})");
    QTest::newRow("negative rank") << QByteArray(R"({"type":"error","rank":-1,"message":"x"})");
    QTest::newRow("rank string") << QByteArray(R"({"type":"error","rank":"0","message":"x"})");
    QTest::newRow("rank >= world") << QByteArray(
        R"({"type":"hello","v":1,"token":"t","rank":2,"world":2,"pid":1,"host":"h","device":"cpu"})");
    QTest::newRow("too long") << QByteArray(int(kMaxLineBytes + 10), 'x');
  }
  void rejectsBadLines() {
    QFETCH(QByteArray, line);
    Decoded d = decode(std::string_view(line.constData(), line.size()));
    QVERIFY(!d.message.has_value());
    QVERIFY(!d.error.empty());
  }

  // Every example in docs/wire-format.md decodes with this codec, and every type has one.
  void documentedExamplesDecode() {
    QFile doc(QStringLiteral(DDPDESK_WIRE_DOC));
    QVERIFY2(doc.open(QIODevice::ReadOnly), DDPDESK_WIRE_DOC);
    QStringList objects;
    bool in_block = false;
    for (const QString& line : QString::fromUtf8(doc.readAll()).split('\n')) {
      if (line.startsWith("```")) {
        in_block = line == "```json";
        continue;
      }
      if (!in_block) continue;
      if (line.startsWith('{'))
        objects << line;
      else if (!objects.isEmpty())
        objects.last() += line;  // wrapped example
    }
    QSet<QString> types;
    for (const QString& obj : objects) {
      QByteArray utf8 = obj.toUtf8();
      Decoded d = decode(std::string_view(utf8.constData(), utf8.size()));
      QVERIFY2(d.message.has_value(), qPrintable(obj + " : " + QString::fromStdString(d.error)));
      types << type_name(*d.message);
    }
    QCOMPARE(types.size(), 5);
  }

  // The step breakdown rides in the step message as "time_ms" and comes back field for field;
  // a step without it decodes with no breakdown, and a malformed one is refused.
  void stepTimesRoundTrip() {
    Step s;
    StepTimes t;
    t.data = 0.5;
    t.forward = 1.25;
    t.backward = 2.5;
    t.comm = 0.75;
    t.optimizer = 0.125;
    t.telemetry = 0.0625;
    t.step = 5.1875;
    t.steps = 4;
    s.times = t;
    const std::string line = encode(s);
    QVERIFY(line.find("\"time_ms\":{") != std::string::npos);
    const Step back = std::get<Step>(*decode(line).message);
    QVERIFY(back.times.has_value());
    QCOMPARE(back.times->data, 0.5);
    QCOMPARE(back.times->forward, 1.25);
    QCOMPARE(back.times->backward, 2.5);
    QCOMPARE(back.times->comm, 0.75);
    QCOMPARE(back.times->optimizer, 0.125);
    QCOMPARE(back.times->telemetry, 0.0625);
    QCOMPARE(back.times->step, 5.1875);
    QCOMPARE(back.times->steps, 4L);
    QVERIFY(!std::get<Step>(*decode(encode(Step{})).message).times.has_value());
    std::string bad = line;
    bad.replace(bad.find("\"time_ms\":{"), 11, "\"time_ms\":7,\"x\":{");
    QVERIFY(!decode(bad).message.has_value());
  }

  void trailingNewlineIgnored() {
    Error er{0, "x"};
    QVERIFY(decode(encode(er) + "\r\n").message.has_value());
  }
};

QTEST_APPLESS_MAIN(TestWire)
#include "test_wire.moc"
