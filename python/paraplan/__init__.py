"""paraplan from Python: the planner's estimates as dicts.

    import paraplan
    e = paraplan.evaluate("br166-ep16-mb2")           # a preset name or a strategy file
    e["tokens_per_device_per_s"], e["memory_bytes"]["total"]
    best = paraplan.search("default", top=5)          # ranked, best first

The dicts are the JSON of `paraplan evaluate --format json` and `paraplan rank --format
json` (DESIGN.md section 5 keys). Bad input raises ValueError with file:line:col messages.
"""

import json as _json

from . import _paraplan

__all__ = ["evaluate", "evaluate_yaml", "search", "presets", "__version__"]
__version__ = _paraplan.version()


def evaluate(strategy, sets=None):
    """One strategy (preset name or path), with optional `key=value` overrides."""
    return _json.loads(_paraplan.evaluate_json(strategy, list(sets or [])))


def evaluate_yaml(text, name="<string>"):
    """One strategy given as YAML text (its `hardware:` and `model:` name presets)."""
    return _json.loads(_paraplan.evaluate_yaml_json(text, name))


def search(space="default", sets=None, top=20, threads=0):
    """Rank a search space (preset name or path); the best `top` estimates, best first."""
    return _json.loads(_paraplan.search_json(space, list(sets or []), top, threads))["results"]


def presets():
    """Built-in presets as (name, description) pairs."""
    return list(_paraplan.presets())
