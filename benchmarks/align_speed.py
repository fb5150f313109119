#!/usr/bin/env python
"""Word-alignment speed: ``veco-align`` vs SimAlign and awesome-align at equal model size.

Every aligner gets the *same* real En-De sentence pairs (the held-out split of
``veco-gettext-corpus``, whitespace-tokenized), a Transformer encoder of the *same*
shape with random weights, the *same* layer, and the same number of CPU threads;
each is timed end to end from whitespace-split text to word links (subword
tokenization, forward, link extraction, word-level links), model loading excluded.
The variants run in interleaved rounds (machine noise hits all alike) and each
figure is the median over rounds.

* ``veco-align``: ``veco_plugin.alignment.aligner.align_pairs`` on a ``veco``
  checkpoint written to disk and read back with ``load_encoder`` (as the console script
  does), methods ``ot`` (XLM-Align §3.1) and ``argmax``; batched pairs, one
  concatenated ``<s> x </s> <s> y </s>`` sequence per pair.
* SimAlign (``simalign.SentenceAligner``, PyPI ``simalign``): a Hugging Face
  ``XLMRobertaModel`` of the same shape saved with ``save_pretrained`` and its fast
  tokenizer built from the same sentencepiece model; matching methods ``a``
  (argmax) and ``i`` (itermax), subword level (``token_type="bpe"``). SimAlign has no
  batch API: it encodes one pair (two sentences) per call.
* awesome-align (``awesome_align.run_align.word_align``, PyPI ``awesome-align``, what
  its ``awesome-align`` CLI runs after loading): a BERT of the same shape, saved by
  ``transformers`` and loaded by awesome-align's own ``from_pretrained``, with a
  WordPiece vocabulary written from the sentencepiece pieces (``▁w`` -> ``w``, ``p``
  -> ``##p``); softmax extraction, threshold 1e-3, same batch size, no worker
  processes. It reads the pairs from a file and writes links to a file, as its CLI.

Work done differs in ways worth knowing: veco-align and awesome-align stop their forward
at the alignment layer, SimAlign runs every layer (``output_hidden_states``) and picks
one; veco-align encodes a pair as one sequence of n + m pieces, the peers encode the two
sentences apart.

With random weights the links are not meaningful; links and subword pieces per pair
are printed so the work each aligner did can be compared.

    python benchmarks/align_speed.py [--json PATH] [--pairs 500] \\
        [--layers 6 --dim 256 --ffn 1024 --heads 4 --vocab 8000] [--layer N] [--rounds 3]

The peers are benchmark extras: ``pip install -r benchmarks/requirements-align.txt``
(see that file). A peer that is not installed is reported as ``null``.
"""

import argparse
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from argparse import Namespace
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
from common import encoder_size_flags, write_json

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER_DIR = os.path.join(REPO, "veco_plugin")
BIN = os.path.dirname(sys.executable)

# nothing may be fetched from a hub: every model and tokenizer here is built locally
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

VECO_METHODS = ("ot", "argmax")
SIMALIGN_METHODS = {"argmax": "a", "itermax": "i"}


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--json", help="write the results (pairs/s, ratios, settings) here")
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--ffn", type=int, default=1024)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument(
        "--vocab", type=int, default=8000, help="sentencepiece pieces (ignored with --data)"
    )
    p.add_argument(
        "--layer",
        type=int,
        default=None,
        help="hidden layer every aligner reads (0 = embeddings); default the paper's depth, "
        "layer 8 of 12, as veco-align",
    )
    p.add_argument("--pairs", type=int, default=500, help="sentence pairs aligned per round")
    p.add_argument("--max-words", type=int, default=60, help="skip pairs with longer sides")
    p.add_argument("--batch-size", type=int, default=32, help="veco-align and awesome-align")
    p.add_argument("--rounds", type=int, default=3, help="timed rounds (median reported)")
    p.add_argument("--threads", type=int, default=1, help="torch and BLAS threads")
    p.add_argument(
        "--corpus",
        help="a veco-gettext-corpus output directory (default: built into the work dir)",
    )
    p.add_argument(
        "--data",
        help="a DATA dir of scripts/prepare-pretraining-data.sh: use its spm.model and "
        "dict.txt (default: a sentencepiece model of --vocab pieces trained on the corpus)",
    )
    p.add_argument("--peers", default="simalign,awesome", help="comma list; '' for none")
    p.add_argument("--workdir", help="keep models and files here (default: a temp dir)")
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args(argv)


