#include "headless/compare_headless.h"

#include <QCoreApplication>
#include <algorithm>
#include <cstring>
#include <iostream>

#include <CLI/CLI.hpp>

#include "compare/run_comparison.h"
#include "headless/headless_message.h"
#include "spec_flags.h"

namespace ddpdesk {
namespace {

int fail(const QString& line) {
  printHeadlessMessage(line);
  return 2;
}

// Columns padded to their widest cell, numbers and names alike left-aligned.
void printTable(const ComparisonTable& t) {
  std::vector<QStringList> lines{t.header()};
  for (std::size_t r = 0; r < t.rows.size(); ++r) lines.push_back(t.cells(r));
  std::vector<int> width(std::size_t(lines.front().size()), 0);
  for (const QStringList& l : lines)
    for (int c = 0; c < l.size(); ++c) width[c] = std::max(width[c], int(l[c].size()));
  for (const QStringList& l : lines) {
    QString out;
    for (int c = 0; c < l.size(); ++c)
      out += (c + 1 < l.size() ? l[c].leftJustified(width[c] + 2) : l[c]);
    std::cout << out.trimmed().toStdString() << "\n";
  }
}

}  // namespace

bool wantsCompare(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--compare") == 0) return true;
  return false;
}

int runCompareHeadless(int argc, char** argv) {
  CLI::App cli{"Compares finished or running runs (and TensorBoard logs) side by side.", "ddpdesk"};
  bool headless = false;
  std::vector<std::string> dirs;
  std::string x = "step", match = "interp", tag, csv;
  cli.add_flag("--headless", headless, "run in the terminal, without a window");
  cli.add_option("--compare", dirs,
                 "run directories (spec.json + metrics.jsonl) or TensorBoard log directories; "
                 "differences are taken against the first")
      ->required()
      ->expected(1, -1);
  cli.add_option("--x", x, "x axis the curves are aligned on: step, samples or time");
  cli.add_option("--match", match,
                 "how points are matched where x differs: interp (at the x of the run with "
                 "fewer points in the common range, the other interpolated linearly) or exact "
                 "(shared x only)");
  cli.add_option("--tag", tag,
                 "the series of the TensorBoard logs among them to compare (default: a log's "
                 "loss); refused when none is a TensorBoard log");
  cli.add_option("--csv", csv, "also write the table as CSV to this file");
  // `ddpdesk --headless --compare --help`, as both help texts tell: CLI11 would take --help as
  // the directory --compare requires and answer that no such run exists.
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::cout << cli.help();
      return 0;
    }
  if (const int rc = parse_cli(cli, argc, argv); rc >= 0) return rc;
  QCoreApplication app(argc, argv);

  CompareX axis;
  if (!parseCompareX(QString::fromStdString(x), &axis))
    return fail(QString::fromStdString(
        format_error({"x", x, "must be step, samples or time"}, Spelling::Flag)));
  Matching matching;
  if (!parseMatching(QString::fromStdString(match), &matching))
    return fail(QString::fromStdString(
        format_error({"match", match, "must be interp or exact"}, Spelling::Flag)));
  std::vector<ComparedRun> runs;
  for (const std::string& d : dirs) {
    QString error;
    std::optional<ComparedRun> run =
        loadComparedRun(QString::fromStdString(d), QString::fromStdString(tag), &error);
    if (!run) return fail(QStringLiteral("invalid --compare: ") + error);
    runs.push_back(std::move(*run));
  }
  // --tag picks a TensorBoard log's series: on run directories alone it would pick nothing.
  if (!tag.empty() &&
      std::none_of(runs.begin(), runs.end(), [](const ComparedRun& r) { return r.imported; }))
    return fail(QString::fromStdString(format_error(
        {"tag", tag,
         "applies to TensorBoard logs only, and none of the --compare directories is one"},
        Spelling::Flag)));
  for (const ComparedRun& run : runs)
    for (const QString& w : run.warnings) printHeadlessMessage(QStringLiteral("warning: ") + w);

  // The file first: when it cannot be written, the one line is all that is printed.
  if (!csv.empty()) {
    QString error;
    if (!writeTableCsv(runs, axis, matching, QString::fromStdString(csv), &error))
      return fail(QStringLiteral("invalid --csv: ") + error);
  }
  printTable(buildTable(runs));
  for (CompareMetric metric :
       {CompareMetric::Loss, CompareMetric::EvalLoss, CompareMetric::EvalAccuracy}) {
    const Curve reference = extractCurve(*runs.front().store, metric, axis);
    if (reference.empty() || runs.size() < 2) continue;
    // Each curve named for what it is: a TensorBoard log's is its series, not a global loss.
    const QString name = curveName(runs.front(), metric);
    std::cout << "\n"
              << QStringLiteral("%1 against %2, x = %3 (%4):")
                     .arg(name, runs.front().label, compareXLabel(axis),
                          matchingDescription(matching))
                     .toStdString()
              << "\n";
    for (std::size_t i = 1; i < runs.size(); ++i) {
      const CurveDiff d =
          diffCurves(reference, extractCurve(*runs[i].store, metric, axis), matching);
      const QString its = curveName(runs[i], metric);
      std::cout << "  " << runs[i].label.toStdString()
                << (its == name ? std::string() : " (" + its.toStdString() + ")") << ": "
                << describeDiff(d, axis).toStdString() << "\n";
    }
  }
  std::cout << std::flush;
  return 0;
}

}  // namespace ddpdesk
