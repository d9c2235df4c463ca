#include "form/task_check_gate.h"

#include <QFileInfo>

#include "run/run_controller.h"

namespace ddpdesk {
namespace {

// What the check's answer depends on: its spec, and the files as they are on disk now (a file
// written again under the same name needs a new check).
std::string checkKey(const RunSpec& spec) {
  std::string key = to_json_text(taskCheckSpec(spec), -1);
  for (const std::string& path : {spec.model, spec.train_data, spec.eval_data}) {
    const QFileInfo f(QString::fromStdString(path));
    key += '\n' + (f.exists() ? std::to_string(f.size()) + ' ' +
                                    std::to_string(f.lastModified().toMSecsSinceEpoch())
                              : std::string("-"));
  }
  return key;
}

}  // namespace

TaskCheckGate::TaskCheckGate(QObject* parent) : QObject(parent), check_(new TaskCheck(this)) {
  // Long enough to coalesce typing a path, short enough to feel immediate after a file pick.
  debounce_.setInterval(300);
  debounce_.setSingleShot(true);
  connect(&debounce_, &QTimer::timeout, this, &TaskCheckGate::launch);
  connect(check_, &TaskCheck::finished, this, [this](const TaskCheckResult& r) {
    if (running_ != key_) return;  // the spec changed meanwhile; its own check is due
    result_ = r;
    Q_EMIT answered();
  });
}

QString TaskCheckGate::workerProgram() const {
  return program_ ? program_() : RunController::defaultWorkerProgram();
}

const TaskCheckResult& TaskCheckGate::update(const RunSpec& spec, bool checkable) {
  const std::string key = checkable ? checkKey(spec) : std::string();
  if (key == key_) return result_;
  key_ = key;
  spec_ = spec;
  result_ = TaskCheckResult();
  debounce_.stop();
  check_->cancel();
  running_.clear();
  if (!key_.empty()) debounce_.start();
  return result_;
}

void TaskCheckGate::recheck() {
  key_.clear();  // the next update() differs, whatever the spec
}

void TaskCheckGate::launch() {
  running_ = key_;
  check_->start(workerProgram(), spec_);
}

}  // namespace ddpdesk