# --- corpus and subwords ----------------------------------------------------------------


def gettext_corpus(out: str, tgt: str = "de") -> str:
    """Run ``veco-gettext-corpus`` into ``out`` unless it is already there."""
    if not os.path.isfile(os.path.join(out, f"test.{tgt}")):
        subprocess.run(
            [os.path.join(BIN, "veco-gettext-corpus"), "--tgt-lang", tgt, "--output", out],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return out


def read_pairs(
    corpus: str, splits: Sequence[str], n: int, max_words: int, src="en", tgt="de"
) -> Tuple[List[str], List[str]]:
    """Up to ``n`` pairs from ``splits`` in order, both sides 1..``max_words`` words."""
    src_lines: List[str] = []
    tgt_lines: List[str] = []
    for split in splits:
        with open(os.path.join(corpus, f"{split}.{src}"), encoding="utf-8") as fs, open(
            os.path.join(corpus, f"{split}.{tgt}"), encoding="utf-8"
        ) as ft:
            for s, t in zip(fs, ft):
                s, t = " ".join(s.split()), " ".join(t.split())
                if 0 < len(s.split()) <= max_words and 0 < len(t.split()) <= max_words:
                    src_lines.append(s)
                    tgt_lines.append(t)
                    if len(src_lines) == n:
                        return src_lines, tgt_lines
    return src_lines, tgt_lines


def train_sentencepiece(corpus: str, out: str, vocab: int) -> Tuple[str, str]:
    """``out/spm.model`` and ``out/dict.txt`` with the settings of
    ``scripts/prepare-pretraining-data.sh`` (joint unigram model, train sides)."""
    from veco_plugin.corpora.subwords import train_sentencepiece, write_dictionary

    model = os.path.join(out, "spm.model")
    if not os.path.isfile(model):
        files = [os.path.join(corpus, f"train.{lang}") for lang in ("en", "de")]
        train_sentencepiece(files, os.path.join(out, "spm"), vocab)
    write_dictionary(model, os.path.join(out, "dict.txt"))
    return model, os.path.join(out, "dict.txt")


# --- models of one shape ----------------------------------------------------------------


def write_veco_checkpoint(a, data_dir: str, path: str) -> None:
    """A ``veco`` model with random weights as a fairseq checkpoint (cfg + model) that
    ``veco_plugin.checkpoints.encoder.load_encoder`` reads like a trained one."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from omegaconf import OmegaConf

    args = options.parse_args_and_arch(
        options.get_training_parser(),
        [
            data_dir,
            "--user-dir",
            USER_DIR,
            "--task",
            "veco_pretraining",
            "--bi-pairs",
            "en-de",
            "--criterion",
            "ca_mlm",
            "--arch",
            "veco_base",
            "--max-positions",
            "512",
            "--cpu",
            *encoder_size_flags(a),
        ],
    )
    args.tpu = False
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    torch.manual_seed(a.seed)
    model = task.build_model(cfg.model)
    state = {
        "args": None,
        "cfg": OmegaConf.to_container(cfg, resolve=True, enum_to_str=True),
        "model": model.state_dict(),
        "optimizer_history": [
            {
                "criterion_name": "CaMlmCriterion",
                "optimizer_name": "none",
                "lr_scheduler_state": {},
                "num_updates": 0,
            }
        ],
        "extra_state": {"train_iterator": {"epoch": 1}},
        "last_optimizer_state": None,
    }
    torch.save(state, path)


def write_xlmr(a, spm_model: str, vocab_rows: int, out: str) -> str:
    """A random ``XLMRobertaModel`` of the benchmark's shape and its fast tokenizer (built
    from ``spm_model``), saved with ``save_pretrained`` into ``out``."""
    from transformers import AutoTokenizer, XLMRobertaConfig, XLMRobertaModel, XLMRobertaTokenizer

    os.makedirs(out, exist_ok=True)
    XLMRobertaTokenizer(vocab_file=spm_model, model_max_length=512).save_pretrained(out)
    fast = AutoTokenizer.from_pretrained(out)  # converts once (protobuf); writes tokenizer.json
    fast.save_pretrained(out)
    config = XLMRobertaConfig(
        vocab_size=max(vocab_rows, len(fast)),
        hidden_size=a.dim,
        num_hidden_layers=a.layers,
        num_attention_heads=a.heads,
        intermediate_size=a.ffn,
        hidden_act="gelu",
        max_position_embeddings=514,
        type_vocab_size=1,
        pad_token_id=fast.pad_token_id,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
    )
    torch.manual_seed(a.seed)
    XLMRobertaModel(config).save_pretrained(out)
    return out


def wordpiece_vocab(dict_path: str) -> List[str]:
    """A BERT WordPiece vocabulary from sentencepiece pieces: ``▁w`` starts a word (``w``),
    any other piece ``p`` continues one (``##p``)."""
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    seen = set(vocab)
    with open(dict_path, encoding="utf-8") as f:
        for line in f:
            piece = line.split(" ", 1)[0]
            token = piece[1:] if piece.startswith("\u2581") else "##" + piece
            if token and token != "##" and token not in seen:
                seen.add(token)
                vocab.append(token)
    return vocab


def write_bert(a, dict_path: str, out: str) -> str:
    """A random ``BertForMaskedLM`` of the benchmark's shape (``save_pretrained``, PyTorch
    weights: awesome-align's loader reads ``pytorch_model.bin``) and its ``vocab.txt``."""
    from transformers import BertConfig, BertForMaskedLM

    os.makedirs(out, exist_ok=True)
    vocab = wordpiece_vocab(dict_path)
    with open(os.path.join(out, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"do_lower_case": False}, f)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=a.dim,
        num_hidden_layers=a.layers,
        num_attention_heads=a.heads,
        intermediate_size=a.ffn,
        hidden_act="gelu",
        max_position_embeddings=512,
        pad_token_id=0,
    )
    torch.manual_seed(a.seed)
    BertForMaskedLM(config).save_pretrained(out, safe_serialization=False)
    return out


