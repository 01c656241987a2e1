"""`python -m mondrian fit|path|predict` on CSV files."""

import csv
import pickle

import numpy as np
import pytest

from mondrian.cli.main import main

rng = np.random.RandomState(0)
X = rng.rand(300, 3)


def write_csv(path, header, columns):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(zip(*columns, strict=True))
    return str(path)


@pytest.fixture
def clf_csv(tmp_path):
    labels = np.where(X[:, 0] + X[:, 1] > 1, "yes", "no")
    # The target is not the last column: --target names it.
    return write_csv(tmp_path / "clf.csv", ["a", "label", "b", "c"],
                     [X[:, 0], labels, X[:, 1], X[:, 2]])


@pytest.fixture
def reg_csv(tmp_path):
    y = np.sin(5 * X[:, 0]) + 0.05 * rng.randn(300)
    return write_csv(tmp_path / "reg.csv", ["a", "b", "c", "y"], [*X.T, y])


def test_fit_classification_saves_and_predicts(clf_csv, tmp_path, capsys):
    model_path = str(tmp_path / "model.pkl")
    assert main(["fit", clf_csv, "--target", "label", "--n-estimators", "10", "--quiet",
                 "--save", model_path]) == 0
    out = capsys.readouterr().out
    assert "classification, 2 classes" in out and "test accuracy" in out
    accuracy = float(next(line for line in out.splitlines() if "test accuracy" in line)
                     .split("|")[2])
    assert accuracy > 0.85
    with open(model_path, "rb") as handle:
        saved = pickle.load(handle)
    assert saved["features"] == ["a", "b", "c"] and saved["task"] == "classification"
    # predict: the same columns in another order, without the target.
    rows = write_csv(tmp_path / "new.csv", ["c", "b", "a"], [X[:5, 2], X[:5, 1], X[:5, 0]])
    out_path = tmp_path / "pred.csv"
    assert main(["predict", model_path, rows, "--proba", "-o", str(out_path)]) == 0
    with open(out_path) as handle:
        got = list(csv.reader(handle))
    assert got[0] == ["prediction", "proba_no", "proba_yes"]
    np.testing.assert_array_equal([row[0] for row in got[1:]],
                                  saved["model"].predict(X[:5]))
    np.testing.assert_allclose([float(row[2]) for row in got[1:]],
                               saved["model"].predict_proba(X[:5])[:, 1], rtol=1e-9)


def test_fit_regression_with_a_test_file_and_progress(reg_csv, tmp_path, capsys):
    test_csv = write_csv(tmp_path / "test.csv", ["a", "b", "c", "y"],
                         [*X[:50].T, np.sin(5 * X[:50, 0])])
    assert main(["fit", reg_csv, "--test", test_csv, "--n-estimators", "5",
                 "--batch-size", "100"]) == 0
    captured = capsys.readouterr()
    assert "regression" in captured.out and "test RMSE" in captured.out
    assert "300 training rows, 50 test rows" in captured.out
    assert "300/300" in captured.err or "300/300" in captured.err.replace(" ", "")


def test_path_draws_a_png(reg_csv, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    picture = tmp_path / "path.png"
    assert main(["path", reg_csv, "--n-estimators", "5", "-o", str(picture)]) == 0
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Best lifetime" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["fit", "MISSING.csv"], "cannot read"),
    (["fit", "{reg}", "--target", "nope"], "no column 'nope'"),
    (["fit", "{bad}"], "column 'b'"),
    (["fit", "{clf}", "--target", "label", "--task", "regression"], "regression needs numbers"),
    (["predict", "{reg}", "{reg}"], "not a model saved"),
    (["fit", "{reg}", "--lifetime", "-1"], "--lifetime"),
    (["fit", "{reg}", "--lifetime", "abc"], "--lifetime"),
])
def test_user_errors_are_one_line(argv, message, reg_csv, clf_csv, tmp_path, capsys):
    bad = write_csv(tmp_path / "bad.csv", ["a", "b", "y"], [[1, 2], ["x", "3"], [0, 1]])
    argv = [a.format(reg=reg_csv, clf=clf_csv, bad=bad) for a in argv]
    assert main([*argv, "--quiet"] if argv[0] == "fit" else argv) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
