"""SQuAD files (v1.1, and v2.0 with unanswerable questions) → one example per question, answers checked.

Format: `{"data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question",
"answers": [{"text", "answer_start"}], "is_impossible" (v2.0)}]}]}], "version"}`.
An answer's `answer_start` is a character offset (a Python `str` index) into the context,
and `context[answer_start:answer_start + len(text)]` must be the answer's text: anything
else is an error naming the file, the article and the question id.

Example:
    >>> examples = read_squad("squad/train-v1.1-subset.json")  # doctest: +SKIP
    >>> examples[0].question, examples[0].answers[0]  # doctest: +SKIP
    ('To whom did the Virgin Mary allegedly appear in 1858 in Lourdes France?',
     Answer(text='Saint Bernadette Soubirous', start=515))
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from bert_tf.text_files import existing_file, not_utf8_error


@dataclasses.dataclass(frozen=True)
class Answer:
    text: str
    start: int  # character offset in the context

    @property
    def end(self) -> int:
        """Character offset just after the answer."""
        return self.start + len(self.text)


@dataclasses.dataclass
class SquadExample:
    question_id: str
    question: str
    context: str
    answers: list[Answer]  # empty for an unanswerable question (and for questions to answer)
    is_impossible: bool = False  # SQuAD 2.0: the context holds no answer
    title: str = ""


def _field(mapping, key, kind, where: str):
    if not isinstance(mapping, dict) or key not in mapping:
        raise ValueError(f"{where}: missing field {key!r}.")
    value = mapping[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ValueError(f"{where}: field {key!r} must be {kind.__name__}, got {type(value).__name__}.")
    return value


def _answer(raw, context: str, where: str) -> Answer:
    text, start = _field(raw, "text", str, where), _field(raw, "answer_start", int, where)
    found = context[start:start + len(text)] if start >= 0 else None
    if found != text:
        raise ValueError(
            f"{where}: answer {text!r} does not match the context at character {start} "
            f"(the context has {found!r} there)."
        )
    return Answer(text, start)


def read_squad(path: str | Path, need_answers: bool = True) -> list[SquadExample]:
    """Every question of a SQuAD JSON file, with its context and checked answers.

    `need_answers`: every answerable question must have at least one answer (training and
    evaluation data).
    """
    path = existing_file(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise not_utf8_error(path) from None
    if not text.strip():
        raise ValueError(f"{path}: the file is empty (expected SQuAD JSON).")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}, line {error.lineno}, column {error.colno}: not valid JSON ({error.msg}).") from None
    examples = []
    for article_index, article in enumerate(_field(data, "data", list, str(path))):
        title = article.get("title", "") if isinstance(article, dict) else ""
        article_where = f"{path}, article {article_index} ({title!r})"
        for paragraph_index, paragraph in enumerate(_field(article, "paragraphs", list, article_where)):
            paragraph_where = f"{article_where}, paragraph {paragraph_index}"
            context = _field(paragraph, "context", str, paragraph_where)
            for question in _field(paragraph, "qas", list, paragraph_where):
                question_id = str(question.get("id", "?")) if isinstance(question, dict) else "?"
                where = f"{paragraph_where}, question {question_id!r}"
                is_impossible = bool(question.get("is_impossible", False)) if isinstance(question, dict) else False
                answers = [] if is_impossible else [
                    _answer(raw, context, where) for raw in _field(question, "answers", list, where)
                ]
                if need_answers and not is_impossible and not answers:
                    raise ValueError(f"{where}: no answers (and not marked is_impossible).")
                examples.append(SquadExample(
                    question_id=_field(question, "id", str, where),
                    question=_field(question, "question", str, where),
                    context=context,
                    answers=answers,
                    is_impossible=is_impossible,
                    title=title,
                ))
    if not examples:
        raise ValueError(f"{path}: no questions.")
    duplicates = len(examples) - len({example.question_id for example in examples})
    if duplicates:
        raise ValueError(f"{path}: {duplicates} question ids appear more than once.")
    return examples


def is_squad_v2(examples: list[SquadExample]) -> bool:
    """True when some question is unanswerable (SQuAD 2.0 data)."""
    return any(example.is_impossible for example in examples)
