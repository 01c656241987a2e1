"""`python -m mondrian fit|path|predict` on the files a new user brings: gzip and latin-1
CSVs, a byte-order mark, no header, integer class codes, missing targets, tiny files and
unwritable outputs; one fit by default, feature weights on request."""

import csv
import gzip
import pickle

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from mondrian import MondrianForestClassifier, MondrianForestRegressor
from mondrian.cli.csv_commands import detect_task
from mondrian.cli.main import main

rng = np.random.RandomState(1)
X = rng.rand(200, 3)
Y_REG = np.sin(5 * X[:, 0]) + 0.05 * rng.randn(200)
# 26 classes coded 0..25 (letter's coding), a function of the first feature.
Y_CODES = np.minimum((X[:, 0] * 26).astype(int), 25)


def text(header, columns):
    lines = [] if header is None else [",".join(header)]
    lines += [",".join(str(v) for v in row) for row in zip(*columns, strict=True)]
    return "\n".join(lines) + "\n"


def run(argv, capsys):
    """Exit status, stdout and stderr of the command line."""
    status = main(argv)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def one_line_error(argv, capsys, *messages):
    status, _, err = run(argv, capsys)
    assert status == 1, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    for message in messages:
        assert message in err, err
    return err


def load(path):
    with open(path, "rb") as handle:
        return pickle.load(handle)


def test_gzip_csv_is_read_directly(tmp_path, capsys):
    path = tmp_path / "reg.csv.gz"
    with gzip.open(path, "wt") as handle:
        handle.write(text(["a", "b", "c", "y"], [*X.T, Y_REG]))
    model = tmp_path / "m.pkl"
    status, out, _ = run(["fit", str(path), "--n-estimators", "3", "--save", str(model)], capsys)
    assert status == 0 and "160 training rows, 40 test rows" in out
    assert load(model)["features"] == ["a", "b", "c"]
    status, out, _ = run(["predict", str(model), str(path), "--std"], capsys)
    assert status == 0 and out.splitlines()[0] == "prediction,std"
    assert len(out.splitlines()) == 201


def test_latin1_file_gets_a_one_line_message_and_an_encoding_option(tmp_path, capsys):
    labels = np.where(X[:, 0] > 0.5, "café", "thé")
    path = tmp_path / "labels.csv"
    path.write_bytes(text(["a", "b", "c", "boisson"], [*X.T, labels]).encode("latin-1"))
    one_line_error(["fit", str(path)], capsys, "not utf-8 text", "--encoding latin-1")
    model = tmp_path / "m.pkl"
    status, out, _ = run(["fit", str(path), "--encoding", "latin-1", "--n-estimators", "3",
                          "--save", str(model)], capsys)
    assert status == 0, out
    assert sorted(load(model)["model"].classes_) == ["café", "thé"]
    one_line_error(["fit", str(path), "--encoding", "no-such-codec"], capsys, "--encoding")


def test_byte_order_mark_is_dropped(tmp_path, capsys):
    path = tmp_path / "bom.csv"
    path.write_bytes(text(["a", "b", "c", "y"], [*X.T, Y_REG]).encode("utf-8-sig"))
    model = tmp_path / "m.pkl"
    assert run(["fit", str(path), "--n-estimators", "2", "--save", str(model)], capsys)[0] == 0
    assert load(model)["features"] == ["a", "b", "c"]
    # The first column is found by its name.
    assert run(["fit", str(path), "--target", "a", "--n-estimators", "2"], capsys)[0] == 0


def test_a_file_without_header_keeps_its_first_row(tmp_path, capsys):
    path = tmp_path / "raw.csv"
    path.write_text(text(None, [*X.T, Y_REG]))
    model = tmp_path / "m.pkl"
    status, out, _ = run(["fit", str(path), "--n-estimators", "2", "--test-fraction", "0",
                          "--save", str(model)], capsys)
    assert status == 0 and "200 training rows" in out
    saved = load(model)
    assert saved["features"] == ["col1", "col2", "col3"] and saved["target"] == "col4"
    assert run(["predict", str(model), str(path)], capsys)[0] == 0
    # --header yes takes the first row as names (here numbers: a one-line error).
    status, out, _ = run(["fit", str(path), "--header", "yes", "--n-estimators", "2"], capsys)
    assert status == 0 and "199 rows" not in out and "159 training rows" in out


