// File → Follow run… with an ssh:// URL typed into its field, against a private sshd (run under
// tests/ssh/with_sshd.sh, which exports DDPDESK_SSH_COMMAND and DDPDESK_SSH_PORT; skipped without
// them): real ranks started by the test on the sshd's host fill the loss chart and the rank table
// as for a local follow; a host that refuses the connection shows ssh's own line as the run's
// failure.
#include <QApplication>
#include <QLineEdit>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include "charts/charts_panel.h"
#include "charts/loss_chart.h"
#include "followed_run_checks.h"
#include "hand_started_run.h"
#include "live/log_view.h"
#include "live/rank_table.h"
#include "qt_test_main.h"
#include "window/follow_run_dialog.h"
#include "window/main_window.h"

using namespace ddpdesk;
using namespace ddpdesk::test;
using State = RunController::State;

namespace {

constexpr int kTimeout = 180000;  // small shared CI machines: never a timing test

QString url(int port, const QString& path) {
  return QStringLiteral("ssh://root@127.0.0.1:%1%2").arg(port).arg(path);
}

// Opens File → Follow run…, types `target` into its field and presses OK.
void followThroughTheDialog(MainWindow& w, const QString& target) {
  QTimer::singleShot(0, [target] {
    auto* dialog = qobject_cast<FollowRunDialog*>(QApplication::activeModalWidget());
    QVERIFY(dialog);
    QTest::keyClicks(dialog->field(), target);
    dialog->accept();
  });
  w.followRunDialog();
}

}  // namespace

class TestFollowRunSsh : public QObject {
  Q_OBJECT
  QTemporaryDir home;
  int port = 0;

 private Q_SLOTS:
  void initTestCase() {
    port = qEnvironmentVariableIntValue("DDPDESK_SSH_PORT");
    if (port == 0) QSKIP("needs a private sshd: run under tests/ssh/with_sshd.sh");
    useTemporaryHome(home);
  }

  void chartsAndRankTableFillOverSsh() {
    QTemporaryDir dir;
    MainWindow w;
    w.setErrorSink([](const QString& e) { QFAIL(qPrintable(e)); });  // none expected
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    followThroughTheDialog(w, url(port, dir.path()));
    QVERIFY(!QTest::currentTestFailed() && w.controller()->isRemote());
    HandStartedRun run(QStringLiteral(DDPDESK_REAL_WORKER), dir.path(), 2,
                       {"--task", "seed", "--dataset-size", "400", "--epochs", "1"});
    verifyFollowedToItsEnd(w, run.pids(), kTimeout);
    if (QTest::currentTestFailed()) return;
  }

  void aRefusedConnectionIsTheRunsFailure() {
    QTcpServer probe;  // a port nothing listens on once closed
    probe.listen(QHostAddress::LocalHost, 0);
    const int closed = probe.serverPort();
    probe.close();
    MainWindow w;
    w.setErrorSink([](const QString&) {});
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    followThroughTheDialog(w, url(closed, QStringLiteral("/tmp")));
    QTRY_COMPARE_WITH_TIMEOUT(w.controller()->state(), State::Failed, kTimeout);
    QVERIFY2(w.controller()->reason().contains("Connection refused"),
             qPrintable(w.controller()->reason()));
    QVERIFY2(w.logView()->failureText().contains("Connection refused"),
             qPrintable(w.logView()->failureText()));
  }
};

DDPDESK_TEST_MAIN(TestFollowRunSsh)
#include "test_follow_run_ssh.moc"
