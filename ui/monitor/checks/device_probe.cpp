#include "checks/device_probe.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTimer>
#include <algorithm>

namespace ddpdesk {

ProbeResult parseProbe(const QByteArray& output) {
  ProbeResult r;
  r.status = ProbeResult::Status::Failed;
  // The worker may log before the JSON; the answer is the last line that parses as an object.
  const QList<QByteArray> lines = output.split('\n');
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    const QJsonDocument doc = QJsonDocument::fromJson(it->trimmed());
    if (!doc.isObject()) continue;
    const QJsonObject o = doc.object();
    r.status = ProbeResult::Status::Ok;
    r.cudaAvailable = o.value(QStringLiteral("cuda_available")).toBool();
    r.cudaBuilt = o.value(QStringLiteral("cuda_built")).toBool();
    r.cudaMissing = o.value(QStringLiteral("cuda_missing")).toString();
    r.deviceCount = r.cudaAvailable ? o.value(QStringLiteral("device_count")).toInt() : 0;
    for (const QJsonValue& v : o.value(QStringLiteral("devices")).toArray())
      r.deviceNames << v.toString();
    for (const QJsonValue& v : o.value(QStringLiteral("device_memory_bytes")).toArray())
      r.deviceMemory << qint64(v.toDouble());
    for (const QJsonValue& v : o.value(QStringLiteral("nvml_devices")).toArray())
      r.nvmlNames << v.toString();
    for (const QJsonValue& v : o.value(QStringLiteral("nvml_device_memory_bytes")).toArray())
      r.nvmlMemory << qint64(v.toDouble());
    r.nvmlMissing = o.value(QStringLiteral("nvml_missing")).toString();
    r.torchVersion = o.value(QStringLiteral("torch_version")).toString();
    r.gloo = o.value(QStringLiteral("gloo")).toBool();
    r.nccl = o.value(QStringLiteral("nccl")).toBool();
    return r;
  }
  r.error = QStringLiteral("no JSON in the probe output");
  return r;
}

ProbeResult probeDevicesNow(const QString& program, int timeoutMs) {
  QProcess p;
  p.start(program, {QStringLiteral("--probe")});
  ProbeResult r;
  r.status = ProbeResult::Status::Failed;
  if (!p.waitForStarted(timeoutMs)) {
    r.error = QStringLiteral("cannot run %1: %2").arg(program, p.errorString());
    return r;
  }
  if (!p.waitForFinished(timeoutMs)) {
    p.kill();
    p.waitForFinished();
    r.error = QStringLiteral("the probe did not answer in time");
    return r;
  }
  if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
    r.error = QStringLiteral("the probe exited with code %1").arg(p.exitCode());
    return r;
  }
  return parseProbe(p.readAllStandardOutput());
}

namespace {

bool isScriptRun(const RunSpec& spec) {
  const TaskInfo* task = find_task(spec.task);
  return task && task->python_script;
}

int gpusFor(const ProbeResult& probe, const RunSpec& spec) {
  return isScriptRun(spec) ? int(probe.nvmlNames.size())
                           : (probe.cudaAvailable ? probe.deviceCount : 0);
}

}  // namespace

QString noGpuReason(const ProbeResult& probe, const RunSpec& spec) {
  if (gpusFor(probe, spec) > 0) return {};
  return isScriptRun(spec) ? probe.nvmlMissing : probe.cudaMissing;
}

std::vector<FieldError> cudaErrors(const RunSpec& spec, int ranksHere, const ProbeResult& probe) {
  const int gpus = gpusFor(probe, spec);
  const QString why = noGpuReason(probe, spec);
  std::vector<FieldError> errors = validate_gpus(spec, ranksHere, gpus);
  // No GPU at all: the probe says why (the spec's rule only knows there is none).
  if (gpus == 0 && !why.isEmpty())
    for (FieldError& e : errors)
      if (e.field == "device") e.allowed = why.toStdString();
  return errors;
}

QString cudaShortage(const RunSpec& spec, const ProbeResult& probe) {
  if (spec.device != "cuda" || probe.status != ProbeResult::Status::Ok) return {};
  const auto errors = cudaErrors(spec, spec.nproc, probe);
  if (errors.empty()) return {};
  return QString::fromStdString(format_error(errors.front(), Spelling::Flag));
}

QStringList describeDevices(const ProbeResult& probe, const RunSpec& spec) {
  const bool script = isScriptRun(spec);
  const QStringList& names = script ? probe.nvmlNames : probe.deviceNames;
  const QList<qint64>& memory = script ? probe.nvmlMemory : probe.deviceMemory;
  QStringList out;
  for (int i = 0; i < std::min<int>(int(names.size()), gpusFor(probe, spec)); ++i)
    out << (i < memory.size() && memory[i] > 0
                ? QStringLiteral("%1 (%2 GiB)")
                      .arg(names[i])
                      .arg(double(memory[i]) / double(1LL << 30), 0, 'f', 1)
                : names[i]);
  return out;
}

DeviceProbe::DeviceProbe(QObject* parent) : QObject(parent) {}

DeviceProbe::~DeviceProbe() {
  if (proc_) {
    proc_->disconnect(this);
    proc_->kill();
    // Reaped by QProcess's destructor; the probe is short-lived, so this does not linger.
    delete proc_;
  }
}

void DeviceProbe::start(const QString& program, int timeoutMs) {
  if (proc_) {
    proc_->disconnect(this);
    proc_->kill();
    proc_->deleteLater();
  }
  result_ = ProbeResult();
  proc_ = new QProcess(this);
  QProcess* p = proc_;
  auto* timer = new QTimer(p);
  timer->setSingleShot(true);
  connect(timer, &QTimer::timeout, p, [this, p] {
    p->disconnect(this);
    p->kill();
    ProbeResult r;
    r.status = ProbeResult::Status::Failed;
    r.error = QStringLiteral("the probe did not answer in time");
    finish(r);
  });
  connect(p, &QProcess::finished, this, [this, p](int code, QProcess::ExitStatus status) {
    ProbeResult r;
    if (status == QProcess::NormalExit && code == 0) {
      r = parseProbe(p->readAllStandardOutput());
    } else {
      r.status = ProbeResult::Status::Failed;
      const QString err = QString::fromLocal8Bit(p->readAllStandardError()).trimmed();
      r.error = QStringLiteral("the probe exited with code %1%2")
                    .arg(code)
                    .arg(err.isEmpty() ? QString() : QStringLiteral(": ") + err.section('\n', -1));
    }
    finish(r);
  });
  connect(p, &QProcess::errorOccurred, this, [this, p](QProcess::ProcessError e) {
    if (e != QProcess::FailedToStart) return;  // other errors end in finished()
    ProbeResult r;
    r.status = ProbeResult::Status::Failed;
    r.error = QStringLiteral("cannot run %1: %2").arg(p->program(), p->errorString());
    finish(r);
  });
  timer->start(timeoutMs);
  p->start(program, {QStringLiteral("--probe")});
}

void DeviceProbe::finish(ProbeResult r) {
  if (proc_) {
    proc_->disconnect(this);
    proc_->deleteLater();
    proc_ = nullptr;
  }
  result_ = r;
  Q_EMIT finished(result_);
}

}  // namespace ddpdesk
