// The monitor side's DDPDESK_* switches (MonitorSettings): defaults, every switch read, malformed
// values one line naming the variable (and `ddpdesk` refusing them with exit code 2 before
// anything starts, headless or with a window), parsed once per process. And the rule that keeps
// it so: in the sources only the settings readers look at the environment, and every switch
// they read is documented in docs/environment.md.
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <map>

#include "monitor_test_util.h"
#include "qt_test_main.h"
#include "run/monitor_settings.h"

using namespace ddpdesk;
using namespace ddpdesk::test;

namespace {

constexpr int kTimeout = 60000;  // small shared CI machines: never a timing test

MonitorSettingsResult read(const std::map<std::string, QByteArray>& vars) {
  return readMonitorSettings([&](const char* name) {
    auto it = vars.find(name);
    return it == vars.end() ? QByteArray() : it->second;
  });
}

QString source(const QString& rel) {
  return QStringLiteral(DDPDESK_SOURCE_DIR "/") + rel;
}

QString readText(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

// The DDPDESK_* names written as string literals in a source file: the variables it reads.
QStringList switchesIn(const QString& rel) {
  QStringList out;
  static const QRegularExpression re(QStringLiteral("\"(DDPDESK_[A-Z0-9_]+)\""));
  for (auto it = re.globalMatch(readText(source(rel))); it.hasNext();)
    out.append(it.next().captured(1));
  out.removeDuplicates();
  return out;
}

}  // namespace

class TestMonitorSettings : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void nothingSetGivesTheDefaults() {
    const auto r = read({});
    QVERIFY2(r.ok(), qPrintable(r.error));
    QVERIFY(r.settings.worker.isEmpty());
    QVERIFY(r.settings.remoteWorker.isEmpty());
    QCOMPARE(r.settings.sshCommand, QStringList{QStringLiteral("ssh")});
    QCOMPARE(r.settings.sshReconnectSeconds, 120);
    QCOMPARE(r.settings.silentRankSeconds, 120);
    QCOMPARE(r.settings.onEndTimeoutSeconds, 30);
    QVERIFY(!r.settings.autostart);
    // Empty is unset.
    const auto e = read({{"DDPDESK_SSH_COMMAND", "  "}, {"DDPDESK_SILENT_S", ""}});
    QVERIFY2(e.ok(), qPrintable(e.error));
    QCOMPARE(e.settings.sshCommand, QStringList{QStringLiteral("ssh")});
    QCOMPARE(e.settings.silentRankSeconds, 120);
  }

  void everySwitchIsRead() {
    const auto r = read({{"DDPDESK_WORKER", "/opt/w"},
                         {"DDPDESK_REMOTE_WORKER", "/cluster/bin/ddpdesk-worker"},
                         {"DDPDESK_SSH_COMMAND", "ssh -F \"/my dir/config\" -o BatchMode=yes"},
                         {"DDPDESK_SSH_RECONNECT_S", "0"},
                         {"DDPDESK_SILENT_S", "7"},
                         {"DDPDESK_ON_END_TIMEOUT_S", "90"},
                         {"DDPDESK_AUTOSTART", "1"}});
    QVERIFY2(r.ok(), qPrintable(r.error));
    QCOMPARE(r.settings.worker, QStringLiteral("/opt/w"));
    QCOMPARE(r.settings.remoteWorker, QStringLiteral("/cluster/bin/ddpdesk-worker"));
    QCOMPARE(r.settings.sshCommand,
             (QStringList{"ssh", "-F", "/my dir/config", "-o", "BatchMode=yes"}));
    QCOMPARE(r.settings.sshReconnectSeconds, 0);
    QCOMPARE(r.settings.silentRankSeconds, 7);
    QCOMPARE(r.settings.onEndTimeoutSeconds, 90);
    QVERIFY(r.settings.autostart);
    QVERIFY(!read({{"DDPDESK_AUTOSTART", "0"}}).settings.autostart);
  }

