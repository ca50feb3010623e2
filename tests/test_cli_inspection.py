"""`bert-tf embed`, `bert-tf fill-mask` and `bert-tf attention`, through the CLI's `main` (in this process)."""

import json

import numpy as np
import pytest
from matplotlib import image as mpimg

from bert_tf import BertModel
from bert_tf_cli import main
from tiny_inspection_models import CONFIG, save_tiny, tiny_pretrainer


@pytest.fixture(scope="module")
def pretrainer_dir(tmp_path_factory):
    return save_tiny(tiny_pretrainer(), tmp_path_factory.mktemp("models") / "pretrainer")


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    return save_tiny(BertModel(CONFIG), tmp_path_factory.mktemp("models") / "encoder")


def run(capsys, *args):
    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_fill_mask_prints_candidates_and_json(capsys, pretrainer_dir):
    code, out, err = run(capsys, "fill-mask", "--model", pretrainer_dir, "a woman bought a [MASK] of [MASK][MASK] .",
                         "--top-k", "3")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "a woman bought a [MASK] of [MASK][MASK] ."
    assert lines[1] == "  [MASK] 1 (token 5):" and lines[5] == "  [MASK] 2 (token 7, 2 pieces):"
    assert lines[2].split()[0] == "1." and lines[-1].startswith("  → a woman bought a ")

    code, out, err = run(capsys, "fill-mask", "--model", pretrainer_dir, "we sat on the [MASK] .", "--json")
    record = json.loads(out)
    probabilities = [c["probability"] for c in record["masks"][0]["candidates"]]
    assert code == 0 and len(probabilities) == 5 and probabilities == sorted(probabilities, reverse=True)
    assert record["filled"] == f"we sat on the {record['masks'][0]['candidates'][0]['text']} ."


def test_fill_mask_errors(capsys, pretrainer_dir, encoder_dir):
    code, _, err = run(capsys, "fill-mask", "--model", pretrainer_dir, "no mask here")
    assert code == 2 and r"bert-tf fill-mask: error: No [MASK] in 'no mask here'" in err
    code, _, err = run(capsys, "fill-mask", "--model", encoder_dir, "a [MASK]")
    assert code == 2 and "has no masked-LM head weights" in err
    code, _, err = run(capsys, "fill-mask", "--model", pretrainer_dir, "the river " * 12 + "[MASK]")
    assert code == 2 and "would be cut off" in err


def test_embed_sentence_and_token_vectors(capsys, caplog, tmp_path, pretrainer_dir):
    source = tmp_path / "in.txt"
    source.write_text("i opened a bank account\nwe sat on the river bank\n" + "the river " * 20 + "\n")
    code, out, err = run(capsys, "embed", "--model", pretrainer_dir, "--in", source, "--out", tmp_path / "v.npy",
                         "--layer", "embeddings", "-2", "-1", "--pooling", "mean_max", "--normalize", "--no-progress")
    assert code == 0, err
    assert "Wrote sentence vectors (mean_max pooling) of 3 text(s), size 192, layers ['embeddings', -2, -1]" in out
    assert "1 text(s) longer than 24 tokens were truncated (texts 3" in caplog.text
    vectors = np.load(tmp_path / "v.npy")
    assert vectors.shape == (3, 6 * CONFIG.hidden_size)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)

    code, out, err = run(capsys, "embed", "--model", pretrainer_dir, "--in", source, "--out", tmp_path / "t.jsonl",
                         "--tokens", "--no-progress")
    records = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert code == 0 and len(records) == 3 and len(records[2]["tokens"]) == CONFIG.max_position_embeddings
    assert f"Wrote token vectors of 3 text(s), size {CONFIG.hidden_size}, layers [-1]" in out
    assert [t["token"] for t in records[0]["tokens"]][:3] == ["[CLS]", "i", "opened"]


@pytest.mark.slow
def test_embed_reads_texts_from_the_command_line_and_stdin(capsys, tmp_path, pretrainer_dir, monkeypatch):
    """As `predict` does (it took --in FILE only)."""
    import io

    texts = ["i opened a bank account", "we sat on the river bank"]
    source = tmp_path / "in.txt"
    source.write_text("".join(f"{text}\n" for text in texts))
    assert run(capsys, "embed", "--model", pretrainer_dir, "--in", source, "--out", tmp_path / "file.npy")[0] == 0
    code, out, err = run(capsys, "embed", "--model", pretrainer_dir, *texts, "--out", tmp_path / "args.npy")
    assert code == 0 and "of 2 text(s)" in out, err
    monkeypatch.setattr("sys.stdin", io.StringIO(source.read_text()))
    assert run(capsys, "embed", "--model", pretrainer_dir, "--in", "-", "--out", tmp_path / "stdin.npy")[0] == 0
    for name in ("args.npy", "stdin.npy"):
        np.testing.assert_array_equal(np.load(tmp_path / name), np.load(tmp_path / "file.npy"))
    code, _, err = run(capsys, "embed", "--model", pretrainer_dir, "a text", "--in", source, "--out", tmp_path / "x.npy")
    assert code == 2 and "Give texts to embed or --input FILE (- for stdin), not both." in err
    code, _, err = run(capsys, "embed", "--model", pretrainer_dir, "two\nlines", "--out", tmp_path / "x.npy")
    assert code == 2 and "text 1 holds a line break" in err


