"""A checkpoint as a ``veco_sentence_prediction`` classifier, whatever trained it.

* A ``veco_sentence_prediction`` checkpoint (``fairseq-train --task
  veco_sentence_prediction``) loads as fairseq loads it, DATA overriding its ``--data``.
* A fine-tuned fairseq RoBERTa/XLM-R classifier (``model.pt`` holding
  ``classification_heads.<name>.*``: VECO's released NLU model or any
  ``XLMRobertaForSequenceClassification`` after ``veco-import-hf``) loads as a plug-out
  ``veco_sentence_prediction`` model of the same sizes: the encoder, LM head and
  classification head copied exactly (``load_xlmr_into_veco``), the cross-attention left
  at its initialization. Plug-out, the forward is RoBERTa's, so the classifier computes
  what the released model computes.
"""

import logging
from typing import Any, Dict, Optional, Tuple

from fairseq import checkpoint_utils, options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

from ..errors import VecoUserError
from .config import cfg_value, checkpoint_model_cfg
from .encoder import read_checkpoint

logger = logging.getLogger(__name__)

TASK = "veco_sentence_prediction"
HEADS = "classification_heads."

# what every refusal of an unreadable classifier checkpoint ends with
CLASSIFIER_FIX = (
    f"give a complete fine-tuned checkpoint (fairseq-train --task {TASK}'s checkpoint_best.pt, "
    "or veco-import-hf's model.pt of a sequence-classification model)"
)


def load_classifier(path: str, data: str, named: Optional[str] = None) -> Tuple[Any, Any, Any]:
    """``(model, cfg, task)`` of the classifier in ``path``, evaluating on DATA
    (``veco-prepare-sentence-prediction``'s layout); the model is in eval mode. ``named``:
    how the user gave ``path`` (default ``--path PATH``), at the start of every refusal."""
    # read once, DATA overriding the saved --data
    state = read_checkpoint(path, named, CLASSIFIER_FIX, {"data": data})
    task_name = cfg_value(cfg_value(state.get("cfg"), "task"), "_name")
    if task_name is None:
        task_name = cfg_value(state.get("args"), "task")
    if task_name == TASK:
        models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([path], state=state)
        return models[0].eval(), cfg, task
    return _from_roberta(path, state, data)


def _head(path: str, weights: Dict[str, Any]) -> Tuple[str, int]:
    """The one classification head of a RoBERTa state: its name and class count."""
    names = sorted({k[len(HEADS) :].split(".")[0] for k in weights if k.startswith(HEADS)})
    if not names:
        raise VecoUserError(
            f"{path} has no classification head (a pre-trained model, not a classifier): "
            "fine-tune it first (fairseq-train --task veco_sentence_prediction "
            f"--pretrained-xlmr {path} ...), then evaluate that checkpoint"
        )
    if len(names) > 1:
        raise VecoUserError(
            f"{path} has {len(names)} classification heads ({', '.join(names)}): "
            "keep one (the task's) in the checkpoint"
        )
    return names[0], int(weights[f"{HEADS}{names[0]}.out_proj.weight"].size(0))


def _from_roberta(path: str, state: Dict[str, Any], data: str) -> Tuple[Any, Any, Any]:
    from ..models.veco import load_xlmr_into_veco

    model_cfg = checkpoint_model_cfg(state)
    arch = cfg_value(model_cfg, "arch", "") or cfg_value(model_cfg, "_name", "")
    if not (arch.startswith("roberta") or arch.startswith("xlmr")):
        raise VecoUserError(
            f"{path}: a {arch or 'unknown'} checkpoint, not a classifier: fine-tune it first "
            f"(fairseq-train DATA --task {TASK} --restore-file {path} --reset-optimizer ...) "
            "and evaluate that checkpoint, or give a fine-tuned RoBERTa/XLM-R classifier "
            "(veco-import-hf's model.pt of a sequence-classification model)"
        )
    head, classes = _head(path, state["model"])
    sizes = {
        "encoder_layers": cfg_value(model_cfg, "encoder_layers"),
        "encoder_embed_dim": cfg_value(model_cfg, "encoder_embed_dim"),
        "encoder_ffn_embed_dim": cfg_value(model_cfg, "encoder_ffn_embed_dim"),
        "encoder_attention_heads": cfg_value(model_cfg, "encoder_attention_heads"),
        "activation_fn": cfg_value(model_cfg, "activation_fn", "gelu"),
        "pooler_activation_fn": cfg_value(model_cfg, "pooler_activation_fn", "tanh"),
        "max_positions": cfg_value(model_cfg, "max_positions", 512),
    }
    flags = {
        "task": TASK,
        "criterion": TASK,
        "arch": "veco_base",
        "num_classes": classes,
        "classification_head_name": head,
        "init_token": 0,
        "separator_token": 2,
        **{k: v for k, v in sizes.items() if v is not None},
    }
    argv = [data] + [a for k, v in flags.items() for a in (f"--{k.replace('_', '-')}", str(v))]
    cfg = convert_namespace_to_omegaconf(
        options.parse_args_and_arch(options.get_training_parser(), argv)
    )
    task = tasks.setup_task(cfg.task)
    symbols = task.label_dictionary.symbols[task.label_dictionary.nspecial :]
    labels = len([s for s in symbols if s != "<mask>"])  # the task adds <mask> to every dict
    if labels != classes:
        raise VecoUserError(
            f"{path}: its head '{head}' has {classes} classes, {data}/label/dict.txt has "
            f"{labels}: evaluate on the data of the task the model was fine-tuned for"
        )
    model = task.build_model(cfg.model)
    load_xlmr_into_veco(model, state["model"], path)
    logger.info("%s: a RoBERTa/XLM-R classifier, read plug-out (head '%s')", path, head)
    return model.eval(), cfg, task
