"""The corpus and vocabulary tools, tried as a hostile user would:
veco-gettext-corpus, veco-gettext-dictionary, veco-gettext-paraphrase, veco-init-nmt,
veco-reduce-vocab, veco-spm and veco-wmt14.

One row per case: the command, its arguments (words with ``{name}`` for the module's
inputs) and what the last line on stderr must say. Every row must end in
``PROG: error: ...`` with a non-zero exit, no traceback, nothing under the paths the row
names as outputs, and no ``.part``/``.tmp`` anywhere. The rows run in this process
through each command's ``cli_main`` (a console script costs a start-up of about 3 s on
a loaded machine); a few run as real console scripts to prove the same end to end, and
Ctrl-C is raised inside the writing of each multi-file output.
"""

import json
import os
import shutil
import struct
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Sequence

import pytest

from tests.helpers.catalogs import write_mo
from tests.helpers.refusals import refused
from tests.helpers.runner import REPO, run
from tests.helpers.wmt_fixture import build_wmt14_raw
from veco_plugin.cli import (
    gettext_corpus,
    gettext_dictionary,
    gettext_paraphrase,
    init_nmt,
    reduce_vocab,
    spm,
    wmt14,
)
from veco_plugin.corpora import gettext as gettext_lib
from veco_plugin.corpora import gettext_paraphrase as paraphrase_lib
from veco_plugin.corpora import wmt14 as wmt14_lib
from veco_plugin.corpora.text import write_lines
from veco_plugin.data.bilingual_dictionary import read_word_pairs
from veco_plugin.data.dictionary import load_dictionary
from veco_plugin.errors import VecoUserError

FROZEN = os.path.join(REPO, "tests", "fixtures", "checkpoints", "veco_tiny")
TEXT = os.path.join(REPO, "tests", "fixtures", "text")

COMMANDS = {
    "veco-gettext-corpus": gettext_corpus,
    "veco-gettext-dictionary": gettext_dictionary,
    "veco-gettext-paraphrase": gettext_paraphrase,
    "veco-init-nmt": init_nmt,
    "veco-reduce-vocab": reduce_vocab,
    "veco-spm": spm,
    "veco-wmt14": wmt14,
}

# ---------------------------------------------------------------------------- inputs

SENTENCES = [
    ("cannot open the file", "die Datei kann nicht geöffnet werden"),
    ("missing operand after the option", "fehlender Operand nach der Option"),
    ("invalid option given", "ungültige Option angegeben"),
    ("write error on standard output", "Schreibfehler auf der Standardausgabe"),
    ("the key was not found", "der Schlüssel wurde nicht gefunden"),
    ("signature verified successfully", "Unterschrift erfolgreich geprüft"),
]
WORDS = [("file", "Datei"), ("print", "Drucken"), ("open", "Öffnen"), ("save", "Speichern")]


def _catalog(k: int) -> Dict[str, str]:
    """Catalog ``k``: the sentences (made distinct per catalog) and the words."""
    entries = {f"{en} number {k}": f"{x} Nummer {k}" for en, x in SENTENCES}
    entries.update(dict(WORDS))
    return entries


def _paraphrase_corpus(root: Path, catalogs: Dict[str, List]) -> Path:
    """A veco-gettext-corpus output directory (de) holding ``catalogs``."""
    root.mkdir()
    pairs = [p for c in catalogs.values() for p in c]
    for split in ("train", "valid", "test"):
        write_lines(str(root / f"{split}.en"), (e for e, _ in pairs))
        write_lines(str(root / f"{split}.de"), (t for _, t in pairs))
    counts = {name: len(c) for name, c in catalogs.items()}
    splits = {s: {"pairs": len(pairs), "catalogs": counts} for s in ("train", "valid", "test")}
    (root / "catalogs.json").write_text(json.dumps({"splits": splits}), encoding="utf-8")
    return root


