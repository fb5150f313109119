"""veco-align, veco-aer and veco-retrieve, tried as a hostile user would.

One row per case: the command, its arguments (built from the module's inputs) and what
the last line on stderr must say. Every row must end in ``PROG: error: ...`` with a
non-zero exit, no traceback, nothing written under a path the row names as an output
(``out.align``, ``out.json``), and no ``.part`` anywhere. The rows run in this process
through each command's ``cli_main`` (a console script costs a start-up of about 3 s on a
loaded machine); a few run as real console scripts to prove the same end to end, and one
real ``veco-align`` is interrupted by Ctrl-C while it writes.

The model is the frozen ``veco_tiny`` checkpoint; its sentencepiece model is trained here
on the fixture text (pieces the dictionary lacks are ``<unk>``: enough to run).
"""

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Sequence

import pytest
import torch

from tests.helpers.refusals import refused
from tests.helpers.runner import BIN, REPO, env, run
from veco_plugin.alignment.aligner import align_pairs
from veco_plugin.checkpoints.encoder import load_encoder
from veco_plugin.cli import aer, align, retrieve
from veco_plugin.errors import VecoUserError

FROZEN = os.path.join(REPO, "tests", "fixtures", "checkpoints", "veco_tiny")
TEXT = os.path.join(REPO, "tests", "fixtures", "text")

COMMANDS = {"veco-align": align, "veco-aer": aer, "veco-retrieve": retrieve}
AL, AER, RE = "veco-align", "veco-aer", "veco-retrieve"

# ---------------------------------------------------------------------------- inputs


def _tokenized(path: str, n: int) -> List[str]:
    with open(path, encoding="utf-8") as f:
        return [" ".join(re.findall(r"\w+|[^\w\s]", line)) for line in f][:n]


