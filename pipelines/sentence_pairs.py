"""Next-sentence-prediction pairs from tokenized documents, in the graph, as google-research/bert builds them.

The algorithm of `create_instances_from_document` (google-research/bert), per document:
a target length of `max_num_tokens` (`seq_length - 3`), or with probability
`short_seq_prob` a random one in [2, max_num_tokens]; consecutive sentences gathered into
a chunk until it reaches the target; segment A =
the first `a_end` sentences of the chunk (random split); segment B = the rest of the chunk
(IsNext, label 0) or, half of the time and always for one-sentence chunks, sentences from
a random position of another document in the window (NotNext, label 1), the chunk's
unused sentences being put back for the next chunk; then the pair is trimmed to
`max_num_tokens`, one token at a time from the longer segment, from its front or back at
random.

One deliberate difference: the target length is drawn for every chunk, where the original
draws it once per document. With a short target every chunk of the document is one
sentence, which always becomes NotNext, so the original's NotNext share grows with
`short_seq_prob`; drawn per chunk, it is 52% on the shared Gutenberg corpus.

It is written by hand (no library builds NSP pairs in the graph); the sequential walk
works on sentence lengths only, and tokens are gathered afterwards with ragged ops.
"""

from __future__ import annotations

import tensorflow as tf

IS_NEXT, NOT_NEXT = 0, 1
SPAN_FIELDS = ("a_doc", "a_start", "a_end", "b_doc", "b_start", "b_end", "label")


def _uniform(seed, counter):
    """A float in [0, 1) from the stateless generator, numbered by `counter`."""
    return tf.random.stateless_uniform([], seed=tf.stack([seed[0], seed[1] + tf.cast(counter, seed.dtype)]))


def _randint(seed, counter, low, high):
    """An int32 in [low, high] (both ends included, like Python's `random.randint`)."""
    return low + tf.cast(tf.floor(_uniform(seed, counter) * tf.cast(high - low + 1, tf.float32)), tf.int32)


def _target_length(seed, draw, max_num_tokens, short_seq_prob):
    """`max_num_tokens`, or with probability `short_seq_prob` a random length in [2, max_num_tokens]."""
    return tf.where(_uniform(seed, draw) < short_seq_prob, _randint(seed, draw + 1, 2, max_num_tokens), max_num_tokens)


@tf.function
def pair_spans(lengths: tf.RaggedTensor, max_num_tokens, short_seq_prob, seed):
    """Sentence spans of every pair built from a window of documents.

    Args:
        lengths: int32 [documents, (sentences)]: the token count of each sentence (all > 0).
        max_num_tokens: tokens of A + B allowed (seq_length - 3).
        short_seq_prob: probability of a shorter random target length, per chunk.
        seed: int [2], for the stateless random numbers.
    Returns:
        A dict of int32 [pairs] tensors: `a_doc`, `a_start`, `a_end`, `b_doc`, `b_start`,
        `b_end` (sentence indices within the document, end exclusive) and `label`.
    """
    num_docs = lengths.nrows(out_type=tf.int32)
    pairs = tf.TensorArray(tf.int32, size=0, dynamic_size=True, element_shape=[len(SPAN_FIELDS)])
    count = tf.constant(0)
    draw = tf.constant(0)  # numbers the random draws
    for doc in tf.range(num_docs):
        doc_lengths = lengths[doc]
        num_sentences = tf.shape(doc_lengths)[0]
        target = _target_length(seed, draw, max_num_tokens, short_seq_prob)
        draw += 2
        chunk_start = tf.constant(0)
        chunk_length = tf.constant(0)
        i = tf.constant(0)
        while i < num_sentences:
            chunk_length += doc_lengths[i]
            if i == num_sentences - 1 or chunk_length >= target:
                chunk_sentences = i + 1 - chunk_start
                a_end = tf.constant(1)
                if chunk_sentences >= 2:
                    a_end = _randint(seed, draw, 1, chunk_sentences - 1)
                a_tokens = tf.reduce_sum(doc_lengths[chunk_start:chunk_start + a_end])
                if chunk_sentences == 1 or _uniform(seed, draw + 1) < 0.5:
                    # NotNext: B from another document, from a random sentence on, until it is long enough.
                    other = doc
                    if num_docs > 1:
                        other = (doc + _randint(seed, draw + 2, 1, num_docs - 1)) % num_docs
                    other_lengths = lengths[other]
                    b_start = _randint(seed, draw + 3, 0, tf.shape(other_lengths)[0] - 1)
                    reached = tf.cumsum(other_lengths[b_start:]) >= target - a_tokens
                    b_end = tf.minimum(
                        b_start + tf.cast(tf.argmax(tf.cast(reached, tf.int32)), tf.int32) + 1,
                        tf.shape(other_lengths)[0],
                    )
                    if not tf.reduce_any(reached):
                        b_end = tf.shape(other_lengths)[0]
                    b_doc, label = other, NOT_NEXT
                    i -= chunk_sentences - a_end  # put the unused sentences back
                else:
                    b_doc, b_start, b_end, label = doc, chunk_start + a_end, i + 1, IS_NEXT
                pairs = pairs.write(count, tf.stack([doc, chunk_start, chunk_start + a_end, b_doc, b_start, b_end, label]))
                count += 1
                target = _target_length(seed, draw + 4, max_num_tokens, short_seq_prob)
                draw += 6
                chunk_start = i + 1
                chunk_length = 0
            i += 1
    columns = tf.unstack(tf.ensure_shape(tf.reshape(pairs.stack(), [-1, len(SPAN_FIELDS)]), [None, len(SPAN_FIELDS)]), axis=1)
    return dict(zip(SPAN_FIELDS, columns))


