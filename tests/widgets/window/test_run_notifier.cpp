// Desktop notifications on a private D-Bus session bus: the test starts its own dbus-daemon (its
// own configuration: no service can be activated from the machine's), points
// DBUS_SESSION_BUS_ADDRESS at it, and plays org.freedesktop.Notifications on a second connection,
// recording every Notify call. A RunController drives the fake worker through real runs:
// finished and failed runs are notified with the run's name, outcome and reason (a failure as
// critical), a stop the user asked for and a short run the window shows are not, the mid-run
// hooks (stalled, non-finite loss, restarting) say so once; with no service on the bus (or no
// bus) the notification falls back to the tray, here absent, and that is said once.
#include <QDBusConnection>
#include <QDBusConnectionInterface>
#include <QProcess>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QSystemTrayIcon>
#include <QTemporaryDir>
#include <QtTest>

#include "metrics/metrics_store.h"
#include "monitor_test_util.h"
#include "qt_test_main.h"
#include "window/desktop_notifications.h"
#include "window/run_notifier.h"

using namespace ddpdesk;
using namespace ddpdesk::test;
using State = RunController::State;

namespace {
constexpr int kTimeout = 60000;  // small shared CI machines: never a timing test
const QString kService = QStringLiteral("org.freedesktop.Notifications");
}  // namespace

// One Notify call as the service received it.
struct NotifyCall {
  QString app, icon, summary, body;
  QVariantMap hints;
};

// The desktop's notification service, as far as the freedesktop spec's Notify goes.
class FakeNotifications : public QObject {
  Q_OBJECT
  Q_CLASSINFO("D-Bus Interface", "org.freedesktop.Notifications")
 public:
  QList<NotifyCall> calls;

 public Q_SLOTS:
  uint Notify(const QString& app, uint replaces, const QString& icon, const QString& summary,
              const QString& body, const QStringList& actions, const QVariantMap& hints,
              int timeout) {
    Q_UNUSED(replaces);
    Q_UNUSED(actions);
    Q_UNUSED(timeout);
    calls.append({app, icon, summary, body, hints});
    return uint(calls.size());
  }
};

class TestRunNotifier : public QObject {
  Q_OBJECT
  QTemporaryDir home;
  QTemporaryDir busDir;
  QProcess daemon;
  QString address;
  FakeNotifications fake;
  std::unique_ptr<RunController> controller;
  std::unique_ptr<DesktopNotifications> notifications;
  std::unique_ptr<RunNotifier> notifier;

  // A bus of the test's own: any client may own any name, nothing is activated.
  QString writeBusConfig() const {
    QFile f(busDir.filePath(QStringLiteral("bus.conf")));
    if (!f.open(QIODevice::WriteOnly)) return {};
    f.write(
        "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\" "
        "\"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
        "<busconfig>\n  <type>session</type>\n  <listen>unix:dir=");
    f.write(busDir.path().toUtf8());
    f.write(
        "</listen>\n  <auth>EXTERNAL</auth>\n  <policy context=\"default\">\n"
        "    <allow send_destination=\"*\" eavesdrop=\"true\"/>\n"
        "    <allow eavesdrop=\"true\"/>\n    <allow own=\"*\"/>\n  </policy>\n"
        "</busconfig>\n");
    return f.fileName();
  }

  QDBusConnection serviceBus() const {
    return QDBusConnection(QStringLiteral("fake-notifications"));
  }

  void make(std::initializer_list<std::pair<const char*, QString>> env) {
    controller = std::make_unique<RunController>();
    controller->setWorkerProgram(fakeWorker());
    controller->setExtraEnvironment(fakeEnv(env));
    controller->setGracePeriod(5000);
    notifications = std::make_unique<DesktopNotifications>();  // the session bus: the private one
    notifier = std::make_unique<RunNotifier>(controller.get(), notifications.get());
  }

  RunSpec spec() const {
    RunSpec s = fakeSpec(2);
    s.name = "nightly";
    return s;
  }

  // Runs the spec to its end; the state it ended in.
  State runToEnd() {
    QString error;
    if (!controller->start(spec(), &error)) qWarning("start: %s", qPrintable(error));
    QElapsedTimer t;
    t.start();
    while (!RunController::isTerminal(controller->state()) && t.elapsed() < kTimeout)
      QTest::qWait(20);
    return controller->state();
  }

