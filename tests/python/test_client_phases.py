"""The step breakdown of a training script (ddpdesk/_phases.py): ddpdesk.phase() blocks timed as
parts of the optimizer step, on a clock the test moves by hand, and the step lines that carry them
("time_ms", as the worker writes it): parts in ms per step, nested phases counted once, "other"
for the rest of the step, comm left out until measured, several steps per message averaged, no
breakdown for the first message or a step that did not advance; ddpdesk.timed() around a loader;
a misspelt phase refused inside and outside ddpdesk."""

import io
import json
import os
import sys
import tempfile
import unittest

from client_test_util import PYTHON_DIR, run, strict_lines

sys.path.insert(0, PYTHON_DIR)
from ddpdesk import _client, _env, _phases  # noqa: E402


class FakeTime:
    """Stands in for the time module in _phases: perf_counter() reads `now`."""

    def __init__(self):
        self.now = 100.0

    def perf_counter(self):
        return self.now


class Clock(unittest.TestCase):
    def setUp(self):
        self.time = FakeTime()
        self.real_time = _phases.time
        _phases.time = self.time
        self.clock = _phases.StepClock()

    def tearDown(self):
        _phases.time = self.real_time

    def take(self, step):
        taken = self.clock.take(step)
        return None if taken is None else _phases.breakdown(taken)

    def spend(self, part, seconds):
        self.clock.enter(_phases.part_index(part))
        self.time.now += seconds
        self.clock.leave()

    def test_parts_add_up_to_the_step(self):
        self.assertIsNone(self.take(1))  # the first message: nothing to measure from
        self.spend("data", 1.0)
        self.spend("forward", 2.0)
        self.time.now += 0.5  # outside every phase
        self.spend("backward", 3.0)
        self.spend("optimizer", 1.0)
        data, fwd, bwd, comm, opt, other, step, steps = self.take(2)
        self.assertEqual((steps, comm), (1, None))  # comm never measured: left out
        self.assertAlmostEqual(data, 1000.0)
        self.assertAlmostEqual(fwd, 2000.0)
        self.assertAlmostEqual(bwd, 3000.0)
        self.assertAlmostEqual(opt, 1000.0)
        self.assertAlmostEqual(other, 500.0)
        self.assertAlmostEqual(step, 7500.0)
        self.assertAlmostEqual(data + fwd + bwd + opt + other, step)

    def test_an_inner_phase_is_not_counted_in_the_outer_one(self):
        self.take(1)
        self.clock.enter(_phases.part_index("backward"))
        self.time.now += 1.0
        self.spend("comm", 2.0)  # the allreduce inside backward
        self.time.now += 1.0
        self.clock.leave()
        _, _, bwd, comm, _, other, step, _ = self.take(2)
        self.assertAlmostEqual(bwd, 2000.0)
        self.assertAlmostEqual(comm, 2000.0)
        self.assertAlmostEqual(other, 0.0)
        self.assertAlmostEqual(step, 4000.0)

    def test_a_message_covering_several_steps_gives_ms_per_step(self):
        self.take(10)
        self.spend("forward", 3.0)
        self.time.now += 1.0
        _, fwd, _, _, _, other, step, steps = self.take(14)
        self.assertEqual(steps, 4)
        self.assertAlmostEqual(fwd, 750.0)
        self.assertAlmostEqual(other, 250.0)
        self.assertAlmostEqual(step, 1000.0)

    def test_a_message_from_inside_a_phase_splits_it_at_the_message(self):
        self.take(1)
        self.clock.enter(_phases.part_index("optimizer"))
        self.time.now += 1.0
        first = self.take(2)
        self.time.now += 3.0
        self.clock.leave()
        second = self.take(3)
        self.assertAlmostEqual(first[4], 1000.0)
        self.assertAlmostEqual(second[4], 3000.0)
        self.assertAlmostEqual(second[6], 3000.0)

    def test_a_step_that_did_not_advance_starts_over(self):
        self.take(5)
        self.spend("forward", 1.0)
        self.assertIsNone(self.take(5))  # the same step again
        self.assertIsNone(self.take(2))  # a resumed count that went back
        self.spend("forward", 2.0)
        self.assertAlmostEqual(self.take(3)[1], 2000.0)  # from the last message only

    def test_unknown_phase_named_with_the_parts(self):
        with self.assertRaises(ValueError) as e:
            _phases.part_index("fwd")
        self.assertIn("'fwd'", str(e.exception))
        self.assertIn("data, forward, backward, comm, optimizer", str(e.exception))


