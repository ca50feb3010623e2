"""`benchmarks.torch_reference`, the judge of the quality benchmark: its own dev pipeline agrees with bert-tf's.

The reference reads dev text its own way (the Rust `tokenizers` WordPiece tokenizer, whole-word NER windows,
google-research/bert's SQuAD windows, max-context check and n-best decoding on character offsets). Given the same
model, it must predict what bert-tf's pipeline predicts (`FinetuneTask.predictions`), example by example, on the
team's real dev data cut to lengths that force truncated pairs, NER windows and several SQuAD windows per question.
The model: transformers' classes from the trained BERT-Mini with a seeded random head (any fixed logits do).
"""

import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from benchmarks import torch_reference as reference  # noqa: E402
from bert_tf.tasks.registry import task_from_spec  # noqa: E402
from bert_tf.tokenizer import BertTokenizer  # noqa: E402
from bert_tf.training.finetune_config import FinetuneConfig  # noqa: E402

CHECKPOINT = ("pretrained", "bert-mini-uncased-books")


def first_rows(source, out, count):
    lines = source.read_text(encoding="utf-8-sig").split("\n")
    out.write_text("\n".join(lines[:count + 1]) + "\n", encoding="utf-8")
    return out


def first_sentences(source, out, count):
    sentences = [block for block in source.read_text(encoding="utf-8").split("\n\n") if "-DOCSTART-" not in block]
    out.write_text("\n\n".join(sentences[:count]) + "\n", encoding="utf-8")
    return out


def first_paragraphs(source, out, count):
    data = json.loads(source.read_text(encoding="utf-8"))
    article = data["data"][-1]
    out.write_text(json.dumps({"version": "1.1", "data": [{**article, "paragraphs": article["paragraphs"][:count]}]}),
                   encoding="utf-8")
    return out


# task, training file (labels), dev file made from the team data, settings that force the hard cases.
CASES = {
    "mrpc_pairs_cut_longest_first": ("classify", ("mrpc", "train.tsv"),
                                     lambda data, out: first_rows(data / "mrpc" / "dev.tsv", out / "dev.tsv", 96),
                                     {"seq_length": 32}),
    "conll_word_windows": ("ner", ("conll2003", "train.txt"),
                           lambda data, out: first_sentences(data / "conll2003" / "valid.txt", out / "dev.txt", 300),
                           {"seq_length": 12}),
    "squad_doc_stride_windows": ("squad", ("squad", "train-v1.1-subset.json"),
                                 lambda data, out: first_paragraphs(data / "squad" / "train-v1.1-subset.json",
                                                                    out / "dev.json", 6),
                                 {"seq_length": 64, "settings": {"doc_stride": 24, "max_query_length": 16}}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_reference_pipeline_predicts_what_bert_tf_pipeline_predicts(shared_data, tmp_path, name):
    checkpoint = shared_data.joinpath(*CHECKPOINT)
    if not checkpoint.is_dir():
        pytest.skip(f"no trained checkpoint at {checkpoint}")
    task_name, train, make_dev, settings = CASES[name]
    config = FinetuneConfig(task=task_name, train_file=str(shared_data.joinpath(*train)),
                            dev_file=str(make_dev(shared_data, tmp_path)), init=str(checkpoint),
                            output_dir=str(tmp_path / "unused"), **settings)
    task = task_from_spec(config.task_spec(), BertTokenizer(checkpoint / "vocab.txt", lower_case=True))
    task.read(config.train_file, fit_labels=True)
    torch.manual_seed(0)
    model = reference.build_model(config, task.spec.label_names).eval()

    ours = reference.own_pipeline_predictions(model, config, task, checkpoint / "vocab.txt", lower_case=True)
    dev = task.prepare(task.read(config.dev_file), training=False)
    theirs = task.predictions(dev, task.outputs(reference.TorchModel(model), dev, 32))
    if task_name == "classify":
        assert ours.tolist() == [task.spec.label_names.index(prediction["label"]) for prediction in theirs]
        assert len(set(ours.tolist())) == 2  # both classes occur: the comparison is not of constants
    elif task_name == "ner":
        assert ours == [prediction["tags"] for prediction in theirs]
        assert max(len(sentence.words) for sentence in dev.sentences) > settings["seq_length"]  # windows were made
    else:
        assert ours == {example.question_id: answer["text"] for example, answer in zip(dev.examples, theirs)}
        assert len(dev.features.windows) > 2 * len(dev.examples)  # several windows per question
        assert sum(bool(text) for text in ours.values()) == len(ours)

