"""veco_plugin: a fairseq --user-dir plugin (VECO, TLM, XLM-Align DWA).

fairseq itself is not an install requirement: on Python 3.11+ the fixed fork
``fairseq-fixed==0.12.3.1`` must be installed with ``--no-deps`` (its metadata pulls
torchaudio and a CUDA torch), on Python <= 3.10 ``fairseq==0.12.2`` works as is.
``scripts/setup-env.sh`` does the whole verified install.
"""

import os

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

STARTUP_PTH = "veco_plugin_startup.pth"  # Ctrl-C at a command's start: veco_plugin_startup.py


class BuildPyWithStartup(build_py):
    """The packages, and ``STARTUP_PTH`` beside them (site-packages: run at start-up). An
    editable install's wheel leaves it out: scripts/setup-env.sh copies it."""

    def run(self):
        super().run()
        self.copy_file(STARTUP_PTH, os.path.join(self.build_lib, STARTUP_PTH))

    def get_outputs(self, include_bytecode=1):
        return super().get_outputs(include_bytecode) + [os.path.join(self.build_lib, STARTUP_PTH)]


setup(
    name="veco_plugin",
    version="0.1.0",
    description="fairseq plugin for VECO and XLM-Align cross-lingual pre-training, word "
    "alignment and translation",
    packages=find_packages(include=["veco_plugin", "veco_plugin.*"]),
    py_modules=["veco_plugin_startup"],
    cmdclass={"build_py": BuildPyWithStartup},
    python_requires=">=3.10",  # torch 2.13; dataclass kw_only, str.removeprefix
    install_requires=[
        "numpy<2",
        "hydra-core==1.3.2",
        "omegaconf==2.3.0",
        "bitarray",
        "regex",
        "sacrebleu>=2",
        "sacremoses",
        "cython",
        "scikit-learn",
        "sentencepiece",
        "tqdm",
        "matplotlib",
        # fairseq's --tensorboard-logdir (without it every fairseq command prints
        # "Please install tensorboardX")
        "tensorboardX",
        # word alignments for weam (prepare-pretraining-data.sh --align-with eflomal; the
        # quickstart's weam row)
        "eflomal>=2",
    ],
    extras_require={
        # pot: an independent optimal-transport solver, the oracle of the Sinkhorn tests;
        # transformers, faiss-cpu: the veco-export-hf and veco-retrieve tests; pytest-xdist:
        # make test's two workers
        "test": [
            "pytest",
            "pytest-xdist",
            "pot",
            "transformers",
            "protobuf",
            "safetensors",
            "faiss-cpu",
            # the oracle of veco-tag-eval's F1 (XTREME scores tagging with seqeval)
            "seqeval",
        ],
        # veco-export-hf: the Hugging Face XLM-R directory (imported only by that command);
        # 4.x and 5.x: the export writes tokenizer.json itself (5.x has no sentencepiece
        # XLM-R tokenizer and reads that file) and rereads it to check fairseq's ids;
        # protobuf: sentencepiece's model proto, rewritten by the export. veco-import-hf
        # needs only safetensors (no transformers)
        "hf": ["transformers", "protobuf", "safetensors"],
        # veco-retrieve --search faiss (and auto on large pools); exact torch search without
        "retrieval": ["faiss-cpu"],
        # fastBPE: see scripts/install-fastbpe.sh (PyPI's 0.1.0 sdist needs its .pyx
        # re-cythonized on Python 3.11). NVIDIA apex: GPU only, built from source.
    },
    entry_points={
        "console_scripts": [
            "veco-init-nmt = veco_plugin.cli.init_nmt:cli_main",
            "veco-average-checkpoints = veco_plugin.cli.average_checkpoints:cli_main",
            "veco-reduce-vocab = veco_plugin.cli.reduce_vocab:cli_main",
            "veco-gettext-corpus = veco_plugin.cli.gettext_corpus:cli_main",
            "veco-gettext-dictionary = veco_plugin.cli.gettext_dictionary:cli_main",
            "veco-align = veco_plugin.cli.align:cli_main",
            "veco-aer = veco_plugin.cli.aer:cli_main",
            "veco-wmt14 = veco_plugin.cli.wmt14:cli_main",
            "veco-spm = veco_plugin.cli.spm:cli_main",
            "veco-prepare-sentence-prediction = "
            "veco_plugin.cli.prepare_sentence_prediction:cli_main",
            "veco-gettext-paraphrase = veco_plugin.cli.gettext_paraphrase:cli_main",
            "veco-sentence-eval = veco_plugin.cli.sentence_prediction_eval:cli_main",
            "veco-prepare-tagging = veco_plugin.cli.prepare_tagging:cli_main",
            "veco-tag-eval = veco_plugin.cli.tag_eval:cli_main",
            "veco-prepare-span-qa = veco_plugin.cli.prepare_span_qa:cli_main",
            "veco-qa-eval = veco_plugin.cli.qa_eval:cli_main",
            "veco-xtreme = veco_plugin.cli.xtreme:cli_main",
            "veco-xquad-split = veco_plugin.cli.xquad_split:cli_main",
            "veco-export-hf = veco_plugin.cli.export_hf:cli_main",
            "veco-retrieve = veco_plugin.cli.retrieve:cli_main",
            "veco-tatoeba-eval = veco_plugin.cli.tatoeba_eval:cli_main",
            "veco-bucc-eval = veco_plugin.cli.bucc_eval:cli_main",
            "veco-import-hf = veco_plugin.cli.import_hf:cli_main",
            "veco-prepare-pretraining = veco_plugin.cli.prepare_pretraining:cli_main",
            "veco-derive-language = veco_plugin.cli.derive_language:cli_main",
            "veco-derived-transfer = veco_plugin.cli.derived_transfer:cli_main",
            "veco-prepare-udpos = veco_plugin.cli.prepare_udpos:cli_main",
        ]
    },
)