def _row_lengths(ragged: tf.RaggedTensor):
    return tf.cast(ragged.row_lengths(), tf.int32)


def _gather_segments(tokens: tf.RaggedTensor, docs, starts, ends) -> tf.RaggedTensor:
    """The tokens of sentences [starts, ends) of `docs`: [pairs, (tokens)] from [documents, (sentences), (tokens)]."""
    first_sentence = tf.gather(tf.cast(tokens.row_starts(), tf.int32), docs)
    sentence_ids = tf.ragged.range(first_sentence + starts, first_sentence + ends)
    return tf.gather(tokens.values, sentence_ids).merge_dims(1, 2)


def _trim_counts(length_a, length_b, max_num_tokens):
    """Tokens to drop from A and from B: always from the longer one (B on ties), as BERT's truncate_seq_pair."""
    excess = tf.maximum(length_a + length_b - max_num_tokens, 0)
    difference = tf.abs(length_a - length_b)
    from_longer = tf.minimum(excess, difference)
    rest = excess - from_longer  # shared alternately once the lengths are equal, B first
    drop_a = tf.where(length_a > length_b, from_longer, 0) + rest // 2
    drop_b = tf.where(length_a > length_b, 0, from_longer) + rest - rest // 2
    return drop_a, drop_b


def _trim(segment: tf.RaggedTensor, drop, seed) -> tf.RaggedTensor:
    """Drops `drop` tokens per row, each from the front or the back with probability 1/2."""
    from_front = tf.cast(
        tf.random.stateless_binomial(tf.shape(drop), seed=seed, counts=tf.cast(drop, tf.float32), probs=0.5), tf.int32
    )
    keep = tf.ragged.range(from_front, _row_lengths(segment) - (drop - from_front))
    return tf.gather(segment, keep, batch_dims=1)


def build_pairs(tokens: tf.RaggedTensor, max_num_tokens: int, short_seq_prob: float, seed):
    """NSP pairs from a window of tokenized documents [documents, (sentences), (tokens)].

    Returns `(segment_a, segment_b, labels)`: ragged [pairs, (tokens)] twice, and int32 [pairs]
    (0 = IsNext, 1 = NotNext). Sentences without tokens are skipped.
    """
    tokens = tf.ragged.boolean_mask(tokens, tokens.row_lengths(axis=2) > 0)
    tokens = tf.ragged.boolean_mask(tokens, tokens.row_lengths(axis=1) > 0)
    span_seed, trim_a_seed, trim_b_seed = tf.unstack(tf.random.experimental.stateless_split(seed, num=3))
    spans = pair_spans(tf.cast(tokens.row_lengths(axis=2), tf.int32), max_num_tokens, short_seq_prob, span_seed)
    segment_a = _gather_segments(tokens, spans["a_doc"], spans["a_start"], spans["a_end"])
    segment_b = _gather_segments(tokens, spans["b_doc"], spans["b_start"], spans["b_end"])
    drop_a, drop_b = _trim_counts(_row_lengths(segment_a), _row_lengths(segment_b), max_num_tokens)
    segment_a = _trim(segment_a, drop_a, trim_a_seed)
    segment_b = _trim(segment_b, drop_b, trim_b_seed)
    return segment_a, segment_b, spans["label"]
