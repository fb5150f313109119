"""Scorers for model outputs: word alignment (``aer``: AER, precision, recall, F1) and
translation (``bleu``: detokenized sacreBLEU with its signature + WMT14 tokenized BLEU)."""
