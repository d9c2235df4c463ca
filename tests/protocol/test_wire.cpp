// Wire codec: every message type round-trips, bad lines are rejected with a reason, never thrown;
// unknown types and fields are ignored and counted, not rejected; hellos carry a version range.
#include <QtTest>

#include <QDir>
#include <QFile>
#include <cmath>
#include <cstdlib>

#include "qt_test_main.h"
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
    Error lost{0, "rank 1 (pid 42) died; the run cannot continue", 1};
    Gauge g{1, "cpu_percent", 42.5, "%", 3.25, 17};
    for (const Message& m : {Message(h), Message(s), Message(e), Message(ev), Message(er),
                             Message(lost), Message(g)}) {
      std::string line = encode(m);
      QVERIFY(line.find('\n') == std::string::npos);
      Decoded d = decode(line);
      QVERIFY2(d.message.has_value(), d.error.c_str());
      QCOMPARE(d.message->index(), m.index());
      QCOMPARE(encode(*d.message), line);
      // What the encoder writes, the decoder knows: nothing of ours is ever "unknown".
      QCOMPARE(d.unknown_fields, 0);
      QVERIFY(d.ignored.empty());
    }
    // An error names the peer whose loss caused it only when there is one.
    QCOMPARE(std::get<Error>(*decode(encode(lost)).message).peer, 1);
    QCOMPARE(std::get<Error>(*decode(encode(er)).message).peer, -1);
    QVERIFY(encode(er).find("peer") == std::string::npos);
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
    QTest::newRow("garbage") << QByteArray("\x01\x02garbage");
    QTest::newRow("array") << QByteArray("[1,2]");
    QTest::newRow("no type") << QByteArray(R"({"rank":0})");
    QTest::newRow("type not a string") << QByteArray(R"({"type":7,"rank":0})");
    QTest::newRow("missing loss") << QByteArray(
        R"({"type":"step","rank":0,"epoch":0,"step":1,"global_loss":1,"samples":1,"lr":1,"time":1})");
    QTest::newRow("negative rank") << QByteArray(R"({"type":"error","rank":-1,"message":"x"})");
    QTest::newRow("rank string") << QByteArray(R"({"type":"error","rank":"0","message":"x"})");
    QTest::newRow("negative peer")
        << QByteArray(R"({"type":"error","rank":0,"message":"x","peer":-2})");
    QTest::newRow("rank >= world") << QByteArray(
        R"({"type":"hello","v":1,"token":"t","rank":2,"world":2,"pid":1,"host":"h","device":"cpu"})");
    QTest::newRow("too long") << QByteArray(int(kMaxLineBytes + 10), 'x');
    QTest::newRow("gauge without name")
        << QByteArray(R"({"type":"gauge","rank":0,"value":1,"unit":"%"})");
    QTest::newRow("gauge empty name")
        << QByteArray(R"({"type":"gauge","rank":0,"name":"","value":1})");
    QTest::newRow("gauge value string")
        << QByteArray(R"({"type":"gauge","rank":0,"name":"x","value":"1"})");
    QTest::newRow("hello range excludes v") << QByteArray(
        R"({"type":"hello","v":1,"v_min":2,"v_max":3,"token":"t","rank":0,"world":1,"pid":1,"host":"h","device":"cpu"})");
    // A known type with a bad known field stays malformed, unknown fields or not.
    // Invalid JSON anywhere makes the line malformed, also inside a value nobody reads, in a
    // type nobody knows, or after the object.
    QTest::newRow("bad JSON in unknown field")
        << QByteArray(R"({"type":"error","rank":0,"message":"m","x":[1,{"a":tru}]})");
    QTest::newRow("bad JSON in unknown type") << QByteArray(R"({"type":"hist","bins":[1,2,]})");
    QTest::newRow("trailing object") << QByteArray(R"({"type":"error","rank":0,"message":"m"}{})");
    QTest::newRow("trailing text") << QByteArray(R"({"type":"error","rank":0,"message":"m"} x)");
    QTest::newRow("NUL after a number")
        << QByteArray("{\"type\":\"error\",\"rank\":0\0,\"message\":\"m\"}", 40);
    QTest::newRow("control character in a string")
        << QByteArray("{\"type\":\"error\",\"rank\":0,\"message\":\"a\tb\"}");
    QTest::newRow("lone surrogate")
        << QByteArray(R"({"type":"error","rank":0,"message":"\ud800"})");
    QTest::newRow("number past a double")
        << QByteArray(R"({"type":"error","rank":0,"message":"m","x":1e400})");
    QTest::newRow("two byte order marks")
        << QByteArray("\xEF\xBB\xBF\xEF\xBB\xBF{\"type\":\"error\",\"rank\":0,\"message\":\"m\"}");
    QTest::newRow("leading zero") << QByteArray(R"({"type":"error","rank":01,"message":"m"})");
    QTest::newRow("step not an integer") << QByteArray(
        R"({"type":"step","rank":0,"epoch":0,"step":1.0,"loss":1,"global_loss":1,"samples":1,"lr":1,"time":1})");
    QTest::newRow("time_ms not an object") << QByteArray(
        R"({"type":"step","rank":0,"epoch":0,"step":1,"loss":1,"global_loss":1,"samples":1,"lr":1,"time":1,"time_ms":[]})");
    QTest::newRow("step bad loss, extra field") << QByteArray(
        R"({"type":"step","rank":0,"epoch":0,"step":1,"loss":"x","global_loss":1,"samples":1,"lr":1,"time":1,"new":1})");
  }
  void rejectsBadLines() {
    QFETCH(QByteArray, line);
    Decoded d = decode(std::string_view(line.constData(), line.size()));
    QVERIFY(!d.message.has_value());
    QVERIFY(!d.error.empty());
    QVERIFY(d.ignored.empty());  // rejected, not ignored
    QCOMPARE(d.unknown_fields, 0);
    QCOMPARE(int(d.kind), int(Decoded::Kind::Malformed));
  }

  // What a reader does with a line, the one rule: blank lines carry nothing, a newer type is
  // ignored, the rest is a message or malformed.
  void everyLineHasOneKind() {
    QCOMPARE(int(decode("").kind), int(Decoded::Kind::Blank));
    QCOMPARE(int(decode("\r\n").kind), int(Decoded::Kind::Blank));
    QVERIFY(decode("\r").error.empty());
    QCOMPARE(int(decode(R"({"type":"histogram","rank":0})").kind), int(Decoded::Kind::Ignored));
    QCOMPARE(int(decode("{").kind), int(Decoded::Kind::Malformed));
    QCOMPARE(int(decode(" ").kind), int(Decoded::Kind::Malformed));
    QCOMPARE(int(decode(encode(Error{1, "x"})).kind), int(Decoded::Kind::Message));
  }

  // A newer peer's message type is ignored: no message, no error, and the reason names the type.
  void unknownTypeIsIgnoredNotMalformed() {
    const Decoded d = decode(R"({"type":"histogram","rank":0,"bins":[1,2,3]})");
    QVERIFY(!d.message.has_value());
    QVERIFY2(d.error.empty(), d.error.c_str());
    QCOMPARE(QString::fromStdString(d.ignored), QStringLiteral("unknown type 'histogram'"));
    // Even without a rank: the codec cannot know what a type it does not know requires.
    QVERIFY(!decode(R"({"type":"x"})").ignored.empty());
  }

  // Fields a newer peer added are ignored and counted; the message decodes as before.
  void unknownFieldsAreCountedAndIgnored() {
    Gauge g{0, "rss_bytes", 1e8, "B", 1.0, 2};
    std::string line = encode(g);
    line.insert(line.size() - 1, R"(,"host_load":0.5,"zone":"a")");
    Decoded d = decode(line);
    QVERIFY2(d.message.has_value(), d.error.c_str());
    QCOMPARE(std::get<Gauge>(*d.message).value, 1e8);
    QCOMPARE(d.unknown_fields, 2);
    QVERIFY(d.unknown_field == "host_load" || d.unknown_field == "zone");

    // Inside the step breakdown too, named with its path.
    Step s;
    s.times = StepTimes{};
    line = encode(s);
    const auto at = line.find("\"time_ms\":{") + 11;
    line.insert(at, R"("h2d":0.25,)");
    d = decode(line);
    QVERIFY2(d.message.has_value(), d.error.c_str());
    QCOMPARE(d.unknown_fields, 1);
    QCOMPARE(QString::fromStdString(d.unknown_field), QStringLiteral("time_ms.h2d"));
  }

  void gaugeRoundTrip() {
    Gauge g{3, "gpu_power_w", 312.5, "W", 12.5, 400};
    const std::string line = encode(g);
    QCOMPARE(QString::fromStdString(line),
             QStringLiteral(R"({"name":"gpu_power_w","rank":3,"step":400,"time":12.5,)"
                            R"("type":"gauge","unit":"W","value":312.5})"));
    const Gauge back = std::get<Gauge>(*decode(line).message);
    QCOMPARE(back.rank, 3);
    QCOMPARE(back.name, std::string("gpu_power_w"));
    QCOMPARE(back.value, 312.5);
    QCOMPARE(back.unit, std::string("W"));
    QCOMPARE(back.time, 12.5);
    QCOMPARE(back.step, std::int64_t(400));
    QCOMPARE(rank_of(Message(back)), 3);
    QCOMPARE(type_name(Message(back)), "gauge");
    // A value that is not finite travels as null; unit, time and step may be left out.
    g.value = std::nan("");
    QVERIFY(std::isnan(std::get<Gauge>(*decode(encode(g)).message).value));
    const Decoded minimal = decode(R"({"type":"gauge","rank":0,"name":"threads","value":9})");
    QVERIFY2(minimal.message.has_value(), minimal.error.c_str());
    QCOMPARE(std::get<Gauge>(*minimal.message).value, 9.0);
    QVERIFY(std::get<Gauge>(*minimal.message).unit.empty());
  }

  // The hello carries the range of versions its sender speaks; without one (older workers), just
  // its "v". compatible() accepts any overlap with this codec's range.
  void helloVersionRange() {
    Hello h{kVersion, "t", 0, 1, 1, "h", "cpu"};
    const Hello back = std::get<Hello>(*decode(encode(h)).message);
    QCOMPARE(back.v_min, kMinVersion);
    QCOMPARE(back.v_max, kMaxVersion);
    QVERIFY(compatible(back));

    const Hello old = std::get<Hello>(
        *decode(
             R"({"type":"hello","v":1,"token":"t","rank":0,"world":1,"pid":1,"host":"h","device":"cpu"})")
             .message);
    QCOMPARE(old.v_min, 1);
    QCOMPARE(old.v_max, 1);
    QVERIFY(compatible(old));

    Hello newer = h;  // writes a newer version, still speaks ours
    newer.v = kMaxVersion + 1;
    newer.v_min = kMaxVersion;
    newer.v_max = kMaxVersion + 1;
    QVERIFY(compatible(std::get<Hello>(*decode(encode(newer)).message)));
    newer.v_min = kMaxVersion + 1;  // only newer ones: refused
    QVERIFY(!compatible(std::get<Hello>(*decode(encode(newer)).message)));
    Hello older = h;
    older.v = older.v_min = older.v_max = kMinVersion - 1;
    QVERIFY(!compatible(std::get<Hello>(*decode(encode(older)).message)));
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
    QCOMPARE(types.size(), int(std::variant_size_v<Message>));
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

  // What a JSON DOM made of a line is what the decoder reads: the last of a key given twice,
  // escaped keys by their meaning, integers past 64 bits as doubles, long decimals rounded, a byte
  // order mark skipped; and the unknown field named is the first in key order.
  void decodesAsAJsonDomWould() {
    Decoded d = decode(R"({"type":"error","rank":0,"message":"a","message":"b","x":1,"x":2})");
    QVERIFY2(d.message.has_value(), d.error.c_str());
    QCOMPARE(std::get<Error>(*d.message).message, std::string("b"));
    QCOMPARE(d.unknown_fields, 1);
    d = decode(R"({"typ\u0065":"error","r\u0061nk":1,"message":"\u00e9"})");
    QVERIFY2(d.message.has_value(), d.error.c_str());
    QCOMPARE(std::get<Error>(*d.message).rank, 1);
    QCOMPARE(std::get<Error>(*d.message).message, std::string("\xc3\xa9"));
    d = decode(
        R"({"type":"step","rank":0,"epoch":0,"step":1,"loss":1e300,"global_loss":123456789012345678901234567890,)"
        R"("samples":18446744073709551615,"lr":-0,"time":0.33333333333333333333333333,"zz":1,"aa":{"b":[null]}})");
    QVERIFY2(d.message.has_value(), d.error.c_str());
    const Step& s = std::get<Step>(*d.message);
    QCOMPARE(s.loss, 1e300);
    QCOMPARE(s.global_loss, 123456789012345678901234567890.0);
    QCOMPARE(s.samples, std::int64_t(-1));  // an unsigned 64-bit integer, read as a signed one
    QCOMPARE(s.lr, 0.0);
    QCOMPARE(s.time, 1.0 / 3);  // more digits than a double holds
    QCOMPARE(d.unknown_fields, 2);
    QCOMPARE(QString::fromStdString(d.unknown_field), QStringLiteral("aa"));
    // Long decimals read exactly as strtod reads them (what nlohmann-json uses), on both sides of
    // 19 significant digits, with and without leading zeros: simdjson alone misreads some of them
    // ("0." counted as a leading zero).
    for (const char* number :
         {"0.33333333333333333333", "0.0033333333333333333333", "0.0001234567890123456789",
          "-0.000123456789012345678901", "1234567890.1234567891", "0.1428571428571428571e-3",
          "0.00000000000000000000001"}) {
      d = decode(std::string(R"({"type":"gauge","rank":0,"name":"n","value":)") + number + "}");
      QVERIFY2(d.message.has_value(), d.error.c_str());
      QCOMPARE(std::get<Gauge>(*d.message).value, std::strtod(number, nullptr));
    }
    // Keys that a known one begins with, or that begin with one, are other keys.
    d = decode(R"({"type":"error","rank":0,"message":"m","messag":1,"messages":2,"r\u0061nks":3})");
    QVERIFY2(d.message.has_value(), d.error.c_str());
    QCOMPARE(d.unknown_fields, 3);
    QCOMPARE(QString::fromStdString(d.unknown_field), QStringLiteral("messag"));
    d = decode("\xEF\xBB\xBF{\"type\":\"error\",\"rank\":0,\"message\":\"m\"}");
    QVERIFY2(d.message.has_value(), d.error.c_str());
    // A NUL byte ends the line (what follows it is not read).
    const char nul[] = "{\"type\":\"error\",\"rank\":0,\"message\":\"m\"}\0junk";
    QVERIFY(decode(std::string_view(nul, sizeof nul - 1)).message.has_value());
    // Whitespace around the object and inside it is fine.
    QVERIFY(decode(" \t{ \"type\" : \"error\" , \"rank\":0,\"message\":\"m\" } ").message);
    // Not an object, though valid JSON, and not JSON at all: different reasons.
    QCOMPARE(QString::fromStdString(decode("[1,2]").error), QStringLiteral("not a JSON object"));
    QCOMPARE(QString::fromStdString(decode("[1,2").error), QStringLiteral("not valid JSON"));
  }

  // Every line of the fuzzer's corpus gets exactly one outcome (decoded, ignored or rejected),
  // and what decodes encodes to a line that decodes to the same message again.
  void fuzzCorpusDecodes() {
    const QDir dir(QStringLiteral(DDPDESK_WIRE_CORPUS));
    const QStringList files = dir.entryList(QDir::Files);
    QVERIFY(files.size() >= 5);
    int decoded = 0;
    for (const QString& name : files) {
      QFile f(dir.filePath(name));
      QVERIFY(f.open(QIODevice::ReadOnly));
      const QByteArray bytes = f.readAll();
      const Decoded d = decode(std::string_view(bytes.constData(), std::size_t(bytes.size())));
      const int outcomes =
          int(d.message.has_value()) + int(!d.ignored.empty()) + int(!d.error.empty());
      QVERIFY2(outcomes == 1, qPrintable(name));
      if (!d.message) continue;
      ++decoded;
      const std::string again = encode(*d.message);
      const Decoded back = decode(again);
      QVERIFY2(back.message.has_value(), qPrintable(name));
      QCOMPARE(back.unknown_fields, 0);
      QCOMPARE(encode(*back.message), again);
    }
    QVERIFY(decoded >= 5);
  }

  void trailingNewlineIgnored() {
    Error er{0, "x"};
    QVERIFY(decode(encode(er) + "\r\n").message.has_value());
  }
};

DDPDESK_TEST_APPLESS_MAIN(TestWire)
#include "test_wire.moc"
