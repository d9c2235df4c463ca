// Asks the worker which devices this machine offers (`ddpdesk-worker --probe`, one JSON line).
// The GUI's form uses DeviceProbe, which never blocks the GUI thread, to bound the GPU count;
// headless runs ask once, synchronously, before a CUDA run is launched (probeDevicesNow).
// Widget-free: part of the monitor core.
#pragma once

#include <QByteArray>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>
#include <vector>

#include "run_spec.h"

class QProcess;

namespace ddpdesk {

struct ProbeResult {
  enum class Status { Pending, Ok, Failed };
  Status status = Status::Pending;
  QString error;  // why it failed
  bool cudaAvailable = false;
  bool cudaBuilt = false;  // this build's LibTorch has CUDA (available or not)
  QString cudaMissing;     // why there is no CUDA device (empty when there is one)
  int deviceCount = 0;
  QStringList deviceNames;
  QList<qint64> deviceMemory;  // bytes, as deviceNames (empty where the build cannot tell)
  // The GPUs the NVIDIA driver sees (NVML), whatever LibTorch has: a Python script's ranks use
  // them through their own PyTorch. nvmlMissing: why there is none.
  QStringList nvmlNames;
  QList<qint64> nvmlMemory;
  QString nvmlMissing;
  QString torchVersion;
  bool gloo = false;
  bool nccl = false;
};

// Parses the worker's probe output (the last JSON object line of stdout).
ProbeResult parseProbe(const QByteArray& output);

// Runs `program --probe` and waits for it (at most timeoutMs).
ProbeResult probeDevicesNow(const QString& program, int timeoutMs = 30000);

// For a CUDA spec: why this machine cannot run `ranksHere` ranks (no GPU, or fewer GPUs than
// ranks: one GPU per rank; without any, the probe's reason: a CPU-only LibTorch, no driver).
// A Python-script run counts the GPUs the driver sees (its PyTorch is the script's), the
// worker's runs those its LibTorch can use.
std::vector<FieldError> cudaErrors(const RunSpec& spec, int ranksHere, const ProbeResult& probe);
// The same for a local run, as a one-line input error naming the field; empty when it can, or
// for CPU specs.
QString cudaShortage(const RunSpec& spec, const ProbeResult& probe);
// The GPUs a run of `spec` would use, as people name them: "NVIDIA H100 80GB HBM3 (79.2 GiB)",
// one per device (the driver's for a Python-script run, LibTorch's for the worker's).
QStringList describeDevices(const ProbeResult& probe, const RunSpec& spec = RunSpec());
// Why a run of `spec` has no GPU here, as the probe said (empty when it has, or cannot tell).
QString noGpuReason(const ProbeResult& probe, const RunSpec& spec);

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
