"""Export to other toolkits: ``hf`` writes the plug-out encoder as a Hugging Face
``XLMRobertaForMaskedLM`` directory (``veco-export-hf``).

- ``keymap``: fairseq RoBERTa/veco state -> transformers state, as a key table (pure);
- ``tokenizer``: the sentencepiece model rewritten so that transformers' XLM-R tokenizer
  gives fairseq's dictionary ids (pure; sentencepiece's model proto);
- ``hf``: the configuration, the weights and the tokenizer files (needs ``transformers``,
  the ``hf`` extra, imported only there).
"""
