"""kvfit: does this LLM, at this context length, fit my GPUs?

    >>> import kvfit
    >>> p = kvfit.plan("Qwen3.5-9B", gpu="RTX 4060", ctx_size=32768, cache_type_k="q8_0")
    >>> p["fits"], p["context_tokens"], p["kv_bytes_per_token"]

plan(model, **settings) returns the document ``kvfit MODEL --json`` prints for the same inputs (docs/json.md).
``model`` is what the CLI takes: a catalog name (models()), a .gguf, a config.json, a model directory, or
hf:org/name. ``settings`` are the CLI's long flags in snake_case: gpu, weights, weights_size, runtime, strict,
and the runtime's own (llama.cpp: ctx_size, cache_type_k, cache_type_v, flash_attn, parallel, ubatch_size,
n_gpu_layers, ...; vLLM: max_model_len, tensor_parallel_size, ...). Numbers may be int; lists (ctx_size) a list.
Bad input raises kvfit.Error with the CLI's one-line message. plan_set([model, ...], **settings) plans several
models sharing the GPUs (``kvfit MODEL MODEL ... --json``).
"""
import json as _json

from . import _kvfit

Error = _kvfit.Error
__version__ = _kvfit.__version__


def plan(model, **settings):
    """The CLI's --json document for MODEL and these settings, as a dict."""
    return _json.loads(_kvfit.plan_json(str(model), _json.dumps(settings)))


def plan_set(models, **settings):
    """The CLI's --json set document for several models sharing the GPUs (``kvfit MODEL MODEL ... --json``,
    docs/sets.md), as a dict. ``models``: names or paths as plan() takes them, or dicts of one model's own settings
    ({"model": "Qwen3-8B", "ctx_size": 8192}), a dict's ``weight`` its share of the joint context solve
    (``MODEL@weight=2``); ``settings`` apply to every model, plus ``max_loaded`` (--models-max / --max-loaded-models)."""
    listed = [m if isinstance(m, dict) else str(m) for m in models]
    return _json.loads(_kvfit.plan_set_json(_json.dumps(listed), _json.dumps(settings)))


def models():
    """The built-in catalog: [{"name": ..., "hf_id": ...}] (kvfit --list)."""
    return _json.loads(_kvfit.models_json())


def gpus():
    """The GPU table: [{"name", "vendor", "arch", "memory_bytes", "compute_capability", ...}]."""
    return _json.loads(_kvfit.gpus_json())


__all__ = ["Error", "plan", "plan_set", "models", "gpus", "__version__"]
