"""A classification dataset with each example's translation, for plug-in fine-tuning."""

from typing import Any, Dict, List

import numpy as np
from fairseq.data import BaseWrapperDataset, FairseqDataset, data_utils


class VecoTranslatedDataset(BaseWrapperDataset):
    """``dataset`` (fairseq's sentence-prediction samples) with ``translation`` (token
    tensors, index-aligned) collated into ``net_input["translation_tokens"]`` (B, T').

    Order, shuffling and everything else is ``dataset``'s; an example's size is the
    longer of its two sides (both are padded to one width in the stacked pair)."""

    def __init__(self, dataset: FairseqDataset, translation: FairseqDataset, pad: int):
        super().__init__(dataset)
        if len(dataset) != len(translation):
            raise ValueError(
                f"{len(dataset)} examples but {len(translation)} translations: "
                "the trans0/trans1 files must be line-aligned with input0/input1"
            )
        self.translation = translation
        self.pad = pad
        sizes = dataset.sizes  # NestedDictionaryDataset: a list of one array
        sizes = sizes[0] if isinstance(sizes, (list, tuple)) else sizes
        self._sizes = np.maximum(sizes, translation.sizes)

    def __getitem__(self, index: int) -> Dict[str, Any]:
        return {"example": self.dataset[index], "translation": self.translation[index]}

    def collater(self, samples: List[Dict[str, Any]]) -> Dict[str, Any]:
        batch = self.dataset.collater([s["example"] for s in samples])
        if len(samples) > 0:
            tokens = [s["translation"] for s in samples]
            batch["net_input"]["translation_tokens"] = data_utils.collate_tokens(tokens, self.pad)
        return batch

    @property
    def sizes(self):
        return self._sizes

    def num_tokens(self, index: int) -> int:
        return int(self._sizes[index])

    def size(self, index: int) -> int:
        return int(self._sizes[index])

    @property
    def supports_prefetch(self) -> bool:
        return False