def forward_params(model: torch.nn.Module, skip: Sequence[str] = ()) -> int:
    return sum(p.numel() for n, p in model.named_parameters() if not any(s in n for s in skip))


# --- aligners: each returns ``run() -> List[str]`` (Pharaoh lines) ----------------------


class Aligner:
    def __init__(self, name: str, run: Callable[[], List[str]], pieces: float, params: int):
        self.name, self.run, self.pieces, self.params = name, run, pieces, params


def veco_aligners(
    a, ckpt: str, dict_path: str, spm_model: str, src: List[str], tgt: List[str], layer: int
) -> List[Aligner]:
    from veco_plugin.alignment.aligner import align_pairs, encode_pairs, word_pieces
    from veco_plugin.checkpoints.encoder import load_encoder

    model, dictionary = load_encoder(ckpt, dict_path)
    pieces = word_pieces(spm_model=spm_model)
    encoded, _ = encode_pairs(src, tgt, pieces, dictionary, int(model.max_positions()))
    per_pair = statistics.mean(len(x.ids) + len(y.ids) for x, y in encoded)
    params = forward_params(model.encoder.sentence_encoder, skip=("cross", "lm_head"))

    def make(method):
        return lambda: align_pairs(
            model, dictionary, pieces, src, tgt, layer=layer, method=method,
            batch_size=a.batch_size,
        )  # fmt: skip

    return [Aligner(f"veco-align {m}", make(m), per_pair, params) for m in VECO_METHODS]


def simalign_aligners(xlmr_dir: str, src: List[str], tgt: List[str], layer: int) -> List[Aligner]:
    from simalign import SentenceAligner

    logging.getLogger("simalign.simalign").setLevel(logging.WARNING)  # its own INFO handler
    out = []
    for label, code in SIMALIGN_METHODS.items():
        aligner = SentenceAligner(
            model=xlmr_dir, token_type="bpe", matching_methods=code, device="cpu", layer=layer
        )
        key = {"a": "inter", "i": "itermax"}[code]

        def run(aligner=aligner, key=key):
            lines = []
            for s, t in zip(src, tgt):
                links = aligner.get_word_aligns(s.split(), t.split())[key]
                lines.append(" ".join(f"{i}-{j}" for i, j in links))
            return lines

        tok = aligner.embed_loader.tokenizer
        per_pair = statistics.mean(
            sum(len(tok.tokenize(w)) for w in s.split() + t.split()) for s, t in zip(src, tgt)
        )
        params = forward_params(aligner.embed_loader.emb_model, skip=("pooler",))
        out.append(Aligner(f"SimAlign {label}", run, per_pair, params))
    return out


