#include "oom_report.h"

#include <cstdio>

namespace ddpdesk {

std::string memory_text(std::int64_t bytes) {
  const double b = static_cast<double>(bytes);
  char buf[32];
  if (b >= 1024.0 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f GiB", b / (1024.0 * 1024 * 1024));
  else
    std::snprintf(buf, sizeof buf, "%.0f MiB", b / (1024.0 * 1024));
  return buf;
}

std::string oom_line(const OomReport& r) {
  std::string line = "out of memory on rank " + std::to_string(r.rank);
  if (r.micro > 0)
    line +=
        " in a micro-batch of " + std::to_string(r.micro) + (r.micro == 1 ? " sample" : " samples");
  line += " (step " + std::to_string(r.step);
  if (r.peak) line += "; GPU memory peak " + memory_text(*r.peak);
  line += ")";
  if (!r.checkpoint.empty()) line += "; " + r.checkpoint;
  line +=
      r.fit_batch ? "; try a smaller --batch-size" : "; try --fit-batch or a smaller --batch-size";
  return line;
}

}  // namespace ddpdesk
