// Curves of one run for the comparison view, and the difference between two of them.
// A curve is a run's global loss, validation loss or accuracy, or throughput, against the
// optimizer step, the training samples seen or the training wall time, taken from the run's
// MetricsStore (a run directory's metrics.jsonl, or a TensorBoard series filled in with
// fillStore()). Plain data, no widgets: the headless `--compare` and the comparison window both
// read these numbers.
#pragma once

#include <QString>
#include <cstddef>
#include <vector>

namespace ddpdesk {

class MetricsStore;

enum class CompareX { Step, Samples, Time };
enum class CompareMetric { Loss, EvalLoss, EvalAccuracy, Throughput };

// "step", "samples", "time"; parse returns false for anything else.
QString compareXName(CompareX x);
bool parseCompareX(const QString& text, CompareX* out);
// "optimizer step", "samples", "wall time (s)": axis and table wording.
QString compareXLabel(CompareX x);
QString compareMetricName(CompareMetric m);  // "global loss", "validation loss", ...

// Points in ascending x, at most one per x (where a run wrote an x twice, a resumed run going
// over steps again, the point written last counts), finite values only.
struct Curve {
  std::vector<double> x;
  std::vector<double> y;
  std::size_t size() const { return x.size(); }
  bool empty() const { return x.empty(); }
};

// `metric` of the run in `store` against `axis`. Validation points carry only a step: on the
// samples and time axes they sit where the last training point at or before their step sits.
// The training clock is made monotonic: a session that restarts it at 0 (a resume) continues
// where the previous one ended. A series without sample counts (a TensorBoard import) has no
// curve on the samples axis; one without a metric has an empty curve.
Curve extractCurve(const MetricsStore& store, CompareMetric metric, CompareX axis);

// How two curves are lined up when their x points differ.
enum class Matching {
  // Inside the range both curves cover, the x of the curve with fewer points there (the
  // sparser run: its own points), the other curve linearly interpolated between its own
  // neighbouring points at them (its own points used as they are where it has that x). With
  // equally many points there, every x of either curve, each interpolated likewise. No
  // extrapolation: x outside the overlap is not compared.
  Interpolate,
  // Only the x values present in both curves (exact equality: steps and sample counts; times
  // rarely coincide).
  Exact,
};
QString matchingName(Matching m);  // "interp", "exact"
// How the compared points are chosen, as the difference lines say it (headless and window).
QString matchingDescription(Matching m);
bool parseMatching(const QString& text, Matching* out);

struct CurveDiff {
  std::size_t points = 0;  // x values compared; 0: nothing in common (the numbers are NaN)
  double xFrom = 0, xTo = 0;
  double maxAbs = 0;  // max |other - reference|
  double maxAt = 0;   // the x where it is reached (the first one)
  double rms = 0;     // sqrt(mean((other - reference)^2)) over the compared points
  Curve delta;        // other - reference at each compared x
};

CurveDiff diffCurves(const Curve& reference, const Curve& other,
                     Matching matching = Matching::Interpolate);

}  // namespace ddpdesk
