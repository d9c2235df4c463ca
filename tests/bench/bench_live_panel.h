// What the GUI benchmarks share: the monitor side of a live run as the window has it (charts,
// rank table at 4 Hz, log view), order statistics, and the GUI thread's responsiveness measured
// as the lateness of a 5 ms timer.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QSplitter>
#include <QTableView>
#include <QTimer>
#include <algorithm>
#include <cstddef>
#include <vector>

#include "charts/charts_panel.h"
#include "charts/loss_chart.h"
#include "charts/throughput_chart.h"
#include "live/log_view.h"
#include "live/rank_table.h"
#include "metrics/metrics_store.h"

namespace ddpdesk::bench {

struct Stats {
  double median = 0, p99 = 0, max = 0, mean = 0;
};

inline Stats stats(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = v[v.size() / 2];
  s.p99 = v[std::min(v.size() - 1, std::size_t(double(v.size()) * 0.99))];
  s.max = v.back();
  for (double x : v) s.mean += x;
  s.mean /= double(v.size());
  return s;
}

// The monitor side of a live run, as the window has it.
struct LivePanel {
  QSplitter top{Qt::Vertical};
  ChartsPanel* charts = new ChartsPanel(&top);
  QTableView* table = new QTableView(&top);
  LogView* log = new LogView(&top);
  RankTableModel model;
  QTimer tableTimer;
  explicit LivePanel(MetricsStore& store) {
    table->setModel(&model);
    tableTimer.setInterval(250);
    QObject::connect(&tableTimer, &QTimer::timeout,
                     [this, &store] { model.setRows(buildRankRows({}, store)); });
    tableTimer.start();
    top.resize(1400, 1000);
    top.show();
    charts->setSources({{"bench", &store}}, true);
  }
};

inline bool panelLoading(const ChartsPanel& p) {
  return p.lossChart()->isLoading() || p.throughputChart()->isLoading();
}

// The lateness (ms) of every tick of a 5 ms timer on the GUI thread while it runs.
class TimerLateness {
 public:
  TimerLateness() {
    tick_.setTimerType(Qt::PreciseTimer);
    tick_.setInterval(5);
    QObject::connect(&tick_, &QTimer::timeout, [this] {
      const qint64 now = clock_.nsecsElapsed();
      late_.push_back(std::max(0.0, double(now - last_) * 1e-6 - 5.0));
      last_ = now;
    });
  }
  void start() {
    clock_.start();
    last_ = clock_.nsecsElapsed();
    tick_.start();
  }
  Stats result() const { return stats(late_); }

 private:
  QTimer tick_;
  QElapsedTimer clock_;
  qint64 last_ = 0;
  std::vector<double> late_;
};

}  // namespace ddpdesk::bench
