"""The byte budget of raw text: each text is cut to `max_text_bytes` UTF-8 bytes before it is tokenized.

Tokenizing costs memory and time in proportion to the text (about 72 bytes of memory per input
byte), so a model that takes raw text from clients cuts it first: the cost of any request is
then bounded by its number of texts. The cut falls on a character boundary (a character it
would split is dropped whole). Every path applies the same cut (`TaskSpec.max_text_bytes`):
fine-tuning's and `bert-tf predict`'s tokenization and the SavedModel's, so they agree on long
texts too; the default (64 KiB) holds far more than `seq_length` tokens of any ordinary text, and
a SQuAD context keeps all its windows up to it.

Example:
    >>> cut_text(tf.constant(["naïve text", "short"]), max_bytes=3).numpy().tolist()
    [b'na', b'sho']
"""

from __future__ import annotations

import tensorflow as tf


def cut_text(texts: tf.Tensor, max_bytes: int) -> tf.Tensor:
    """`texts` (string [batch]) cut to at most `max_bytes` UTF-8 bytes each, on a character boundary."""
    texts = tf.convert_to_tensor(texts, tf.string)
    too_long = tf.strings.length(texts) > max_bytes

    def cut():
        # Only a cut text can end in part of a character; transcoding drops it (and touches no other text).
        whole = tf.strings.unicode_transcode(tf.strings.substr(texts, 0, max_bytes, unit="BYTE"), "UTF-8", "UTF-8",
                                             errors="ignore")
        return tf.where(too_long, whole, texts)

    return tf.cond(tf.reduce_any(too_long), cut, lambda: texts)  # the usual batch passes untouched