  // Lets every notification already sent arrive (each is one round trip through the daemon).
  void settle() {
    QSignalSpy shown(notifications.get(), &DesktopNotifications::shown);
    notifications->notify(QStringLiteral("marker"), QString());
    QTRY_VERIFY_WITH_TIMEOUT(!fake.calls.isEmpty() && fake.calls.last().summary == "marker",
                             kTimeout);
    fake.calls.removeLast();
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(home.isValid());
    QVERIFY(busDir.isValid());
    useScratchHome(home);
    const QString program = QStandardPaths::findExecutable(QStringLiteral("dbus-daemon"));
    if (program.isEmpty())
      QSKIP(
          "dbus-daemon is not installed (Debian package dbus-daemon, in "
          "scripts/install-deps.sh --tests): no private session bus to test on");
    const QString config = writeBusConfig();
    QVERIFY(!config.isEmpty());
    daemon.start(program, {QStringLiteral("--config-file=") + config, QStringLiteral("--nofork"),
                           QStringLiteral("--nopidfile"), QStringLiteral("--print-address=1")});
    QVERIFY2(daemon.waitForStarted(kTimeout), qPrintable(daemon.errorString()));
    while (!daemon.canReadLine() && daemon.waitForReadyRead(kTimeout)) {
    }
    address = QString::fromUtf8(daemon.readLine()).trimmed();
    QVERIFY2(address.startsWith(QLatin1String("unix:")),
             qPrintable(address + QString::fromUtf8(daemon.readAllStandardError())));
    // Before anything asks for the session bus: QtDBus reads the variable on its first use.
    qputenv("DBUS_SESSION_BUS_ADDRESS", address.toUtf8());
    QVERIFY2(QDBusConnection::sessionBus().isConnected(),
             qPrintable(QDBusConnection::sessionBus().lastError().message()));
    QDBusConnection service =
        QDBusConnection::connectToBus(address, QStringLiteral("fake-notifications"));
    QVERIFY2(service.isConnected(), qPrintable(service.lastError().message()));
    QVERIFY(service.registerObject(QStringLiteral("/org/freedesktop/Notifications"), &fake,
                                   QDBusConnection::ExportAllSlots));
  }
  void cleanupTestCase() {
    QDBusConnection::disconnectFromBus(QStringLiteral("fake-notifications"));
    if (daemon.state() != QProcess::NotRunning) {
      daemon.terminate();
      if (!daemon.waitForFinished(10000)) daemon.kill();
      daemon.waitForFinished();
    }
  }
  void cleanup() {
    notifier.reset();
    controller.reset();  // a run still active is killed and reaped
    notifications.reset();
    fake.calls.clear();
  }