def test_integer_class_codes_are_classes_and_the_table_says_why(tmp_path, capsys):
    path = tmp_path / "codes.csv"
    path.write_text(text(["a", "b", "c", "label"], [*X.T, Y_CODES]))
    model = tmp_path / "m.pkl"
    status, out, _ = run(["fit", str(path), "--n-estimators", "3", "--test-fraction", "0",
                          "--save", str(model)], capsys)
    assert status == 0
    assert "classification, 26 classes; auto: 26 distinct integers, --task regression" in out
    assert isinstance(load(model)["model"], MondrianForestClassifier)
    status, out, _ = run(["fit", str(path), "--n-estimators", "3", "--task", "regression",
                          "--save", str(model)], capsys)
    assert status == 0 and "regression; set by --task" in out
    assert isinstance(load(model)["model"], MondrianForestRegressor)


def test_detect_task():
    assert detect_task(np.array(["a", "b"])) == "classification"
    assert detect_task(np.array(["1", "2", "1"])) == "classification"
    assert detect_task(np.array(["0.5", "2", "1"])) == "regression"
    assert detect_task(np.array([str(k) for k in range(50)])) == "regression"
    assert detect_task(Y_CODES.astype(str)) == "classification"  # 0..25
    assert detect_task((Y_CODES + 1).astype(str)) == "classification"  # 1..26
    # Counts with gaps (cpu_act's target: 56 distinct values of 0..99) stay regression.
    assert detect_task(np.array([str(v) for v in range(0, 112, 2)] * 3)) == "regression"
    assert detect_task(np.array(["1.5", "nan"])) == "regression"  # refused later: NaN


@pytest.mark.parametrize("labels", ["numbers", "text"])
def test_an_empty_target_is_an_error_not_a_class(labels, tmp_path, capsys):
    y = Y_REG.astype(str) if labels == "numbers" else np.where(X[:, 0] > 0.5, "yes", "no")
    y[7] = ""
    path = tmp_path / "holes.csv"
    path.write_text(text(["a", "b", "c", "y"], [*X.T, y]))
    model = tmp_path / "m.pkl"
    one_line_error(["fit", str(path), "--save", str(model)], capsys, "empty on line 9")
    assert not model.exists()


def test_an_empty_feature_names_its_line(tmp_path, capsys):
    columns = [X[:, 0].astype(str), *X[:, 1:].T, Y_REG]
    columns[0][3] = ""
    path = tmp_path / "holes.csv"
    path.write_text(text(["a", "b", "c", "y"], columns))
    one_line_error(["fit", str(path)], capsys, "column 'a'", "is empty on line 5")


@pytest.mark.parametrize("rows, argv", [
    (1, []),
    (200, ["--test-fraction", "0.999"]),
    (3, ["--test-fraction", "0.5"]),
])
def test_splits_without_rows_on_a_side_are_refused(rows, argv, tmp_path, capsys):
    path = tmp_path / "small.csv"
    path.write_text(text(["a", "b", "c", "y"], [*X[:rows].T, Y_REG[:rows]]))
    one_line_error(["fit", str(path), *argv], capsys, "--test-fraction", "rows to train on")


def test_path_split_is_checked_too(tmp_path, capsys):
    path = tmp_path / "one.csv"
    path.write_text(text(["a", "b", "c", "y"], [*X[:1].T, Y_REG[:1]]))
    one_line_error(["path", str(path), "-o", str(tmp_path / "p.png")], capsys,
                   "--validation-fraction")


def test_unwritable_outputs_are_refused_before_any_work(tmp_path, capsys):
    path = tmp_path / "reg.csv"
    path.write_text(text(["a", "b", "c", "y"], [*X.T, Y_REG]))
    missing = tmp_path / "no" / "such" / "dir"
    one_line_error(["fit", str(path), "--save", str(missing / "m.pkl")], capsys, "--save",
                   "no directory")
    one_line_error(["fit", str(path), "--save", str(tmp_path)], capsys, "is a directory")
    one_line_error(["path", str(path), "-o", str(missing / "p.png")], capsys, "--output")
    model = tmp_path / "m.pkl"
    assert run(["fit", str(path), "--n-estimators", "2", "--save", str(model)], capsys)[0] == 0
    one_line_error(["predict", str(model), str(path), "-o", str(missing / "out.csv")], capsys,
                   "--output")


