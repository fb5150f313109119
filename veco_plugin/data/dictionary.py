"""The pre-training dictionary: a ``dict.txt`` with ``<mask>`` appended (XLM-R's layout).

Pre-training, fine-tuning and the console scripts all build it here, so token ids
and embedding rows line up across them.
"""

from fairseq.data import Dictionary

MASK = "<mask>"


def load_dictionary_with_mask(path: str) -> Dictionary:
    """``Dictionary.load(path)`` plus ``<mask>`` as the last symbol."""
    dictionary = Dictionary.load(path)
    dictionary.add_symbol(MASK)
    return dictionary