  void malformedValuesAreOneLineNamingTheVariable_data() {
    QTest::addColumn<QByteArray>("name");
    QTest::addColumn<QByteArray>("value");
    for (const char* v : {"abc", "-1", "1.5", "90000", "12s"}) {
      QTest::newRow(qPrintable(QStringLiteral("silent %1").arg(v)))
          << QByteArray("DDPDESK_SILENT_S") << QByteArray(v);
      QTest::newRow(qPrintable(QStringLiteral("reconnect %1").arg(v)))
          << QByteArray("DDPDESK_SSH_RECONNECT_S") << QByteArray(v);
      QTest::newRow(qPrintable(QStringLiteral("on_end timeout %1").arg(v)))
          << QByteArray("DDPDESK_ON_END_TIMEOUT_S") << QByteArray(v);
    }
    // A command gets at least a second: 0 would kill it at once.
    QTest::newRow("on_end timeout 0") << QByteArray("DDPDESK_ON_END_TIMEOUT_S") << QByteArray("0");
    QTest::newRow("autostart yes") << QByteArray("DDPDESK_AUTOSTART") << QByteArray("yes");
  }
  void malformedValuesAreOneLineNamingTheVariable() {
    QFETCH(QByteArray, name);
    QFETCH(QByteArray, value);
    const auto r = read({{name.toStdString(), value}, {"DDPDESK_WORKER", "/opt/w"}});
    QVERIFY(!r.ok());
    QVERIFY2(r.error.contains(QString::fromLatin1(name + "='" + value + "'")), qPrintable(r.error));
    QVERIFY(!r.error.contains(QLatin1Char('\n')));
    // The others are still read; the malformed one keeps its default.
    QCOMPARE(r.settings.worker, QStringLiteral("/opt/w"));
    QCOMPARE(r.settings.silentRankSeconds, 120);
    QCOMPARE(r.settings.sshReconnectSeconds, 120);
    QCOMPARE(r.settings.onEndTimeoutSeconds, 30);
  }

  void parsedOncePerProcess() {
    qputenv("DDPDESK_SILENT_S", "7");
    const int first = monitorSettings().silentRankSeconds;
    qputenv("DDPDESK_SILENT_S", "9");
    QCOMPARE(monitorSettings().silentRankSeconds, first);  // not read again
    QCOMPARE(first, 7);
    MonitorSettings s;
    s.silentRankSeconds = 3;
    setMonitorSettings(s);
    QCOMPARE(monitorSettings().silentRankSeconds, 3);
    qunsetenv("DDPDESK_SILENT_S");
  }

