#include "window/follow_run_dialog.h"

#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "ssh/ssh_target.h"

namespace ddpdesk {

FollowRunDialog::FollowRunDialog(QWidget* parent)
    : QDialog(parent),
      field_(new QLineEdit(this)),
      why_(new QLabel(this)),
      buttons_(new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this)) {
  setWindowTitle(tr("Follow run"));
  auto* intro = new QLabel(
      tr("The run's directory (its ranks write metrics/rank-N.jsonl there), or one on another "
         "host: ssh://user@host[:port]/path (through your ssh client and keys)."),
      this);
  intro->setWordWrap(true);
  field_->setPlaceholderText(tr("/path/to/run  or  ssh://user@host/path/to/run"));
  field_->setMinimumWidth(420);
  auto* browse = new QPushButton(tr("Browse…"), this);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Run directory"));
    if (!dir.isEmpty()) field_->setText(dir);
  });
  auto* row = new QHBoxLayout;
  row->addWidget(field_, 1);
  row->addWidget(browse);
  why_->setWordWrap(true);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(intro);
  layout->addLayout(row);
  layout->addWidget(why_);
  layout->addWidget(buttons_);
  connect(buttons_, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(field_, &QLineEdit::textChanged, this, &FollowRunDialog::check);
  check();
}

QString FollowRunDialog::target() const {
  return field_->text().trimmed();
}

QString FollowRunDialog::problem(const QString& text) {
  if (text.isEmpty()) return tr("Name a run directory or an ssh:// URL.");
  QString error;
  if (SshTarget::looksLikeUrl(text)) return SshTarget::parse(text, &error) ? QString() : error;
  return QFileInfo(text).isDir() ? QString() : tr("'%1' is not a directory here.").arg(text);
}

void FollowRunDialog::check() {
  const QString why = problem(target());
  why_->setText(why);
  buttons_->button(QDialogButtonBox::Ok)->setEnabled(why.isEmpty());
}

}  // namespace ddpdesk
