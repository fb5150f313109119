"""veco-export-hf, veco-import-hf, veco-sentence-eval and veco-prepare-sentence-prediction,
tried as a hostile user would.

One row per case: the command, its arguments (built from the module's inputs and the row's
own output path) and what the last line on stderr must say. Every row must end in
``PROG: error: ...`` with exit status 1, no traceback, and nothing under the row's output
path nor a stage (``.NAME.part-*``) beside it. The rows run in this process through each
command's ``cli_main`` (a console script costs a start-up of about 3 s on a loaded
machine); a few run as real console scripts to prove the same end to end, and Ctrl-C in
the middle of each writer leaves nothing behind.

The inputs, built once (about 5 s): a sentencepiece model with the frozen veco_tiny's
pieces and its dict.txt, XNLI-layout TSVs and their DATA, a veco_sentence_prediction
checkpoint after one update, a veco-init-nmt translation checkpoint, and veco_tiny
exported to a Hugging Face directory.
"""

import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Sequence

import pytest

from tests.helpers.refusals import last_line, refused
from tests.helpers.runner import REPO, USER_DIR, run, train_cfg
from veco_plugin.cli import export_hf, import_hf, init_nmt
from veco_plugin.cli import prepare_sentence_prediction as prepare_cli
from veco_plugin.cli import sentence_prediction_eval as eval_cli
from veco_plugin.corpora import xtreme
from veco_plugin.corpora.subwords import train_sentencepiece, write_dictionary
from veco_plugin.export import hf as export_lib
from veco_plugin.export import import_hf as import_lib

pytest.importorskip("transformers")

FROZEN = os.path.join(REPO, "tests", "fixtures", "checkpoints", "veco_tiny")
CKPT = os.path.join(FROZEN, "checkpoint.pt")
TEXT = os.path.join(REPO, "tests", "fixtures", "text")

COMMANDS = {
    "veco-export-hf": export_hf,
    "veco-import-hf": import_hf,
    "veco-sentence-eval": eval_cli,
    "veco-prepare-sentence-prediction": prepare_cli,
}

# ---------------------------------------------------------------------------- inputs


def _tsv(path: Path, rows: Sequence[Sequence[str]], header: bool = True) -> str:
    lines = (["premise\thypothesis\tlabel"] if header else []) + ["\t".join(r) for r in rows]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


