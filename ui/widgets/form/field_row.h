// FieldRow: one RunSpec field of the run form. The widget is the field column a QFormLayout row
// holds beside label(): the editor (a combo box for a field with fixed choices, a checkbox for a
// 0/1 field, a spin box for nproc, else a line edit, with a "…" chooser for paths and the user
// task's files), the problem under it and a hint. text()/setText() speak the spec's text form, as
// apply_fields reads it, so the form maps a RunSpec to and from its rows without knowing editors.
#pragma once

#include <QString>
#include <QWidget>

class QHBoxLayout;
class QLabel;

namespace ddpdesk {

class FieldRow : public QWidget {
  Q_OBJECT
 public:
  // `key`: the field's JSON key (also the editor's object name); `help`: its tooltip. The label
  // gets the same parent, for the form's label column.
  FieldRow(const QString& key, const QString& help, QWidget* parent);

  // What the person reads for a field: "Batch size" for batch_size.
  static QString labelFor(const QString& key);

  const QString& key() const { return key_; }
  QLabel* label() const { return label_; }
  QWidget* editor() const { return editor_; }
  QLabel* error() const { return error_; }
  QLabel* hint() const { return hint_; }

  // The value as text: a combo's current text, a spin box's number, "1"/"0" for a checkbox, a
  // line edit's text ("0" for an empty dataset size: its placeholder names the task default).
  QString text() const;
  // The reverse; a choice the combo does not offer (from a preset) is added and shown with its
  // error rather than dropped.
  void setText(const QString& text);
  // The problem under the editor (hidden when empty); `waiting`: an answer still awaited, shown
  // grey rather than as an error.
  void showError(const QString& text, bool waiting);
  // A note under the editor, hidden while the field shows a problem (the problem says more).
  void showHint(const QString& text);

 Q_SIGNALS:
  // The value changed as a person (or setText) changed it.
  void edited();
  // A file of the user's task was chosen with "…", possibly the same path again (fixed on disk
  // since?), before edited(): a dry run of the files must run again.
  void filePicked();

 private:
  QWidget* makeEditor();

  QString key_;
  QLabel* label_;
  QWidget* editor_ = nullptr;
  QLabel* error_ = nullptr;
  QLabel* hint_ = nullptr;
  QHBoxLayout* line_ = nullptr;  // the editor and its chooser
};

}  // namespace ddpdesk