def build_inputs(root: Path) -> Dict[str, str]:
    """{name: path} of every input the rows use, made under ``root``."""
    paths: Dict[str, Path] = {"root": root}

    def put(name: str, data) -> None:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
        paths[name.replace(".", "_")] = path

    for k in range(6):
        write_mo(root / "locale" / "de" / "LC_MESSAGES" / f"domain{k}.mo", _catalog(k))
    for k in range(3):  # catalogs holding no entries
        write_mo(root / "locale_headers" / "de" / "LC_MESSAGES" / f"empty{k}.mo", {})
    put("locale_broken/de/LC_MESSAGES/garbage.mo", b"\x00\x01 not a catalog")
    put("locale_broken/de/LC_MESSAGES/short.mo", struct.pack("<I", 0x950412DE))
    for name in ("locale", "locale_headers", "locale_broken", "dir"):
        paths[name] = root / name
    (root / "dir").mkdir()
    put("file.txt", "a plain file\n")
    put("empty.txt", "")
    put("latin1.txt", "ein Satz\nein Caf\xe9\n".encode("latin-1"))

    frozen = Path(FROZEN, "dict.txt").read_text(encoding="utf-8").splitlines()
    put("dict.txt", "\n".join(frozen) + "\n")
    put("dict3.txt", "\n".join(frozen[:5] + ["foo bar 7"] + frozen[5:]) + "\n")
    put("dict_overwrite.txt", "\n".join(frozen + [frozen[0].split()[0] + " 9 #fairseq:overwrite"]))
    put("dict_latin1.txt", b"ok 3\ncaf\xe9 2\n")
    put("dict_nocount.txt", "ok 3\nno-count\n")
    symbols = [line.split()[0] for line in frozen]
    put("encoded.txt", " ".join(symbols[:20]) + "\n" + " ".join(symbols[10:30]) + "\n")
    put("foreign.txt", "zzq1 zzq2 zzq3\n")
    put("plain.gz", "not compressed\n")
    put("map_latin1.tsv", b"0\t0\t<s>\n1\t1\tcaf\xe9\n")
    put("words3.txt", "file Datei\nprint Drucken Druck\n")

    de_pairs = [(f"{en} {k}", f"{x} {k}") for k in range(2) for en, x in SENTENCES]
    corpus = _paraphrase_corpus(root / "corpus", {"a": de_pairs[:6], "b": de_pairs[6:]})
    report = json.loads((corpus / "catalogs.json").read_text(encoding="utf-8"))
    _paraphrase_corpus(root / "corpus_single", {f"c{k}": [p] for k, p in enumerate(de_pairs)})
    for name, damage in (
        ("corpus_badjson", {"catalogs.json": b"{not json"}),
        ("corpus_latin1json", {"catalogs.json": b"\xe9{}"}),
        ("corpus_nosplits", {"catalogs.json": b'{"tgt_lang": "de"}'}),
        ("corpus_short", {"test.de": "".join(f"{x}\n" for _, x in de_pairs[:-1]).encode()}),
        ("corpus_latin1", {"train.de": b"Caf\xe9\n" * len(de_pairs)}),
        ("corpus_fr", {"catalogs.json": json.dumps({"tgt_lang": "de", **report}).encode()}),
    ):
        shutil.copytree(corpus, root / name)
        for file, data in damage.items():
            (root / name / file).write_bytes(data)
    for name in ("corpus", "corpus_single", "corpus_badjson", "corpus_latin1json",
                 "corpus_nosplits", "corpus_short", "corpus_latin1", "corpus_fr"):  # fmt: skip
        paths[name] = root / name

    from veco_plugin.corpora.subwords import train_sentencepiece

    paths["spm"] = Path(train_sentencepiece([f"{TEXT}/train.en"], str(root / "spm"), 120))
    put("ref.txt", "ein Satz\nnoch ein Satz\n")
    put("gen.txt", "H-0\t-0.1\t▁ein ▁Satz\nH-1\t-0.1\t▁noch ▁ein ▁Satz\n")
    build_wmt14_raw(str(root / "raw"), n_train=12, n_dev=4, n_test=4, extracted=True,
                    locale_dir=str(root / "locale"))  # fmt: skip
    paths["raw"] = root / "raw"

    (root / "pre").mkdir()  # a copy of the frozen checkpoint (a row tries to overwrite it)
    for name in ("checkpoint.pt", "dict.txt"):
        shutil.copy(os.path.join(FROZEN, name), root / "pre" / name)
    paths["pre"] = root / "pre" / "checkpoint.pt"
    paths["pre_dict"] = root / "pre" / "dict.txt"
    import torch

    torch.save({"weights": torch.zeros(2)}, root / "plain.pt")
    paths["plain"] = root / "plain.pt"
    paths["nmt_pt"] = root / "nmt_init" / "init.pt"  # a translation checkpoint
    init_nmt.main(init_nmt.get_parser().parse_args(
        ["--pretrained", str(paths["pre"]), "--output", str(paths["nmt_pt"])]))  # fmt: skip
    data = paths["pre"].read_bytes()
    put("trunc/checkpoint.pt", data[: len(data) // 2])
    paths["trunc"] = root / "trunc" / "checkpoint.pt"
    return {k: str(v) for k, v in paths.items()}


@pytest.fixture(scope="module")
def p(tmp_path_factory) -> Dict[str, str]:
    return build_inputs(tmp_path_factory.mktemp("hostile"))


# ------------------------------------------------------------------------------ rows


@dataclass
class Case:
    """One hostile command line (``args``: words, ``{name}`` an input of :func:`p`; later
    flags override earlier ones) and the words its last stderr line must hold."""

    prog: str
    name: str
    args: str
    says: Sequence[str]
    untouched: Sequence[str] = field(default_factory=list)  # outputs under {root}: absent

    @property
    def id(self) -> str:
        return f"{self.prog[5:]}-{self.name}"

    def argv(self, p: Dict[str, str]) -> List[str]:
        return [word.format(**p) for word in self.args.split()]


GC, GD, GP = "veco-gettext-corpus", "veco-gettext-dictionary", "veco-gettext-paraphrase"
NMT, RV, SPM, WMT = "veco-init-nmt", "veco-reduce-vocab", "veco-spm", "veco-wmt14"
_GC = "--tgt-lang de --locale-dir {locale} --output {root}/gc "
_GD = "--tgt-lang de --locale-dir {locale} --output {root}/gd "
_GP = "--corpus de={corpus} --train-lang de --output {root}/gp "
_NMT = f"--pretrained {FROZEN}/checkpoint.pt --output {{root}}/nmt/init.pt "
_RV = "--dict {dict_txt} --data {encoded_txt} --output-dir {root}/rv "
_ENC = "encode --model {spm} "
_PREP = "prepare --model {spm} --encode " + TEXT + "/valid.en {root}/o "
_WMT = ("prepare --pair en-de --raw-dir {raw} --work-dir {root}/w --dest-dir {root}/d "
        "--spm-model {spm} ")  # fmt: skip
_SCORE = ("score --generate-output {gen_txt} --raw-ref {ref_txt} --tgt de --spm-model {spm} "
          "--hyp-out {root}/hyp ")  # fmt: skip
NO_DIR = "not a directory"
UNDER = "file.txt is a file"

# fmt: off
CASES = [
    Case(GC, "output_is_file", _GC + "--output {file_txt}", ["--output", "file.txt", NO_DIR]),
    Case(GC, "output_under_file", _GC + "--output {file_txt}/o", ["--output", UNDER]),
    Case(GC, "locale_missing", _GC + "--locale-dir {root}/none", ["--locale-dir", "none", NO_DIR]),
    Case(GC, "locale_is_file", _GC + "--locale-dir {file_txt}", ["--locale-dir", "file.txt"]),
    Case(GC, "no_catalogs", _GC + "--tgt-lang xx", ["no catalogs found for language 'xx'"]),
    Case(GC, "english", _GC + "--tgt-lang en", ["--tgt-lang must differ"]),
    Case(GC, "lang_path", _GC + "--tgt-lang ../de", ["--tgt-lang '../de' is not a locale code"]),
    Case(GC, "valid_size_zero", _GC + "--valid-size 0", ["--valid-size must be >= 1"]),
    Case(GC, "test_size_negative", _GC + "--test-size -5", ["--test-size must be >= 1"]),
    Case(GC, "max_below_min", _GC + "--max-words 1 --min-words 3", ["--max-words (1) must be >="]),
    Case(GC, "ratio_below_one", _GC + "--max-ratio 0.5", ["--max-ratio must be >= 1"]),
    Case(GC, "word_fraction", _GC + "--min-word-fraction 1.5", ["--min-word-fraction", "[0, 1]"]),
    Case(GC, "max_catalogs_one", _GC + "--max-catalogs 1", ["--max-catalogs must be >= 2"]),
    Case(GC, "unreadable", _GC + "--locale-dir {locale_broken}",
         ["none of the catalogs", "garbage"], ["gc"]),
    Case(GC, "no_entries", _GC + "--locale-dir {locale_headers}", ["no usable pairs", "empty0"],
         ["gc"]),
    Case(GC, "all_held_out", _GC, ["every catalog went to valid/test", "--valid-size"], ["gc"]),

    Case(GD, "output_is_file", _GD + "--output {file_txt}", ["--output", "file.txt", NO_DIR]),
    Case(GD, "output_under_file", _GD + "--output {file_txt}/o", ["--output", UNDER]),
    Case(GD, "locale_missing", _GD + "--locale-dir {root}/none", ["--locale-dir", "none", NO_DIR]),
    Case(GD, "lang_path", _GD + "--tgt-lang ../de", ["--tgt-lang '../de' is not a locale code"]),
    Case(GD, "held_out_negative", _GD + "--held-out-words -1", ["--held-out-words must be >= 0"]),
    Case(GD, "held_out_all", _GD + "--held-out-words 4",
         ["--held-out-words 4 would hold out all 4 English words", "at most 3"], ["gd"]),
    Case(GD, "unreadable", _GD + "--locale-dir {locale_broken}",
         ["none of the 2 catalogs", "garbage", "could be read"], ["gd"]),
    Case(GD, "no_entries", _GD + "--locale-dir {locale_headers}", ["no single-word entries"],
         ["gd"]),

    Case(GP, "corpus_no_equals", _GP + "--corpus {corpus}", ["expected LANG=DIR"]),
    Case(GP, "corpus_missing", _GP.replace("{corpus}", "{root}/none"),
         ["--corpus", "none: no such directory"]),
    Case(GP, "corpus_twice", _GP + "--corpus de={corpus_single}", ["--corpus de given twice"]),
    Case(GP, "train_lang_absent", _GP + "--train-lang fr", ["--train-lang fr: no --corpus fr"]),
    Case(GP, "english", "--corpus en={corpus} --train-lang en --output {root}/gp",
         ["--corpus en=...: en is the English side"]),
    Case(GP, "json_garbage", _GP.replace("{corpus}", "{corpus_badjson}"),
         ["catalogs.json: not JSON", "veco-gettext-corpus"], ["gp"]),
    Case(GP, "json_latin1", _GP.replace("{corpus}", "{corpus_latin1json}"),
         ["catalogs.json: not valid UTF-8"], ["gp"]),
    Case(GP, "json_no_splits", _GP.replace("{corpus}", "{corpus_nosplits}"),
         ["catalogs.json has no splits.train.catalogs"], ["gp"]),
    Case(GP, "split_short", _GP.replace("{corpus}", "{corpus_short}"),
         ["test.de 11", "catalogs.json counts 12"], ["gp"]),
    Case(GP, "split_latin1", _GP.replace("{corpus}", "{corpus_latin1}"),
         ["train.de line 1: not valid UTF-8"], ["gp"]),
    Case(GP, "other_language", _GP + "--corpus fr={corpus_fr}",
         ["--corpus fr=", "is the de corpus", "--corpus de="], ["gp"]),
    Case(GP, "candidates_zero", _GP + "--candidates 0", ["--candidates must be >= 1"], ["gp"]),
    Case(GP, "max_train_zero", _GP + "--max-train 0", ["--max-train must be >= 1"], ["gp"]),
    Case(GP, "max_eval_negative", _GP + "--max-eval -1", ["--max-eval must be >= 1"], ["gp"]),
    Case(GP, "no_negatives", _GP.replace("{corpus}", "{corpus_single}"),
         ["no examples for train.tsv", "same catalog"], ["gp"]),
    Case(GP, "output_is_file", _GP + "--output {file_txt}", ["--output", "file.txt", NO_DIR]),
    Case(GP, "output_under_file", _GP + "--output {file_txt}/o", ["--output", UNDER]),

    Case(NMT, "decoder_layers_zero", _NMT + "--decoder-layers 0",
         ["--decoder-layers '0' is ambiguous", "last:N", "'0,'"], ["nmt"]),
    Case(NMT, "decoder_layers_last_zero", _NMT + "--decoder-layers last:0",
         ["--decoder-layers 'last:0': N must be between 1"], ["nmt"]),
    Case(NMT, "decoder_layers_too_many", _NMT + "--decoder-layers first:9",
         ["between 1 and the pre-trained depth 2"], ["nmt"]),
    Case(NMT, "decoder_layers_empty", _NMT + "--decoder-layers=",
         ["--decoder-layers '': no layers"], ["nmt"]),
    Case(NMT, "decoder_layers_negative", _NMT + "--decoder-layers=-1,0",
         ["layer -1 out of range"], ["nmt"]),
    Case(NMT, "decoder_layers_twice", _NMT + "--decoder-layers 1,1", ["a layer appears twice"],
         ["nmt"]),
    Case(NMT, "pretrained_missing", _NMT + "--pretrained {root}/no.pt",
         ["--pretrained", "no.pt: no such file"], ["nmt"]),
    Case(NMT, "pretrained_dir", _NMT + "--pretrained {dir}", ["--pretrained", "dir is a directory"],
         ["nmt"]),
    Case(NMT, "pretrained_text", _NMT + "--pretrained {file_txt}",
         ["--pretrained", "file.txt: not a PyTorch checkpoint"], ["nmt"]),
    Case(NMT, "pretrained_truncated", _NMT + "--pretrained {trunc}",
         ["--pretrained", "trunc/checkpoint.pt: truncated"], ["nmt"]),
    Case(NMT, "pretrained_plain_torch", _NMT + "--pretrained {plain}",
         ["--pretrained", "plain.pt has no 'model' entry"], ["nmt"]),
    Case(NMT, "pretrained_translation", _NMT + "--pretrained {nmt_pt}",
         ["--pretrained", "holds a veco_transformer_tiny model", "--task veco_pretraining"],
         ["nmt"]),
    Case(NMT, "output_is_pretrained", "--pretrained {pre} --output {pre}",
         ["--output", "is the --pretrained file"]),
    Case(NMT, "output_is_dict", _NMT + "--dict {pre_dict} --output {pre_dict}",
         ["--output", "is the --dict file"]),
    Case(NMT, "output_dir", _NMT + "--output {dir}", ["--output", "dir is a directory"]),
    Case(NMT, "output_under_file", _NMT + "--output {file_txt}/x.pt",
         ["--output", "file.txt is a file"]),
    Case(NMT, "dict_three_fields", _NMT + "--dict {dict3_txt}",
         ["dict3.txt:6: 'foo bar 7' has 3 fields", "#fairseq:overwrite"], ["nmt"]),
    Case(NMT, "dict_latin1", _NMT + "--dict {dict_latin1_txt}",
         ["dict_latin1.txt:2: not valid UTF-8"], ["nmt"]),
    Case(NMT, "dict_missing", _NMT + "--dict {root}/no.txt", ["--dict", "no.txt: no such file"],
         ["nmt"]),
    Case(NMT, "dict_empty", _NMT + "--dict {empty_txt}", ["empty.txt: no tokens"], ["nmt"]),
    Case(NMT, "vocab_map_missing", _NMT + "--vocab-map {root}/no.tsv",
         ["--vocab-map", "no.tsv: no such file"], ["nmt"]),
    Case(NMT, "vocab_map_latin1", _NMT + "--vocab-map {map_latin1_tsv}",
         ["map_latin1.tsv line 2: not valid UTF-8", "veco-reduce-vocab"], ["nmt"]),
    Case(NMT, "vocab_map_empty", _NMT + "--vocab-map {empty_txt}",
         ["--vocab-map", "empty.txt is empty"], ["nmt"]),
    Case(NMT, "arch_unknown", _NMT + "--arch nope", ["--arch nope: unknown"], ["nmt"]),

    Case(RV, "min_count_zero", _RV + "--min-count 0", ["--min-count must be >= 1"], ["rv"]),
    Case(RV, "dict_three_fields", _RV + "--dict {dict3_txt}",
         ["dict3.txt:6: 'foo bar 7' has 3 fields"], ["rv"]),
    Case(RV, "dict_no_count", _RV + "--dict {dict_nocount_txt}",
         ["dict_nocount.txt:2: 'no-count' is not '<token> <count>'"], ["rv"]),
    Case(RV, "dict_missing", _RV + "--dict {root}/no.txt", ["--dict", "no.txt: no such file"],
         ["rv"]),
    Case(RV, "dict_empty", _RV + "--dict {empty_txt}", ["empty.txt: no tokens"], ["rv"]),
    Case(RV, "data_missing", _RV + "--data {encoded_txt} {root}/no.txt",
         ["--data", "no.txt: no such file"], ["rv"]),
    Case(RV, "data_dir", _RV + "--data {dir}", ["--data", "dir is a directory"], ["rv"]),
    Case(RV, "data_latin1", _RV + "--data {latin1_txt}", ["latin1.txt line 2: not valid UTF-8"],
         ["rv"]),
    Case(RV, "data_not_gzip", _RV + "--data {plain_gz}",
         ["plain.gz: not a complete gzip file after 0 lines", "drop the .gz"], ["rv"]),
    Case(RV, "data_empty", _RV + "--data {empty_txt}", ["--data", "no tokens"], ["rv"]),
    Case(RV, "data_foreign", _RV + "--data {foreign_txt}",
         ["none of the 3 token types of --data is in --dict"], ["rv"]),
    Case(RV, "output_is_file", _RV + "--output-dir {file_txt}",
         ["--output-dir", "file.txt", NO_DIR]),
    Case(RV, "output_under_file", _RV + "--output-dir {file_txt}/o",
         ["--output-dir", "file.txt is a file"]),
    Case(RV, "output_holds_dict", _RV + "--output-dir {root}", ["--output-dir", "would overwrite"]),

    Case(SPM, "train_vocab_zero", f"train --model-prefix {{root}}/s --vocab-size 0 {TEXT}/train.en",
         ["--vocab-size must be >= 1"]),
    Case(SPM, "train_input_missing", "train --model-prefix {root}/s --vocab-size 50 {root}/no.txt",
         ["no.txt: no such file"]),
    Case(SPM, "train_input_empty", "train --model-prefix {root}/s --vocab-size 50 {empty_txt}",
         ["empty.txt is empty: nothing to train on"]),
    Case(SPM, "train_input_latin1", "train --model-prefix {root}/s --vocab-size 50 {latin1_txt}",
         ["latin1.txt line 2: not valid UTF-8"]),
    Case(SPM, "train_prefix_dir", f"train --model-prefix {{dir}} --vocab-size 50 {TEXT}/train.en",
         ["--model-prefix", "dir is a directory", "PREFIX.model"]),
    Case(SPM, "train_prefix_under_file",
         f"train --model-prefix {{file_txt}}/m --vocab-size 50 {TEXT}/train.en",
         ["--model-prefix", "file.txt is a file"]),
    Case(SPM, "encode_odd_files", _ENC + "{empty_txt}", ["expected SRC DST pairs, got 1"]),
    Case(SPM, "encode_model_text", "encode --model {file_txt} {latin1_txt} {root}/o",
         ["cannot load sentencepiece model", "file.txt"], ["o"]),
    Case(SPM, "encode_src_missing", _ENC + "{root}/no.txt {root}/o", ["no.txt: no such file"],
         ["o"]),
    Case(SPM, "encode_src_latin1", _ENC + "{latin1_txt} {root}/o",
         ["latin1.txt line 2: not valid UTF-8"], ["o"]),
    Case(SPM, "encode_src_empty", _ENC + "{empty_txt} {root}/o", ["empty.txt is empty"], ["o"]),
    Case(SPM, "encode_dst_dir", _ENC + f"{TEXT}/valid.en {{dir}}", ["DST", "dir is a directory"]),
    Case(SPM, "encode_dict_dir", _ENC + f"--dict {{dir}} {TEXT}/valid.en {{root}}/o",
         ["--dict", "dir is a directory"], ["o"]),
    Case(SPM, "encode_workers_zero", _ENC + f"--workers 0 {TEXT}/valid.en {{root}}/o",
         ["--workers must be >= 1"], ["o"]),
    Case(SPM, "prepare_vocab_zero",
         _PREP + f"--model {{root}}/m.model --train-vocab-size 0 --train-inputs {TEXT}/train.en",
         ["--train-vocab-size must be >= 1"], ["o", "m.model"]),
    Case(SPM, "prepare_inputs_without_size", _PREP + f"--train-inputs {TEXT}/train.en",
         ["--train-inputs without --train-vocab-size"], ["o"]),
    Case(SPM, "prepare_train_missing",
         _PREP + "--model {root}/m.model --train-vocab-size 50 --train-inputs {root}/no.txt",
         ["no.txt: no such file"], ["o", "m.model"]),
    Case(SPM, "prog_names_script", "--prog prep.sh encode --model {root}/no.model a b",
         ["no.model not found (--model)"]),

    Case(WMT, "missing_raw_dir_file", "missing --pair en-de --raw-dir {file_txt}",
         ["--raw-dir", NO_DIR]),
    Case(WMT, "max_below_min", _WMT + "--min-len 5 --max-len 2",
         ["--max-len 2 is below --min-len 5"], ["w", "d"]),
    Case(WMT, "min_len_zero", _WMT + "--min-len 0", ["--min-len must be >= 1"], ["w", "d"]),
    Case(WMT, "ratio_below_one", _WMT + "--ratio 0.9", ["--ratio must be >= 1"], ["w", "d"]),
    Case(WMT, "workers_zero", _WMT + "--workers 0", ["--workers must be >= 1"], ["w", "d"]),
    Case(WMT, "chunk_zero", _WMT + "--chunk-size 0", ["--chunk-size must be >= 1"], ["w", "d"]),
    Case(WMT, "bpe_vocab_with_spm", _WMT + "--bpe-vocab {file_txt}",
         ["--bpe-vocab goes with --bpe-codes"], ["w", "d"]),
    Case(WMT, "raw_dir_missing", _WMT + "--raw-dir {root}/none", ["--raw-dir", NO_DIR],
         ["w", "d"]),
    Case(WMT, "work_dir_file", _WMT + "--work-dir {file_txt}", ["--work-dir", "file.txt", NO_DIR],
         ["d"]),
    Case(WMT, "dest_under_file", _WMT + "--dest-dir {file_txt}/d",
         ["--dest-dir", "file.txt is a file"], ["w"]),
    Case(WMT, "spm_missing", _WMT + "--spm-model {root}/no.model", ["no.model not found"],
         ["w", "d"]),
    Case(WMT, "nothing_there", _WMT + "--raw-dir {dir}", ["not found in", "download"]),
    Case(WMT, "every_pair_dropped", _WMT + "--max-len 1",
         ["no training pairs left after cleaning", "too_long"]),
    Case(WMT, "score_hyp_out_dir", _SCORE + "--hyp-out {dir}", ["--hyp-out", "dir is a directory"]),
    Case(WMT, "score_json_under_file", _SCORE + "--json {file_txt}/s.json",
         ["--json", "file.txt is a file"], ["hyp"]),
    Case(WMT, "score_hyp_out_is_ref", _SCORE + "--hyp-out {ref_txt}",
         ["--hyp-out", "would overwrite --raw-ref"]),
    Case(WMT, "score_json_is_gen", _SCORE + "--json {gen_txt}",
         ["--json", "would overwrite --generate-output"], ["hyp"]),
    Case(WMT, "score_gen_missing", _SCORE + "--generate-output {root}/no.txt",
         ["--generate-output", "no.txt: no such file"], ["hyp"]),
    Case(WMT, "score_gen_latin1", _SCORE + "--generate-output {latin1_txt}",
         ["latin1.txt line 2: not valid UTF-8"], ["hyp"]),
    Case(WMT, "score_ref_latin1", _SCORE + "--raw-ref {latin1_txt}",
         ["latin1.txt line 2: not valid UTF-8"], ["hyp"]),
    Case(WMT, "score_ref_empty", _SCORE + "--raw-ref {empty_txt}", ["--raw-ref", "is empty"],
         ["hyp"]),
]
# fmt: on


def _leftovers(root: str) -> List[str]:
    """``.part``/``.tmp`` files and temporary directories under ``root``."""
    return [
        os.path.join(d, n)
        for d, dirs, names in os.walk(root)
        for n in names + dirs
        if n.endswith((".part", ".tmp")) or n.startswith(".reduce-vocab.")
    ]


def _remove(path: str) -> None:
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refused_in_one_line(case, p, capsys, monkeypatch):
    monkeypatch.setenv("LOGLEVEL", "WARNING")
    for name in ("w", "d"):  # veco-wmt14's outputs of the row before
        _remove(os.path.join(p["root"], name))
    argv = case.argv(p)
    prog = argv[1] if argv[0] == "--prog" else case.prog
    line = refused(COMMANDS[case.prog], argv, prog, capsys)
    for words in case.says:
        assert words in line, line
    for name in case.untouched:
        assert not os.path.exists(os.path.join(p["root"], name)), name
    assert not _leftovers(p["root"])


def test_the_inputs_named_as_outputs_are_left_as_they_were(p):
    for name, original in (("pre", "checkpoint.pt"), ("pre_dict", "dict.txt")):
        assert Path(p[name]).read_bytes() == Path(FROZEN, original).read_bytes(), name
    assert Path(p["ref_txt"]).read_text(encoding="utf-8") == "ein Satz\nnoch ein Satz\n"


# ---------------------------------------------------------------- what is still accepted


def test_a_dictionary_line_may_carry_fairseqs_overwrite_flag(p):
    dictionary = load_dictionary(p["dict_overwrite_txt"])  # the first token again, last
    first = dictionary.symbols[dictionary.nspecial]
    assert dictionary.index(first) == len(dictionary) - 1 == len(load_dictionary(p["dict_txt"]))


def test_one_decoder_layer_is_written_with_a_comma(p, tmp_path):
    out = tmp_path / "one.pt"
    ckpt = init_nmt.main(init_nmt.get_parser().parse_args(
        ["--pretrained", p["pre"], "--output", str(out), "--decoder-layers", "0,"]))  # fmt: skip
    assert ckpt["extra_state"]["veco_init_nmt"]["decoder_source_layers"] == [0]


def test_spm_makes_the_folders_of_its_outputs(p, tmp_path):
    spm.cli_main(["encode", "--model", p["spm"], "--dict", str(tmp_path / "a" / "dict.txt"),
                  f"{TEXT}/valid.en", str(tmp_path / "b" / "valid.spm.en")])  # fmt: skip
    assert (tmp_path / "a" / "dict.txt").is_file() and (tmp_path / "b" / "valid.spm.en").is_file()


def test_word_lists_refuse_three_fields_and_empty_files(p):
    with pytest.raises(VecoUserError, match=r"words3.txt:2: expected 'source_word target_word'"):
        read_word_pairs(p["words3_txt"])
    with pytest.raises(VecoUserError, match="empty.txt: no word pairs"):
        read_word_pairs(p["empty_txt"])


# ------------------------------------------------------------------------- Ctrl-C


def _interrupt_after(real, calls: int, partial):
    """``real`` for the first ``calls`` calls, then ``partial(real, *args)``, which
    starts writing and raises KeyboardInterrupt."""
    count = [0]

    def wrapper(*args, **kwargs):
        count[0] += 1
        if count[0] > calls:
            return partial(real, *args)
        return real(*args, **kwargs)

    return wrapper


def _lines_then_interrupt(real, path, lines):
    def lines_then_ctrl_c():
        yield from list(lines)[:1]
        raise KeyboardInterrupt

    real(path, lines_then_ctrl_c())


def test_ctrl_c_while_writing_the_corpus_leaves_no_catalogs_json(p, tmp_path, monkeypatch):
    out = tmp_path / "gc"
    writer = _interrupt_after(gettext_lib.write_lines, 3, _lines_then_interrupt)
    monkeypatch.setattr(gettext_lib, "write_lines", writer)
    with pytest.raises(KeyboardInterrupt):
        gettext_corpus.cli_main(_GC.format(**p).split() + ["--output", str(out),
                                "--valid-size", "6", "--test-size", "6"])  # fmt: skip
    assert sorted(os.listdir(out)) == ["train.de", "train.en", "valid.en"]  # no .part, no json


def test_ctrl_c_while_writing_the_paraphrase_files(p, tmp_path, monkeypatch):
    def header_then_interrupt(real, path, rows):
        Path(path).write_text("id\tsentence1\n")
        raise KeyboardInterrupt

    writer = _interrupt_after(paraphrase_lib.write_tsv, 2, header_then_interrupt)
    monkeypatch.setattr(paraphrase_lib, "write_tsv", writer)
    with pytest.raises(KeyboardInterrupt):
        gettext_paraphrase.cli_main(_GP.format(**p).split() + ["--output", str(tmp_path / "gp")])
    assert sorted(os.listdir(tmp_path / "gp")) == ["train.trans.tsv", "train.tsv"]


def test_ctrl_c_while_writing_the_reduced_vocabulary_leaves_neither_file(p, tmp_path, monkeypatch):
    def dict_then_interrupt(output_dir, *args):
        Path(output_dir, "dict.txt").write_text("half\n")
        raise KeyboardInterrupt

    monkeypatch.setattr(reduce_vocab, "write_outputs", dict_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        reduce_vocab.cli_main(_RV.format(**p).split() + ["--output-dir", str(tmp_path / "rv")])
    assert os.listdir(tmp_path / "rv") == []


def test_ctrl_c_while_cleaning_wmt14_leaves_no_training_text(p, tmp_path, monkeypatch):
    writer = _interrupt_after(wmt14_lib.keep_reason, 5, lambda real, *a: _raise_interrupt())
    monkeypatch.setattr(wmt14_lib, "keep_reason", writer)
    work = tmp_path / "w"
    with pytest.raises(KeyboardInterrupt):
        wmt14.cli_main(_WMT.format(**p).split() + ["--work-dir", str(work)])
    assert sorted(n for n in os.listdir(work) if n.startswith("train")) == []
    assert not _leftovers(str(tmp_path))


def _raise_interrupt():
    raise KeyboardInterrupt


# ---------------------------------------------------------------- end to end, real scripts


def test_console_scripts_end_in_one_line(p):
    """Two rows as real commands (about 10 s each on a loaded machine): the one line,
    exit 1, no traceback."""
    rows = {c.id: c for c in CASES}
    ids = ["init-nmt-decoder_layers_zero", "gettext-paraphrase-output_is_file"]
    with ThreadPoolExecutor(2) as pool:
        procs = list(pool.map(lambda i: run(rows[i].prog, rows[i].argv(p), check=False), ids))
    for case_id, proc in zip(ids, procs):
        case = rows[case_id]
        assert proc.returncode == 1, (case_id, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-3000:]
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith(f"{case.prog}: error: "), last
        assert all(words in last for words in case.says), last