@dataclass
class Inputs:
    root: Path
    spm: str
    dict: str
    train: str  # XNLI layout, labels 0 and 1, a header
    train_de: str  # its line-aligned translation
    test: str
    data: str  # DATA of train (+ translation), valid, test_en
    data3: str  # DATA whose train split has three labels
    classifier: str  # veco_sentence_prediction, 2 classes, one update
    nmt: str  # veco-init-nmt of veco_tiny
    hf: str  # veco_tiny exported
    other_spm: str  # a sentencepiece model of other text (pieces veco_tiny lacks)
    data_other: str  # DATA binarized with other_spm and its dictionary

    def file(self, name: str, data: bytes = b"x\n") -> str:
        path = self.root / "files" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return str(path)

    def dir(self, name: str) -> str:
        path = self.root / "dirs" / name
        path.mkdir(parents=True, exist_ok=True)
        return str(path)

    def dict_plus(self, name: str, line: bytes) -> str:
        """``name/dict.txt``: the dictionary and ``line``."""
        return self.file(f"{name}/dict.txt", Path(self.dict).read_bytes() + line)

    def dict_head(self, name: str, n: int) -> str:
        """``name/dict.txt``: the dictionary's first ``n`` lines."""
        lines = Path(self.dict).read_bytes().splitlines(keepends=True)
        return self.file(f"{name}/dict.txt", b"".join(lines[:n]))

    def released(self, name: str) -> Path:
        """veco_tiny in the released XLM-R layout: model.pt, dict.txt, sentencepiece.bpe.model."""
        path = self.root / "released" / name
        path.mkdir(parents=True, exist_ok=True)
        for source, target in ((CKPT, "model.pt"), (self.dict, "dict.txt"),
                               (self.spm, "sentencepiece.bpe.model")):  # fmt: skip
            shutil.copy(source, path / target)
        return path

    def existing(self, name: str, tokens, labels: bytes) -> str:
        """A DATA directory with these dictionaries (``tokens`` None: veco_tiny's)."""
        path = self.root / "existing" / name
        for key, data in (("input0", tokens or Path(self.dict).read_bytes()), ("label", labels)):
            (path / key).mkdir(parents=True, exist_ok=True)
            (path / key / "dict.txt").write_bytes(data)
        return str(path)

    def unlabelled(self, split: str) -> str:
        """DATA without the labels of ``split``."""
        path = self.root / "unlabelled" / split
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(self.data, path)
        for suffix in (".bin", ".idx"):
            (path / "label" / f"{split}{suffix}").unlink()
        return str(path)

    def tsv(self, name: str, text: str) -> str:
        return self.file(name, text.encode("utf-8"))

    def truncated(self, path: str, name: str) -> str:
        data = Path(path).read_bytes()
        return self.file(name, data[: len(data) // 2])

    def hf_copy(self, name: str, **files: object) -> str:
        """The export with ``files`` ({file name with '.' as '__': bytes, a config dict
        merged over config.json, or None to remove it}) changed."""
        path = self.root / "hf_copies" / name
        shutil.rmtree(path, ignore_errors=True)  # a row's inputs are built again end to end
        shutil.copytree(self.hf, path)
        for key, value in files.items():
            target = path / key.replace("__", ".")
            if value is None:
                target.unlink()
            elif isinstance(value, dict):
                config = json.loads(target.read_text(encoding="utf-8"))
                target.write_text(json.dumps({**config, **value}), encoding="utf-8")
            else:
                assert isinstance(value, bytes)
                target.write_bytes(value)
        return str(path)


def _classifier(data: str, save_dir: Path) -> str:
    """fairseq-train --task veco_sentence_prediction for one update, in this process."""
    from fairseq_cli import train

    args = [
        data, "--user-dir", USER_DIR, "--task", "veco_sentence_prediction",
        "--criterion", "veco_sentence_prediction", "--num-classes", "2", "--init-token", "0",
        "--separator-token", "2", "--max-positions", "96", "--shorten-method", "truncate",
        "--arch", "veco_tiny", "--cpu", "--optimizer", "adam", "--lr", "1e-4",
        "--batch-size", "8", "--max-update", "1", "--save-dir", save_dir, "--num-workers", "0",
        "--no-epoch-checkpoints", "--disable-validation", "--no-progress-bar",
    ]  # fmt: skip
    train.main(train_cfg(args))
    return str(save_dir / "checkpoint_last.pt")


def _ok(module, argv: List[str]) -> None:
    try:
        module.cli_main([str(a) for a in argv])
    except SystemExit as exc:  # run_cli exits only on an error
        raise AssertionError(f"{module.__name__} {argv} exited {exc.code}") from None


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Inputs:
    root = tmp_path_factory.mktemp("hostile_hf_sentence")
    texts = [
        os.path.join(TEXT, f"{kind}.{lang}")
        for kind in ("train", "mono")
        for lang in "en de".split()
    ]
    spm = train_sentencepiece(texts, str(root / "spm"), 300)  # veco_tiny's pieces
    dict_txt = str(shutil.copy(os.path.join(FROZEN, "dict.txt"), root / "dict.txt"))
    en = Path(TEXT, "train.en").read_text(encoding="utf-8").splitlines()[:40]
    de = Path(TEXT, "train.de").read_text(encoding="utf-8").splitlines()[:40]
    pairs = [(i, (i + i % 2) % 40) for i in range(40)]  # label 0: a sentence with itself
    train = _tsv(root / "train.tsv", [(en[i], en[j], str(i % 2)) for i, j in pairs])
    train_de = _tsv(root / "train.de.tsv", [(de[i], de[j], str(i % 2)) for i, j in pairs])
    test = _tsv(root / "test.tsv", [(en[i], en[j], str(i % 2)) for i, j in pairs[:10]])
    three = _tsv(root / "three.tsv", [(en[i], en[j], str(i % 3)) for i, j in pairs])
    data, data3 = str(root / "data"), str(root / "data3")
    splits = {"train": (train, train_de), "valid": (test, None), "test_en": (test, None)}
    xtreme.prepare(data, splits, "xnli", spm, dict_txt)
    xtreme.prepare(data3, {"train": (three, None)}, "xnli", spm, dict_txt)
    classifier = _classifier(data, root / "classifier")
    nmt, hf = root / "nmt.pt", root / "hf"
    _ok(init_nmt, ["--pretrained", os.path.join(FROZEN, "checkpoint.pt"), "--output", nmt])
    _ok(export_hf, ["--path", os.path.join(FROZEN, "checkpoint.pt"), "--spm-model", spm,
                    "--output", hf])  # fmt: skip
    other_spm = train_sentencepiece([os.path.join(TEXT, "valid.de")], str(root / "other"), 120)
    write_dictionary(other_spm, str(root / "other.dict.txt"))
    data_other = str(root / "data_other")
    xtreme.prepare(data_other, {"test_en": (test, None), "train": (train, None)}, "xnli",
                   other_spm, str(root / "other.dict.txt"))  # fmt: skip
    return Inputs(root, spm, dict_txt, train, train_de, test, data, data3, classifier,
                  str(nmt), str(hf), other_spm, data_other)  # fmt: skip


# ---------------------------------------------------------------------------- rows


@dataclass
class Row:
    id: str
    prog: str
    argv: Callable[[Inputs, str], List[object]]  # (inputs, the row's output path)
    expect: Sequence[str]  # substrings of the last stderr line (after "PROG: error: ")


LATIN1_LINE = "caf\u00e9 1\n".encode("latin-1")
LATIN1 = "premise\thypothesis\tlabel\ncaf\u00e9 au lait\tdu lait\t1\n".encode("latin-1")


def _export(i: Inputs, *flags) -> List[object]:
    return ["--path", CKPT, "--spm-model", i.spm, *flags]


def _prep(i: Inputs, out: str, *splits: str, layout="xnli", spm=None, dict_txt=None) -> List:
    argv = ["--layout", layout, "--spm-model", spm or i.spm, "--dict", dict_txt or i.dict]
    return argv + ["--output", out] + [a for split in splits for a in ("--split", split)]


def _eval(i: Inputs, *flags) -> List[object]:
    return ["--data", i.data, "--checkpoint", f"a={i.classifier}", "--splits", "test_en", *flags]


EXPORT = [
    Row("path-missing", "veco-export-hf",
        lambda i, o: ["--path", i.root / "no.pt", "--output", o],
        ["--path", "no.pt: no such file"]),
    Row("path-directory", "veco-export-hf",
        lambda i, o: ["--path", FROZEN, "--output", o], ["is a directory", "checkpoint.pt"]),
    Row("path-text", "veco-export-hf",
        lambda i, o: ["--path", i.file("notes.pt", b"hello\n"), "--spm-model", i.spm,
                      "--output", o],
        ["--path", "notes.pt", "not a PyTorch checkpoint"]),
    Row("path-truncated", "veco-export-hf",
        lambda i, o: ["--path", i.truncated(CKPT, "half.pt"), "--spm-model", i.spm,
                      "--dict", i.dict, "--output", o], ["--path", "half.pt", "truncated"]),
    Row("path-translation-model", "veco-export-hf",
        lambda i, o: ["--path", i.nmt, "--spm-model", i.spm, "--dict", i.dict, "--output", o],
        ["--path", "nmt.pt", "translation", "pre-train"]),
    Row("path-classifier", "veco-export-hf",
        lambda i, o: ["--path", i.classifier, "--spm-model", i.spm, "--dict", i.dict,
                      "--output", o],
        ["--path", "checkpoint_last.pt", "veco_sentence_prediction", "pre-trained"]),
    Row("path-a-hugging-face-directory", "veco-export-hf",
        lambda i, o: ["--path", i.hf, "--output", o],
        ["--path", "is a Hugging Face model directory", "veco-import-hf"]),
    Row("output-holds-the-spm-model", "veco-export-hf",
        lambda i, o: ["--path", i.released("xlmr") / "model.pt", "--output", i.released("xlmr"),
                      "--overwrite"],
        ["--output", "holds --spm-model", "sentencepiece.bpe.model", "another --output"]),
    Row("output-a-file", "veco-export-hf",
        lambda i, o: _export(i, "--output", i.file("afile")),
        ["--output", "afile is a file, not a directory: give a directory"]),
    Row("output-under-a-file", "veco-export-hf",
        lambda i, o: _export(i, "--output", os.path.join(i.file("afile"), "sub")),
        ["--output", "afile is a file, not a directory"]),
    Row("output-not-empty", "veco-export-hf",
        lambda i, o: _export(i, "--output", os.path.dirname(i.file("full/x"))),
        ["--output", "is not empty: pass --overwrite"]),
    Row("spm-missing", "veco-export-hf",
        lambda i, o: ["--path", CKPT, "--spm-model", i.root / "no.model", "--output", o],
        ["--spm-model", "no.model: no such file"]),
    Row("spm-a-directory", "veco-export-hf",
        lambda i, o: ["--path", CKPT, "--spm-model", i.dir("spmdir"), "--output", o],
        ["--spm-model", "spmdir is a directory"]),
    Row("spm-not-a-model", "veco-export-hf",
        lambda i, o: ["--path", CKPT, "--spm-model", i.file("bad.model", b"hello"),
                      "--output", o],
        ["--spm-model", "bad.model: not a sentencepiece model", "give the sentencepiece model"]),
    Row("spm-of-another-dictionary", "veco-export-hf",
        lambda i, o: ["--path", CKPT, "--spm-model", i.other_spm, "--output", o],
        ["--spm-model", "pieces are not in the dictionary", "give the dict.txt"]),
    Row("dict-missing", "veco-export-hf",
        lambda i, o: _export(i, "--dict", i.root / "no.txt", "--output", o),
        ["--dict", "no.txt: no such file"]),
    Row("dict-not-utf8", "veco-export-hf",
        lambda i, o: _export(i, "--dict", i.dict_plus("d1", LATIN1_LINE), "--output", o),
        ["dict.txt:300: not valid UTF-8"]),
    Row("dict-of-another-model", "veco-export-hf",
        lambda i, o: _export(i, "--dict", i.dict_head("d2", 50), "--output", o),
        ["dict.txt", "does not fit the checkpoint's embeddings", "--dict"]),
    Row("dict-empty", "veco-export-hf",
        lambda i, o: _export(i, "--dict", i.file("d3/dict.txt", b""), "--output", o),
        ["dict.txt", "empty"]),
]  # fmt: skip

IMPORT = [
    Row("hf-dir-missing", "veco-import-hf",
        lambda i, o: [i.root / "no-hf", "--out", o], ["no-hf: no such directory"]),
    Row("hf-dir-a-file", "veco-import-hf",
        lambda i, o: [i.file("afile"), "--out", o], ["afile is a file: give the Hugging Face"]),
    Row("hf-dir-a-checkpoint", "veco-import-hf",
        lambda i, o: [CKPT, "--out", o], ["checkpoint.pt is a file", "veco-export-hf --path"]),
    Row("no-config", "veco-import-hf",
        lambda i, o: [i.hf_copy("c0", config__json=None), "--out", o], ["no config.json"]),
    Row("config-not-utf8", "veco-import-hf",
        lambda i, o: [i.hf_copy("c1", config__json='{"a": "caf\u00e9"}'.encode("latin-1")),
                      "--out", o], ["config.json: not JSON"]),
    Row("config-vocab-a-word", "veco-import-hf",
        lambda i, o: [i.hf_copy("c2", config__json={"vocab_size": "many"}), "--out", o],
        ["config.json: vocab_size 'many'", "whole number"]),
    Row("config-no-layers", "veco-import-hf",
        lambda i, o: [i.hf_copy("c3", config__json={"num_hidden_layers": 0}), "--out", o],
        ["config.json: num_hidden_layers 0", "1 or more"]),
    Row("config-hidden-null", "veco-import-hf",
        lambda i, o: [i.hf_copy("c4", config__json={"hidden_size": None}), "--out", o],
        ["config.json: hidden_size None"]),
    Row("config-heads-do-not-divide", "veco-import-hf",
        lambda i, o: [i.hf_copy("c5", config__json={"num_attention_heads": 3}), "--out", o],
        ["hidden_size 64 is not a multiple of num_attention_heads 3"]),
    Row("config-dropout-above-1", "veco-import-hf",
        lambda i, o: [i.hf_copy("c6", config__json={"hidden_dropout_prob": 2.0}), "--out", o],
        ["hidden_dropout_prob 2.0", "[0, 1)"]),
    Row("config-dropout-a-word", "veco-import-hf",
        lambda i, o: [i.hf_copy("c7", config__json={"classifier_dropout": "x"}), "--out", o],
        ["classifier_dropout 'x'"]),
    Row("weights-truncated", "veco-import-hf",
        lambda i, o: [i.hf_copy("w0", model__safetensors=b"\x10" * 200), "--out", o],
        ["model.safetensors: not a readable safetensors file"]),
    Row("shard-index-not-json", "veco-import-hf",
        lambda i, o: [i.hf_copy("w1", model__safetensors=None,
                                model__safetensors__index__json=b"{not json"), "--out", o],
        ["model.safetensors.index.json: not JSON"]),
    Row("shard-index-without-map", "veco-import-hf",
        lambda i, o: [i.hf_copy("w2", model__safetensors=None,
                                model__safetensors__index__json=b"{}"), "--out", o],
        ["model.safetensors.index.json: no weight_map"]),
    Row("tokenizer-json-a-list", "veco-import-hf",
        lambda i, o: [i.hf_copy("t0", tokenizer__json=b"[]"), "--out", o],
        ["tokenizer.json: no tokenizer model", "remove it"]),
    Row("out-a-file", "veco-import-hf",
        lambda i, o: [i.hf, "--out", i.file("afile")], ["--out", "afile is a file"]),
    Row("out-under-a-file", "veco-import-hf",
        lambda i, o: [i.hf, "--out", os.path.join(i.file("afile"), "x")],
        ["--out", "afile is a file, not a directory"]),
    Row("out-not-empty", "veco-import-hf",
        lambda i, o: [i.hf, "--out", os.path.dirname(i.file("full2/x"))],
        ["--out", "is not empty: pass --overwrite"]),
    Row("head-name-empty", "veco-import-hf",
        lambda i, o: [i.hf, "--out", o, "--classification-head-name", ""],
        ["--classification-head-name ''", "letters, digits"]),
]  # fmt: skip

EVALUATE = [
    Row("data-missing", "veco-sentence-eval",
        lambda i, o: ["--data", i.root / "no-data", "--checkpoint", f"a={i.classifier}"],
        ["--data", "no-data: no such directory", "veco-prepare-sentence-prediction"]),
    Row("data-a-file", "veco-sentence-eval",
        lambda i, o: ["--data", i.file("afile"), "--checkpoint", f"a={i.classifier}"],
        ["--data", "afile is a file"]),
    Row("data-not-binarized", "veco-sentence-eval",
        lambda i, o: ["--data", i.dir("empty-data"), "--checkpoint", f"a={i.classifier}"],
        ["--data", "has no input0/dict.txt"]),
    Row("checkpoint-without-name", "veco-sentence-eval",
        lambda i, o: ["--data", i.data, "--checkpoint", i.classifier], ["expected NAME=PATH"]),
    Row("checkpoint-a-directory", "veco-sentence-eval",
        lambda i, o: ["--data", i.data, "--checkpoint", f"a={os.path.dirname(i.classifier)}"],
        ["--checkpoint a=", "is a directory", "checkpoint_best.pt"]),
    Row("checkpoint-pretrained-encoder", "veco-sentence-eval",
        lambda i, o: ["--data", i.data, "--checkpoint", f"a={CKPT}", "--splits", "test_en"],
        [f"--checkpoint a={CKPT}", "veco_sentence_prediction"]),
    Row("checkpoint-translation-model", "veco-sentence-eval",
        lambda i, o: ["--data", i.data, "--checkpoint", f"a={i.nmt}", "--splits", "test_en"],
        ["--checkpoint a=", "nmt.pt", "veco_sentence_prediction"]),
    Row("checkpoint-truncated", "veco-sentence-eval",
        lambda i, o: ["--data", i.data, "--checkpoint",
                      f"a={i.truncated(i.classifier, 'half2.pt')}", "--splits", "test_en"],
        ["--checkpoint a=", "half2.pt", "truncated"]),
    Row("checkpoint-name-twice", "veco-sentence-eval",
        lambda i, o: _eval(i, "--checkpoint", f"a={i.classifier}"),
        ["--checkpoint a=", "the column a is taken"]),
    Row("checkpoint-other-label-count", "veco-sentence-eval",
        lambda i, o: ["--data", i.data3, "--checkpoint", f"a={i.classifier}", "--splits",
                      "train"], ["its head has 2 classes", "3 labels"]),
    Row("data-of-another-dictionary", "veco-sentence-eval",
        lambda i, o: ["--data", i.data_other, "--checkpoint", f"a={i.classifier}", "--splits",
                      "test_en"],
        ["--checkpoint a=", "its embeddings have 304 rows", "input0/dict.txt gives",
         "veco-prepare-sentence-prediction --dict"]),
    Row("splits-empty", "veco-sentence-eval",
        lambda i, o: _eval(i, "--splits", ""), ["--splits ''", "none empty"]),
    Row("splits-unknown", "veco-sentence-eval",
        lambda i, o: _eval(i, "--splits", "test_xx"),
        ["--splits test_xx", "no split 'test_xx'", "test_en, train, valid"]),
    Row("split-without-labels", "veco-sentence-eval",
        lambda i, o: ["--data", i.unlabelled("test_en"), "--checkpoint", f"a={i.classifier}",
                      "--splits", "test_en"],
        ["--splits test_en", "has no labels of test_en", "label/test_en.idx"]),
    Row("splits-twice", "veco-sentence-eval",
        lambda i, o: _eval(i, "--splits", "test_en,test_en"), ["test_en is named twice"]),
    Row("batch-size-0", "veco-sentence-eval",
        lambda i, o: _eval(i, "--batch-size", "0"), ["--batch-size 0: give 1 or more"]),
    Row("json-a-directory", "veco-sentence-eval",
        lambda i, o: _eval(i, "--json", i.dir("jsondir")),
        ["--json", "jsondir is a directory", "scores.json"]),
    Row("json-the-checkpoint", "veco-sentence-eval",
        lambda i, o: _eval(i, "--json", i.classifier), ["--json", "is a --checkpoint"]),
    Row("json-under-a-file", "veco-sentence-eval",
        lambda i, o: _eval(i, "--json", os.path.join(i.file("afile"), "s.json")),
        ["--json", "afile is a file, not a directory"]),
]  # fmt: skip

PREPARE = [
    Row("tsv-missing", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, f"train={i.root / 'no.tsv'}"), ["no.tsv: no such file"]),
    Row("tsv-not-utf8", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, f"train={i.file('latin1.tsv', LATIN1)}"),
        ["latin1.tsv line 2: not valid UTF-8", "save the file as UTF-8"]),
    Row("tsv-a-directory", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, f"train={i.dir('tsvdir')}"), ["tsvdir is a directory"]),
    Row("tsv-empty", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, "train=" + i.tsv("e.tsv", "")), ["e.tsv: no examples"]),
    Row("tsv-header-only", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, "train=" + i.tsv("h.tsv", "premise\thypothesis\tlabel\n")),
        ["h.tsv: no examples"]),
    Row("tsv-truncated-line", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, "train=" + i.tsv("cut.tsv", "a\tb\t0\nc\td")),
        ["cut.tsv:2: 2 tab-separated columns, the xnli layout has 3"]),
    Row("tsv-another-layout", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, "train=" + i.tsv("p.tsv", "id\tsentence1\tsentence2\tlabel\n")),
        ["p.tsv:1: 4 tab-separated columns, the xnli layout has 3", "--layout pawsx"]),
    Row("tsv-xtreme-unlabelled-test", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, f"train={i.train}", "test=" + i.tsv("t.tsv", "a\tb\n")),
        ["t.tsv:1: 2 columns (sentence1, sentence2) and no label", "XNLI-1.0/xnli.test.tsv"]),
    Row("label-empty", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, "train=" + i.tsv("l0.tsv", "a\tb\t0\nc\td\t ")),
        ["l0.tsv:2: an empty label"]),
    Row("label-with-a-space", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, "train=" + i.tsv("l1.tsv", "a\tb\t0\nc\td\tnot ok")),
        ["l1.tsv:2: label 'not ok' holds a space", "'not_ok'"]),
    Row("label-one-only", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, "train=" + i.tsv("l2.tsv", "a\tb\t0\nc\td\t0")),
        ["l2.tsv: every example is labelled '0'", "two labels"]),
    Row("label-unknown", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, f"train={i.train}", "test=" + i.tsv("u.tsv", "a\tb\tmaybe")),
        ["u.tsv: label 'maybe' does not occur in the train split"]),
    Row("translation-missing", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, f"train={i.train},{i.root / 'no.de.tsv'}"),
        ["no.de.tsv: no such file"]),
    Row("translation-not-aligned", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, f"train={i.train},{i.test}"),
        ["test.tsv: 10 examples", "line-aligned"]),
    Row("split-without-name", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, i.train), ["expected NAME=TSV"]),
    Row("split-no-train", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, f"test={i.train}"), ["--split train=TSV is needed"]),
    Row("split-twice", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, f"train={i.train}", f"train={i.test}"),
        ["--split train= is given twice"]),
    Row("split-name-a-path", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, f"train={i.train}", f"../up={i.test}"),
        ["--split ../up=", "becomes a file name"]),
    Row("split-three-files", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, f"train={i.train},{i.train_de},{i.test}"),
        ["at most one translation TSV"]),
    Row("spm-missing", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, f"train={i.train}", spm=i.root / "no.model"),
        ["no.model not found (--spm-model)"]),
    Row("dict-missing", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, f"train={i.train}", dict_txt=i.root / "no.txt"),
        ["--dict", "no.txt"]),
    Row("dict-not-utf8", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, f"train={i.train}", dict_txt=i.file("d4/dict.txt", LATIN1_LINE)),
        ["--dict", "dict.txt:1: not valid UTF-8"]),
    Row("dict-of-another-model", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, o, f"train={i.train}", dict_txt=i.file("d5/dict.txt", b"a 1\nb 1\n")),
        ["--dict", "are not in it", "give the dict.txt that goes with this sentencepiece"]),
    Row("output-of-another-dictionary", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, i.existing("d6", b"a 1\n", b"0 1\n1 1\n"), f"train={i.train}"),
        ["--output", "binarized with another dictionary than --dict", "a new --output"]),
    Row("output-of-other-labels", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, i.existing("d7", None, b"x 1\ny 1\n"), f"train={i.train}"),
        ["--output", "holds splits labelled x, y", "this train split has 0, 1"]),
    Row("output-a-file", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, i.file("afile"), f"train={i.train}"),
        ["--output", "afile is a file"]),
    Row("output-under-a-file", "veco-prepare-sentence-prediction",
        lambda i, o: _prep(i, os.path.join(i.file("afile"), "sub"), f"train={i.train}"),
        ["--output", "afile is a file, not a directory"]),
]  # fmt: skip

