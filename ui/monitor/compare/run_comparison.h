// The comparison view's data: a set of runs side by side. Each entry is a run directory
// (spec.json + metrics.jsonl, as RunDirectory writes it) or a TensorBoard log directory (one of
// its series imported as a run's global loss, as "Open TensorBoard log…" does). From them:
// curves (curve_compare.h), a table with the spec fields that differ between the runs and each
// run's final and best loss, validation loss and accuracy, samples/s, wall time and peak memory
// (the largest rank's resident memory, and GPU memory where a rank used a GPU), and the
// difference of every run's curve against the first one's. Qt Core only: the headless
// `--compare` prints it, the comparison window shows it.
#pragma once

#include <QByteArray>
#include <QString>
#include <QStringList>
#include <memory>
#include <optional>
#include <vector>

#include "compare/curve_compare.h"
#include "run/run_directory.h"
#include "run_spec.h"

namespace ddpdesk {

class MetricsStore;
struct TensorBoardLog;

struct ComparedRun {
  ComparedRun();
  ~ComparedRun();
  ComparedRun(ComparedRun&&) noexcept;
  ComparedRun& operator=(ComparedRun&&) noexcept;

  QString label;  // the directory's name (a TensorBoard series: "<dir>/<series>")
  QString path;
  bool imported = false;  // a TensorBoard series: no spec, no samples, no validation
  QString series;         // an imported entry's series name ("train/loss"); empty otherwise
  std::optional<RunSpec> spec;
  std::optional<RunStatus> status;
  std::unique_ptr<MetricsStore> store;  // never null
  // What was read only in part, one line each: a TensorBoard event file that ended early
  // ("<file>: record 3 at byte 120: data CRC mismatch (...)"; the scalars before it are kept).
  // Said beside the comparison (headless: on stderr; the window: under its buttons).
  QStringList warnings;
};

// The cheap half of loading, for loaders that read the files on another thread: a run
// directory's spec and status (its store still empty), or an entry marked `imported` for a
// directory without spec.json (a TensorBoard log, once importTensorBoard() took a series of it).
std::optional<ComparedRun> openComparedRun(const QString& path, QString* error);
// Fills an imported entry's store with the series `tag` of `log` (empty: the suggested one), and
// its warnings with the log's files that ended early (each named by its path).
bool importTensorBoard(ComparedRun& run, const TensorBoardLog& log, const QString& tag,
                       QString* error);

// Loads `path` whole: a run directory (spec.json that parses, metrics.jsonl readable) or a
// TensorBoard log directory with a series; otherwise nothing, and `error` says why in one line
// naming the path. `tag` picks a TensorBoard log's series by name (TensorBoardLog::names()); empty:
// its suggested one. Blocking (reads the files).
std::optional<ComparedRun> loadComparedRun(const QString& path, const QString& tag, QString* error);

// Spec fields that only name or place a run (or say what to do at its end): never listed as
// differing.
bool isIdentityField(const std::string& key);

struct RunSummary {
  QString label;
  QString state;             // status.json's state; "" without one (an import, an active run)
  qint64 steps = 0;          // last optimizer step
  double finalLoss = 0;      // global loss of the last step (NaN: none)
  double bestLoss = 0;       // lowest global loss of any step
  double valLoss = 0;        // last validation loss
  double accuracy = 0;       // last validation accuracy
  double samplesPerSec = 0;  // samples seen / training wall time
  double wallTime = 0;       // training wall time, seconds (the workers' clock, resumes joined)
  // Bytes, the largest over the ranks (NaN: no gauge): resident memory; GPU memory, the caching
  // allocator's peak where the worker reported it, else the process's on the device (NVML).
  double peakRss = 0;
  double peakGpu = 0;
  qint64 globalBatch = 0;  // nproc × batch × accumulation (0: no spec)
  QStringList fields;      // values of ComparisonTable::fields (empty cells: no spec)
};

struct ComparisonTable {
  QStringList fields;  // spec keys whose values differ between the runs that have a spec
  std::vector<RunSummary> rows;
  // run, fields..., global batch, state, steps, final loss, ..., and peak RSS MiB / peak GPU MiB
  // where any run has the figure.
  QStringList header() const;
  // The cells of row r, formatted for a terminal or a table (empty: not applicable).
  QStringList cells(std::size_t r) const;
};

ComparisonTable buildTable(const std::vector<ComparedRun>& runs);
RunSummary summarize(const ComparedRun& run);

// The table as CSV (RFC 4180 quoting): the header, one row per run, numbers with enough digits
// to read back exactly, plus the difference of each run's global loss against the first run's
// (max and RMS on `axis` with `matching`; empty for the first run and where nothing overlaps).
QByteArray tableCsv(const std::vector<ComparedRun>& runs, CompareX axis, Matching matching);
// Written atomically (QSaveFile).
bool writeTableCsv(const std::vector<ComparedRun>& runs, CompareX axis, Matching matching,
                   const QString& path, QString* error);

// What `metric` of `run` is: compareMetricName(), except an imported entry's loss curve, which is
// its TensorBoard series ("TensorBoard series 'validation/loss'").
QString curveName(const ComparedRun& run, CompareMetric metric);

// "max 3.1e-07 at step 57, RMS 1.2e-07 over 120 points (step 1–120)", or why nothing could be
// compared.
QString describeDiff(const CurveDiff& d, CompareX axis);

}  // namespace ddpdesk