  // `ddpdesk` checks them before it starts anything: one line, exit 2, no run directory.
  void ddpdeskRefusesAMalformedSwitch_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("platform");
    QTest::newRow("headless") << QStringList{"--headless", "--nproc", "1", "--task", "seed"}
                              << QString();
    QTest::newRow("window") << QStringList{"--nproc", "1", "--task", "seed"}
                            << QStringLiteral("offscreen");
  }
  void ddpdeskRefusesAMalformedSwitch() {
    QFETCH(QStringList, args);
    QFETCH(QString, platform);
    QTemporaryDir home;
    QVERIFY(home.isValid());
    QProcess p;
    QProcessEnvironment add;
    add.insert(QStringLiteral("DDPDESK_SILENT_S"), QStringLiteral("soon"));
    add.insert(QStringLiteral("DDPDESK_WORKER"), fakeWorker());
    add.insert(QStringLiteral("XDG_DATA_HOME"), home.filePath(QStringLiteral("data")));
    add.insert(QStringLiteral("XDG_CONFIG_HOME"), home.filePath(QStringLiteral("config")));
    add.insert(QStringLiteral("XDG_RUNTIME_DIR"), home.path());
    QStringList unset = {QStringLiteral("DISPLAY"), QStringLiteral("WAYLAND_DISPLAY"),
                         QStringLiteral("QT_QPA_PLATFORM")};
    if (!platform.isEmpty()) add.insert(QStringLiteral("QT_QPA_PLATFORM"), platform);
    p.setProcessEnvironment(childEnvironment(add, unset));
    p.start(QStringLiteral(DDPDESK_BIN), args);
    const ProcessResult r = finishProcess(p, kTimeout);
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err.trimmed(), QStringLiteral("ddpdesk: invalid DDPDESK_SILENT_S='soon': must be a "
                                             "whole number of seconds from 0 to 86400"));
    QVERIFY2(r.out.isEmpty(), qPrintable(r.out));
    QVERIFY(QDir(home.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot).isEmpty());
  }

  // Outside the two settings readers (and rank_env.cpp for torchrun's and Slurm's variables),
  // nothing in app/, ui/ or engine/ reads the environment, except the few standard variables
  // listed here with where and why; none of those files names a DDPDESK_* variable.
  void onlyTheSettingsReadersReadTheEnvironment() {
    const QStringList readers = {QStringLiteral("ui/monitor/run/monitor_settings.cpp"),
                                 QStringLiteral("engine/runtime/worker_settings.cpp"),
                                 QStringLiteral("engine/runtime/rank_env.cpp")};
    const QStringList standard = {
        QStringLiteral(
            "ui/monitor/metrics/metrics_server.cpp"),  // XDG_RUNTIME_DIR: the socket's home
        QStringLiteral(
            "ui/widgets/window/gui_app.cpp"),  // DISPLAY & co.: whether a window can show
    };
    static const QRegularExpression read(QStringLiteral(
        "\\b(std::getenv|getenv|secure_getenv|qgetenv|qEnvironmentVariable\\w*)\\s*\\(|"
        "QProcessEnvironment::systemEnvironment\\(\\)\\s*\\.\\s*value|\\benviron\\b"));
    QStringList offenders;
    int files = 0;
    for (const QString& top : QStringList{"app", "ui", "engine"}) {
      QDirIterator it(source(top), {QStringLiteral("*.cpp"), QStringLiteral("*.h")}, QDir::Files,
                      QDirIterator::Subdirectories);
      while (it.hasNext()) {
        const QString path = it.next();
        const QString rel = QDir(QStringLiteral(DDPDESK_SOURCE_DIR)).relativeFilePath(path);
        ++files;
        const QString text = readText(path);
        if (readers.contains(rel)) continue;
        if (standard.contains(rel)) {
          if (text.contains(QLatin1String("\"DDPDESK_"))) offenders.append(rel + " (DDPDESK_*)");
          continue;
        }
        // A comment may speak of getenv; code may not call it.
        QString code;
        for (const QString& line : text.split(QLatin1Char('\n')))
          code += line.section(QLatin1String("//"), 0, 0) + QLatin1Char('\n');
        if (read.match(code).hasMatch()) offenders.append(rel);
      }
    }
    QVERIFY2(files > 100, "the source tree was not found");
    QVERIFY2(offenders.isEmpty(), qPrintable(offenders.join(QLatin1Char(' '))));
  }

  void everySwitchIsDocumented() {
    const QString doc = readText(source(QStringLiteral("docs/environment.md")));
    QVERIFY(!doc.isEmpty());
    const QStringList monitor = switchesIn(QStringLiteral("ui/monitor/run/monitor_settings.cpp"));
    const QStringList worker = switchesIn(QStringLiteral("engine/runtime/worker_settings.cpp"));
    QVERIFY(monitor.contains(QStringLiteral("DDPDESK_SILENT_S")));  // the scan finds them
    QVERIFY(worker.contains(QStringLiteral("DDPDESK_STOP_FILE")));
    QStringList missing;
    for (const QString& name : monitor + worker)
      if (!doc.contains(QLatin1Char('`') + name)) missing.append(name);
    QVERIFY2(missing.isEmpty(), qPrintable("not in docs/environment.md: " + missing.join(' ')));
  }
};

DDPDESK_TEST_MAIN(TestMonitorSettings)
#include "test_monitor_settings.moc"