ROWS = EXPORT + IMPORT + EVALUATE + PREPARE


def _stages(directory: Path) -> List[str]:
    return [f for f in os.listdir(directory) if ".part" in f]


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.prog[5:]}:{r.id}" for r in ROWS])
def test_one_line(row, inputs, tmp_path, capsys):
    out = tmp_path / "out"
    last = refused(COMMANDS[row.prog], row.argv(inputs, str(out)), row.prog, capsys)
    for part in row.expect:
        assert part in last, (part, last)
    assert not out.exists() and not _stages(tmp_path)


# ---------------------------------------------------------------------------- end to end

SCRIPTS = {  # row id -> the real console script (the examples; ~3 s of CPU each)
    "path-translation-model": "veco-export-hf",
    "json-a-directory": "veco-sentence-eval",
    "tsv-not-utf8": "veco-prepare-sentence-prediction",
}


def test_console_scripts_end_in_one_line(inputs, tmp_path):
    rows = [r for r in ROWS if SCRIPTS.get(r.id) == r.prog]
    assert len(rows) == len(SCRIPTS)
    commands = [(r, [str(a) for a in r.argv(inputs, str(tmp_path / r.id))]) for r in rows]
    with ThreadPoolExecutor(2) as pool:
        procs = list(pool.map(lambda c: run(c[0].prog, c[1], check=False), commands))
    for (row, _), proc in zip(commands, procs):
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        last = last_line(proc.stderr)
        assert last.startswith(f"{row.prog}: error: "), proc.stderr[-3000:]
        assert all(part in last for part in row.expect), last
    assert not _stages(tmp_path) and not any((tmp_path / r.id).exists() for r, _ in commands)


