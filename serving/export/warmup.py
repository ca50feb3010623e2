"""The warm-up requests `bert-tf export` writes into each version (`serving.warmup_records`), for the server to
replay before the version serves: per signature, one request of a typical length (`TYPICAL_LENGTH` tokens) and one
as long as the model reads in one window (`seq_length`), one row each. Signatures that take the model's text inputs
get texts (a row of each, in the inputs' shapes) of that many of the vocabulary's words (each at least a token); those that take token ids, that many:
`[CLS]`, words' ids and `[SEP]`, padded to `seq_length`; others (`model_info`) none.

Example:
    >>> requests = warmup_requests(spec, {"serving_default": ["text"], "serve_ids": list(INPUT_NAMES)})  # doctest: +SKIP
    >>> [(request.signature_name, request.inputs["input_mask"].sum()) for request in requests[2:]]  # doctest: +SKIP
    [('serve_ids', 16), ('serve_ids', 128)]
"""

from __future__ import annotations

import itertools

import numpy as np

from bert_tf.model import INPUT_NAMES
from serving.export.signatures import ServingSpec, example_texts
from serving.warmup_records import WarmupRequest

TYPICAL_LENGTH = 16  # tokens of a typical request: a sentence


def warmup_requests(spec: ServingSpec, signature_inputs: dict[str, list[str]]) -> list[WarmupRequest]:
    """The requests for the signatures of an export of `spec`, given as {signature: its input names}."""
    words = [token for token in spec.vocabulary.tokens if token.isalpha()] or ["a"]
    requests = []
    for signature, inputs in signature_inputs.items():
        for length in sorted({min(TYPICAL_LENGTH, spec.seq_length), spec.seq_length}):
            chosen = list(itertools.islice(itertools.cycle(words), length))
            if set(inputs) <= set(spec.text_inputs):
                texts = example_texts(spec, " ".join(chosen))
                requests.append(WarmupRequest(signature, {name: texts[name] for name in inputs}))
            elif set(inputs) == set(INPUT_NAMES):
                requests.append(WarmupRequest(signature, _ids(spec, chosen[:length - 2])))
    return requests


def _ids(spec: ServingSpec, words: list[str]) -> dict[str, np.ndarray]:
    """`[CLS] words [SEP]` as one row of the three id inputs, padded to `seq_length`."""
    vocabulary = spec.vocabulary
    ids = [vocabulary.cls_id, *map(vocabulary.token_id, words), vocabulary.sep_id]
    word_ids, mask = np.full([1, spec.seq_length], vocabulary.pad_id, np.int32), np.zeros([1, spec.seq_length], np.int32)
    word_ids[0, :len(ids)], mask[0, :len(ids)] = ids, 1
    return {"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": np.zeros_like(word_ids)}
