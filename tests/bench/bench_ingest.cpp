// bench_ingest: how many wire messages per second the monitor's ingest path takes in — the
// MetricsServer's reader, the codec, and the MetricsStore — with 8 ranks streaming at once
// through real Unix-domain sockets. The reader is one thread; its CPU time gives the figure "on
// one core" (the writer threads share the machine, so the wall-clock rate is printed too).
// Target: >= 200,000 messages/s. Usage: bench_ingest [messages_per_rank] [ranks]
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <QCoreApplication>
#include <QElapsedTimer>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "bench_socket.h"
#include "metrics_server.h"
#include "metrics_store.h"
#include "wire.h"

using namespace ddpdesk;

namespace {

double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// What a real rank sends: hello, then step messages (eval/event are rare in comparison).
std::string encodeRank(int rank, int world, long n, const std::string& token) {
  std::string out = wire::encode(wire::Hello{wire::kVersion, token, rank, world, 1000 + rank,
                                             "bench-host", "cpu"}) +
                    "\n";
  out.reserve(std::size_t(n) * 240);
  for (long i = 1; i <= n; ++i) {
    wire::Step s;
    s.rank = rank;
    s.epoch = int(i / 1000);
    s.step = i;
    s.loss = 1.0 / (1.0 + double(i)) + 0.001 * rank;
    s.global_loss = 1.0 / (1.0 + double(i));
    s.samples = i * 64 * world;
    s.lr = 1e-3;
    s.time = double(i) * 0.0123;
    s.samples_per_s = 12345.678;
    out += wire::encode(s);
    out += '\n';
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);
  const long perRank = argc > 1 ? std::atol(argv[1]) : 100000;
  const int ranks = argc > 2 ? std::atoi(argv[2]) : 8;
  const std::string token = "bench-token-0123456789";

  std::vector<std::string> payload(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) payload[std::size_t(r)] = encodeRank(r, ranks, perRank, token);
  std::size_t bytes = 0;
  for (const auto& p : payload) bytes += p.size();
  const long total = perRank * ranks + ranks;  // + hellos

  // The parts alone, single-threaded: which one costs what.
  std::vector<wire::Message> decoded;
  decoded.reserve(std::size_t(perRank) + 1);
  QElapsedTimer t;
  double codecS = 0;
  for (int pass = 0; pass < 2; ++pass) {  // the first pass warms caches and the allocator
    decoded.clear();
    t.start();
    const std::string& s = payload[0];
    std::size_t pos = 0;
    while (pos < s.size()) {
      const std::size_t nl = s.find('\n', pos);
      decoded.push_back(*wire::decode(std::string_view(s).substr(pos, nl - pos)).message);
      pos = nl + 1;
    }
    codecS = double(t.nsecsElapsed()) * 1e-9;
  }
  MetricsStore alone;
  t.restart();
  alone.ingest(decoded);
  const double storeS = double(t.nsecsElapsed()) * 1e-9;

  // The real path: 8 writer threads, one reader (this thread's event loop).
  MetricsServer server;
  MetricsStore store;
  QString error;
  if (!server.listen(QString::fromStdString(token), ranks, &error)) {
    std::fprintf(stderr, "bench_ingest: %s\n", qPrintable(error));
    return 1;
  }
  QObject::connect(&server, &MetricsServer::messagesReceived,
                   [&](const std::vector<wire::Message>& batch, const QByteArray&) {
                     store.ingest(batch);
                     if (store.messageCount() >= total) QCoreApplication::quit();
                   });
  std::atomic<bool> go{false};
  std::vector<std::thread> writers;
  std::vector<int> fds;
  for (int r = 0; r < ranks; ++r) fds.push_back(connectTo(server.socketPath()));
  for (int r = 0; r < ranks; ++r) {
    writers.emplace_back([&, r] {
      while (!go.load()) std::this_thread::yield();
      writeAll(fds[std::size_t(r)], payload[std::size_t(r)]);
    });
  }
  const double cpu0 = threadCpuSeconds();
  t.restart();
  go = true;
  QCoreApplication::exec();
  const double wallS = double(t.nsecsElapsed()) * 1e-9;
  const double cpuS = threadCpuSeconds() - cpu0;
  for (auto& w : writers) w.join();
  for (int fd : fds) ::close(fd);

  const auto c = server.counters();
  std::printf("bench_ingest: %d ranks x %ld step messages through local sockets (%.0f bytes/msg)\n",
              ranks, perRank, double(bytes) / double(total));
  std::printf("  received %lld messages, %lld malformed, %lld dropped connections\n",
              static_cast<long long>(store.messageCount()), static_cast<long long>(c.malformed),
              static_cast<long long>(c.dropped));
  std::printf("  reader+codec+store, one core: %.0f msg/s (%.2f s CPU of the reader thread)\n",
              double(total) / cpuS, cpuS);
  std::printf("  wall clock with the writers sharing the cores: %.0f msg/s (%.2f s)\n",
              double(total) / wallS, wallS);
  std::printf("  parts alone: codec decode %.0f msg/s (%.2f us/msg), store ingest %.0f msg/s\n",
              double(decoded.size()) / codecS, codecS * 1e6 / double(decoded.size()),
              double(decoded.size()) / storeS);
  const bool ok = store.messageCount() == total && c.malformed == 0;
  std::printf("  target 200000 msg/s on one core: %s\n",
              !ok ? "INCOMPLETE" : (double(total) / cpuS >= 200000 ? "met" : "NOT met"));
  return ok ? 0 : 1;
}
