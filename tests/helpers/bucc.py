"""XTREME's bucc2018 folder made of LASER's real German-English Tatoeba pairs (the real BUCC
files are not to be had here)."""

from tests.helpers.tiny_encoder import LASER


def bucc_folder(out, test_gold: bool):
    """XTREME's bucc2018 layout (``de-en.{dev,test}.{de,en}``, ``de-en.dev.gold``) made of
    LASER's real German-English pairs: dev = pairs 1-50, test = pairs 51-100, each English
    side with 30 unmatched English sentences (LASER's jav-eng) among them."""
    de = open(f"{LASER}/tatoeba.deu-eng.deu", encoding="utf-8").read().splitlines()
    en = open(f"{LASER}/tatoeba.deu-eng.eng", encoding="utf-8").read().splitlines()
    extra = open(f"{LASER}/tatoeba.jav-eng.eng", encoding="utf-8").read().splitlines()
    for split, rows, others in (
        ("dev", range(0, 50), extra[:30]),
        ("test", range(50, 100), extra[30:60]),
    ):
        src = [(f"de-{i:09d}", de[i]) for i in rows]
        trg = [(f"en-{i:09d}", en[i]) for i in rows]
        trg += [(f"en-{900000 + n:09d}", s) for n, s in enumerate(others)]
        trg.sort(key=lambda row: row[1])  # the comparable corpus: no line order to lean on
        for lang, side in (("de", src), ("en", trg)):
            (out / f"de-en.{split}.{lang}").write_text("".join(f"{i}\t{s}\n" for i, s in side))
        if split == "dev" or test_gold:
            gold = "".join(f"de-{i:09d}\ten-{i:09d}\n" for i in rows)
            (out / f"de-en.{split}.gold").write_text(gold)
    return out
