"""kvfit's Python module against its CLI (tests/python/run.sh runs this inside a venv).

kvfit.plan(model, **settings) must equal `kvfit MODEL <flags> --json` for the same inputs, settings named as the
long flags in snake_case; errors raise kvfit.Error with the CLI's one-line message (the CLI prints "kvfit: MSG").
"""
import json
import os
import subprocess
import sys
import unittest

import kvfit

KVFIT = os.environ["KVFIT_BINARY"]


def cli(model, *flags):
    r = subprocess.run([KVFIT, model, *flags, "--json"], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


class PlanEqualsCli(unittest.TestCase):
    CASES = [
        # (model, settings, the CLI's flags)
        ("Qwen3.5-9B", {}, []),
        ("Qwen3.5-9B", {"gpu": "RTX 4060", "ctx_size": 32768, "cache_type_k": "q8_0", "cache_type_v": "q8_0"},
         ["--gpu", "RTX 4060", "-c", "32768", "-ctk", "q8_0", "-ctv", "q8_0"]),
        ("Qwen3.5-9B", {"gpu": "8GiB", "ctx_size": [8192, 65536], "parallel": 2, "ubatch_size": 256, "flash_attn": "off"},
         ["--gpu", "8GiB", "-c", "8192", "-c", "65536", "-np", "2", "-ub", "256", "-fa", "off"]),
        ("Qwen3.5-9B", {"gpu": "24GiB", "weights_size": "9GB", "kv_unified": True},
         ["--gpu", "24GiB", "--weights-size", "9GB", "--kv-unified"]),
    ]

    def test_llamacpp(self):
        for model, settings, flags in self.CASES:
            with self.subTest(model=model, settings=settings):
                rc, out, err = cli(model, *flags)
                self.assertIn(rc, (0, 3), err)
                self.assertEqual(kvfit.plan(model, **settings), json.loads(out))

    def test_catalog_models(self):
        names = [m["name"] for m in kvfit.models()]
        for model in names[:4]:
            with self.subTest(model=model):
                rc, out, err = cli(model, "--gpu", "24GiB", "-c", "16384")
                self.assertIn(rc, (0, 3), err)
                self.assertEqual(kvfit.plan(model, gpu="24GiB", ctx_size=16384), json.loads(out))

    def test_other_runtimes(self):
        cases = [
            ("vllm", {"max_model_len": 32768, "gpu_memory_utilization": 0.9}, ["--max-model-len", "32768", "--gpu-memory-utilization", "0.9"]),
            ("sglang", {"context_length": 32768}, ["--context-length", "32768"]),
            ("ollama", {}, []),
        ]
        for runtime, settings, flags in cases:
            with self.subTest(runtime=runtime):
                rc, out, err = cli("Qwen3.5-9B", "--runtime", runtime, "--gpu", "H100", *flags)
                self.assertIn(rc, (0, 3), err)
                self.assertEqual(kvfit.plan("Qwen3.5-9B", runtime=runtime, gpu="H100", **settings), json.loads(out))


class Errors(unittest.TestCase):
    def cli_message(self, *args):
        r = subprocess.run([KVFIT, *args], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2, r.stderr)
        line = r.stderr.strip()
        self.assertTrue(line.startswith("kvfit: "), line)
        return line[len("kvfit: "):]

    def assert_error(self, message, model, **settings):
        with self.assertRaises(kvfit.Error) as e:
            kvfit.plan(model, **settings)
        self.assertEqual(str(e.exception), message)

    def test_same_message_as_cli(self):
        self.assert_error(self.cli_message("Qwen3.5-9B", "-c", "0"), "Qwen3.5-9B", ctx_size=0)
        self.assert_error(self.cli_message("Qwen3.5-9B", "-ctk", "q9_9"), "Qwen3.5-9B", cache_type_k="q9_9")
        self.assert_error(self.cli_message("Qwen3.5-9B", "--gpu", "RTX 9999"), "Qwen3.5-9B", gpu="RTX 9999")
        self.assert_error(self.cli_message("no-such-model"), "no-such-model")
        self.assert_error(self.cli_message("Qwen3.5-9B", "--weights", "q9_k"), "Qwen3.5-9B", weights="q9_k")

    def test_unknown_setting(self):
        with self.assertRaises(kvfit.Error) as e:
            kvfit.plan("Qwen3.5-9B", ctx=4096)
        self.assertTrue(str(e.exception).startswith("unknown setting 'ctx' (known: "), str(e.exception))
        with self.assertRaises(kvfit.Error) as e:
            kvfit.plan("Qwen3.5-9B", max_model_len=4096)
        self.assertIn("max_model_len", str(e.exception))
        self.assertTrue(issubclass(kvfit.Error, Exception))


class PlanSetEqualsCli(unittest.TestCase):
    def test_vllm_split(self):
        r = subprocess.run([KVFIT, "Qwen3-8B@--gpu-memory-utilization=0.31", "Meta-Llama-3.1-8B@--gpu-memory-utilization=0.29",
                            "--runtime", "vllm", "--gpu", "H100", "--max-model-len", "32768", "--json"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = kvfit.plan_set([{"model": "Qwen3-8B", "gpu_memory_utilization": 0.31},
                              {"model": "Meta-Llama-3.1-8B", "gpu_memory_utilization": 0.29}],
                             runtime="vllm", gpu="H100", max_model_len=32768)
        self.assertEqual(got, json.loads(r.stdout))
        self.assertTrue(got["fits"])
        self.assertEqual(got["devices"][0]["used_bytes"], sum(got["devices"][0]["member_bytes"]))

    def test_llamacpp_not_together(self):
        r = subprocess.run([KVFIT, "Qwen3-8B", "Meta-Llama-3.1-8B", "--gpu", "16GiB", "-c", "40960", "--json"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 3, r.stderr)
        got = kvfit.plan_set(["Qwen3-8B", "Meta-Llama-3.1-8B"], gpu="16GiB", ctx_size=40960)
        self.assertEqual(got, json.loads(r.stdout))
        self.assertEqual(got["alternatives"][0]["kind"], "equal_context")

    def test_weighted_contexts(self):
        r = subprocess.run([KVFIT, "Qwen3-8B@weight=3", "Meta-Llama-3.1-8B", "--gpu", "16GiB", "-c", "40960", "--json"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 3, r.stderr)
        got = kvfit.plan_set([{"model": "Qwen3-8B", "weight": 3}, "Meta-Llama-3.1-8B"], gpu="16GiB", ctx_size=40960)
        self.assertEqual(got, json.loads(r.stdout))
        self.assertEqual(got["weights"], [3, 1])
        self.assertEqual(got["alternatives"][0]["kind"], "weighted_context")
        self.assertEqual(got["host"]["used_bytes"], sum(got["host"]["member_bytes"]))

    def test_errors(self):
        with self.assertRaises(kvfit.Error) as e:
            kvfit.plan_set(["Qwen3-8B"], gpu="H100")
        self.assertEqual(str(e.exception), "a set needs at least 2 models")
        with self.assertRaises(kvfit.Error) as e:
            kvfit.plan_set(["Qwen3-8B", {"model": "Meta-Llama-3.1-8B", "ctx": 8192}], gpu="H100")
        self.assertTrue(str(e.exception).startswith("unknown setting 'ctx'"), str(e.exception))


class Tables(unittest.TestCase):
    def test_models(self):
        rc = subprocess.run([KVFIT, "--list"], capture_output=True, text=True)
        listed = [line.split()[0] for line in rc.stdout.splitlines()[1:]]
        self.assertEqual([m["name"] for m in kvfit.models()], listed)
        self.assertTrue(all(m["hf_id"] for m in kvfit.models()))

    def test_gpus(self):
        g = {x["name"]: x for x in kvfit.gpus()}
        self.assertIn("RTX 4060", g)
        # what CUDA reports (7782 MiB, an estimate from 8 GB siblings), beside nvidia-smi's 8188 MiB and the marketed 8 GB
        self.assertEqual(g["RTX 4060"]["memory_bytes"], 7782 << 20)
        self.assertEqual(g["RTX 4060"]["reported_bytes"], 8188 << 20)
        self.assertEqual(g["RTX 4060"]["marketed_gb"], 8)
        self.assertEqual(g["RTX 4060"]["vendor"], "NVIDIA")

    def test_version(self):
        out = subprocess.run([KVFIT, "--version"], capture_output=True, text=True).stdout.splitlines()[0]  # then the llama.cpp releases
        self.assertEqual(out, "kvfit " + kvfit.__version__)


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False, verbosity=1).result.wasSuccessful() else 1)
