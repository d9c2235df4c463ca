#include "run_report.h"

#include <cstdio>

namespace ddpdesk {
namespace {

template <typename... Args>
std::string format(const char* fmt, Args... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

}  // namespace

std::string progress_line(const ProgressFigures& p) {
  return format(
      "ddpdesk-worker[0] epoch %lld/%d step %lld/%lld loss %.5g global %.5g %.0f samples/s",
      static_cast<long long>(p.epoch + 1), p.epochs, static_cast<long long>(p.step),
      static_cast<long long>(p.total_steps), p.loss, p.global_loss, p.samples_per_s);
}

std::string summary_line(const SummaryFigures& s) {
  const double rate =
      s.train_seconds > 0 ? static_cast<double>(s.trained_samples) / s.train_seconds : 0.0;
  std::string line = "ddpdesk-worker task=" + s.task + " device=" + s.device;
  line += format(" world=%d", s.world);
  if (!s.comm.empty()) line += " comm=" + s.comm;
  line += format(
      " batch=%d accum=%d epochs=%d steps=%lld train_time=%.3fs "
      "samples_per_s=%.1f final_loss=%.6g",
      s.batch, s.accum, s.epochs, static_cast<long long>(s.steps), s.train_seconds, rate,
      s.final_loss);
  if (s.has_eval) {
    line += format(" eval_loss=%.6g", s.eval_loss);
    if (s.accuracy >= 0) line += format(" test_acc=%.4f", s.accuracy);
  }
  return line;
}

}  // namespace ddpdesk
