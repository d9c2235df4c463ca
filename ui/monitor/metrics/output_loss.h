// Losses read from what a rank prints, for Python scripts that do not use the ddpdesk client:
// each line of a rank's stdout or stderr that carries a training loss becomes a point of that
// rank's loss curve. Understood without configuration:
//   loss=0.53   loss: 0.53   train_loss=0.53   loss = tensor(0.5300, grad_fn=...)
//   {'loss': 0.53, 'learning_rate': 5e-05, 'epoch': 0.1}     (a printed dict: transformers'
//   Trainer) " 10%|█         | 10/100 [00:01<00:09, loss=0.53]"       (a tqdm bar; '\r' redraws)
// Other losses on the line (val_loss, eval_loss) are not the training loss and are left alone.
// The step is the line's own where it has one (step 12, step=12, 'step': 12, global_step: 12, a
// tqdm bar's 10/100, continued across bars that start again each epoch), else one more than
// the last point's. A custom pattern (a regular
// expression with a group named "loss", and optionally one named "step") replaces the built-in
// ones. Pure: no I/O, one reader per rank.
#pragma once

#include <QRegularExpression>
#include <QString>
#include <QStringView>
#include <cstdint>
#include <vector>

namespace ddpdesk {

struct OutputLoss {
  std::int64_t step = 0;
  double loss = 0;  // NaN and inf kept: a diverging run shows as one
};

class OutputLossReader {
 public:
  // `pattern` empty: the built-in forms above. Otherwise a regular expression (PCRE, as Qt
  // reads it) with a named group "loss"; error() says what is wrong with it.
  explicit OutputLossReader(const QString& pattern = QString());

  bool valid() const { return error_.isEmpty(); }
  QString error() const { return error_; }  // one line, empty when valid

  // The points in one line of output (without its '\n'). A line a terminal would redraw with
  // '\r' (a progress bar) gives a point for each redraw that shows a new loss or step.
  std::vector<OutputLoss> read(QStringView line);

 private:
  bool readSegment(QStringView text, OutputLoss* out);

  QRegularExpression custom_;
  QString error_;
  std::int64_t last_step_ = 0;
  // A tqdm bar per epoch starts again at 1: its counts continue from where the last bar ended.
  std::int64_t bar_base_ = 0;
  std::int64_t last_bar_ = 0;
  bool have_last_ = false;
  double last_loss_ = 0;
};

}  // namespace ddpdesk
