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

  void trailingNewlineIgnored() {
    Error er{0, "x"};
    QVERIFY(decode(encode(er) + "\r\n").message.has_value());
  }
};

QTEST_APPLESS_MAIN(TestWire)
#include "test_wire.moc"