@pytest.mark.slow
def test_embed_text_pairs(capsys, tmp_path, pretrainer_dir):
    from bert_tf import TextEmbedder, load_embedder

    pairs = [("who sat on the bank ?", "we sat on the river bank ."), ("i opened", "a bank account")]
    source = tmp_path / "pairs.tsv"
    source.write_text("".join(f"{first}\t{second}\n" for first, second in pairs))
    code, out, err = run(capsys, "embed", "--model", pretrainer_dir, "--in", source, "--out", tmp_path / "p.jsonl",
                         "--pairs", "--pooling", "cls", "--no-progress")
    assert code == 0, err
    assert "Wrote sentence vectors (cls pooling) of 2 text pair(s), size 32" in out
    records = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert [record["text"] for record in records] == [f"{first}\t{second}" for first, second in pairs]
    expected = TextEmbedder(load_embedder(pretrainer_dir, pooling="cls")).embed(pairs)
    np.testing.assert_allclose([record["vector"] for record in records], expected, atol=1e-5)

    code, _, err = run(capsys, "embed", "--model", pretrainer_dir, "--in", source, "--out", tmp_path / "t.jsonl",
                       "--pairs", "--tokens")
    assert code == 2 and "--pairs embeds pairs as one vector each" in err


def test_embed_errors(capsys, tmp_path, pretrainer_dir):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    out = tmp_path / "v.npy"
    code, _, err = run(capsys, "embed", "--model", pretrainer_dir, "--in", empty, "--out", out)
    assert code == 2 and "empty.txt has no text to embed (empty file)" in err
    code, _, err = run(capsys, "embed", "--model", pretrainer_dir, "--in", empty, "--out", out, "--layer", "last4")
    assert code == 2 and "layer(s) [-4, -3] do not exist: the model has 2 layers" in err
    code, _, err = run(capsys, "embed", "--model", pretrainer_dir, "--in", empty, "--out", out, "--layer", "embedding")
    assert code == 2 and "--layer takes block indices, 'embeddings' or 'last4', got 'embedding'" in err
    code, _, err = run(capsys, "embed", "--model", pretrainer_dir, "--in", empty, "--out", out, "--tokens",
                       "--pooling", "cls")
    assert code == 2 and "Give one of them" in err
    code, _, err = run(capsys, "embed", "--model", tmp_path / "nothing", "--in", empty, "--out", out)
    assert code == 2 and "argument --model: no such model folder" in err
    assert not out.exists()


def test_attention_table_and_pngs(capsys, tmp_path, pretrainer_dir):
    code, out, err = run(capsys, "attention", "--model", pretrainer_dir, "we sat on the river bank", "--layer", "0",
                         "--head", "1", "--png", tmp_path / "head.png")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "Attention, layer 0, head 1 (rows attend to columns):"
    assert lines[1].split() == ["[CLS]", "we", "sat", "on", "the", "river", "bank", "[SEP]"]
    rows = [[float(value) for value in line.split()[1:]] for line in lines[2:10]]
    assert all(abs(sum(row) - 1) < 0.05 for row in rows)  # two decimals per value
    assert mpimg.imread(tmp_path / "head.png").ndim == 3

    code, out, err = run(capsys, "attention", "--model", pretrainer_dir, "we sat", "--pair", "i opened", "--all",
                         "--png", tmp_path / "grid.png")
    assert code == 0 and "layer -1, mean of heads" in out and (tmp_path / "grid.png").is_file()

    code, _, err = run(capsys, "attention", "--model", pretrainer_dir, "we sat", "--all")
    assert code == 2 and "give the file with --png" in err


@pytest.mark.slow  # exporting a SavedModel takes about 10 s on 2 cores
def test_embed_reads_an_exported_saved_model(capsys, tmp_path, pretrainer_dir):
    """`serving.export.saved_model` writes the encoder signature; embeddings from it equal those from the model directory."""
    from serving.export.saved_model import export_saved_model

    exported = export_saved_model(pretrainer_dir, tmp_path / "models", "encoder", seq_length=16)
    source = tmp_path / "in.txt"
    source.write_text("i opened a bank account\nwe sat\n")
    for model, out in ((exported, "saved.npy"), (pretrainer_dir, "direct.npy")):
        code, _, err = run(capsys, "embed", "--model", model, "--in", source, "--out", tmp_path / out,
                           "--pooling", "pooled", "--no-progress", "--max-length", "16")
        assert code == 0, err
    np.testing.assert_allclose(np.load(tmp_path / "saved.npy"), np.load(tmp_path / "direct.npy"), atol=1e-5)

    code, _, err = run(capsys, "embed", "--model", exported, "--in", source, "--out", tmp_path / "x.npy",
                       "--layer", "0")
    assert code == 2 and "only its last layer" in err
    code, _, err = run(capsys, "attention", "--model", exported, "we sat")
    assert code == 2 and "an exported SavedModel has no attention outputs" in err
    code, _, err = run(capsys, "fill-mask", "--model", exported, "we [MASK]")
    assert code == 2 and "exported SavedModels lack it" in err
