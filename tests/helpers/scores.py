"""Scores of trained checkpoints, computed outside fairseq-train."""

from veco_plugin.checkpoints.trusted_load import load_trusted
from veco_plugin.corpora.subwords import load_sentencepiece
from veco_plugin.data.bilingual_dictionary import load_word_pairs
from veco_plugin.data.dictionary import load_dictionary_with_mask
from veco_plugin.evaluation.word_translation import accuracy, build_task, word_translation_hits

EMBEDDINGS = "encoder.sentence_encoder.embed_tokens.weight"


def alignment_score(data, checkpoint, word_lists) -> float:
    """ALIGN-MLM's alignment score (%) of a checkpoint's input embeddings on
    ``word_lists/heldout.txt`` (candidates: its and ``train.txt``'s target words)."""
    spm = load_sentencepiece(f"{data}/spm.model")
    d = load_dictionary_with_mask(f"{data}/dict.txt")
    train = load_word_pairs(str(word_lists / "train.txt"), spm, d)
    heldout = load_word_pairs(str(word_lists / "heldout.txt"), spm, d)
    table = load_trusted(checkpoint)["model"][EMBEDDINGS].float()
    return accuracy(*word_translation_hits(table, build_task(heldout, [train])))
