// What the system sampler costs a rank: one reading of /proc (CPU time, resident memory,
// threads) and the encoding of its gauge messages, timed directly. The telemetry sender thread
// does this once a second, so the time per sample over one second is the share of a core it
// takes. A throughput comparison with the sampler on and off (bench_telemetry.sh) cannot show a
// cost this small: run-to-run noise on a 2-core machine is several percent.
//   bench_system_sample [samples]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "system_sampler.h"
#include "wire.h"

int main(int argc, char** argv) {
  const long samples = argc > 1 ? std::atol(argv[1]) : 20000;
  if (samples < 1) {
    std::fprintf(stderr, "bench_system_sample: samples must be >= 1\n");
    return 2;
  }
  ddpdesk::SystemSampler sampler(ddpdesk::SystemSampler::Options{});
  std::size_t bytes = 0;  // keeps the encoded lines alive
  std::size_t values = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < samples; ++i) {
    // The clock the sampler is given advances a second per reading, as in a run, so every
    // reading yields its CPU % too (it needs 0.2 s between readings).
    const double now = double(i);
    for (const ddpdesk::SystemSampler::Value& v : sampler.sample(now)) {
      bytes +=
          ddpdesk::wire::encode(ddpdesk::wire::Gauge{0, v.name, v.value, v.unit, now, i}).size();
      ++values;
    }
  }
  const double total_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  const double per_sample_us = total_us / samples;
  std::printf("system sample: %.1f us per reading (%.1f gauges, %zu bytes encoded in all)\n",
              per_sample_us, double(values) / samples, bytes);
  std::printf("at one reading a second: %.4f %% of one core (target < 1 %%)\n",
              per_sample_us / 1e6 * 100.0);
  return 0;
}
