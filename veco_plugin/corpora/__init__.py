"""Corpus building: raw text in, line-aligned (subword) text for ``fairseq-preprocess`` out.

- ``text``: strict UTF-8 reading with one-line errors (file and line), atomic writes,
  and the one "keep or drop with a counted reason" used by every cleaner;
- ``subwords``: sentencepiece training and encoding of files, fastBPE encoding, the
  fairseq dictionary of a sentencepiece model, the ``--max-positions`` check;
- ``gettext``: an English-X corpus from the system's gettext catalogs
  (``veco-gettext-corpus``);
- ``wmt14``: the statmt.org WMT14 En-De / En-Fr archives: registry, extraction, SGML,
  cleaning, encoding (``veco-wmt14``, ``scripts/prepare-wmt14en2{de,fr}.sh``).

The modules are imported on use (nothing here registers with fairseq).
"""
