// The hang doctor's reading of stacks (hang/stack_verdict.h), on stack texts: gdb's output of real
// ddpdesk-worker ranks (shared memory and Gloo; a rank held in its data loading by
// DDPDESK_FAULT_HOLD_RANK), eu-stack's format, faulthandler dumps of Python ranks (DataLoader,
// torch.distributed), idle library threads that must not count, and the verdict's sentences:
// the odd rank out, several, every rank waiting (alike, or in different collectives), none
// waiting, ranks without a stack, ranks stopped by a signal; ranks written as ranges.
#include <QtTest>

#include "hang/stack_verdict.h"
#include "qt_test_main.h"

using namespace ddpdesk;

namespace {

// Abbreviated from gdb 13 attached to ddpdesk-worker ranks (-O3, no debug info).
const QString kGdbShmWaiting = QStringLiteral(
    "[New LWP 21804]\n"
    "syscall () at ../sysdeps/unix/sysv/linux/x86_64/syscall.S:38\n"
    "\n"
    "Thread 4 (Thread 0x7fefba89d6c0 (LWP 21809) \"ddpdesk-worker\"):\n"
    "#0  __futex_abstimed_wait_common64 (private=0, cancel=true) at ./nptl/futex-internal.c:57\n"
    "#4  ___pthread_cond_wait (cond=0x563e7fbe9628) at ./nptl/pthread_cond_wait.c:618\n"
    "#5  0x0000563e768522c8 in ddpdesk::SerialExecutor::loop() ()\n"
    "#8  0x00007fefd3d278ec in clone3 () at ../sysdeps/unix/sysv/linux/x86_64/clone3.S:81\n"
    "\n"
    "Thread 2 (Thread 0x7fefbc8a16c0 (LWP 21804) \"ddpdesk-signals\"):\n"
    "#0  0x00007fefd3c5ac82 in __GI___sigtimedwait (set=0x7fefbc886790) at sigtimedwait.c:31\n"
    "#2  0x0000563e76936643 in std::thread::_State_impl<std::thread::_Invoker<std::tuple<"
    "ddpdesk::take_stop_signals(std::function<void (int)>)::$_0> > >::_M_run() ()\n"
    "\n"
    "Thread 1 (Thread 0x7fefbcd93dc0 (LWP 21787) \"ddpdesk-worker\"):\n"
    "#0  syscall () at ../sysdeps/unix/sysv/linux/x86_64/syscall.S:38\n"
    "#1  0x0000563e7685c305 in ddpdesk::(anonymous namespace)::ShmCommunicator::barrier_wait("
    "std::atomic<bool> const*) ()\n"
    "#2  0x0000563e7685d38f in ddpdesk::(anonymous namespace)::ShmCommunicator::allreduce_now("
    "at::Tensor const&) ()\n"
    "#3  0x0000563e76856cda in ddpdesk::GradSync::finish_window() ()\n"
    "#4  0x0000563e7682ac51 in ddpdesk::Trainer::train_window(std::vector<long, "
    "std::allocator<long> > const&) ()\n"
    "#7  0x0000563e7680d7fa in ddpdesk::worker_main(int, char**) ()\n"
    "[Inferior 1 (process 21787) detached]\n");

const QString kGdbHeld = QStringLiteral(
    "Thread 4 (Thread 0x7f4d7f7fe6c0 (LWP 21812) \"ddpdesk-worker\"):\n"
    "#5  0x0000561b5cb362c8 in ddpdesk::SerialExecutor::loop() ()\n"
    "Thread 1 (Thread 0x7f4d85985dc0 (LWP 21788) \"ddpdesk-worker\"):\n"
    "#0  0x00007f4d9caed545 in __GI___clock_nanosleep (clock_id=clock_id@entry=0) at "
    "clock_nanosleep.c:48\n"
    "#1  0x00007f4d9caf1e53 in __GI___nanosleep (req=<optimized out>) at nanosleep.c:25\n"
    "#2  0x0000561b5cb10abb in ddpdesk::FaultInjection::hold_data_loading(long) const ()\n"
    "#3  0x0000561b5cb0e656 in ddpdesk::Trainer::train_window(std::vector<long, "
    "std::allocator<long> > const&) ()\n"
    "#6  0x0000561b5caf17fa in ddpdesk::worker_main(int, char**) ()\n"
    "[Inferior 1 (process 21788) detached]\n");

// Gloo: the tcp loop thread idles in epoll (not a collective); the main thread waits in the ring.
const QString kGdbGlooWaiting = QStringLiteral(
    "Thread 3 (Thread 0x7fbc03fe56c0 (LWP 23020) \"ddpdesk-worker\"):\n"
    "#0  0x00007fbc21926f36 in epoll_wait (epfd=9, maxevents=64, timeout=10) at epoll_wait.c:30\n"
    "#1  0x00007fbc2b459ecf in gloo::transport::tcp::Loop::run() () from /lib/libgloo.so.0\n"
    "Thread 1 (Thread 0x7fbc0a3fddc0 (LWP 23010) \"ddpdesk-worker\"):\n"
    "#0  __libc_recv (flags=<optimized out>, len=48, fd=12) at recv.c:28\n"
    "#2  0x00007fbc2b461213 in gloo::transport::tcp::Pair::read() () from /lib/libgloo.so.0\n"
    "#4  0x00007fbc2b452fa1 in gloo::transport::tcp::Buffer::waitRecv() () from /lib/libgloo.so.0\n"
    "#5  0x00005578b9b332a0 in gloo::AllreduceRing<float>::run() ()\n"
    "#6  0x00005578b9b3acda in ddpdesk::GradSync::finish_window() ()\n"
    "#7  0x00005578b9b0ec51 in ddpdesk::Trainer::train_window(std::vector<long, "
    "std::allocator<long> > const&) ()\n");

// The same rank as eu-stack prints it (no "in", TIDs instead of thread numbers).
const QString kEuStackHeld = QStringLiteral(
    "PID 21788 - process\n"
    "TID 21788:\n"
    "#0  0x00007f4d9caed545 __GI___clock_nanosleep\n"
    "#1  0x00007f4d9caf1e53 __GI___nanosleep\n"
    "#2  0x0000561b5cb10abb ddpdesk::FaultInjection::hold_data_loading(long) const\n"
    "#3  0x0000561b5cb0e656 ddpdesk::Trainer::train_window(std::vector<long, "
    "std::allocator<long> > const&)\n"
    "TID 21812:\n"
    "#0  0x00007f4d9caa3f7b __futex_abstimed_wait_common\n"
    "#1  0x0000561b5cb362c8 ddpdesk::SerialExecutor::loop()\n");

// A main thread that computes (a forward's matrix product) while writing nothing else.
const QString kGdbCompute = QStringLiteral(
    "Thread 1 (Thread 0x7f00 (LWP 500) \"ddpdesk-worker\"):\n"
    "#0  0x00007f01 in dnnl_sgemm () from /lib/libdnnl.so.2\n"
    "#1  0x00007f02 in at::native::addmm_out_cpu(at::Tensor const&) () from libtorch_cpu.so\n"
    "#2  0x00007f03 in at::_ops::addmm::call(at::Tensor const&) () from libtorch_cpu.so\n"
    "#3  0x0000561b in ddpdesk::(anonymous namespace)::MlpTask::forward(ddpdesk::Batch const&) ()\n"
    "#4  0x0000561c in ddpdesk::Trainer::train_window(std::vector<long> const&) ()\n");

// Data loading that runs tensor operations is still data loading.
const QString kGdbDataWithOps = QStringLiteral(
    "Thread 1 (Thread 0x7f00 (LWP 501) \"ddpdesk-worker\"):\n"
    "#0  0x00007f01 in at::_ops::cat::call(c10::IListRef<at::Tensor> const&, long) ()\n"
    "#1  0x0000561b in ddpdesk::(anonymous namespace)::FmnistDataset::batch(std::vector<long, "
    "std::allocator<long> > const&) const ()\n"
    "#2  0x0000561c in ddpdesk::Trainer::train_window(std::vector<long> const&) ()\n");

const QString kGdbCheckpoint = QStringLiteral(
    "Thread 1 (Thread 0x7f00 (LWP 502) \"ddpdesk-worker\"):\n"
    "#0  0x00007f01 in __GI___libc_write (fd=7) at write.c:26\n"
    "#1  0x00007f02 in caffe2::serialize::PyTorchStreamWriter::writeRecord() ()\n"
    "#2  0x0000561b in ddpdesk::save_checkpoint(std::string const&) ()\n"
    "#3  0x0000561c in ddpdesk::Trainer::write_checkpoint() ()\n");

// A shared-memory barrier alone (not inside an allreduce) is a barrier.
const QString kGdbBarrier = QStringLiteral(
    "Thread 1 (Thread 0x7f00 (LWP 503) \"ddpdesk-worker\"):\n"
    "#0  syscall () at syscall.S:38\n"
    "#1  0x0000561a in ddpdesk::(anonymous namespace)::ShmCommunicator::barrier_wait("
    "std::atomic<bool> const*) ()\n"
    "#2  0x0000561b in ddpdesk::(anonymous namespace)::ShmCommunicator::barrier() ()\n"
    "#3  0x0000561c in ddpdesk::Trainer::run() ()\n");

// faulthandler's dump of a Python rank whose DataLoader waits for its workers, beside a pin
// thread; and of a rank waiting in torch.distributed's all_reduce.
const QString kPyDataLoader = QStringLiteral(
    "Thread 0x00007f3a1c7fe6c0 (most recent call first):\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 324 in wait\n"
    "  File \"/usr/lib/python3.11/queue.py\", line 180 in get\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 995 in _bootstrap\n"
    "\n"
    "Current thread 0x00007f3a3b1f2040 (most recent call first):\n"
    "  File \"/work/train.py\", line 31 in __getitem__\n"
    "  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/fetch.py\", line 51 in "
    "<listcomp>\n"
    "  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 674 in "
    "_next_data\n"
    "  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 630 in "
    "__next__\n"
    "  File \"/work/train.py\", line 60 in main\n"
    "  File \"/work/train.py\", line 80 in <module>\n");

const QString kPyAllreduce = QStringLiteral(
    "Current thread 0x00007f3a3b1f2040 (most recent call first):\n"
    "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line 2050 "
    "in all_reduce\n"
    "  File \"/usr/lib/python3/dist-packages/torch/distributed/c10d_logger.py\", line 72 in "
    "wrapper\n"
    "  File \"/work/train.py\", line 44 in average\n"
    "  File \"/work/train.py\", line 80 in <module>\n");

// A PyTorch DDP rank (python3, Gloo) waiting at the end of backward for its peer, abbreviated
// from gdb: the main thread in the Reducer, a c10d worker in Gloo's receive, an idle one.
const QString kGdbPythonDdpWaiting = QStringLiteral(
    "Thread 8 (Thread 0x7f2e652da6c0 (LWP 13077) \"python3\"):\n"
    "#6  0x00007f2e9052bd6b in gloo::transport::tcp::UnboundBuffer::waitRecv(int*, "
    "std::chrono::duration<long, std::ratio<1l, 1000l> >) () from /lib/libgloo.so.0\n"
    "#9  0x00007f2e8106c8ad in c10d::ProcessGroupGloo::AsyncWork::execute(c10::intrusive_ptr<"
    "c10d::ProcessGroupGloo::AsyncWork>) () from /lib/x86_64-linux-gnu/libtorch_cpu.so.1.13\n"
    "#10 0x00007f2e8106c9d4 in c10d::ProcessGroupGloo::runLoop(int) () from libtorch_cpu.so\n"
    "Thread 7 (Thread 0x7f2e65adb6c0 (LWP 13076) \"python3\"):\n"
    "#4  ___pthread_cond_wait (cond=0x589c230, mutex=0x589c208) at pthread_cond_wait.c:618\n"
    "#5  0x00007f2e8106cac1 in c10d::ProcessGroupGloo::runLoop(int) () from libtorch_cpu.so\n"
    "Thread 1 (Thread 0x7f2e94a02040 (LWP 13062) \"python3\"):\n"
    "#4  ___pthread_cond_wait (cond=0x5bc7108, mutex=0x5bc70d8) at pthread_cond_wait.c:618\n"
    "#5  0x00007f2e810a5023 in c10d::Reducer::finalize_backward() () from libtorch_cpu.so\n"
    "#9  0x00007f2e80738bca in torch::autograd::Engine::thread_main(std::shared_ptr<"
    "torch::autograd::GraphTask> const&) () from /lib/x86_64-linux-gnu/libtorch_cpu.so.1.13\n"
    "#20 0x00000000005ae3d3 in _PyEval_EvalFrameDefault ()\n");

// The signal taken on a helper thread: the main thread is still the one running <module>.
const QString kPyBackwardOnOtherThread = QStringLiteral(
    "Current thread 0x00007f3a1c7fe6c0 (most recent call first):\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 324 in wait\n"
    "\n"
    "Thread 0x00007f3a3b1f2040 (most recent call first):\n"
    "  File \"/usr/lib/python3/dist-packages/torch/autograd/__init__.py\", line 200 in backward\n"
    "  File \"/usr/lib/python3/dist-packages/torch/_tensor.py\", line 487 in backward\n"
    "  File \"/work/train.py\", line 50 in <module>\n");

// Activation checkpointing is compute, not a checkpoint being written.
const QString kPyActivationCheckpoint = QStringLiteral(
    "Current thread 0x00007f3a3b1f2040 (most recent call first):\n"
    "  File \"/usr/lib/python3/dist-packages/torch/utils/checkpoint.py\", line 230 in "
    "checkpoint\n"
    "  File \"/usr/lib/python3/dist-packages/torch/nn/modules/module.py\", line 1501 in "
    "_call_impl\n"
    "  File \"/work/train.py\", line 50 in <module>\n");

PhaseReading reading(StackPhase phase, const QString& collective = QString()) {
  PhaseReading r;
  r.phase = phase;
  r.collective = collective;
  return r;
}

PhaseReading stoppedIn(StackPhase phase, const QString& collective = QString()) {
  PhaseReading r = reading(phase, collective);
  r.stopped = true;
  return r;
}

PhaseReading notTaken() {
  PhaseReading r;
  r.taken = false;
  return r;
}

}  // namespace

