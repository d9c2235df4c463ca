#include "checks/task_check.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLocale>
#include <QProcess>
#include <QTimer>
#include <nlohmann/json.hpp>

#include "run/last_line.h"
#include "run/worker_arguments.h"

namespace ddpdesk {
namespace {

QList<qint64> shapeOf(const QJsonValue& v) {
  QList<qint64> shape;
  for (const QJsonValue& d : v.toArray()) shape << qint64(d.toDouble());
  return shape;
}

qint64 intOf(const QJsonObject& o, const char* key) {
  return qint64(o.value(QLatin1String(key)).toDouble());
}

// "[1,28,28]": the shape of one sample (the data's first dimension is the sample index).
QString sampleShape(const QList<qint64>& whole) {
  QStringList dims;
  for (int i = 1; i < whole.size(); ++i) dims << QString::number(whole[i]);
  return QLatin1Char('[') + dims.join(QLatin1Char(',')) + QLatin1Char(']');
}

TaskCheckResult failed(const QString& why) {
  TaskCheckResult r;
  r.status = TaskCheckResult::Status::Failed;
  r.error = why;
  return r;
}

QString timeoutText(int timeoutMs) {
  return QStringLiteral("ddpdesk-worker --check did not answer within %1 s")
      .arg(QString::number(timeoutMs / 1000.0));
}

}  // namespace

bool needsTaskCheck(const RunSpec& spec) {
  const TaskInfo* task = find_task(spec.task);
  // Through a login node the files are paths on the cluster: this machine cannot read them.
  return task && task->user_files && !spec.is_slurm_via_login();
}

bool needsResumeCheck(const RunSpec& spec) {
  // A Python script decides itself what resuming means (DDPDESK_RESUME): no worker checkpoint.
  const TaskInfo* task = find_task(spec.task);
  return !spec.resume.empty() && !spec.is_slurm_via_login() && !(task && task->python_script);
}

bool isTaskCheckField(const std::string& key) {
  return key == "task" || key == "device" || key == "dataset_size" || key == "resume" ||
         key == "epochs" || is_user_task_field(key);
}

RunSpec taskCheckSpec(const RunSpec& spec) {
  const nlohmann::json given = to_json(spec);
  nlohmann::json kept = nlohmann::json::object();
  for (const FieldInfo& f : run_spec_fields())
    if (isTaskCheckField(f.key)) kept[f.key] = given[f.key];
  if (spec.resume.empty()) kept.erase("epochs");  // decides nothing without a checkpoint
  RunSpec out;
  apply_fields(kept, out);  // the values come from a RunSpec: they always convert
  return out;
}

QStringList taskCheckArguments(const RunSpec& spec) {
  return QStringList{QStringLiteral("--check")} + workerArguments(taskCheckSpec(spec));
}

TaskCheckResult parseTaskCheck(const QByteArray& output) {
  // The worker may log before its answer; the answer is the last line that is a JSON object.
  const QList<QByteArray> lines = output.split('\n');
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    const QJsonDocument doc = QJsonDocument::fromJson(it->trimmed());
    if (!doc.isObject()) continue;
    const QJsonObject o = doc.object();
    if (!o.value(QStringLiteral("ok")).isBool()) continue;
    TaskCheckResult r;
    if (!o.value(QStringLiteral("ok")).toBool()) {
      r.status = TaskCheckResult::Status::BadInput;
      r.field = o.value(QStringLiteral("field")).toString();
      r.error = o.value(QStringLiteral("error")).toString();
      r.why = o.value(QStringLiteral("why")).toString();
      if (r.error.isEmpty()) r.error = QStringLiteral("rejected by ddpdesk-worker --check");
      return r;
    }
    r.status = TaskCheckResult::Status::Ok;
    r.task = o.value(QStringLiteral("task")).toString();
    r.parameters = intOf(o, "parameters");
    r.parameterTensors = intOf(o, "parameter_tensors");
    r.buffers = intOf(o, "buffers");
    r.trainSamples = intOf(o, "train_samples");
    r.evalSamples = intOf(o, "eval_samples");
    const QJsonObject input = o.value(QStringLiteral("input")).toObject();
    r.inputDtype = input.value(QStringLiteral("dtype")).toString();
    r.inputShape = shapeOf(input.value(QStringLiteral("shape")));
    const QJsonObject target = o.value(QStringLiteral("target")).toObject();
    r.targetDtype = target.value(QStringLiteral("dtype")).toString();
    r.targetShape = shapeOf(target.value(QStringLiteral("shape")));
    r.outputShape = shapeOf(o.value(QStringLiteral("output_shape")));
    r.loss = o.value(QStringLiteral("loss")).toString();
    r.classification = o.value(QStringLiteral("classification")).toBool();
    for (const QJsonValue& w : o.value(QStringLiteral("warnings")).toArray())
      r.warnings << w.toString();
    return r;
  }
  return failed(QStringLiteral("ddpdesk-worker --check gave no JSON answer"));
}

