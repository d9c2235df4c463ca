// File → Follow run…'s dialog: a local directory or an ssh:// URL in one field; OK is enabled only
// for an existing directory or a well-formed URL, and the reason shows otherwise.
#include <QDialogButtonBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTemporaryDir>
#include <QtTest>

#include "qt_test_main.h"
#include "window/follow_run_dialog.h"

using namespace ddpdesk;

class TestFollowRunDialog : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void okOnlyForADirectoryOrAnSshUrl() {
    QTemporaryDir dir;
    FollowRunDialog d;
    QPushButton* ok = d.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
    const QList<QPair<QString, bool>> cases = {
        {QString(), false},
        {dir.path(), true},
        {dir.filePath("missing"), false},
        {QStringLiteral("ssh://me@cluster.example:2222/scratch/run7"), true},
        {QStringLiteral("  ssh://cluster/~/runs/a  "), true},
        {QStringLiteral("ssh://cluster"), false},          // no path
        {QStringLiteral("ssh://me:pw@cluster/x"), false},  // no passwords of ours
        {QStringLiteral("ssh://-oProxyCommand=x/y"), false},
    };
    for (const auto& [text, good] : cases) {
      d.field()->setText(text);
      QVERIFY2(ok->isEnabled() == good, qPrintable(text));
      QCOMPARE(FollowRunDialog::problem(d.target()).isEmpty(), good);
    }
    d.field()->setText(QStringLiteral("ssh://me:pw@cluster/x"));
    QVERIFY(FollowRunDialog::problem(d.target()).contains("password"));
    d.field()->setText(QStringLiteral("  ssh://cluster/~/runs/a  "));
    QCOMPARE(d.target(), QStringLiteral("ssh://cluster/~/runs/a"));
  }
};

DDPDESK_TEST_MAIN(TestFollowRunDialog)
#include "test_follow_run_dialog.moc"