def awesome_aligner(
    a, bert_dir: str, src: List[str], tgt: List[str], layer: int, workdir: str
) -> Aligner:
    from awesome_align import modeling
    from awesome_align.configuration_bert import BertConfig
    from awesome_align.modeling import BertForMaskedLM
    from awesome_align.run_align import word_align
    from awesome_align.tokenization_bert import BertTokenizer

    # what awesome-align's main() does before word_align, with a local model
    config = BertConfig.from_pretrained(bert_dir)
    tokenizer = BertTokenizer.from_pretrained(bert_dir)
    modeling.PAD_ID = tokenizer.pad_token_id
    modeling.CLS_ID = tokenizer.cls_token_id
    modeling.SEP_ID = tokenizer.sep_token_id
    model = BertForMaskedLM.from_pretrained(bert_dir, config=config)
    data_file = os.path.join(workdir, "pairs.src-tgt")
    with open(data_file, "w", encoding="utf-8") as f:
        f.writelines(f"{s} ||| {t}\n" for s, t in zip(src, tgt))
    args = Namespace(
        data_file=data_file,
        output_file=os.path.join(workdir, "awesome.align"),
        align_layer=layer,
        extraction="softmax",
        softmax_threshold=0.001,
        output_prob_file=None,
        output_word_file=None,
        batch_size=a.batch_size,
        num_workers=0,
        device=torch.device("cpu"),
    )

    def run():
        word_align(args, model, tokenizer)
        with open(args.output_file, encoding="utf-8") as f:
            return f.read().splitlines()

    per_pair = statistics.mean(
        sum(len(tokenizer.tokenize(w)) for w in s.split() + t.split()) for s, t in zip(src, tgt)
    )
    params = forward_params(model.bert, skip=("pooler",))
    return Aligner("awesome-align", run, per_pair, params)


# --- timing -----------------------------------------------------------------------------


def time_rounds(aligners: Sequence[Aligner], rounds: int, quiet: Callable) -> Dict[str, Dict]:
    """Warm up once, then ``rounds`` interleaved rounds; median seconds per aligner."""
    seconds: Dict[str, List[float]] = {x.name: [] for x in aligners}
    links: Dict[str, float] = {}
    for r in range(rounds + 1):
        for x in aligners:
            start = time.perf_counter()
            with quiet():
                lines = x.run()
            elapsed = time.perf_counter() - start
            if r == 0:
                links[x.name] = statistics.mean(len(line.split()) for line in lines)
            else:
                seconds[x.name].append(elapsed)
    return {
        x.name: {"seconds": statistics.median(seconds[x.name]), "links": links[x.name]}
        for x in aligners
    }


class _Quiet:
    """Silence stdout and stderr (awesome-align prints while reading its file and draws a
    progress bar)."""

    def __enter__(self):
        self._saved = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = open(os.devnull, "w")

    def __exit__(self, *exc):
        sys.stdout.close()
        sys.stdout, sys.stderr = self._saved


