"""prove.py's handling of a loader process that dies: run by .ci/run with
`python3 -m unittest discover -s conformance/tools/llama-releases`."""
import pathlib
import tempfile
import unittest
from unittest import mock

import prove


class Fake:
    """A loader whose process dies as a script says: `die_on` files kill
    any process that begins them; `die_after` kill a process once, right
    after their verdict, the first time only."""

    def __init__(self, refuse=(), die_on=(), die_after=(), flaky=()):
        self.refuse, self.die_on, self.die_after, self.flaky = set(refuse), set(die_on), set(die_after), set(flaky)
        self.processes = []

    def __call__(self, folder, paths):
        self.processes.append(list(paths))
        got = {}
        for p in paths:
            name = pathlib.Path(p).name
            if name in self.die_on or (name in self.flaky and len(paths) > 1):
                got[p] = ("abort", "GGML_ASSERT(x) failed")
                return got, p, -6
            got[p] = ("refused", "no") if name in self.refuse else ("loads", "")
            if name in self.die_after:
                self.die_after.discard(name)
                return got, None, -4
        return got, None, 0


class LoadAll(unittest.TestCase):
    def run_fake(self, fake, names):
        files = [f"corpus/models/{n}" for n in names]
        notes = []
        with tempfile.TemporaryDirectory() as d, mock.patch.object(prove, "load_run", fake):
            got = prove.load_all(pathlib.Path(d), files, notes)
        return {pathlib.Path(k).name: v[0] for k, v in got.items()}, notes

    def test_a_process_that_dies_between_files_is_started_again_on_the_next(self):
        fake = Fake(die_after={"b.gguf"})
        got, notes = self.run_fake(fake, ["a.gguf", "b.gguf", "c.gguf", "d.gguf"])
        self.assertEqual(got, {"a.gguf": "loads", "b.gguf": "loads", "c.gguf": "loads", "d.gguf": "loads"})
        self.assertEqual(len(fake.processes), 2)
        self.assertEqual([pathlib.Path(p).name for p in fake.processes[1]], ["c.gguf", "d.gguf"])
        self.assertEqual(len(notes), 1)
        self.assertIn("between files (exit -4)", notes[0])

    def test_a_file_that_kills_a_fresh_process_alone_is_an_abort(self):
        fake = Fake(die_on={"b.gguf"}, refuse={"c.gguf"})
        got, notes = self.run_fake(fake, ["a.gguf", "b.gguf", "c.gguf"])
        self.assertEqual(got, {"a.gguf": "loads", "b.gguf": "abort", "c.gguf": "refused"})
        self.assertEqual(notes, [])

    def test_a_file_that_kills_only_a_long_process_gets_its_lone_verdict(self):
        fake = Fake(flaky={"b.gguf"})
        got, notes = self.run_fake(fake, ["a.gguf", "b.gguf", "c.gguf"])
        self.assertEqual(got, {"a.gguf": "loads", "b.gguf": "loads", "c.gguf": "loads"})
        self.assertEqual(len(notes), 1)
        self.assertIn("alone it loads it", notes[0])

    def test_a_process_that_dies_before_any_file_marks_the_rest(self):
        def dead(folder, paths):
            return {}, None, -4
        got, notes = self.run_fake(dead, ["a.gguf", "b.gguf"])
        self.assertEqual(got, {"a.gguf": "abort", "b.gguf": "abort"})

    def test_a_loader_that_keeps_dying_is_bounded(self):
        fake = Fake(die_on={f"{i}.gguf" for i in range(prove.MAX_PROCESSES + 50)})
        names = [f"{i}.gguf" for i in range(prove.MAX_PROCESSES + 50)]
        got, _ = self.run_fake(fake, names)
        self.assertEqual(set(got.values()), {"abort"})
        self.assertEqual(len(got), len(names))
        self.assertLessEqual(len(fake.processes), 2 * prove.MAX_PROCESSES)


if __name__ == "__main__":
    unittest.main()