class TestStackVerdict : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void realWorkerStacks() {
    const PhaseReading waiting = classifyNativeStacks(kGdbShmWaiting, 21787);
    QCOMPARE(waiting.phase, StackPhase::Collective);
    // barrier_wait is inside an allreduce: the outer frames name the collective.
    QCOMPARE(waiting.collective, QStringLiteral("allreduce"));
    QVERIFY2(waiting.frame.contains(QStringLiteral("allreduce_now")), qPrintable(waiting.frame));

    const PhaseReading held = classifyNativeStacks(kGdbHeld, 21788);
    QCOMPARE(held.phase, StackPhase::DataLoading);
    QVERIFY(held.frame.contains(QStringLiteral("hold_data_loading")));

    const PhaseReading gloo = classifyNativeStacks(kGdbGlooWaiting, 23010);
    QCOMPARE(gloo.phase, StackPhase::Collective);
    QCOMPARE(gloo.collective, QStringLiteral("allreduce"));

    QCOMPARE(classifyNativeStacks(kEuStackHeld, 21788).phase, StackPhase::DataLoading);
    QCOMPARE(classifyNativeStacks(kGdbCompute, 500).phase, StackPhase::Compute);
    QCOMPARE(classifyNativeStacks(kGdbDataWithOps, 501).phase, StackPhase::DataLoading);
    QCOMPARE(classifyNativeStacks(kGdbCheckpoint, 502).phase, StackPhase::Checkpoint);
    const PhaseReading barrier = classifyNativeStacks(kGdbBarrier, 503);
    QCOMPARE(barrier.phase, StackPhase::Collective);
    QCOMPARE(barrier.collective, QStringLiteral("barrier"));
  }

  void theMainThreadSpeaksFirst() {
    // Gloo's idle tcp loop and the executor's idle loop say nothing; a pid that matches no
    // thread falls back to gdb's thread 1.
    QCOMPARE(classifyNativeStacks(kGdbHeld, 0).phase, StackPhase::DataLoading);
    QCOMPARE(classifyNativeStacks(kGdbGlooWaiting, 999999).phase, StackPhase::Collective);
    // Only idle threads: nothing to say.
    const QString idle = QStringLiteral(
        "Thread 2 (Thread 0x7f (LWP 11) \"w\"):\n#0  0x1 in gloo::transport::tcp::Loop::run() ()\n"
        "Thread 1 (Thread 0x7f (LWP 10) \"w\"):\n#0  0x1 in epoll_wait () from libc.so.6\n"
        "#1  0x2 in gomp_team_barrier_wait_end () from libgomp.so.1\n");
    QCOMPARE(classifyNativeStacks(idle, 10).phase, StackPhase::Unknown);
    // A main thread that says nothing: the most telling other thread does.
    const QString viaComm = QStringLiteral(
        "Thread 2 (Thread 0x7f (LWP 11) \"w\"):\n"
        "#0  0x1 in gloo::transport::tcp::UnboundBuffer::waitRecv(int*, std::chrono::duration) ()\n"
        "#1  0x2 in gloo::allreduce(gloo::AllreduceOptions&) ()\n"
        "Thread 1 (Thread 0x7f (LWP 10) \"w\"):\n#0  0x1 in pthread_cond_wait () from libc.so.6\n");
    const PhaseReading r = classifyNativeStacks(viaComm, 10);
    QCOMPARE(r.phase, StackPhase::Collective);
    QCOMPARE(r.collective, QStringLiteral("allreduce"));
  }

  void pythonStacks() {
    QCOMPARE(classifyPythonStacks(kPyDataLoader).phase, StackPhase::DataLoading);
    const PhaseReading ar = classifyPythonStacks(kPyAllreduce);
    QCOMPARE(ar.phase, StackPhase::Collective);
    QCOMPARE(ar.collective, QStringLiteral("allreduce"));
    QCOMPARE(classifyPythonStacks(kPyBackwardOnOtherThread).phase, StackPhase::Compute);
    QCOMPARE(classifyPythonStacks(kPyActivationCheckpoint).phase, StackPhase::Compute);
  }

  void aRankReadsTheMoreTellingOfItsStacks() {
    // A Python rank whose native stack says nothing (the interpreter sleeping) but whose Python
    // stack is in a dataset's __getitem__.
    RankStacks s;
    s.rank = 1;
    s.pid = 10;
    s.native = QStringLiteral(
        "Thread 1 (Thread 0x7f (LWP 10) \"python3\"):\n#0  0x1 in clock_nanosleep () from "
        "libc.so.6\n#1  0x2 in _PyEval_EvalFrameDefault () from python3\n");
    s.python = kPyDataLoader;
    QCOMPARE(classifyRank(s).phase, StackPhase::DataLoading);
    // Its native stack waits in c10d while Python is in backward: the wait tells more.
    s.native = QStringLiteral(
        "Thread 1 (Thread 0x7f (LWP 10) \"python3\"):\n"
        "#0  0x1 in c10d::ProcessGroupGloo::AsyncWork::wait(std::chrono::duration) ()\n"
        "#1  0x2 in c10d::Reducer::finalize_backward() ()\n");
    s.python = kPyBackwardOnOtherThread;
    QCOMPARE(classifyRank(s).phase, StackPhase::Collective);
    // A real DDP rank waiting at the end of backward: autograd's frames are outer, the Reducer's
    // wait tells; its Python stack alone would say backward.
    s.pid = 13062;
    s.native = kGdbPythonDdpWaiting;
    const PhaseReading ddp = classifyRank(s);
    QCOMPARE(ddp.phase, StackPhase::Collective);
    QCOMPARE(ddp.collective, QStringLiteral("allreduce"));
    QVERIFY2(ddp.frame.contains(QLatin1String("Reducer::finalize_backward")),
             qPrintable(ddp.frame));
    RankStacks none;
    none.problem = QStringLiteral("process 5 is gone");
    QVERIFY(!classifyRank(none).taken);
  }

  void ranksAsRanges() {
    QCOMPARE(formatRanks({3}), QStringLiteral("rank 3"));
    QCOMPARE(formatRanks({1, 0}), QStringLiteral("ranks 0-1"));
    QCOMPARE(formatRanks({0, 1, 2, 4, 5, 6, 7}), QStringLiteral("ranks 0-2 and 4-7"));
    QCOMPARE(formatRanks({5, 0, 2, 6, 2}), QStringLiteral("ranks 0, 2 and 5-6"));
    QCOMPARE(formatRanks({}), QStringLiteral("no rank"));
  }

  void theOddRankOut() {
    // The example: 8 ranks, rank 3 held in its data loading.
    std::vector<std::pair<int, PhaseReading>> ranks;
    for (int r = 0; r < 8; ++r)
      ranks.emplace_back(r, r == 3 ? reading(StackPhase::DataLoading)
                                   : reading(StackPhase::Collective, QStringLiteral("allreduce")));
    QCOMPARE(hangVerdict(ranks), QStringLiteral("rank 3 is in its data loading; ranks 0-2 and 4-7 "
                                                "wait for it in an allreduce"));
    // From the real stacks of the two-rank run.
    std::vector<RankStacks> real(2);
    real[0].rank = 0;
    real[0].pid = 21787;
    real[0].native = kGdbShmWaiting;
    real[1].rank = 1;
    real[1].pid = 21788;
    real[1].native = kGdbHeld;
    QCOMPARE(hangVerdict(real),
             QStringLiteral("rank 1 is in its data loading; rank 0 waits for it in an allreduce"));
  }

  void severalOddRanksAndCollectives() {
    const std::vector<std::pair<int, PhaseReading>> ranks = {
        {0, reading(StackPhase::Collective, QStringLiteral("allreduce"))},
        {1, reading(StackPhase::DataLoading)},
        {2, reading(StackPhase::Compute)},
        {3, reading(StackPhase::DataLoading)},
        {4, reading(StackPhase::Collective, QStringLiteral("broadcast"))},
    };
    QCOMPARE(hangVerdict(ranks),
             QStringLiteral("ranks 1 and 3 are in their data loading, rank 2 is in its compute "
                            "(forward, backward or optimizer); rank 0 waits for them in an "
                            "allreduce, rank 4 in a broadcast"));
    const std::vector<std::pair<int, PhaseReading>> unknownOdd = {
        {0, reading(StackPhase::Collective, QStringLiteral("barrier"))},
        {1, reading(StackPhase::Unknown)},
    };
    QCOMPARE(hangVerdict(unknownOdd),
             QStringLiteral("rank 1 is outside any collective (its stack does not say where); "
                            "rank 0 waits for it in a barrier"));
  }

  void everyRankWaiting() {
    const std::vector<std::pair<int, PhaseReading>> alike = {
        {0, reading(StackPhase::Collective, QStringLiteral("allreduce"))},
        {1, reading(StackPhase::Collective, QStringLiteral("allreduce"))},
    };
    QCOMPARE(hangVerdict(alike),
             QStringLiteral("every rank waits in an allreduce: none of them is behind (a peer "
                            "outside these stacks, the network or the communicator itself holds "
                            "them)"));
    const std::vector<std::pair<int, PhaseReading>> mismatched = {
        {0, reading(StackPhase::Collective, QStringLiteral("allreduce"))},
        {1, reading(StackPhase::Collective, QStringLiteral("allreduce"))},
        {2, reading(StackPhase::Collective, QStringLiteral("broadcast"))},
    };
    QCOMPARE(hangVerdict(mismatched),
             QStringLiteral("ranks 0-1 wait in an allreduce, rank 2 in a broadcast: the ranks are "
                            "in different collectives (a code path that differs between ranks)"));
    // One rank's stack missing: not "none is behind", and it is named.
    const std::vector<std::pair<int, PhaseReading>> missing = {
        {0, reading(StackPhase::Collective, QStringLiteral("allreduce"))},
        {1, notTaken()},
        {2, reading(StackPhase::Collective, QStringLiteral("allreduce"))},
    };
    QCOMPARE(hangVerdict(missing),
             QStringLiteral("ranks 0 and 2 wait in an allreduce; no stack of rank 1"));
  }

  void noRankWaiting() {
    const std::vector<std::pair<int, PhaseReading>> slow = {
        {0, reading(StackPhase::Compute)},
        {1, reading(StackPhase::Compute)},
    };
    QCOMPARE(hangVerdict(slow),
             QStringLiteral("no rank waits in a collective: ranks 0-1 are in their compute "
                            "(forward, backward or optimizer) (slow rather than held up by a "
                            "peer)"));
    QCOMPARE(
        hangVerdict(std::vector<std::pair<int, PhaseReading>>{{0, notTaken()}, {1, notTaken()}}),
        QStringLiteral("no rank's stack could be read; no stack of ranks 0-1"));
  }

  // A rank stopped by SIGSTOP or SIGTSTP (state T before the stacks were taken): its stack reads
  // as a wait like the others' (it was stopped in its own allreduce), but it is the one they wait
  // for, named first.
  void aStoppedRankIsTheOneTheOthersWaitFor() {
    const std::vector<std::pair<int, PhaseReading>> one = {
        {0, reading(StackPhase::Collective, QStringLiteral("allreduce"))},
        {1, stoppedIn(StackPhase::Collective, QStringLiteral("allreduce"))},
    };
    QCOMPARE(hangVerdict(one), QStringLiteral("rank 1 is stopped (SIGSTOP/SIGTSTP): it is not "
                                              "running, the others wait for it in an allreduce"));
    // Through the stacks as the collector hands them over.
    RankStacks waiting, stopped;
    waiting.rank = 0;
    waiting.pid = 21787;
    waiting.native = kGdbShmWaiting;
    stopped.rank = 1;
    stopped.pid = 21788;
    stopped.native = kGdbHeld;
    stopped.stopped = true;
    QVERIFY(classifyRank(stopped).stopped);
    QCOMPARE(hangVerdict(std::vector<RankStacks>{waiting, stopped}),
             QStringLiteral("rank 1 is stopped (SIGSTOP/SIGTSTP): it is not running, the others "
                            "wait for it in an allreduce"));
    // Two stopped, the others elsewhere: the stopped first, then the verdict over the rest.
    const std::vector<std::pair<int, PhaseReading>> mixed = {
        {0, reading(StackPhase::Collective, QStringLiteral("allreduce"))},
        {1, stoppedIn(StackPhase::Compute)},
        {2, reading(StackPhase::DataLoading)},
        {3, stoppedIn(StackPhase::Unknown)},
    };
    QCOMPARE(hangVerdict(mixed),
             QStringLiteral("ranks 1 and 3 are stopped (SIGSTOP/SIGTSTP): they are not running; "
                            "rank 2 is in its data loading; rank 0 waits for it in an allreduce"));
    // Every rank stopped; a stopped rank whose stack could not be taken is still named.
    QCOMPARE(
        hangVerdict(std::vector<std::pair<int, PhaseReading>>{{0, stoppedIn(StackPhase::Unknown)}}),
        QStringLiteral("rank 0 is stopped (SIGSTOP/SIGTSTP): it is not running"));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestStackVerdict)
#include "test_stack_verdict.moc"