  // Nobody owns the name: the call's error, then the tray (none on the offscreen platform), then
  // nothing, said once however many notifications follow.
  void noServiceFallsBackAndSaysSoOnce() {
    serviceBus().unregisterService(kService);
    DesktopNotifications n;
    QSignalSpy shown(&n, &DesktopNotifications::shown);
    QSignalSpy unavailable(&n, &DesktopNotifications::unavailable);
    n.notify(QStringLiteral("ddpdesk: a finished"), QStringLiteral("body"));
    n.notify(QStringLiteral("ddpdesk: b finished"), QStringLiteral("body"));
    QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 2, kTimeout);
    const auto expected = QSystemTrayIcon::isSystemTrayAvailable()
                              ? DesktopNotifications::Route::Tray
                              : DesktopNotifications::Route::Nowhere;
    QCOMPARE(shown.at(0).at(0).value<DesktopNotifications::Route>(), expected);
    QCOMPARE(shown.at(1).at(1).toString(), QStringLiteral("ddpdesk: b finished"));
    if (expected == DesktopNotifications::Route::Nowhere) {
      QCOMPARE(unavailable.count(), 1);
      QVERIFY2(unavailable.at(0).at(0).toString().contains(
                   QLatin1String("org.freedesktop.DBus.Error.ServiceUnknown")),
               qPrintable(unavailable.at(0).at(0).toString()));
    }
    QVERIFY(fake.calls.isEmpty());
  }

  // No bus at all (a connection that never connected): the same fallback, said with why.
  void noBusFallsBack() {
    DesktopNotifications n(QDBusConnection(QStringLiteral("never-connected")));
    QSignalSpy shown(&n, &DesktopNotifications::shown);
    QSignalSpy unavailable(&n, &DesktopNotifications::unavailable);
    n.notify(QStringLiteral("s"), QStringLiteral("b"));
    QCOMPARE(shown.count(), 1);  // at once: nothing was sent
    if (!QSystemTrayIcon::isSystemTrayAvailable()) {
      QCOMPARE(unavailable.count(), 1);
      QVERIFY2(unavailable.at(0).at(0).toString().contains(QLatin1String("no D-Bus session bus")),
               qPrintable(unavailable.at(0).at(0).toString()));
    }
  }

  void serviceUp() {
    // The remaining cases notify through the fake service.
    QVERIFY(serviceBus().registerService(kService));
    QVERIFY(QDBusConnection::sessionBus().interface()->isServiceRegistered(kService));
  }

  void aFinishedRunIsNotified() {
    make({{"FAKE_STEPS", "6"}});
    QSignalSpy shown(notifications.get(), &DesktopNotifications::shown);
    QCOMPARE(runToEnd(), State::Finished);
    QTRY_COMPARE_WITH_TIMEOUT(fake.calls.size(), 1, kTimeout);
    const NotifyCall& c = fake.calls.at(0);
    QCOMPARE(c.app, QStringLiteral("ddpdesk"));
    QCOMPARE(c.summary, QStringLiteral("ddpdesk: nightly finished"));
    QVERIFY2(c.body.startsWith(QLatin1String("6 steps in ")), qPrintable(c.body));
    QVERIFY2(c.body.contains(QLatin1String(", loss 0.")), qPrintable(c.body));
    QCOMPARE(c.hints.value(QStringLiteral("urgency")).toInt(), 1);
    QCOMPARE(c.hints.value(QStringLiteral("desktop-entry")).toString(), QStringLiteral("ddpdesk"));
    QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, kTimeout);
    QCOMPARE(shown.at(0).at(0).value<DesktopNotifications::Route>(),
             DesktopNotifications::Route::DBus);
  }

  void aFailedRunIsNotifiedAsCritical() {
    make({{"FAKE_STEPS", "100000"},
          {"FAKE_STEP_MS", "5"},
          {"FAKE_CRASH_STEP", "3"},
          {"FAKE_CRASH_RANK", "1"}});
    QCOMPARE(runToEnd(), State::Failed);
    QTRY_COMPARE_WITH_TIMEOUT(fake.calls.size(), 1, kTimeout);
    const NotifyCall& c = fake.calls.at(0);
    QCOMPARE(c.summary, QStringLiteral("ddpdesk: nightly failed"));
    // The reason's first line, as the run strip shows it.
    QCOMPARE(c.body, controller->reason().section(QLatin1Char('\n'), 0, 0).trimmed());
    QVERIFY2(c.body.contains(QLatin1String("rank 1 exited with code 1")), qPrintable(c.body));
    QVERIFY(!c.body.contains(QLatin1Char('\n')));
    QCOMPARE(c.hints.value(QStringLiteral("urgency")).toInt(), 2);
  }

  // The user's own Stop is not news; the next run's end is.
  void aStopTheUserAskedForIsNotNotified() {
    make({{"FAKE_STEPS", "100000"}, {"FAKE_STEP_MS", "5"}});
    QString error;
    QVERIFY2(controller->start(spec(), &error), qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(
        controller->state() == State::Running && controller->store()->progress().step >= 3,
        kTimeout);
    controller->stop();
    QTRY_COMPARE_WITH_TIMEOUT(controller->state(), State::Stopped, kTimeout);
    settle();
    QVERIFY(fake.calls.isEmpty());
  }

  // Watched (the window active) and short: whoever watches saw it end. Long enough: notified
  // anyway.
  void aShortRunTheWindowShowsIsNotNotified() {
    make({{"FAKE_STEPS", "4"}});
    notifier->setWatched([] { return true; });
    QCOMPARE(runToEnd(), State::Finished);
    settle();
    QVERIFY(fake.calls.isEmpty());
    notifier->setLongRunSeconds(0);
    QCOMPARE(runToEnd(), State::Finished);
    QTRY_COMPARE_WITH_TIMEOUT(fake.calls.size(), 1, kTimeout);
    QCOMPARE(fake.calls.at(0).summary, QStringLiteral("ddpdesk: nightly finished"));
  }

  // The hooks for what happens during a run: the controller's stalled() (once per run), a
  // non-finite loss (once), each restart; nothing while the window is watched.
  void midRunEventsAreNotifiedOnce() {
    make({{"FAKE_STEPS", "100000"}, {"FAKE_STEP_MS", "5"}});
    QString error;
    QVERIFY2(controller->start(spec(), &error), qPrintable(error));
    QTRY_COMPARE_WITH_TIMEOUT(controller->state(), State::Running, kTimeout);
    Q_EMIT controller->stalled(QStringLiteral("rank 1 has been silent for 120 s\nmore"));
    Q_EMIT controller->stalled(QStringLiteral("rank 0 has been silent for 121 s"));
    notifier->lossNotFinite(37);
    notifier->lossNotFinite(38);
    notifier->restarting(1, 3, QStringLiteral("rank 1 was killed by signal 9"));
    notifier->setWatched([] { return true; });
    notifier->restarting(2, 3, QStringLiteral("watched: not notified"));
    settle();
    QCOMPARE(fake.calls.size(), 3);
    QCOMPARE(fake.calls.at(0).summary, QStringLiteral("ddpdesk: nightly stalled"));
    QCOMPARE(fake.calls.at(0).body, QStringLiteral("rank 1 has been silent for 120 s"));
    QCOMPARE(fake.calls.at(0).hints.value(QStringLiteral("urgency")).toInt(), 2);
    QCOMPARE(fake.calls.at(1).summary,
             QStringLiteral("ddpdesk: nightly: non-finite loss at step 37"));
    QCOMPARE(fake.calls.at(2).summary, QStringLiteral("ddpdesk: nightly restarting (1 of 3)"));
    QCOMPARE(fake.calls.at(2).body, QStringLiteral("rank 1 was killed by signal 9"));
    controller->kill();
    QTRY_VERIFY_WITH_TIMEOUT(!controller->isActive(), kTimeout);
  }
};

DDPDESK_TEST_MAIN(TestRunNotifier)
#include "test_run_notifier.moc"
