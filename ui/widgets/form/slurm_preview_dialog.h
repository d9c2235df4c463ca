// SlurmPreviewDialog: what Start does for a Slurm run before anything is written — the batch
// script ddpdesk will put into the run directory and submit, with Copy (the script to the
// clipboard) and Submit. Nothing exists on disk until Submit: then the controller creates the
// directory, writes spec.json and job.sbatch (this very text) and runs sbatch.
#pragma once

#include <QDialog>

#include "run_spec.h"

class QPlainTextEdit;
class QPushButton;

namespace ddpdesk {

class SlurmPreviewDialog : public QDialog {
  Q_OBJECT
 public:
  // `spec` a valid Slurm spec; its run_dir is fixed here (a new run path when empty) so the
  // script shown is the one submitted.
  SlurmPreviewDialog(const RunSpec& spec, const QString& worker, QWidget* parent = nullptr);

  RunSpec spec() const { return spec_; }  // run_dir filled in
  QString scriptText() const;
  QPushButton* copyButton() const { return copy_; }
  QPushButton* submitButton() const { return submit_; }

 Q_SIGNALS:
  void submitRequested(const ddpdesk::RunSpec& spec);

 private:
  RunSpec spec_;
  QPlainTextEdit* text_;
  QPushButton* copy_;
  QPushButton* submit_;
};

}  // namespace ddpdesk
