// Gauges in the metrics store: a time series per rank and per name, whatever the name (wire
// gauge messages), so a new metric reaches the store, metrics.jsonl and any chart or table that
// asks for it by name without code of its own. Columns like the rest of the store: appending
// never moves what is there, and views can be read on another thread.
#pragma once

#include <QtGlobal>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/chunked_array.h"
#include "wire.h"

namespace ddpdesk {

// One rank's values of one gauge, in arrival order.
struct GaugeSeries {
  std::string name;
  std::string unit;  // as the last message gave it
  Column step;       // optimizer steps done when the value was taken
  Column samples;    // global samples trained by then (the rank's last step message; 0 before)
  Column time;       // seconds on the rank's training clock
  Column value;
  quint64 revision = 0;  // store revision in which the series last grew
  std::size_t size() const { return value.size(); }
  // NaN when empty.
  double latest() const;
  // Over the finite values; NaN when there are none.
  double max() const;
  double mean() const;
};

class GaugeSet {
 public:
  // A corrupt or runaway peer must not make the store allocate without end.
  static constexpr std::size_t kMaxNamesPerRank = 256;

  // Appends one value; `samples` is the rank's global sample count so far. False when the rank
  // already has kMaxNamesPerRank other names (the value is dropped).
  bool add(const wire::Gauge& g, double samples, quint64 revision);

  // nullptr when the rank never sent that gauge.
  const GaugeSeries* find(int rank, std::string_view name) const;
  // The last value, NaN when there is none.
  double latest(int rank, std::string_view name) const;
  // Every name any rank sent, in the order they first arrived.
  const std::vector<std::string>& names() const { return names_; }
  int rankCount() const { return int(ranks_.size()); }
  // Ranks with a series that grew after `revision` (ascending).
  std::vector<int> ranksChangedSince(quint64 revision) const;
  // Marks every series as grown in `revision` (a store adopting a loaded file).
  void touchAll(quint64 revision);
  bool empty() const { return names_.empty(); }

 private:
  struct Rank {
    std::vector<std::unique_ptr<GaugeSeries>> series;  // stable addresses while names are added
    quint64 revision = 0;
  };
  std::vector<Rank> ranks_;
  std::vector<std::string> names_;
};

}  // namespace ddpdesk
