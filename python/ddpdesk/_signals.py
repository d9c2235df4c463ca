"""How a rank that imported ddpdesk takes SIGTERM and SIGINT (a stop request): never on a thread
that computes. A signal handler runs on whichever thread the kernel picks, on that thread's
stack: in the middle of oneDNN's JIT matrix products, whose live data sits below the stack
pointer, a signal frame corrupts the heap (engine/runtime/stop_signals.h, issue 27). So, as
ddpdesk-worker does, both signals are blocked in the importing thread, every thread started
afterwards (torch's intra-op pool, Gloo's, the DataLoader's pin thread) inherits the block, and
one daemon thread takes them with sigwait. The first asks for a stop; a second one exits at
once with 128 + the signal's number, unless it is the same request delivered again (Repeats).

Threads started before the import do not have the block: a Python-level handler stays installed
for them (it only sets the flag), and the client says once on stderr that the import came late.
A process forked from the rank (a DataLoader worker) gets Python's behaviour back in the child."""

import os
import signal
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM)
SI_USER = 0  # siginfo's si_code for kill(): si_pid is the sender
THREAD_NAME = "ddpdesk-signals"


def other_threads():
    """Threads of this process besides the calling one (native ones too: /proc/self/task)."""
    try:
        return max(0, len(os.listdir("/proc/self/task")) - 1)
    except OSError:
        return max(0, threading.active_count() - 1)


SAME_SIGNAL_S = 0.5  # engine/protocol/signal_repeat.h's window


class Repeats:
    """Tells the same stop request delivered again from a second one, as ddpdesk-worker does
    (engine/worker.cpp): a repeat from the process that started the rank (a launcher asks once and
    then kills; Linux sends the parent-death SIGTERM once for each thread of a dying parent that
    hands the rank on), or the same signal within half a second (GNU timeout signals its child and
    then the child's group)."""

    def __init__(self, parent):
        self.parent = parent  # os.getppid() at import
        self._last = {}

    def same(self, sig, sender, now):
        last = self._last.get(sig)
        self._last[sig] = now
        return (last is not None and now - last < SAME_SIGNAL_S) or (
            sender != 0 and sender == self.parent)


class StopSignals:
    """on_signal(sig, sender) runs on the taking thread, once per signal (sender: the pid that
    sent it, 0 when not known)."""

    def __init__(self, on_signal):
        self._on_signal = on_signal
        self._saved = {}
        self.taken = False

    def take(self):
        """Blocks the signals and starts the taking thread. Only from the main thread (False
        elsewhere: Python lets only the main thread set handlers)."""
        if threading.current_thread() is not threading.main_thread():
            return False
        signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
        for sig in SIGNALS:
            self._saved[sig] = signal.getsignal(sig)
            # A signal ignored through exec would be thrown away, not kept pending for sigwait;
            # and a thread started before the import, without the block, may still receive
            # one: the handler only passes it on.
            signal.signal(sig, self._late_thread_handler)
        threading.Thread(target=self._loop, name=THREAD_NAME, daemon=True).start()
        os.register_at_fork(after_in_child=self.restore_in_child)
        self.taken = True
        return True

    def _loop(self):
        while True:
            info = signal.sigwaitinfo(set(SIGNALS))
            self._on_signal(info.si_signo, info.si_pid if info.si_code == SI_USER else 0)

    def _late_thread_handler(self, sig, frame):
        self._on_signal(sig, 0)

    def restore_in_child(self):
        """In a forked child (a DataLoader worker): the handlers and mask it had before ddpdesk
        was imported, so SIGTERM ends it as it would have."""
        if not self.taken:
            return
        for sig, handler in self._saved.items():
            try:
                signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
            except (ValueError, OSError):
                pass
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
        self.taken = False


def unblock():
    """Lifts an inherited block (a process exec'd by the rank imports ddpdesk but is not it)."""
    if threading.current_thread() is threading.main_thread():
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