@pytest.fixture(scope="module")
def p(tmp_path_factory) -> Dict[str, str]:
    """{name: path} of every input the rows use."""
    root = tmp_path_factory.mktemp("hostile_align")
    paths: Dict[str, Path] = {"root": root}

    def put(name: str, data, binary: bool = False) -> Path:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if binary:
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8")
        paths[name.split("/")[0].replace(".", "_")] = path
        return path

    def lines(*rows: str) -> str:
        return "".join(row + "\n" for row in rows)

    paths["dir"] = root / "dir"
    paths["dir"].mkdir()
    put("file.txt", "a plain file\n")
    put("empty.txt", "")
    put("blank.txt", "\n\n  \n")
    put("latin1.txt", "ein Satz\nein Caf\xe9\n".encode("latin-1"), binary=True)

    # sentence pairs, line-aligned, and one file of another length
    src, tgt = _tokenized(f"{TEXT}/valid.en", 6), _tokenized(f"{TEXT}/valid.de", 6)
    put("src.txt", lines(*src))
    put("tgt.txt", lines(*tgt))
    put("short.txt", lines(tgt[0]))

    # checkpoints: the frozen one beside its dictionary, and wrong kinds of --path
    paths["ckpt"] = Path(FROZEN, "checkpoint.pt")
    frozen_dict = Path(FROZEN, "dict.txt").read_text(encoding="utf-8").splitlines()
    put("dict.txt", lines(*frozen_dict))
    put("dict3.txt", lines(*frozen_dict[:5], "foo bar 7", *frozen_dict[5:]))
    put("dict_latin1.txt", b"ok 3\ncaf\xe9 2\n", binary=True)
    put("dict_short.txt", lines(*frozen_dict[:-7]))
    put("dict_other.txt", lines(*(f"zz{k} 1" for k in range(len(frozen_dict)))))  # same size
    checkpoint = paths["ckpt"].read_bytes()
    put("truncated.pt", checkpoint[: len(checkpoint) // 2], binary=True)
    put("ckdir/checkpoint_best.pt", checkpoint, binary=True)
    paths["ckdir"] = root / "ckdir"
    torch.save({"weight": torch.zeros(2)}, root / "weights.pt")
    paths["weights_pt"] = root / "weights.pt"
    from veco_plugin.cli import init_nmt  # a translation checkpoint made from the frozen one

    init_nmt.cli_main(["--pretrained", str(paths["ckpt"]), "--output", str(root / "nmt.pt")])
    paths["nmt_pt"] = root / "nmt.pt"
    state = torch.load(root / "nmt.pt", weights_only=False)  # as fairseq-train re-saves it
    del state["extra_state"]["veco_init_nmt"]
    torch.save(state, root / "trained_nmt.pt")
    paths["trained_nmt_pt"] = root / "trained_nmt.pt"
    state = torch.load(paths["ckpt"], weights_only=False)  # a fine-tuned classifier's task
    state["cfg"]["task"].update(_name="sentence_prediction", num_classes=2)
    torch.save(state, root / "classifier.pt")
    paths["classifier_pt"] = root / "classifier.pt"

    from veco_plugin.corpora.subwords import train_sentencepiece

    paths["spm"] = Path(train_sentencepiece([f"{TEXT}/valid.en"], str(root / "spm"), 100))

    # alignments for veco-aer: gold (Pharaoh and NAACL), a prediction, wrong kinds
    put("gold.txt", lines("0-0 1p1", "0-0 2-1"))
    put("gold.naacl", lines("1 1 1 S", "1 2 2 P", "2 1 1 S", "2 3 2 S"))
    put("pred.txt", lines("0-0 1-1", "0-0"))
    put("pred3.txt", lines("0-0", "0-0", "0-0"))
    put("pred_possible.txt", lines("0p0", "0-0"))
    put("pred_far.txt", lines("0-0 5-0", "0-0"))
    put("gold_outside.txt", lines("-1-0", "0--1"))
    put("pair_src.txt", lines("a b c", "d e f"))
    put("pair_tgt.txt", lines("x y", "z w"))
    return {k: str(v) for k, v in paths.items()}


# ------------------------------------------------------------------------------ rows


@dataclass
class Case:
    """One hostile command line: ``argv(p)`` and what the last stderr line says."""

    prog: str
    name: str
    argv: Callable[[Dict[str, str]], Sequence[str]]
    says: Sequence[str]
    untouched: Sequence[str] = field(default_factory=lambda: ["out.align", "out.json"])

    @property
    def id(self) -> str:
        return f"{self.prog[5:]}-{self.name}"


def _fmt(words: Sequence[str], p: Dict[str, str]) -> List[str]:
    return [w.format(**p) for w in words]


def _al(*extra, path="{ckpt}", src="{src_txt}", tgt="{tgt_txt}", output="{root}/out.align"):
    """veco-align with the frozen checkpoint, then ``extra`` (argparse: the last one wins)."""
    return lambda p: _fmt(["--path", path, "--spm-model", "{spm}", "--dict", "{dict_txt}",
                           "--src", src, "--tgt", tgt, "--output", output, "--cpu",
                           "--no-progress", *extra], p)  # fmt: skip


def _re(*extra, path="{ckpt}", src="{src_txt}", tgt="{tgt_txt}", json="{root}/out.json"):
    return lambda p: _fmt(["--path", path, "--spm-model", "{spm}", "--dict", "{dict_txt}",
                           "--src", src, "--tgt", tgt, "--json", json, "--cpu",
                           "--no-progress", *extra], p)  # fmt: skip


def _aer(gold="{gold_txt}", pred="{pred_txt}", *extra):
    return lambda p: _fmt([gold, pred, *extra], p)


def _wrong_kinds_of_path(prog: str, build: Callable) -> List[Case]:
    """The mistakes veco-align and veco-retrieve share: checkpoint, text, subwords, numbers."""

    def more(*extra):  # the command's arguments, then ``extra`` (argparse: the last one wins)
        return lambda p: build()(p) + _fmt(extra, p)

    def without(*flags):
        return lambda p: [a for a in build()(p) if a not in [x.format(**p) for x in flags]]

    rows = [
        Case(prog, "path_missing", build(path="{root}/no.pt"), ["--path", "no.pt: no such file"]),
        Case(prog, "path_empty_dir", build(path="{dir}"), ["--path", "is a directory"]),
        Case(prog, "path_dir_of_checkpoints", build(path="{ckdir}"),
             ["--path", "is a directory", "ckdir/checkpoint_best.pt"]),
        Case(prog, "path_text", build(path="{file_txt}"), ["--path", "file.txt", "not a"]),
        Case(prog, "path_dictionary", build(path="{dict_txt}"), ["--path", "dict.txt", "not a"]),
        Case(prog, "path_truncated", build(path="{truncated_pt}"), ["--path", "truncated"]),
        Case(prog, "path_state_dict", build(path="{weights_pt}"),
             ["--path", "weights.pt", "no 'model'"]),
        Case(prog, "path_translation", build(path="{nmt_pt}"),
             ["--path", "nmt.pt", "translation", "pre-training checkpoint",
              "veco_tiny/checkpoint.pt"]),
        Case(prog, "path_fine_tuned_translation", build(path="{trained_nmt_pt}"),
             ["--path", "trained_nmt.pt", "translation", "veco_pretraining", "RoBERTa"]),
        Case(prog, "path_classifier", build(path="{classifier_pt}"),
             ["--path", "classifier.pt", "fine-tuned model", "sentence_prediction",
              "pre-training checkpoint"]),
        Case(prog, "dict_not_found",
             lambda p: [a for a in build(path="{ckdir}/checkpoint_best.pt")(p)
                        if a not in ("--dict", p["dict_txt"])],
             ["--path", "no dictionary found", "--dict"]),
        Case(prog, "src_missing", build(src="{root}/no.txt"), ["--src", "no.txt: no such file"]),
        Case(prog, "src_dir", build(src="{dir}"), ["--src", "is a directory"]),
        Case(prog, "src_latin1", build(src="{latin1_txt}", tgt="{short_txt}"),
             ["--src", "latin1.txt", "UTF-8"]),
        Case(prog, "src_checkpoint", build(src="{ckpt}"), ["--src", "checkpoint.pt", "UTF-8"]),
        Case(prog, "tgt_missing", build(tgt="{root}/no.txt"), ["--tgt", "no.txt: no such file"]),
        Case(prog, "lines_differ", build(tgt="{short_txt}"),
             ["--src", "6 lines", "--tgt", "has 1"]),
        Case(prog, "both_empty", build(src="{empty_txt}", tgt="{empty_txt}"),
             ["--src", "empty.txt", "empty"]),
        Case(prog, "spm_missing", more("--spm-model", "{root}/no.model"),
             ["--spm-model", "no.model"]),
        Case(prog, "spm_text", more("--spm-model", "{file_txt}"),
             ["--spm-model", "file.txt", "sentencepiece model"]),
        Case(prog, "spm_dir", more("--spm-model", "{dir}"), ["--spm-model", "is a directory"]),
        Case(prog, "no_spm", without("--spm-model", "{spm}"), ["--spm-model"]),
        Case(prog, "dict_missing", more("--dict", "{root}/no.txt"),
             ["--dict", "no.txt: no such file"]),
        Case(prog, "dict_dir", more("--dict", "{dir}"), ["--dict", "is a directory"]),
        Case(prog, "dict_latin1", more("--dict", "{dict_latin1_txt}"),
             ["--dict", "dict_latin1.txt:2", "UTF-8"]),
        Case(prog, "dict_empty", more("--dict", "{empty_txt}"),
             ["--dict", "empty.txt", "no tokens"]),
        Case(prog, "dict_three_fields", more("--dict", "{dict3_txt}"),
             ["--dict", "dict3.txt:6", "foo bar 7"]),
        Case(prog, "dict_other_model", more("--dict", "{dict_short_txt}"),
             ["--dict", "dict_short.txt", "does not fit the checkpoint"]),
        Case(prog, "layer_negative", more("--layer", "-1"), ["--layer -1", "must be at least 0"]),
        Case(prog, "layer_too_deep", more("--layer", "3"), ["--layer 3", "0..2"]),
        Case(prog, "batch_size_zero", more("--batch-size", "0"), ["--batch-size 0", "at least 1"]),
        Case(prog, "batch_size_negative", more("--batch-size", "-4"),
             ["--batch-size -4", "at least 1"]),
        Case(prog, "path_empty_string", build(path=""), ["--path ''", "names no file"]),
        Case(prog, "spm_empty_string", more("--spm-model", ""),
             ["--spm-model ''", "names no file"]),
        Case(prog, "dict_is_spm_model", more("--dict", "{spm}"), ["--dict", "spm.model:1"]),
        Case(prog, "spm_is_dict", more("--spm-model", "{dict_txt}"),
             ["--spm-model", "dict.txt", "not a sentencepiece model"]),
    ]  # fmt: skip
    return rows


CASES = _wrong_kinds_of_path(AL, _al) + _wrong_kinds_of_path(RE, _re)
CASES += [
    # ---- veco-align
    Case(AL, "both_blank", _al(src="{blank_txt}", tgt="{blank_txt}"),
         ["no pair", "words on both sides", "blank.txt"]),
    Case(AL, "output_dir", _al(output="{dir}"), ["--output", "is a directory"]),
    Case(AL, "output_under_file", _al(output="{file_txt}/out.align"),
         ["--output", "file.txt is a file"]),
    Case(AL, "output_is_src", _al(output="{src_txt}"), ["--output", "src.txt", "--src"]),
    Case(AL, "output_empty_string", _al(output=""), ["--output ''", "names no file"]),
    Case(AL, "max_tokens_zero", _al("--max-tokens", "0"), ["--max-tokens 0", "at least 1"]),
    Case(AL, "fp16_on_cpu", _al("--fp16"), ["--fp16", "GPU"]),
    Case(AL, "spm_and_bpe", _al("--bpe-codes", "{file_txt}"), ["--bpe-codes", "--spm-model"]),
    Case(AL, "bpe_missing", lambda p: [a for a in _al("--bpe-codes", "{root}/no.codes")(p)
                                       if a not in ("--spm-model", p["spm"])],
         ["--bpe-codes", "no.codes"]),
    Case(AL, "method_unknown", _al("--method", "dtw"), ["--method", "invalid choice: 'dtw'"]),
    # ---- veco-retrieve
    Case(RE, "both_blank", _re(src="{blank_txt}", tgt="{blank_txt}"),
         ["--src", "blank.txt", "no sentence"]),
    Case(RE, "one_sentence", _re(src="{short_txt}", tgt="{short_txt}"),
         ["1 sentence", "at least 2"]),
    Case(RE, "json_dir", _re(json="{dir}"), ["--json", "is a directory"]),
    Case(RE, "json_under_file", _re(json="{file_txt}/out.json"), ["--json", "file.txt is a file"]),
    Case(RE, "json_is_src", _re(json="{src_txt}"), ["--json", "src.txt", "--src"]),
    Case(RE, "json_empty_string", _re(json=""), ["--json ''", "names no file"]),
    Case(RE, "k_above_sentences", _re("--scoring", "margin", "--k", "7"),
         ["--k 7", "6 sentence pairs", "--k 4"]),
    Case(RE, "k_zero", _re("--scoring", "margin", "--k", "0"), ["--k 0", "at least 1"]),
    Case(RE, "k_negative", _re("--scoring", "margin", "--k", "-2"), ["--k -2", "at least 1"]),
    Case(RE, "k_with_cosine", _re("--k", "8"), ["--k", "--scoring margin"]),
    Case(RE, "scoring_unknown", _re("--scoring", "dot"), ["--scoring", "invalid choice: 'dot'"]),
    # ---- veco-aer
    Case(AER, "gold_missing", _aer(gold="{root}/no.txt"), ["no.txt: no such file"]),
    Case(AER, "gold_dir", _aer(gold="{dir}"), ["is a directory"]),
    Case(AER, "gold_latin1", _aer(gold="{latin1_txt}"), ["latin1.txt", "UTF-8"]),
    Case(AER, "gold_checkpoint", _aer(gold="{ckpt}"), ["checkpoint.pt", "UTF-8"]),
    Case(AER, "gold_empty", _aer(gold="{empty_txt}"), ["empty.txt is empty"]),
    Case(AER, "gold_empty_string", _aer(gold=""), ["GOLD ''", "names no file"]),
    Case(AER, "gold_blank", _aer(gold="{blank_txt}", pred="{blank_txt}"),
         ["blank.txt", "no gold links"]),
    Case(AER, "gold_naacl_blank", _aer("{blank_txt}", "{empty_txt}", "--gold-format", "naacl"),
         ["blank.txt", "no gold links"]),
    Case(AER, "gold_naacl_read_as_pharaoh", _aer(gold="{gold_naacl}"),
         ["gold.naacl:1", "--gold-format naacl"]),
    Case(AER, "gold_pharaoh_read_as_naacl",
         _aer("{gold_txt}", "{pred_txt}", "--gold-format", "naacl"),
         ["gold.txt:1", "--gold-format pharaoh"]),
    Case(AER, "swapped_naacl", _aer("{pred_txt}", "{gold_naacl}", "--gold-format", "naacl"),
         ["pred.txt reads as Pharaoh", "gold.naacl as a NAACL gold file", "GOLD first"]),
    Case(AER, "swapped_naacl_read_as_pharaoh", _aer("{pred_txt}", "{gold_naacl}"),
         ["gold.naacl has 4 lines", "GOLD first, then PRED"]),
    Case(AER, "gold_format_unknown", _aer("{gold_txt}", "{pred_txt}", "--gold-format", "talp"),
         ["--gold-format", "invalid choice"]),
    Case(AER, "pred_missing", _aer(pred="{root}/no.txt"), ["no.txt: no such file"]),
    Case(AER, "pred_dir", _aer(pred="{dir}"), ["is a directory"]),
    Case(AER, "pred_latin1", _aer(pred="{latin1_txt}"), ["latin1.txt", "UTF-8"]),
    Case(AER, "pred_empty", _aer(pred="{empty_txt}"),
         ["empty.txt has 0 lines", "2 sentence pairs"]),
    Case(AER, "pred_longer", _aer(pred="{pred3_txt}"), ["pred3.txt has 3 lines"]),
    Case(AER, "pred_possible", _aer(pred="{pred_possible_txt}"), ["pred_possible.txt:1", "0-0"]),
    Case(AER, "pred_zero_one_based", _aer("{gold_txt}", "{pred_txt}", "--one-based-pred"),
         ["--one-based-pred"]),
    Case(AER, "src_without_tgt", _aer("{gold_txt}", "{pred_txt}", "--src", "{pair_src_txt}"),
         ["--src and --tgt go together"]),
    Case(AER, "src_tgt_differ", _aer("{gold_txt}", "{pred_txt}", "--src", "{pair_src_txt}",
                                     "--tgt", "{short_txt}"), ["--src", "--tgt", "has 1"]),
    Case(AER, "src_tgt_other_corpus", _aer("{gold_txt}", "{pred_txt}", "--src", "{src_txt}",
                                           "--tgt", "{tgt_txt}"), ["gold.txt has 2 lines", "6"]),
    Case(AER, "src_latin1", _aer("{gold_txt}", "{pred_txt}", "--src", "{latin1_txt}",
                                 "--tgt", "{pair_tgt_txt}"), ["--src", "latin1.txt", "UTF-8"]),
    Case(AER, "pred_out_of_range", _aer("{gold_txt}", "{pred_far_txt}", "--src", "{pair_src_txt}",
                                        "--tgt", "{pair_tgt_txt}"),
         ["pred_far.txt:1", "'5-0'", "out of range"]),
    Case(AER, "gold_all_outside", _aer(gold="{gold_outside_txt}"),
         ["gold_outside.txt", "every gold link lies outside", "2 left out"]),
]  # fmt: skip


def _leftovers(root: str) -> List[str]:
    return [
        os.path.join(d, n) for d, _, names in os.walk(root) for n in names if n.endswith(".part")
    ]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refused_in_one_line(case, p, capsys, monkeypatch):
    monkeypatch.setenv("LOGLEVEL", "WARNING")
    line = refused(COMMANDS[case.prog], case.argv(p), case.prog, capsys, silent=True)
    for words in case.says:
        assert words in line, line
    for name in case.untouched:
        assert not os.path.exists(os.path.join(p["root"], name)), name
    assert not _leftovers(p["root"])


def test_faiss_missing_is_refused_before_the_model_is_read(p, capsys, monkeypatch):
    """``--search faiss`` without faiss installed: refused up front (it was refused only
    after both sides were embedded)."""
    monkeypatch.setitem(sys.modules, "faiss", None)  # ``import faiss`` raises ImportError
    monkeypatch.setenv("LOGLEVEL", "WARNING")
    with pytest.raises(SystemExit):
        retrieve.cli_main(_re("--search", "faiss", path="{truncated_pt}")(p))
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("veco-retrieve: error: --search faiss needs faiss"), line
    assert "pip install faiss-cpu" in line


@pytest.mark.parametrize("prog", [AL, RE])
def test_a_dictionary_of_other_pieces_is_one_warning(prog, p, capsys, monkeypatch):
    """A --dict of the checkpoint's size but of another subword model: every piece is
    <unk>; the command runs, with one warning line naming --spm-model and --dict."""
    monkeypatch.setenv("LOGLEVEL", "WARNING")
    build = _al(output="{root}/other.align") if prog == AL else _re(json="{root}/other.json")
    COMMANDS[prog].cli_main(build(p) + ["--dict", p["dict_other_txt"]])
    warnings = [ln for ln in capsys.readouterr().err.splitlines() if "<unk>" in ln]
    assert len(warnings) == 1, warnings
    assert "--spm-model" in warnings[0] and "--dict" in warnings[0], warnings[0]


def test_align_pairs_names_the_number_it_refuses(p):
    """The library call (the benchmarks' entry) names the flag and value, as the CLI does
    (was '--batch-size and --max-tokens must be positive' for either)."""
    model, dictionary = load_encoder(p["ckpt"], p["dict_txt"])
    for kwargs, says in (
        ({"batch_size": 0}, "--batch-size 0"),
        ({"max_tokens": -1}, "--max-tokens -1"),
    ):
        with pytest.raises(VecoUserError, match=f"^{says}: must be at least 1$"):
            align_pairs(model, dictionary, str.split, ["a b"], ["c d"], **kwargs)


# ----------------------------------------------------------- real console scripts

REAL = [
    next(c for c in CASES if c.id == "align-output_dir"),
    next(c for c in CASES if c.id == "retrieve-path_translation"),
    next(c for c in CASES if c.id == "aer-gold_blank"),
]


@pytest.mark.parametrize("case", REAL, ids=lambda c: c.id)
def test_the_console_script_ends_in_one_line(case, p):
    proc = run(case.prog, list(case.argv(p)), check=False, env=env(LOGLEVEL="WARNING"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stdout == ""
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith(f"{case.prog}: error: ") and all(w in line for w in case.says), line


def test_ctrl_c_while_aligning_leaves_no_output(p, tmp_path):
    """Ctrl-C in the middle of the work: the one line of the plugin's excepthook, and no
    ``--output`` (whole or partial) nor ``.part``."""
    src, tgt = _tokenized(f"{TEXT}/train.en", 10**9), _tokenized(f"{TEXT}/train.de", 10**9)
    n = len(src)
    (tmp_path / "src").write_text("".join(line + "\n" for line in src * (30000 // n)))
    (tmp_path / "tgt").write_text("".join(line + "\n" for line in tgt * (30000 // n)))
    output = tmp_path / "out" / "pairs.align"
    argv = _al(src=str(tmp_path / "src"), tgt=str(tmp_path / "tgt"), output=str(output))(p)
    argv.remove("--no-progress")
    proc = subprocess.Popen(
        [os.path.join(BIN, AL), *argv],
        stderr=subprocess.PIPE,
        env=env(LOGLEVEL="WARNING"),
        # a suite started in the background (``make test &``) ignores SIGINT, and so would
        # the command it starts: give it the default handling a terminal gives
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stderr is not None
    seen = b""
    deadline = time.monotonic() + 120
    # the bar drawn twice: aligning has begun (tqdm counts a bar as drawn only once its
    # first drawing has returned; a Ctrl-C inside that first one leaves its line open)
    while seen.count(b"pair/s") < 2 and time.monotonic() < deadline:
        chunk = os.read(proc.stderr.fileno(), 4096)
        if not chunk:
            break
        seen += chunk
    assert seen.count(b"pair/s") >= 2, seen[-2000:]
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=60)
    err = (seen + rest).decode("utf-8", "replace")
    assert proc.returncode == -signal.SIGINT, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    last = [ln for ln in re.split(r"[\r\n]", err) if ln.strip()][-1]
    assert last == f"{AL}: interrupted; resume with the same command", last
    assert not output.exists() and not _leftovers(str(tmp_path))
