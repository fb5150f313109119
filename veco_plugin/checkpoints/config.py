"""Reading a fairseq checkpoint's configuration, whatever its age."""

from typing import Any, Dict


def checkpoint_model_cfg(state: Dict[str, Any]) -> Any:
    """The model config of a fairseq checkpoint: ``cfg.model``, else the legacy ``args``."""
    cfg = state.get("cfg")
    if cfg is not None and cfg.get("model") is not None:
        return cfg["model"]
    return state.get("args")


def cfg_value(cfg: Any, key: str, default: Any = None) -> Any:
    """``cfg.key`` of an argparse Namespace, dict or omegaconf config; ``default`` when
    ``cfg`` is None or the value is absent or None."""
    if cfg is None:
        return default
    try:
        value = getattr(cfg, key, None)
    except Exception:  # omegaconf struct mode raises on unknown keys
        value = None
    if value is None and hasattr(cfg, "get"):
        try:
            value = cfg.get(key)
        except Exception:
            value = None
    return default if value is None else value