# ---------------------------------------------------------------------------- Ctrl-C


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    "prog, module, function",
    [
        ("veco-export-hf", export_lib, "write_tokenizer"),  # after the weights are written
        ("veco-import-hf", import_lib, "build_model"),  # after dict.txt and the spm model
        ("veco-prepare-sentence-prediction", xtreme, "_binarize"),  # the first .bin
    ],
)
def test_ctrl_c_leaves_nothing(prog, module, function, inputs, tmp_path, monkeypatch):
    out = tmp_path / "new" / "out"  # its parent is made for it, and removed again
    argv = {
        "veco-export-hf": _export(inputs, "--output", out),
        "veco-import-hf": [inputs.hf, "--out", out],
        "veco-prepare-sentence-prediction": _prep(inputs, str(out), f"train={inputs.train}"),
    }[prog]
    monkeypatch.setattr(module, function, _interrupt)
    with pytest.raises(KeyboardInterrupt):
        COMMANDS[prog].cli_main([str(a) for a in argv])
    assert os.listdir(tmp_path) == []


def test_a_byte_order_mark_is_no_part_of_the_first_sentence(inputs, tmp_path):
    rows = Path(inputs.test).read_text(encoding="utf-8").splitlines()[1:]
    bom = tmp_path / "bom.tsv"
    bom.write_text("\ufeff" + "\n".join(rows) + "\n", encoding="utf-8")
    assert xtreme.read_tsv(str(bom), "xnli") == xtreme.read_tsv(inputs.test, "xnli")


def test_a_second_run_fills_the_directories(inputs, tmp_path):
    """What the checks let through still works: --overwrite replaces an export's files, a
    new DATA split joins an existing DATA, veco-sentence-eval writes its --json."""
    out = tmp_path / "hf"
    _ok(export_hf, _export(inputs, "--output", out))
    (out / "config.json").write_text("{}")
    _ok(export_hf, _export(inputs, "--output", out, "--overwrite"))
    assert json.loads((out / "config.json").read_text())["model_type"] == "xlm-roberta"
    data = tmp_path / "data"
    shutil.copytree(inputs.data, data)
    _ok(prepare_cli, _prep(inputs, str(data), f"train={inputs.train}", f"test_de={inputs.test}"))
    assert (data / "input0" / "test_de.bin").is_file() and (data / "trans0" / "train.bin").is_file()
    scores = tmp_path / "scores" / "s.json"
    _ok(eval_cli, ["--data", data, "--checkpoint", f"a={inputs.classifier}",
                   "--splits", "test_en,test_de", "--json", scores])  # fmt: skip
    assert set(json.loads(scores.read_text())["a"]) == {"test_en", "test_de"}
    assert not _stages(tmp_path) and not _stages(scores.parent)
