// The chart data as CSV, taken from the MetricsStore (every point, not what the chart sampled).
// Long format, one row per point:
//   series,rank,step,epoch,samples,time,loss,samples_per_s,accuracy,name,value,unit
//   rank,0,1,0,32,0.0123,0.91,2600.5,,,,
//   global,,1,0,32,0.0123,0.90,2600.5,,,,
//   eval,,50,0,,,0.42,,0.87,,,
//   gauge,0,1,,32,0.0125,,,,cpu_percent,97.5,%        (system metrics, a script's scalars)
//   time_ms,0,5,,,0.061,,,,forward,1.62,ms            (the step breakdown, a row per part)
// Empty cells: not applicable (or NaN). Numbers carry enough digits to read back exactly. A name
// holding a comma, a quote or a line break is quoted (RFC 4180).
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
