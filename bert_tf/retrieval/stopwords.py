"""English stop words left out of BM25's terms, as `bm25s` leaves them out (`bm25s.tokenize(texts, stopwords="en")`).

The list is `STOPWORDS_EN` of `bm25s` 0.3.16 (`bm25s/stopwords.py`), itself Lucene's and Elasticsearch's default
English stop set (`EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`): 33 words. Kept here so that an index reads the same
terms whether `bm25s` is installed or not.

>>> len(ENGLISH), "the" in ENGLISH, "not" in ENGLISH
(33, True, True)
"""

ENGLISH = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
    "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
))


def stop_words(stopwords) -> frozenset[str]:
    """The stop words `stopwords` names: "en" or "english" (the list above), None or False (none), or the words.

    >>> sorted(stop_words(["Of", "the"])), len(stop_words(None))
    (['of', 'the'], 0)
    """
    if stopwords in ("en", "english"):
        return ENGLISH
    if stopwords is None or stopwords is False:
        return frozenset()
    if isinstance(stopwords, str) or not all(isinstance(word, str) for word in stopwords):
        raise ValueError(f"stopwords must be 'en', None or a list of words, got {stopwords!r}.")
    return frozenset(word.lower() for word in stopwords)