TaskCheckResult taskCheckFromExit(int exitCode, bool crashed, const QByteArray& out,
                                  const QByteArray& err) {
  const QString why = lastLine(err);
  const QString tail = why.isEmpty() ? QString() : QStringLiteral(": ") + why;
  if (crashed) return failed(QStringLiteral("ddpdesk-worker --check crashed") + tail);
  TaskCheckResult r = parseTaskCheck(out);
  // Exit 0 with ok, or exit 2 with a named field: anything else (a worker that does not know
  // --check exits 2 without JSON, an internal error exits 1) is a failed check.
  if ((exitCode == 0 && r.ok()) || (exitCode == 2 && r.status == TaskCheckResult::Status::BadInput))
    return r;
  return failed(QStringLiteral("ddpdesk-worker --check exited with code %1").arg(exitCode) + tail);
}

TaskCheckResult runTaskCheckNow(const QString& program, const RunSpec& spec, int timeoutMs) {
  QProcess p;
  p.start(program, taskCheckArguments(spec));
  if (!p.waitForStarted(timeoutMs))
    return failed(QStringLiteral("cannot run %1: %2").arg(program, p.errorString()));
  if (!p.waitForFinished(timeoutMs)) {
    p.kill();
    p.waitForFinished();
    return failed(timeoutText(timeoutMs));
  }
  return taskCheckFromExit(p.exitCode(), p.exitStatus() != QProcess::NormalExit,
                           p.readAllStandardOutput(), p.readAllStandardError());
}

QString taskCheckSummary(const TaskCheckResult& r) {
  if (!r.ok()) return {};
  const QLocale en(QLocale::English, QLocale::UnitedStates);  // "60,000" whatever the desktop
  QString target = QStringLiteral("targets ");
  if (r.targetShape.size() > 1) target += sampleShape(r.targetShape) + QLatin1Char(' ');
  target += r.targetDtype;
  QString text = QStringLiteral("%1 parameters · %2 train samples %3 %4 → %5")
                     .arg(en.toString(r.parameters), en.toString(r.trainSamples),
                          sampleShape(r.inputShape), r.inputDtype, target);
  text += r.evalSamples > 0 ? QStringLiteral(" · %1 eval samples").arg(en.toString(r.evalSamples))
                            : QStringLiteral(" · no eval data");
  return text;
}

TaskCheck::TaskCheck(QObject* parent) : QObject(parent), timer_(new QTimer(this)) {
  timer_->setSingleShot(true);
  connect(timer_, &QTimer::timeout, this, [this] { finish(failed(timeoutText(timeoutMs_))); });
}

TaskCheck::~TaskCheck() {
  if (proc_) {
    proc_->disconnect(this);
    proc_->kill();
    // Reaped by QProcess's destructor; a killed check exits at once.
    delete proc_;
  }
}

void TaskCheck::abandon() {
  timer_->stop();
  if (!proc_) return;
  proc_->disconnect(this);
  proc_->kill();
  proc_->deleteLater();
  proc_ = nullptr;
}

void TaskCheck::cancel() {
  abandon();
  result_ = TaskCheckResult();
}

void TaskCheck::start(const QString& program, const RunSpec& spec, int timeoutMs) {
  abandon();
  result_ = TaskCheckResult();
  proc_ = new QProcess(this);
  QProcess* p = proc_;
  connect(p, &QProcess::finished, this, [this, p](int code, QProcess::ExitStatus status) {
    finish(taskCheckFromExit(code, status != QProcess::NormalExit, p->readAllStandardOutput(),
                             p->readAllStandardError()));
  });
  connect(p, &QProcess::errorOccurred, this, [this, p](QProcess::ProcessError e) {
    if (e != QProcess::FailedToStart) return;  // other errors end in finished()
    finish(failed(QStringLiteral("cannot run %1: %2").arg(p->program(), p->errorString())));
  });
  timeoutMs_ = timeoutMs;
  timer_->start(timeoutMs);
  p->start(program, taskCheckArguments(spec));
}

void TaskCheck::finish(TaskCheckResult r) {
  abandon();  // stops a timed-out check; a finished one is just released
  result_ = r;
  Q_EMIT finished(result_);
}

}  // namespace ddpdesk