def test_predict_refuses_the_option_of_the_other_task(tmp_path, capsys):
    reg, clf = tmp_path / "reg.csv", tmp_path / "clf.csv"
    reg.write_text(text(["a", "b", "c", "y"], [*X.T, Y_REG]))
    clf.write_text(text(["a", "b", "c", "y"], [*X.T, np.where(X[:, 1] > 0.5, "u", "v")]))
    for data, option, other in ((reg, "--proba", "--std"), (clf, "--std", "--proba")):
        model = tmp_path / f"{data.stem}.pkl"
        assert run(["fit", str(data), "--n-estimators", "2", "--save", str(model)],
                   capsys)[0] == 0
        one_line_error(["predict", str(model), str(data), option], capsys, option,
                       f"use {other}")


def test_fit_is_one_batch_fit_unless_batches_are_asked(tmp_path, capsys):
    path = tmp_path / "reg.csv"
    path.write_text(text(["a", "b", "c", "y"], [*X.T, Y_REG]))
    model = tmp_path / "m.pkl"
    status, out, _ = run(["fit", str(path), "--n-estimators", "4", "--test-fraction", "0",
                          "--seed", "3", "--save", str(model)], capsys)
    assert status == 0 and "one fit" in out
    reference = MondrianForestRegressor(4, random_state=3).fit(X, Y_REG)
    assert_array_equal(load(model)["model"].predict(X), reference.predict(X))
    status, out, _ = run(["fit", str(path), "--n-estimators", "4", "--test-fraction", "0",
                          "--seed", "3", "--batch-size", "64", "--quiet", "--save",
                          str(model)], capsys)
    assert status == 0 and "partial_fit in batches of 64 rows" in out
    online = MondrianForestRegressor(4, random_state=3)
    for lo in range(0, 200, 64):
        online.partial_fit(X[lo:lo + 64], Y_REG[lo:lo + 64])
    assert_array_equal(load(model)["model"].predict(X), online.predict(X))


def test_feature_weights_on_request(tmp_path, capsys):
    path = tmp_path / "clf.csv"
    labels = np.where(X[:, 2] > 0.5, "hi", "lo")
    path.write_text(text(["a", "b", "c", "y"], [*X.T, labels]))
    model = tmp_path / "m.pkl"
    status, out, _ = run(["fit", str(path), "--n-estimators", "3", "--feature-weights",
                          "1,0,2", "--save", str(model)], capsys)
    assert status == 0 and "feature weights | 1 0 2" in out
    assert_array_equal(load(model)["model"].feature_weights_, [1, 0, 2])
    status, out, _ = run(["fit", str(path), "--n-estimators", "3", "--feature-weights",
                          "auto", "--save", str(model)], capsys)
    assert status == 0 and load(model)["model"].feature_weights == "auto"
    status, out, _ = run(["fit", str(path), "--n-estimators", "3", "--feature-weights",
                          "none", "--save", str(model)], capsys)
    assert status == 0 and load(model)["model"].feature_weights is None
    for bad in ("1,2", "a,b,c", "1,-1,2"):
        one_line_error(["fit", str(path), "--feature-weights", bad], capsys,
                       "--feature-weights must be")


def test_csv_writer_round_trip_with_quoted_fields(tmp_path, capsys):
    # csv quoting (a label with a comma) still parses.
    path = tmp_path / "quoted.csv"
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["a", "b", "c", "y"])
        writer.writerows(zip(*X.T, np.where(X[:, 0] > 0.5, "x, big", "y"), strict=True))
    model = tmp_path / "m.pkl"
    assert run(["fit", str(path), "--n-estimators", "2", "--save", str(model)], capsys)[0] == 0
    assert sorted(load(model)["model"].classes_) == ["x, big", "y"]
