"""The team's trained BERT-Mini in bert-tf and in transformers: the same logits, the same fill-mask, the same step.

The checkpoint (`../shared/data/pretrained/bert-mini-uncased-books`, Hugging Face format with both
pre-training heads) is loaded by both frameworks. For each task head, both take a few training steps
from identical weights (the head's initial values copied from bert-tf into torch), the same batch and
the same recipe (AdamW with its weight-decay exclusions, warm-up then linear decay, global-norm clipping
at 1), with dropout off: the losses, the updates and the updated weights must agree. This is what
makes `benchmarks/quality.py`'s comparison of the two frameworks a comparison of the same training.

One difference is deliberate and applied on the torch side here: bert-tf's span labeler masks padding
out of the start/end softmax (`BertSpanLabeler`), so a window's loss does not depend on how much its
batch is padded; transformers' `BertForQuestionAnswering` leaves padding in the softmax. The torch
loss masks it too (`benchmarks.torch_reference.span_loss`, which the quality benchmark's reference trains with,
as it takes its updates from `benchmarks.torch_reference.torch_updates`, the ones checked here).
"""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import bert_tf  # noqa: E402
from benchmarks import torch_reference as reference  # noqa: E402
from bert_tf.checkpoints.huggingface import google_to_hf_name  # noqa: E402
from bert_tf.inspection import fill_mask, load_inspection_model  # noqa: E402

CHECKPOINT = ("pretrained", "bert-mini-uncased-books")
LEARNING_RATE = 1e-4  # the benchmark's rate for this model
WEIGHT_DECAY = 0.01
STEPS, WARMUP_STEPS, TOTAL_STEPS = 3, 1, 4  # the learning rate is 0, then the peak, then 2/3 of it


@pytest.fixture(scope="module")
def checkpoint(shared_data):
    path = shared_data.joinpath(*CHECKPOINT)
    if not path.is_dir():
        pytest.skip(f"no trained checkpoint at {path}")
    return path


def masked_lm_batch(tokenizer):
    preprocess = bert_tf.BertPreprocessor(tokenizer, seq_length=24)
    features = {name: value.numpy() for name, value in preprocess(
        (["the old man walked slowly down the road to the village .", "she smiled at him ."],
         ["it was a cold morning and the sky was grey .", "the ship sailed at dawn ."])).items()}
    rng = np.random.default_rng(0)
    positions = np.stack([np.sort(rng.choice(np.arange(1, int(length) - 1), 4, replace=False))
                          for length in features["input_mask"].sum(1)]).astype(np.int32)
    return features, positions


def test_pretraining_heads_give_the_logits_of_transformers(checkpoint):
    model = load_inspection_model(checkpoint)
    features, positions = masked_lm_batch(model.tokenizer)
    ours = model.require_pretrainer()({**features, "masked_lm_positions": positions})
    theirs = transformers.BertForPreTraining.from_pretrained(checkpoint).eval()
    with torch.no_grad():
        output = theirs(**reference.torch_inputs(features))
    rows = np.arange(len(positions))[:, None]
    np.testing.assert_allclose(ours["mlm_logits"].numpy(), output.prediction_logits.numpy()[rows, positions],
                               atol=1e-4)
    np.testing.assert_allclose(ours["nsp_logits"].numpy(), output.seq_relationship_logits.numpy(), atol=1e-4)
    # The checkpoint is trained: the next-sentence head sees these pairs' order, not coin flips.
    assert np.abs(output.seq_relationship_logits.numpy()).max() > 0.5


def test_attention_maps_are_those_of_transformers_and_show_what_training_learned(checkpoint):
    model = load_inspection_model(checkpoint)
    features = {name: value.numpy() for name, value in
                bert_tf.BertPreprocessor(model.tokenizer, seq_length=8)(tf.constant(["the cat sat on the mat"])).items()}
    ours = model.encoder(features, output_attentions=True)["attention_probs"]
    theirs = transformers.BertModel.from_pretrained(checkpoint, attn_implementation="eager").eval()
    with torch.no_grad():
        output = theirs(**reference.torch_inputs(features), output_attentions=True)
    for layer, (mine, torch_probs) in enumerate(zip(ours, output.attentions)):
        np.testing.assert_allclose(mine.numpy(), torch_probs.numpy(), atol=1e-4, err_msg=f"layer {layer}")
    # Layer 3, head 0 reads the next token (the README's example): a trained model's pattern, not chance.
    next_token = np.diagonal(ours[3].numpy()[0, 0], offset=1)
    assert next_token[1:].min() > 0.9


