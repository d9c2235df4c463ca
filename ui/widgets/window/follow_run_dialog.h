// FollowRunDialog: asks which run to follow (File → Follow run…): a run directory on this
// machine (typed, or chosen with Browse…), or one on another host as an
// ssh://[user@]host[:port]/path URL, followed through the person's own ssh. OK stays disabled
// until the field names an existing directory or a well-formed ssh:// URL, and says why below.
#pragma once

#include <QDialog>

class QDialogButtonBox;
class QLabel;
class QLineEdit;

namespace ddpdesk {

class FollowRunDialog : public QDialog {
  Q_OBJECT
 public:
  explicit FollowRunDialog(QWidget* parent = nullptr);
  QString target() const;  // the directory or URL, trimmed
  QLineEdit* field() const { return field_; }

  // Empty when `text` can be followed; else one line saying why not.
  static QString problem(const QString& text);

 private:
  void check();

  QLineEdit* field_;
  QLabel* why_;
  QDialogButtonBox* buttons_;
};

}  // namespace ddpdesk