class StepLines(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.time = FakeTime()
        self.real_time = _phases.time
        _phases.time = self.time

    def tearDown(self):
        _phases.time = self.real_time
        self.tmp.cleanup()

    def client(self):
        s = _env.Settings(rank=0, world=2)
        s.run_dir = self.tmp.name
        return _client.Client(s, start=False, stderr=io.StringIO())

    def steps(self):
        path = os.path.join(self.tmp.name, "metrics", "rank-0.jsonl")
        return [l for l in strict_lines(path) if l["type"] == "step"]

    def test_step_lines_carry_time_ms_once_phases_are_used(self):
        c = self.client()
        c.log(1, 0.9, 8, 0, None, {})  # no phase yet: no breakdown
        with c.phases[_phases.part_index("forward")]:
            self.time.now += 0.004
        c.log(2, 0.8, 16, 0, None, {})  # the first message since phases began: none yet
        with c.phases[_phases.part_index("forward")]:
            self.time.now += 0.004
        with c.phases[_phases.part_index("comm")]:
            self.time.now += 0.001
        self.time.now += 0.002
        c.log(3, 0.7, 24, 0, None, {"lr": 0.1})
        c.log(None, None, None, None, None, {"grad_norm": 1.0})  # scalars only: no step line
        c.close()
        steps = self.steps()
        self.assertEqual([("time_ms" in s) for s in steps], [False, False, True])
        t = steps[2]["time_ms"]
        self.assertEqual(sorted(t), ["backward", "comm", "data", "forward", "optimizer", "other",
                                     "step", "steps"])
        self.assertEqual(t["steps"], 1)
        self.assertAlmostEqual(t["forward"], 4.0)
        self.assertAlmostEqual(t["comm"], 1.0)
        self.assertAlmostEqual(t["other"], 2.0)
        self.assertAlmostEqual(t["step"], 7.0)
        self.assertEqual((steps[2]["loss"], steps[2]["lr"]), (0.7, 0.1))

    def test_a_script_without_phases_sends_no_breakdown(self):
        c = self.client()
        for step in range(1, 4):
            self.time.now += 0.01
            c.log(step, 0.5, step * 8, 0, None, {})
        c.close()
        self.assertFalse(any("time_ms" in s for s in self.steps()))


class ModuleFunctions(unittest.TestCase):
    def test_inside_a_rank_phase_and_timed_reach_the_step_lines(self):
        with tempfile.TemporaryDirectory() as run_dir:
            rc, out, err = run("""
                import time, ddpdesk
                assert ddpdesk.active()
                batches = [1, 2, 3]
                for step, b in enumerate(ddpdesk.timed(batches, "data"), 1):
                    time.sleep(0.002)  # the loader's wait is after next(): this is "other"
                    with ddpdesk.phase("forward"):
                        time.sleep(0.02)
                    ddpdesk.log(step=step, loss=0.5)
                try:
                    ddpdesk.phase("forwards")
                except ValueError as e:
                    print(e)
            """, DDPDESK_RUN_DIR=run_dir, RANK=0, WORLD_SIZE=1)
            self.assertEqual(rc, 0, err)
            self.assertIn("unknown phase 'forwards'", out)
            steps = [l for l in strict_lines(os.path.join(run_dir, "metrics", "rank-0.jsonl"))
                     if l["type"] == "step"]
        self.assertEqual([("time_ms" in s) for s in steps], [False, True, True])
        for s in steps[1:]:
            t = s["time_ms"]
            self.assertGreaterEqual(t["forward"], 20.0)
            self.assertLess(t["forward"], t["step"])
            self.assertGreaterEqual(t["other"], 2.0)
            self.assertNotIn("comm", t)

    def test_outside_ddpdesk_no_ops_that_still_check_the_name(self):
        rc, out, err = run("""
            import ddpdesk
            loader = [1, 2]
            assert ddpdesk.timed(loader) is loader
            with ddpdesk.phase("backward"):
                pass
            try:
                ddpdesk.timed(loader, "load")
            except ValueError as e:
                print(e)
        """)
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(out.strip(),
                         "ddpdesk.phase: unknown phase 'load' "
                         "(one of: data, forward, backward, comm, optimizer)")


if __name__ == "__main__":
    unittest.main()