@pytest.mark.parametrize("text", ["the king sat on his [MASK] .", "she opened the [MASK] and went out into the garden ."])
def test_fill_mask_top_five_is_the_fill_mask_pipeline_of_transformers(checkpoint, text):
    model = load_inspection_model(checkpoint)
    candidates = fill_mask(model.require_pretrainer(), model.tokenizer, text, top_k=5).spans[0].candidates
    pipeline = transformers.pipeline(
        "fill-mask", model=transformers.BertForMaskedLM.from_pretrained(checkpoint),
        tokenizer=transformers.BertTokenizer(str(checkpoint / "vocab.txt"), do_lower_case=True), top_k=5)
    theirs = pipeline(text)
    assert [candidate.text for candidate in candidates] == [answer["token_str"] for answer in theirs]
    np.testing.assert_allclose([candidate.probability for candidate in candidates],
                               [answer["score"] for answer in theirs], rtol=1e-4, atol=1e-6)
    assert candidates[0].probability > 0.05  # a trained head is confident; a random one spreads 1/30,522


# ----- one training step per task head ---------------------------------------------------------

@dataclasses.dataclass
class TaskCase:
    """A task head in both frameworks with its batch: features, labels, and how to copy the head across."""

    ours: object  # the bert-tf task model
    theirs: object  # the transformers model
    features: dict
    labels: object  # bert-tf's labels (the torch labels are made from them)
    head: dict  # transformers parameter name -> bert-tf head variable
    # Weights whose gradient is 0 by construction, because a softmax ignores a constant added to all its inputs:
    # attention key biases; for spans also the head's bias and the last LayerNorm's (added at every position).
    zero_gradient: tuple[str, ...] = ("attention.self.key.bias",)


def no_dropout_encoder(checkpoint):
    config = dataclasses.replace(bert_tf.read_checkpoint(checkpoint).config, hidden_dropout_prob=0.0,
                                 attention_probs_dropout_prob=0.0)
    return bert_tf.from_pretrained(checkpoint, config=config)


def hf_model(cls, checkpoint, **settings):
    return cls.from_pretrained(checkpoint, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **settings)


def sentence_pairs_case(checkpoint):
    tokenizer = bert_tf.BertTokenizer(checkpoint / "vocab.txt")
    preprocess = bert_tf.BertPreprocessor(tokenizer, seq_length=32)
    features = {name: value.numpy() for name, value in preprocess(
        (["the company said profits rose .", "he left early", "a fine , moving film", "no ."],
         ["profits rose , the company said .", "she stayed late into the night", "dull", "yes ."])).items()}
    ours = bert_tf.BertClassifier(no_dropout_encoder(checkpoint), num_classes=2, dropout=0.0)
    theirs = hf_model(transformers.BertForSequenceClassification, checkpoint, num_labels=2)
    head = {"classifier.weight": ours.classifier.kernel, "classifier.bias": ours.classifier.bias}
    return TaskCase(ours, theirs, features, np.array([1, 0, 0, 1]), head)


def ner_case(checkpoint):
    from bert_tf.tasks.bucketing import batch_examples
    from bert_tf.tasks.ner.features import ner_features

    tokenizer = bert_tf.BertTokenizer(checkpoint / "vocab.txt")
    sentences = [["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."],
                 ["Peter", "Blackburn"], ["BRUSSELS", "1996-08-22"]]
    tags = [[3, 0, 1, 0, 0, 0, 1, 0, 0], [2, 4], [5, 0]]
    ner = ner_features(sentences, tokenizer, 32, tags)
    features, labels = next(iter(batch_examples(ner.dataset(), ner.lengths, 8, 32, training=False, label_padding=-100)))
    ours = bert_tf.BertTokenClassifier(no_dropout_encoder(checkpoint), num_labels=6, dropout=0.0)
    theirs = hf_model(transformers.BertForTokenClassification, checkpoint, num_labels=6)
    head = {"classifier.weight": ours.classifier.kernel, "classifier.bias": ours.classifier.bias}
    return TaskCase(ours, theirs, {k: v.numpy() for k, v in features.items()}, labels.numpy(), head)


def squad_case(checkpoint):
    from bert_tf.tasks.bucketing import batch_examples
    from bert_tf.tasks.squad.data import Answer, SquadExample
    from bert_tf.tasks.squad.features import squad_features

    tokenizer = bert_tf.BertTokenizer(checkpoint / "vocab.txt")
    context = ("The university's main library opened in 1963 and holds three million books. "
               "It stands beside the lake, north of the chapel built by the first students.")
    examples = [SquadExample("1", "When did the library open?", context, [Answer("1963", context.index("1963"))]),
                SquadExample("2", "Who built the chapel?", context,
                             [Answer("the first students", context.index("the first students"))])]
    squad = squad_features(examples, tokenizer, seq_length=48, max_query_length=16, doc_stride=16, with_labels=True)
    features, labels = next(iter(batch_examples(squad.dataset(), squad.lengths, 8, 48, training=False)))
    ours = bert_tf.BertSpanLabeler(no_dropout_encoder(checkpoint))
    theirs = hf_model(transformers.BertForQuestionAnswering, checkpoint)
    head = {"qa_outputs.weight": ours.span_logits.kernel, "qa_outputs.bias": ours.span_logits.bias}
    labels = {name: value.numpy() for name, value in labels.items()}
    assert labels["start_logits"].any(), "some window must hold its answer"
    last_layer_norm = f"layer.{ours.encoder.config.num_hidden_layers - 1}.output.LayerNorm.bias"
    return TaskCase(ours, theirs, {k: v.numpy() for k, v in features.items()}, labels, head,
                    zero_gradient=("attention.self.key.bias", "qa_outputs.bias", last_layer_norm))


