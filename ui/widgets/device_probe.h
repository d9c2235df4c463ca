// Asks the worker which devices this machine offers (`ddpdesk-worker --probe`, one JSON line)
// without blocking the GUI thread: the process runs asynchronously and the result arrives as a
// signal. The form uses it to bound the GPU count.
#pragma once

#include <QByteArray>
#include <QObject>
#include <QString>
#include <QStringList>

class QProcess;

namespace ddpdesk {

struct ProbeResult {
  enum class Status { Pending, Ok, Failed };
  Status status = Status::Pending;
  QString error;  // why it failed
  bool cudaAvailable = false;
  int deviceCount = 0;
  QStringList deviceNames;
  QString torchVersion;
  bool gloo = false;
  bool nccl = false;
};

// Parses the worker's probe output (the last JSON object line of stdout).
ProbeResult parseProbe(const QByteArray& output);

class DeviceProbe : public QObject {
  Q_OBJECT
 public:
  explicit DeviceProbe(QObject* parent = nullptr);
  ~DeviceProbe() override;

  // Starts `program --probe`; a probe already running is abandoned. Gives up after timeoutMs.
  void start(const QString& program, int timeoutMs = 30000);
  const ProbeResult& result() const { return result_; }

 Q_SIGNALS:
  void finished(const ddpdesk::ProbeResult& result);

 private:
  void finish(ProbeResult r);

  QProcess* proc_ = nullptr;
  ProbeResult result_;
};

}  // namespace ddpdesk
