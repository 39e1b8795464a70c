"""The Python module gives what the CLI's JSON gives (run by ctest with PYTHONPATH set)."""

import json
import os
import subprocess
import unittest

import paraplan


def cli_json(*args):
    out = subprocess.run([os.environ["PARAPLAN_CLI"], *args, "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


class ModuleTest(unittest.TestCase):
    def test_evaluate_equals_cli_json(self):
        self.assertEqual(paraplan.evaluate("br166-ep16-mb2"), cli_json("evaluate", "br166-ep16-mb2"))

    def test_sets_override(self):
        e = paraplan.evaluate("br166-ep16-mb2", ["training.micro_batch=1"])
        self.assertEqual(e, cli_json("evaluate", "br166-ep16-mb2", "--set", "training.micro_batch=1"))
        self.assertEqual(e["strategy"]["training"]["micro_batch"], 1)

    def test_evaluate_yaml_string(self):
        text = "extends: br166-ep16-mb2\ntraining: {micro_batch: 1}\n"
        e = paraplan.evaluate_yaml(text, "inline.yaml")
        self.assertGreater(e["tokens_per_device_per_s"], 0)

    def test_search_best_first(self):
        best = paraplan.search("default", ["nodes=[16]"], top=3)
        self.assertEqual(len(best), 3)
        tgs = [b["tokens_per_device_per_s"] for b in best]
        self.assertEqual(tgs, sorted(tgs, reverse=True))

    def test_bad_input_is_value_error_located(self):
        with self.assertRaises(ValueError) as ctx:
            paraplan.evaluate_yaml("hardware: br166-ubbv2\nmodel: deepseek-v3\nnodes: x\n", "bad.yaml")
        self.assertIn("bad.yaml:3:", str(ctx.exception))

    def test_presets(self):
        names = [n for n, _ in paraplan.presets()]
        self.assertIn("br166-ep16-mb2", names)


if __name__ == "__main__":
    unittest.main()
