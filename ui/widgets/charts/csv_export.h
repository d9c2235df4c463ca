// The chart data as CSV, taken from the MetricsStore (every point, not what the chart sampled).
// Long format, one row per point:
//   series,rank,step,epoch,samples,time,loss,samples_per_s,accuracy
//   rank,0,1,0,32,0.0123,0.91,2600.5,
//   global,,1,0,32,0.0123,0.90,2600.5,
//   eval,,50,0,,,0.42,,0.87
// Empty cells: not applicable (or NaN). Numbers carry enough digits to read back exactly.
#pragma once

#include <QByteArray>
#include <QString>

class QIODevice;

namespace ddpdesk {

class MetricsStore;

QByteArray csvHeader();
// Streams in chunks: a long run has millions of rows.
bool writeMetricsCsv(const MetricsStore& store, QIODevice& out);
bool writeMetricsCsv(const MetricsStore& store, const QString& path, QString* error = nullptr);
QByteArray metricsToCsv(const MetricsStore& store);

}  // namespace ddpdesk