def torch_loss(case: TaskCase, output):
    """transformers' own loss for classification and NER; for spans, the reference's (padding out of the softmax)."""
    if isinstance(case.ours, bert_tf.BertSpanLabeler):
        return reference.span_loss(output.start_logits, output.end_logits, case.features["input_mask"],
                                   case.labels["start_logits"], case.labels["end_logits"])
    return output.loss


def paired_weights(case: TaskCase) -> list[tuple[str, object, object]]:
    """(transformers name, bert-tf variable, torch parameter) for every weight of the model, encoder and head."""
    parameters = dict(case.theirs.named_parameters())
    names = {f"{case.theirs.base_model_prefix}.{google_to_hf_name(name)}": variable
             for name, variable in case.ours.encoder.google_weights().items()}
    names.update(case.head)
    # Token-level heads in transformers have no pooler (bert-tf's is there, unused, and gets no gradient).
    unused = [name for name in names if name not in parameters and ".pooler." in name]
    names = {name: variable for name, variable in names.items() if name not in unused}
    assert sorted(names) == sorted(parameters) and len(names) + len(unused) == len(case.ours.trainable_variables)
    return [(name, variable, parameters[name]) for name, variable in names.items()]


def torch_values(pairs) -> dict:
    """bert-tf's weights in transformers' layout (a Dense kernel [in, out] is a Linear weight [out, in])."""
    return {name: variable.numpy().T if variable.path.endswith("kernel") else variable.numpy()
            for name, variable, _ in pairs}


CASES = {"sentence_pairs": sentence_pairs_case, "ner": ner_case, "squad": squad_case}


@pytest.mark.parametrize("name", list(CASES))
def test_training_steps_match_transformers(checkpoint, name):
    case = CASES[name](checkpoint)
    pairs = paired_weights(case)
    with torch.no_grad():  # the head's initial values, copied across
        for hf_name, variable in case.head.items():
            dict(case.theirs.named_parameters())[hf_name].copy_(torch.tensor(variable.numpy().T))
    start = torch_values(pairs)
    for weight_name, _, parameter in pairs:
        np.testing.assert_allclose(start[weight_name], parameter.detach().numpy(), atol=1e-7, err_msg=weight_name)

    case.ours.compile(optimizer=bert_tf.create_optimizer(LEARNING_RATE, TOTAL_STEPS, WARMUP_STEPS,
                                                         weight_decay=WEIGHT_DECAY))
    update = reference.torch_updates(case.theirs, LEARNING_RATE, WEIGHT_DECAY, TOTAL_STEPS, WARMUP_STEPS)
    case.theirs.train()
    torch_labels = ({"start_positions": None} if isinstance(case.labels, dict)
                    else {"labels": torch.tensor(case.labels, dtype=torch.long)})
    for step in range(STEPS):
        ours = float(case.ours.train_on_batch(case.features, case.labels, return_dict=True)["loss"])
        output = case.theirs(**reference.torch_inputs(case.features), **{k: v for k, v in torch_labels.items() if v is not None})
        theirs = update(torch_loss(case, output))
        assert ours == pytest.approx(theirs, rel=1e-4), f"loss at step {step}"

    after = torch_values(pairs)
    for weight_name, _, parameter in pairs:
        theirs = parameter.detach().numpy()
        ours_moved, theirs_moved = after[weight_name] - start[weight_name], theirs - start[weight_name]
        if weight_name.endswith(case.zero_gradient):
            # Gradients 0 up to float noise, which Adam normalises into steps far below a learning rate.
            assert max(np.abs(ours_moved).max(), np.abs(theirs_moved).max()) < 0.1 * LEARNING_RATE, weight_name
            continue
        np.testing.assert_allclose(after[weight_name], theirs, atol=1e-4 * np.abs(theirs).max(), rtol=0,
                                   err_msg=weight_name)
        # The updates themselves (about a learning rate in size) agree, not just the weights they moved.
        np.testing.assert_allclose(ours_moved, theirs_moved, atol=2e-2 * np.abs(theirs_moved).max(), rtol=0,
                                   err_msg=f"update of {weight_name}")
        assert np.abs(theirs_moved).max() > 0.5 * LEARNING_RATE, f"{weight_name} did not move"
