#include "hang/stack_verdict.h"

#include <QRegularExpression>
#include <algorithm>
#include <map>

namespace ddpdesk {
namespace {

enum class Source { Native, Python };

struct Rule {
  Source source;
  StackPhase phase;
  const char* collective;  // for a collective: which one
  const char* pattern;     // searched in one frame line
};

// Every rule of the hang doctor's reading, in one table. A frame may match several: the phase
// with the highest rank wins (StackPhase's order); a collective's name comes from its outermost
// frame (ShmCommunicator::barrier_wait inside GradSync::finish_window is an allreduce's wait).
// Native frames are gdb's "#3  0x... in ddpdesk::GradSync::finish_window() ()" or eu-stack's
// "#3  0x... ddpdesk::GradSync::finish_window()"; Python frames faulthandler's
// '  File "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", line 2050 in
// all_reduce'.
const std::vector<Rule>& rules() {
  static const std::vector<Rule> table = {
      // Collectives. ddpdesk's: GradSync::finish_window waits for the gradient allreduce, the
      // communicators' allreduce/broadcast/barrier (shm, Gloo, NCCL), broadcast_buffers; Gloo's,
      // NCCL's and c10d's own entry points and waits; PyTorch DDP's Reducer::finalize_backward
      // (the end of backward, waiting for the gradient allreduce). Not the libraries' idle threads
      // (Gloo's tcp loop, c10d's runLoop, NCCL's watchdog) nor OpenMP's team barriers.
      {Source::Native, StackPhase::Collective, "allreduce",
       R"((?i)all_?reduce|GradSync::finish_window|c10d::Reducer::finalize_backward)"},
      {Source::Native, StackPhase::Collective, "reduce_scatter", R"((?i)reduce_?scatter)"},
      {Source::Native, StackPhase::Collective, "allgather", R"((?i)all_?gather)"},
      {Source::Native, StackPhase::Collective, "broadcast",
       R"(ddpdesk::\S*broadcast|Communicator::broadcast|c10d::\S*[Bb]roadcast|gloo::\S*[Bb]roadcast|ncclBroadcast|ncclBcast)"},
      {Source::Native, StackPhase::Collective, "barrier",
       R"(Communicator::barrier|c10d::\S*[Bb]arrier|gloo::\S*[Bb]arrier)"},
      {Source::Native, StackPhase::Collective, "collective",
       R"(c10d::\S*Work\S*::wait|gloo::transport::\S*::wait(Recv|Send)|ncclGroupEnd|ncclCommWait)"},
      {Source::Python, StackPhase::Collective, "allreduce",
       R"(torch/distributed/.* in _?all_?reduce\w*$)"},
      {Source::Python, StackPhase::Collective, "reduce_scatter",
       R"(torch/distributed/.* in _?reduce_scatter\w*$)"},
      {Source::Python, StackPhase::Collective, "allgather",
       R"(torch/distributed/.* in _?all_?gather\w*$)"},
      {Source::Python, StackPhase::Collective, "broadcast",
       R"(torch/distributed/.* in _?broadcast\w*$)"},
      {Source::Python, StackPhase::Collective, "barrier",
       R"(torch/distributed/.* in (monitored_)?barrier$)"},
      {Source::Python, StackPhase::Collective, "collective",
       R"(torch/distributed/.* in (wait|wait_stream|_wait\w*)$)"},
      // Data loading. The engine's data sets (Dataset::batch), sampler, the batch's copy to the
      // device and the held-rank fault; LibTorch's torch::data; torch.utils.data's DataLoader
      // (its __next__, a worker's _worker_loop, the fetch) and any dataset's __getitem__.
      {Source::Native, StackPhase::DataLoading, nullptr,
       R"(Dataset\w*::|::batch\(|\bdistributed_indices\b|ddpdesk::to_device|FaultInjection::(hold_data_loading|slow_data)|torch::data::)"},
      {Source::Python, StackPhase::DataLoading, nullptr,
       R"(torch/utils/data/| in (__getitem__|__getitems__|__next__|collate\w*|_worker_loop)$)"},
      // Checkpoint writing: the engine's writer, LibTorch's and PyTorch's save (not
      // torch.utils.checkpoint, which is activation recomputation: compute).
      {Source::Native, StackPhase::Checkpoint, nullptr,
       R"(\b(save_checkpoint|write_checkpoint|prune_checkpoints)\b|RunCheckpoints::|torch::save\b|OutputArchive::|PyTorchStreamWriter)"},
      {Source::Python, StackPhase::Checkpoint, nullptr,
       R"(^(?!.*torch/utils/checkpoint\.py).*(torch/serialization\.py|torch/distributed/checkpoint/| in \w*(save|checkpoint)\w*$))"},
      // Compute: the engine's forward, loss and optimizer, autograd, ATen and the math libraries.
      {Source::Native, StackPhase::Compute, nullptr,
       R"(::(forward|backward|loss_sum)\(|FusedAdam|torch::autograd::|at::native::|at::_ops::|at::cpu::|\bdnnl_|mkldnn|\bsgemm|cublas|cudnn)"},
      {Source::Python, StackPhase::Compute, nullptr,
       R"(torch/nn/modules/|torch/autograd/|torch/optim/|torch/_tensor\.py| in (forward|backward)$)"},
  };
  return table;
}

const std::vector<std::pair<const Rule*, QRegularExpression>>& compiled(Source source) {
  static const auto build = [](Source s) {
    std::vector<std::pair<const Rule*, QRegularExpression>> out;
    for (const Rule& r : rules())
      if (r.source == s) out.emplace_back(&r, QRegularExpression(QString::fromLatin1(r.pattern)));
    return out;
  };
  static const auto native = build(Source::Native);
  static const auto python = build(Source::Python);
  return source == Source::Native ? native : python;
}

// One thread's frames, innermost first (both gdb and faulthandler write them so).
struct Thread {
  qint64 id = 0;   // LWP/TID for native stacks; 0 when unknown
  int number = 0;  // gdb's thread number (1: the first thread), or eu-stack's order from 1
  bool main = false;
  QStringList frames;
};

PhaseReading classifyThread(const Thread& t, Source source) {
  PhaseReading best;
  for (const QString& frame : t.frames) {
    for (const auto& [rule, re] : compiled(source)) {
      if (!re.match(frame).hasMatch()) continue;
      if (rule->phase > best.phase) {
        best.phase = rule->phase;
        best.frame = frame.trimmed();
        best.collective = rule->collective ? QString::fromLatin1(rule->collective) : QString();
      } else if (rule->phase == StackPhase::Collective && best.phase == StackPhase::Collective &&
                 best.collective != QLatin1String(rule->collective) &&
                 QLatin1String(rule->collective) != QLatin1String("collective")) {
        // An outer frame names the collective the inner ones wait in.
        best.collective = QString::fromLatin1(rule->collective);
        best.frame = frame.trimmed();
      }
      break;  // the first rule a frame matches speaks for it
    }
  }
  return best;
}

bool morePressing(const PhaseReading& a, const PhaseReading& b) {
  return a.phase > b.phase;
}

// The main thread's reading when it says anything; else the most telling of the others'.
PhaseReading classifyThreads(const std::vector<Thread>& threads, Source source) {
  PhaseReading others;
  for (const Thread& t : threads) {
    const PhaseReading r = classifyThread(t, source);
    if (t.main && r.phase != StackPhase::Unknown) return r;
    if (!t.main && morePressing(r, others)) others = r;
  }
  return others;
}

std::vector<Thread> splitNative(const QString& text, qint64 pid) {
  static const QRegularExpression gdbThread(
      QStringLiteral(R"(^Thread (\d+) \((?:.*?\bLWP (\d+)|process (\d+)))"));
  static const QRegularExpression euThread(QStringLiteral(R"(^TID (\d+):)"));
  static const QRegularExpression frame(QStringLiteral(R"(^#\d+\s)"));
  std::vector<Thread> threads;
  int euOrder = 0;
  for (const QString& raw : text.split(QLatin1Char('\n'))) {
    const QString line = raw.trimmed();
    if (const auto m = gdbThread.match(line); m.hasMatch()) {
      Thread t;
      t.number = m.captured(1).toInt();
      t.id = (m.captured(2).isEmpty() ? m.captured(3) : m.captured(2)).toLongLong();
      threads.push_back(t);
    } else if (const auto e = euThread.match(line); e.hasMatch()) {
      Thread t;
      t.number = ++euOrder;
      t.id = e.captured(1).toLongLong();
      threads.push_back(t);
    } else if (frame.match(line).hasMatch()) {
      if (threads.empty()) threads.emplace_back();  // a bare "bt" of one thread
      threads.back().frames << line;
    }
  }
  bool found = false;
  for (Thread& t : threads) {
    t.main = pid > 0 && t.id == pid;
    found = found || t.main;
  }
  if (!found)
    for (Thread& t : threads) t.main = t.number == 1 || (threads.size() == 1);
  return threads;
}

std::vector<Thread> splitPython(const QString& text) {
  static const QRegularExpression header(
      QStringLiteral(R"(^(Current thread|Thread) 0x[0-9a-fA-F]+)"));
  std::vector<Thread> threads;
  std::vector<bool> current;
  for (const QString& raw : text.split(QLatin1Char('\n'))) {
    if (const auto m = header.match(raw); m.hasMatch()) {
      threads.emplace_back();
      current.push_back(m.captured(1) == QLatin1String("Current thread"));
    } else if (raw.trimmed().startsWith(QLatin1String("File \"")) && !threads.empty()) {
      threads.back().frames << raw.trimmed();
    }
  }
  // The script's own thread runs its <module>; without one, the thread that took the signal.
  bool found = false;
  for (Thread& t : threads) {
    t.main = std::any_of(t.frames.begin(), t.frames.end(), [](const QString& f) {
      return f.endsWith(QLatin1String(" in <module>"));
    });
    found = found || t.main;
  }
  if (!found)
    for (std::size_t i = 0; i < threads.size(); ++i) threads[i].main = current[i];
  return threads;
}

QString article(const QString& collective) {
  const bool vowel = !collective.isEmpty() && QStringLiteral("aeiou").contains(collective[0]);
  return (vowel ? QStringLiteral("an ") : QStringLiteral("a ")) + collective;
}

// "is in its data loading" / "are in their data loading".
QString whereText(StackPhase phase, bool plural) {
  switch (phase) {
    case StackPhase::DataLoading:
      return plural ? QStringLiteral("are in their data loading")
                    : QStringLiteral("is in its data loading");
    case StackPhase::Compute:
      return plural ? QStringLiteral("are in their compute (forward, backward or optimizer)")
                    : QStringLiteral("is in its compute (forward, backward or optimizer)");
    case StackPhase::Checkpoint:
      return plural ? QStringLiteral("are writing a checkpoint")
                    : QStringLiteral("is writing a checkpoint");
    case StackPhase::Collective:
      return plural ? QStringLiteral("wait in a collective")
                    : QStringLiteral("waits in a collective");
    case StackPhase::Unknown:
      break;
  }
  return plural ? QStringLiteral("are outside any collective (their stacks do not say where)")
                : QStringLiteral("is outside any collective (its stack does not say where)");
}

}  // namespace

QString phaseName(StackPhase phase) {
  switch (phase) {
    case StackPhase::DataLoading:
      return QStringLiteral("data loading");
    case StackPhase::Compute:
      return QStringLiteral("compute");
    case StackPhase::Checkpoint:
      return QStringLiteral("checkpoint writing");
    case StackPhase::Collective:
      return QStringLiteral("a collective");
    case StackPhase::Unknown:
      break;
  }
  return QStringLiteral("an unknown place");
}

PhaseReading classifyNativeStacks(const QString& text, qint64 pid) {
  return classifyThreads(splitNative(text, pid), Source::Native);
}

PhaseReading classifyPythonStacks(const QString& text) {
  return classifyThreads(splitPython(text), Source::Python);
}

PhaseReading classifyRank(const RankStacks& s) {
  PhaseReading native, python;
  if (!s.native.trimmed().isEmpty()) native = classifyNativeStacks(s.native, s.pid);
  if (!s.python.trimmed().isEmpty()) python = classifyPythonStacks(s.python);
  PhaseReading r = morePressing(python, native) ? python : native;
  r.taken = !s.native.trimmed().isEmpty() || !s.python.trimmed().isEmpty();
  r.stopped = s.stopped;
  return r;
}

QString formatRanks(QList<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  if (ranks.isEmpty()) return QStringLiteral("no rank");
  if (ranks.size() == 1) return QStringLiteral("rank %1").arg(ranks.front());
  QStringList runs;
  for (int i = 0; i < ranks.size();) {
    int j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    runs << (i == j ? QString::number(ranks[i])
                    : QStringLiteral("%1-%2").arg(ranks[i]).arg(ranks[j]));
    i = j + 1;
  }
  const QString last = runs.takeLast();
  return QStringLiteral("ranks ") +
         (runs.isEmpty() ? last : runs.join(QStringLiteral(", ")) + QStringLiteral(" and ") + last);
}

namespace {

// The verdict over ranks that run (none of them stopped by a signal).
QString runningVerdict(const std::vector<std::pair<int, PhaseReading>>& ranks) {
  QList<int> notTaken;
  std::map<QString, QList<int>> waiting;    // by collective
  std::map<StackPhase, QList<int>> others;  // not in a collective, by phase (most telling first)
  int waitingCount = 0, otherCount = 0;
  for (const auto& [rank, r] : ranks) {
    if (!r.taken) {
      notTaken << rank;
    } else if (r.phase == StackPhase::Collective) {
      waiting[r.collective.isEmpty() ? QStringLiteral("collective") : r.collective] << rank;
      ++waitingCount;
    } else {
      others[r.phase] << rank;
      ++otherCount;
    }
  }
  const auto plural = [](const QList<int>& l) { return l.size() > 1; };
  QString text;
  if (waitingCount == 0 && otherCount == 0) {
    text = QStringLiteral("no rank's stack could be read");
  } else if (waitingCount > 0 && otherCount > 0) {
    // The odd ranks out, the most telling place first; then those waiting for them.
    QStringList odd;
    for (auto it = others.rbegin(); it != others.rend(); ++it)
      odd << formatRanks(it->second) + QLatin1Char(' ') + whereText(it->first, plural(it->second));
    QStringList wait;
    const QString forWhom = otherCount > 1 ? QStringLiteral("them") : QStringLiteral("it");
    for (const auto& [collective, list] : waiting)
      wait << formatRanks(list) +
                  (wait.isEmpty() ? (plural(list) ? QStringLiteral(" wait for ")
                                                  : QStringLiteral(" waits for ")) +
                                        forWhom + QStringLiteral(" in ")
                                  : QStringLiteral(" in ")) +
                  article(collective);
    text = odd.join(QStringLiteral(", ")) + QStringLiteral("; ") + wait.join(QStringLiteral(", "));
  } else if (waitingCount > 0) {
    if (waiting.size() == 1) {
      const auto& [collective, list] = *waiting.begin();
      const bool all = notTaken.isEmpty();
      text = (all ? (list.size() > 1 ? QStringLiteral("every rank waits in ")
                                     : QStringLiteral("the rank waits in "))
                  : formatRanks(list) + (plural(list) ? QStringLiteral(" wait in ")
                                                      : QStringLiteral(" waits in "))) +
             article(collective);
      if (all)
        text += QStringLiteral(
            ": none of them is behind (a peer outside these stacks, the network or the "
            "communicator itself holds them)");
    } else {
      QStringList wait;
      for (const auto& [collective, list] : waiting)
        wait << formatRanks(list) +
                    (wait.isEmpty() ? (plural(list) ? QStringLiteral(" wait in ")
                                                    : QStringLiteral(" waits in "))
                                    : QStringLiteral(" in ")) +
                    article(collective);
      text = wait.join(QStringLiteral(", ")) +
             QStringLiteral(
                 ": the ranks are in different collectives (a code path that differs "
                 "between ranks)");
    }
  } else {
    QStringList where;
    for (auto it = others.rbegin(); it != others.rend(); ++it)
      where << formatRanks(it->second) + QLatin1Char(' ') +
                   whereText(it->first, plural(it->second));
    text = QStringLiteral("no rank waits in a collective: ") + where.join(QStringLiteral(", ")) +
           QStringLiteral(" (slow rather than held up by a peer)");
  }
  if (!notTaken.isEmpty()) text += QStringLiteral("; no stack of ") + formatRanks(notTaken);
  return text;
}

}  // namespace

QString hangVerdict(const std::vector<std::pair<int, PhaseReading>>& ranks) {
  // A rank stopped by a signal is the one the others wait for, wherever its stack stopped: its
  // stack alone would read as waiting in a collective like theirs.
  QList<int> stopped;
  std::vector<std::pair<int, PhaseReading>> running;
  for (const auto& rank : ranks) {
    if (rank.second.stopped)
      stopped << rank.first;
    else
      running.push_back(rank);
  }
  if (stopped.isEmpty()) return runningVerdict(ranks);
  const bool plural = stopped.size() > 1;
  QString text = formatRanks(stopped) +
                 (plural ? QStringLiteral(" are stopped (SIGSTOP/SIGTSTP): they are not running")
                         : QStringLiteral(" is stopped (SIGSTOP/SIGTSTP): it is not running"));
  if (running.empty()) return text;
  QStringList collectives;
  bool allWait = true;
  for (const auto& [rank, r] : running) {
    allWait = allWait && r.taken && r.phase == StackPhase::Collective;
    const QString c = r.collective.isEmpty() ? QStringLiteral("collective") : r.collective;
    if (!collectives.contains(c)) collectives << c;
  }
  if (!allWait) return text + QStringLiteral("; ") + runningVerdict(running);
  text += QStringLiteral(", the others wait for ") +
          (plural ? QStringLiteral("them") : QStringLiteral("it"));
  if (collectives.size() == 1) text += QStringLiteral(" in ") + article(collectives.front());
  return text;
}

QString hangVerdict(const std::vector<RankStacks>& ranks) {
  std::vector<std::pair<int, PhaseReading>> readings;
  for (const RankStacks& s : ranks) readings.emplace_back(s.rank, classifyRank(s));
  return hangVerdict(readings);
}

}  // namespace ddpdesk
