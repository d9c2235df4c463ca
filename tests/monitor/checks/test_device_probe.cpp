// The GPU probe: parsing `ddpdesk-worker --probe` output, and running it without blocking.
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "checks/device_probe.h"
#include "qt_test_main.h"

using namespace ddpdesk;

namespace {

// A stand-in worker: a shell script answering --probe after a pause.
QString script(const QTemporaryDir& dir, const QByteArray& body) {
  const QString path = dir.filePath(QStringLiteral("probe.sh"));
  QFile f(path);
  f.open(QIODevice::WriteOnly);
  f.write("#!/bin/sh\n" + body);
  f.close();
  f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
  return path;
}

}  // namespace

class TestDeviceProbe : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void parsesTheWorkersJson() {
    const ProbeResult r = parseProbe(
        "some log line\n"
        R"({"cuda_available":true,"cuda_built":true,"device_count":2,)"
        R"("devices":["NVIDIA H200","NVIDIA H200"],"device_memory_bytes":[150754820096,0],)"
        R"("gloo":true,"nccl":true,"torch_version":"2.11.0"})"
        "\n");
    QCOMPARE(r.status, ProbeResult::Status::Ok);
    QVERIFY(r.cudaAvailable);
    QCOMPARE(r.deviceCount, 2);
    QCOMPARE(r.deviceNames, (QStringList{"NVIDIA H200", "NVIDIA H200"}));
    QCOMPARE(r.torchVersion, QStringLiteral("2.11.0"));
    QVERIFY(r.nccl);
    QVERIFY(r.cudaBuilt);
    QVERIFY(r.cudaMissing.isEmpty());
    // Each GPU with its memory where the build could tell it.
    QCOMPARE(describeDevices(r), (QStringList{"NVIDIA H200 (140.4 GiB)", "NVIDIA H200"}));
  }

  void noCudaMeansNoDevices() {
    const ProbeResult r = parseProbe(R"({"cuda_available":false,"device_count":3})");
    QCOMPARE(r.status, ProbeResult::Status::Ok);
    QCOMPARE(r.deviceCount, 0);
  }

  // Without any GPU a CUDA run is refused with the probe's reason (a CPU-only LibTorch, no
  // driver), not only "none"; with too few GPUs, with the count.
  void aCudaRunWithoutAGpuSaysWhy() {
    ProbeResult r = parseProbe(
        "{\"cuda_available\":false,\"cuda_built\":false,\"device_count\":0,"
        "\"cuda_missing\":\"this build's LibTorch 1.13.0 has no CUDA (Debian's is CPU-only): "
        "build against a CUDA PyTorch (docs/gpu.md)\"}");
    QVERIFY(!r.cudaBuilt);
    RunSpec spec;
    spec.device = "cuda";
    spec.nproc = 2;
    QCOMPARE(cudaShortage(spec, r),
             QStringLiteral("invalid --device 'cuda': this build's LibTorch 1.13.0 has no CUDA "
                            "(Debian's is CPU-only): build against a CUDA PyTorch (docs/gpu.md)"));
    r.cudaMissing.clear();  // an older worker: the spec's own words
    QCOMPARE(cudaShortage(spec, r),
             QStringLiteral("invalid --device 'cuda': needs a CUDA GPU and this machine has none"));
    r = parseProbe(R"({"cuda_available":true,"device_count":1,"devices":["NVIDIA H100"]})");
    QVERIFY2(cudaShortage(spec, r).startsWith(QStringLiteral("invalid --nproc '2': must be at "
                                                             "most 1")),
             qPrintable(cudaShortage(spec, r)));
    spec.device = "cpu";
    QVERIFY(cudaShortage(spec, r).isEmpty());
  }

  // A Python-script run uses the GPUs the driver sees through its own PyTorch: a CPU-only
  // worker does not refuse it; without a driver it is refused with NVML's reason.
  void aScriptRunCountsTheDriversGpus() {
    ProbeResult r = parseProbe(
        "{\"cuda_available\":false,\"cuda_missing\":\"no CUDA in this LibTorch\","
        "\"nvml_devices\":[\"NVIDIA H100\",\"NVIDIA H100\"],"
        "\"nvml_device_memory_bytes\":[85899345920,85899345920]}");
    RunSpec spec;
    spec.task = "python";
    spec.script = "train.py";
    spec.device = "cuda";
    spec.nproc = 2;
    QVERIFY2(cudaShortage(spec, r).isEmpty(), qPrintable(cudaShortage(spec, r)));
    QCOMPARE(describeDevices(r, spec),
             (QStringList{"NVIDIA H100 (80.0 GiB)", "NVIDIA H100 (80.0 GiB)"}));
    QVERIFY(describeDevices(r).isEmpty());  // the worker's own: none
    spec.nproc = 3;
    QVERIFY(cudaShortage(spec, r).startsWith(QStringLiteral("invalid --nproc '3'")));
    r = parseProbe("{\"cuda_available\":false,\"nvml_missing\":\"no NVIDIA driver\"}");
    spec.nproc = 1;
    QCOMPARE(cudaShortage(spec, r), QStringLiteral("invalid --device 'cuda': no NVIDIA driver"));
    QCOMPARE(noGpuReason(r, spec), QStringLiteral("no NVIDIA driver"));
  }

  void garbageFails() {
    QCOMPARE(parseProbe("not json").status, ProbeResult::Status::Failed);
    QCOMPARE(parseProbe("").status, ProbeResult::Status::Failed);
  }

  void runsAsynchronously() {
    // The stand-in answers only once the file `go` exists, which the test makes after start()
    // returned (or after 60 s regardless): a start() that waited for the answer would come back
    // with it in, however fast or slow the machine.
    QTemporaryDir dir;
    const QString go = dir.filePath(QStringLiteral("go"));
    const QString prog = script(
        dir, "i=0\nwhile [ ! -e '" + go.toUtf8() +
                 "' ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n"
                 "echo '{\"cuda_available\":true,\"device_count\":1,\"devices\":[\"X\"]}'\n");
    DeviceProbe probe;
    QSignalSpy done(&probe, &DeviceProbe::finished);
    QElapsedTimer t;
    t.start();
    probe.start(prog);
    QVERIFY2(t.elapsed() < 30000, "start() waited for the probe's answer");
    QCOMPARE(probe.result().status, ProbeResult::Status::Pending);
    QCOMPARE(done.count(), 0);
    QFile(go).open(QIODevice::WriteOnly);
    QVERIFY(done.wait(20000));
    QCOMPARE(probe.result().status, ProbeResult::Status::Ok);
    QCOMPARE(probe.result().deviceCount, 1);
  }

  void failuresAreReported() {
    DeviceProbe probe;
    QSignalSpy done(&probe, &DeviceProbe::finished);
    probe.start(QStringLiteral("/nonexistent/ddpdesk-worker"));
    QVERIFY(done.count() == 1 || done.wait(20000));
    QCOMPARE(probe.result().status, ProbeResult::Status::Failed);
    QVERIFY(probe.result().error.contains(QLatin1String("cannot run")));

    QTemporaryDir dir;
    probe.start(script(dir, "echo 'unknown flag --probe' >&2\nexit 2\n"));
    QVERIFY(done.wait(20000));
    QCOMPARE(probe.result().status, ProbeResult::Status::Failed);
    QVERIFY(probe.result().error.contains(QLatin1String("code 2")));

    probe.start(script(dir, "sleep 30\n"), 300);
    QVERIFY(done.wait(20000));
    QVERIFY(probe.result().error.contains(QLatin1String("in time")));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestDeviceProbe)
#include "test_device_probe.moc"