def main(argv=None):
    a = parse_args(argv)
    torch.set_num_threads(a.threads)
    from threadpoolctl import threadpool_limits

    threadpool_limits(a.threads)
    logging.basicConfig(level=logging.WARNING, force=True)
    for name in ("awesome_align", "transformers"):  # config dumps, per-load info
        logging.getLogger(name).setLevel(logging.WARNING)
    from fairseq import utils

    utils.import_user_module(Namespace(user_dir=USER_DIR))
    from veco_plugin.models.layer_spec import default_layer

    layer = default_layer("align", a.layers) if a.layer is None else a.layer
    peers = [p for p in a.peers.split(",") if p]
    wall = time.perf_counter()
    work = a.workdir or tempfile.mkdtemp(prefix="align-speed-")
    os.makedirs(work, exist_ok=True)
    try:
        corpus = a.corpus or gettext_corpus(os.path.join(work, "corpus"))
        src, tgt = read_pairs(corpus, ("test", "valid", "train"), a.pairs, a.max_words)
        if a.data:
            spm_model, dict_path = os.path.join(a.data, "spm.model"), os.path.join(
                a.data, "dict.txt"
            )
        else:
            spm_model, dict_path = train_sentencepiece(corpus, work, a.vocab)
        ckpt = os.path.join(work, "veco.pt")
        write_veco_checkpoint(a, os.path.dirname(dict_path), ckpt)
        aligners = veco_aligners(a, ckpt, dict_path, spm_model, src, tgt, layer)
        with open(dict_path, encoding="utf-8") as f:
            vocab_rows = sum(1 for _ in f) + 5  # + <s> <pad> </s> <unk> and <mask>
        missing: Dict[str, str] = {}
        if "simalign" in peers:
            try:
                xlmr = write_xlmr(a, spm_model, vocab_rows, os.path.join(work, "xlmr"))
                aligners += simalign_aligners(xlmr, src, tgt, layer)
            except ImportError as exc:
                missing["simalign"] = f"{type(exc).__name__}: {exc}"
        if "awesome" in peers:
            try:
                bert = write_bert(a, dict_path, os.path.join(work, "bert"))
                aligners.append(awesome_aligner(a, bert, src, tgt, layer, work))
            except ImportError as exc:
                missing["awesome"] = f"{type(exc).__name__}: {exc}"
        for name, why in missing.items():
            print(f"{name}: not run ({why}); pip install -r benchmarks/requirements-align.txt")
        r = time_rounds(aligners, a.rounds, _Quiet)
    finally:
        if not a.workdir:
            shutil.rmtree(work, ignore_errors=True)
    wall = time.perf_counter() - wall

    pps = {name: len(src) / m["seconds"] for name, m in r.items()}
    print(
        f"\nword alignment, {len(src)} En-De gettext pairs, {a.layers} layers x {a.dim} hidden "
        f"(ffn {a.ffn}, {a.heads} heads), layer {layer}, {a.threads} thread(s), median of "
        f"{a.rounds} rounds"
    )
    print(f"{'aligner':<22}{'pairs/s':>9}{'s/round':>9}{'pieces/pair':>13}{'links/pair':>12}"
          f"{'params':>10}")  # fmt: skip
    by_name = {x.name: x for x in aligners}
    for name, m in r.items():
        x = by_name[name]
        print(
            f"{name:<22}{pps[name]:>9.1f}{m['seconds']:>9.2f}{x.pieces:>13.1f}"
            f"{m['links']:>12.1f}{x.params / 1e6:>9.2f}M"
        )
    peer_names = [n for n in r if not n.startswith("veco-align")]
    ratios: Dict[str, Optional[float]] = {}
    for method in VECO_METHODS:
        for peer in ("SimAlign argmax", "SimAlign itermax", "awesome-align"):
            key = f"veco_{method}_over_{peer.lower().replace(' ', '_').replace('-', '_')}"
            ours = pps[f"veco-align {method}"]
            ratios[key] = ours / pps[peer] if peer in pps else None
    print("\nratios (veco-align pairs/s / peer pairs/s; > 1: veco-align is faster)")
    for key, value in ratios.items():
        print(f"{key:<44} {'null' if value is None else f'{value:.2f}'}")
    print(f"\nwall time {wall:.0f} s")
    result = {
        "pairs_per_second": pps,
        "seconds_per_round": {n: m["seconds"] for n, m in r.items()},
        "links_per_pair": {n: m["links"] for n, m in r.items()},
        "pieces_per_pair": {n: by_name[n].pieces for n in r},
        "ratios": ratios,
        "peers_not_run": missing,
        "peers_run": peer_names,
        "settings": {
            "pairs": len(src),
            "layers": a.layers,
            "dim": a.dim,
            "ffn": a.ffn,
            "heads": a.heads,
            "layer": layer,
            "batch_size": a.batch_size,
            "rounds": a.rounds,
            "threads": a.threads,
            "torch": torch.__version__,
        },
        "wall_seconds": wall,
    }
    if a.json:
        write_json(a.json, result)
    return result


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
