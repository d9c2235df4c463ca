// System use as text: the headless summary's per-rank table, and the units the rank table shows.
// Reads the system gauges (system_gauges.h) from a MetricsStore; a run without them (system
// metrics off, or an older worker) has no table.
#pragma once

#include <QString>
#include <QStringList>

#include "metrics/metrics_store.h"

namespace ddpdesk {

// "812 KiB", "312 MiB", "1.25 GiB"; empty for NaN or a negative value.
QString formatBytes(double bytes);

// What one rank's samples add up to; NaN where it sent none of that gauge.
struct SystemUse {
  double peakRssBytes;
  double meanCpuPercent;      // mean of its samples (about one a second)
  double peakGpuMemoryBytes;  // the whole device's, as NVML reports it
  double meanGpuUtilPercent;
};
SystemUse systemUse(const GaugeSet& gauges, int rank);

// "rank  peak RSS  mean CPU %" (and GPU columns when any rank sent GPU gauges), one line per
// rank; empty when no rank sent system gauges.
QStringList formatSystemTable(const MetricsStore& store);

}  // namespace ddpdesk
