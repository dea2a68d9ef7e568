"""Reading Inspect AI logs: .eval archives and .json logs written by bayesrepro.harness.log_writers.

The same reader is run on logs written by Inspect itself in test_harness_real.py.
"""

import json
import math
import re
import statistics
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from bayesrepro.errors import BayesreproError
from bayesrepro.harness import import_logs, read_logs
from bayesrepro.harness.eval_zip import DEFLATED, STORED, EvalArchive, _zip64_values
from bayesrepro.harness.inspect_rows import rows_from_records, rows_from_summaries
from bayesrepro.harness.inspect_scores import UnreadableScore, score_to_float
from bayesrepro.harness.log_writers import InspectSample, write_inspect_log


def samples(values, epochs=1, scorer="match"):
    return [InspectSample(f"s{i}", epoch, f"question {i}", f"answer {i}", {scorer: value})
            for epoch in range(1, epochs + 1) for i, value in enumerate(values)]


def write(path, values=("C", "I", "P", "C"), **kw):
    kw.setdefault("task", "qa")
    kw.setdefault("model", "openai/gpt-x")
    return write_inspect_log(path, samples=kw.pop("samples", None) or samples(values), **kw)


@pytest.mark.parametrize("value, number", [
    ("C", 1.0), ("P", 0.5), ("I", 0.0), ("N", 0.0), (True, 1.0), (False, 0.0), (3, 3.0), (0.25, 0.25),
    ("yes", 1.0), ("TRUE", 1.0), ("No", 0.0), ("false", 0.0), ("0.75", 0.75), ("-2", -2.0), ("1e-1", 0.1),
])
def test_score_values_map_as_inspects_value_to_float(value, number):
    assert score_to_float(value) == number


@pytest.mark.parametrize("value", ["c", "correct", "nan", "inf", "", [1, 0]])
def test_values_inspect_would_turn_into_a_silent_zero_are_refused(value):
    with pytest.raises(UnreadableScore):
        score_to_float(value)


def test_one_row_per_sample_and_epoch_with_seed_epoch_and_arguments(tmp_path):
    write(tmp_path / "a.eval", samples=samples(["C", "I", "P"], epochs=2), seed=42,
          model_args={"temperature_scale": 2}, task_args={"fewshot": 5, "cot": True})
    table = read_logs("inspect", [tmp_path], notify=pytest.fail)
    assert list(table.columns) == ["item", "task", "model", "run", "seed", "epoch", "temperature_scale", "fewshot",
                                   "cot", "match"]
    assert table["item"].tolist() == ["s0", "s1", "s2"] * 2
    assert table["epoch"].tolist() == [1, 1, 1, 2, 2, 2]
    assert table["match"].tolist() == [1.0, 0.0, 0.5] * 2
    assert (table["seed"] == 42).all() and (table["run"] == "a").all() and (table["model"] == "openai/gpt-x").all()
    assert table[["fewshot", "cot"]].iloc[0].tolist() == ["5", "true"]


def test_each_runs_mean_is_checked_against_the_accuracy_in_its_header(tmp_path):
    values = ["C", "I", "P", "C", "I", "I", "C"]
    write(tmp_path / "a.eval", samples=samples(values, epochs=3))
    checks = import_logs("inspect", [tmp_path], tmp_path / "t.parquet").aggregates.to_dict()
    assert (checks["exact"], checks["to_rounding"], checks["not_applicable"]) == (1, 0, 0)


def unbalanced(seed=0):
    """Five samples over three epochs with float scores; sample s1 ended in an error in epoch 2, s3 in epochs 1 and 3."""
    rng = np.random.default_rng(seed)
    rows = [InspectSample(f"s{i}", epoch, f"question {i}", "t", {"prob": float(rng.random())})
            for epoch in (1, 2, 3) for i in range(5)]
    failed = {("s1", 2), ("s3", 1), ("s3", 3)}
    return [InspectSample(s.id, s.epoch, s.input, s.target, {}, error="boom") if (s.id, s.epoch) in failed else s
            for s in rows]


def test_unbalanced_epochs_are_reduced_per_sample_before_the_mean(tmp_path):
    rows = unbalanced()
    write(tmp_path / "a.json", samples=rows, seed=1)
    header = json.loads((tmp_path / "a.json").read_text())
    [score] = header["results"]["scores"]
    per_sample = {}
    for s in rows:
        if s.error is None:
            per_sample.setdefault(s.id, []).append(s.scores["prob"])
    means = [statistics.mean(v) for v in per_sample.values()]
    assert score["metrics"]["accuracy"]["value"] == sum(means) / 5  # the rows' plain mean differs:
    assert sum(v for s in rows if s.error is None for v in s.scores.values()) / 12 != sum(means) / 5
    summary = import_logs("inspect", [tmp_path], tmp_path / "t.parquet", notify=lambda line: None)
    assert summary.aggregates.to_dict()["exact"] == 1 and summary.dropped_samples == 3


def edit_header(path, change):
    log = json.loads(path.read_text())
    change(log)
    path.write_text(json.dumps(log))


def test_reducers_and_metrics_that_are_not_a_mean_are_not_compared(tmp_path):
    path = write(tmp_path / "a.json", samples=samples(["C", "I", "C", "C"], epochs=2), seed=1)

    def add_entries(log):
        [entry] = log["results"]["scores"]
        log["results"]["scores"] = [
            entry, entry | {"reducer": "max"}, entry | {"reducer": "mean", "metrics": {"stderr": {"value": 0.1}}},
            entry | {"reducer": "mean", "metrics": {"mean": {"value": 0.75, "params": {"to_float": "custom"}}}},
        ]
    edit_header(path, add_entries)
    checks = import_logs("inspect", [tmp_path], tmp_path / "t.parquet").aggregates.to_dict()
    assert checks["exact"] == 1
    assert [(c["metric"], c["reason"]) for c in checks["not_checked"]] == [
        ("match (max over epochs)", "the epoch reducer 'max' is not a mean"),
        ("match (mean over epochs)", "its metrics (stderr) hold no accuracy or mean"),
        ("match (mean over epochs): mean", "its mean has parameters of its own"),
    ]


def test_a_run_whose_mean_or_count_is_not_the_headers_is_refused(tmp_path):
    path = write(tmp_path / "a.json", samples=samples(["C", "I", "C", "C"]), seed=1)
    edit_header(path, lambda log: log["results"]["scores"][0]["metrics"]["accuracy"].update(value=0.5))
    with pytest.raises(BayesreproError, match=r"run 'a', task 'qa', metric 'match: accuracy': the mean of its rows "
                                              r"is 0\.75, but the harness's own aggregate in .* is 0\.5"):
        read_logs("inspect", [tmp_path])
    edit_header(path, lambda log: log["results"]["scores"][0].update(scored_samples=5))
    with pytest.raises(BayesreproError, match="metric 'match: accuracy': 4 scored values, the harness counts 5"):
        read_logs("inspect", [tmp_path])


def test_the_order_of_summaries_does_not_matter_the_datasets_does(tmp_path):
    rng = np.random.default_rng(0)  # 40 values whose sum left to right differs from right to left in its last bit
    rows = [InspectSample(f"s{i}", 1, f"q{i}", "t", {"prob": float(rng.random())}) for i in range(40)]
    path = write(tmp_path / "a.json", samples=rows, seed=1)
    edit_header(path, lambda log: log.update(samples=log["samples"][::-1]))  # completed in the reverse order
    assert import_logs("inspect", [tmp_path], tmp_path / "t.parquet").aggregates.to_dict()["exact"] == 1
    edit_header(path, lambda log: log["eval"]["dataset"].update(sample_ids=None))  # order unknown: equal to rounding
    assert import_logs("inspect", [tmp_path], tmp_path / "t.parquet").aggregates.to_dict()["to_rounding"] == 1


def test_runs_of_the_same_model_and_seed_are_refused_unless_kept_as_replications(tmp_path):
    write(tmp_path / "a.eval", eval_id="E1", seed=1)
    write(tmp_path / "b.eval", eval_id="E2", seed=1, samples=samples(["I", "I", "P", "C"]))
    with pytest.raises(BayesreproError, match=r"runs 'a' and 'b' both evaluated task 'qa' with model 'openai/gpt-x' "
                                              r"and the same model arguments and settings \(seed 1\)"):
        read_logs("inspect", [tmp_path])
    table = read_logs("inspect", [tmp_path], replications=True)
    assert table.groupby("run")["replication"].first().to_dict() == {"a": 1, "b": 2}


@pytest.mark.parametrize("method", [STORED, DEFLATED])
def test_archives_of_older_inspect_versions_and_json_logs_give_the_same_table(tmp_path, method):
    write(tmp_path / "zstd" / "run.eval")
    write(tmp_path / "other" / "run.eval", method=method)
    write(tmp_path / "json" / "run.json")
    tables = [read_logs("inspect", [tmp_path / name]) for name in ("zstd", "other", "json")]
    for table in tables[1:]:
        assert table.equals(tables[0])


def test_a_re_run_samples_last_record_wins(tmp_path):
    records = [{"id": i, "epoch": 1, "input": "q", "target": "A", "scores": {"m": {"value": "I"}}} for i in range(3)]
    records.append({"id": 1, "epoch": 1, "input": "q", "target": "A", "scores": {"m": {"value": "C"}}})
    rows = rows_from_summaries(json.dumps(records).encode(), tmp_path, ["m"])
    assert rows.items.to_pylist() == ["0", "1", "2"] and rows.metrics["m"].to_pylist() == [0.0, 1.0, 0.0]


def test_the_fast_and_the_line_by_line_reading_of_summaries_agree(tmp_path):
    records = [
        {"id": i, "epoch": 1 + i % 2, "input": "é" * 1500 + str(i), "target": "A", "scores": {"m": {"value": v}, "x": {"value": 1}}}
        for i, v in enumerate(["C", "I", "P", "N", "yes", None, "0.5", "C"])
    ]
    records[3]["error"] = "boom"
    data = json.dumps(records).encode()
    fast = rows_from_summaries(data, tmp_path, ["m"])
    slow = rows_from_records(json.loads(data), tmp_path, ["m"])
    assert fast.dropped == slow.dropped == 1
    for name in ("items", "epochs", "documents"):
        assert getattr(fast, name).equals(getattr(slow, name)), name
    assert fast.metrics["m"].equals(slow.metrics["m"])
    assert fast.metrics["m"].to_pylist() == [1.0, 0.0, 0.5, 1.0, None, 0.5, 1.0]


def test_dictionary_scores_become_one_column_per_key(tmp_path):
    rows = [InspectSample(i, 1, f"q{i}", "t", {"judge": {"accuracy": "C" if i else "I", "f1": 0.5 * i}}) for i in range(3)]
    table = read_logs("inspect", [write(tmp_path / "a.eval", samples=rows)])
    assert table["accuracy"].tolist() == [0.0, 1.0, 1.0] and table["f1"].tolist() == [0.0, 0.5, 1.0]


def test_unfinished_runs_are_skipped_with_one_line_each_and_strict_refuses_them(tmp_path):
    write(tmp_path / "done.eval")
    write(tmp_path / "killed.eval", status="started")
    write(tmp_path / "failed.eval", status="error")
    write(tmp_path / "stopped.json", status="cancelled")
    notes = []
    summary = import_logs("inspect", [tmp_path], tmp_path / "out.parquet", notify=notes.append)
    assert summary.runs == 1 and summary.rows == 4
    assert sorted(s.path.name for s in summary.skipped) == ["failed.eval", "killed.eval", "stopped.json"]
    assert len(notes) == 3 and all(line.startswith("skipped '") for line in notes)
    assert any("ended in an error: RuntimeError" in line for line in notes)
    assert any("status 'started'" in line for line in notes)
    with pytest.raises(BayesreproError, match=r"skipped '.*\.(eval|json)'.*\(--strict\)"):
        import_logs("inspect", [tmp_path], tmp_path / "strict.parquet", strict=True)
    assert not (tmp_path / "strict.parquet").exists()


def test_samples_that_ended_in_an_error_are_left_out_and_counted(tmp_path):
    rows = samples(["C", "I", "C"])
    rows[1] = InspectSample("s1", 1, "question 1", "answer 1", {}, error="TimeoutError")
    write(tmp_path / "a.eval", samples=rows)
    notes = []
    summary = import_logs("inspect", [tmp_path], tmp_path / "o.csv", notify=notes.append)
    assert (summary.rows, summary.dropped_samples) == (2, 1)
    assert notes == [f"left out 1 sample(s) of '{tmp_path / 'a.eval'}' that ended in an error"]
    with pytest.raises(BayesreproError, match="ended in an error.*--strict"):
        read_logs("inspect", [tmp_path], strict=True)


def test_runs_that_evaluated_different_inputs_under_one_id_are_refused(tmp_path):
    write(tmp_path / "a.eval")
    shifted = [InspectSample(s.id, s.epoch, s.input + " (reworded)", s.target, s.scores) for s in samples("CICI")]
    write(tmp_path / "b.eval", samples=shifted)
    with pytest.raises(BayesreproError, match="task 'qa', item s0: runs 'a' and 'b' evaluated different documents"):
        read_logs("inspect", [tmp_path])


def test_the_same_eval_twice_is_refused(tmp_path):
    write(tmp_path / "a.eval", eval_id="E1")
    write(tmp_path / "copy" / "a-copy.eval", eval_id="E1")
    with pytest.raises(BayesreproError, match="are the same run"):
        read_logs("inspect", [tmp_path])


@pytest.mark.parametrize("damage, message", [
    ("cut", r"not a readable \.eval archive \(no ZIP directory at its end\).*cut short"),
    ("flip", r"corrupt \.eval archive: member '(summaries|header)\.json' cannot be read"),
    ("text", r"not a readable \.eval archive"),
    ("bad value", r"score 'match' of sample s1 is \"maybe\", which is no number"),
])
def test_damaged_logs_fail_in_one_line_naming_the_file(tmp_path, damage, message):
    path = write(tmp_path / "a.eval", values=("C", "maybe") if damage == "bad value" else ("C", "I"))
    data = path.read_bytes()
    if damage == "cut":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        with EvalArchive(path) as archive:
            member = archive.member("summaries.json")
        at = member.offset + 60
        path.write_bytes(data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:])
    elif damage == "text":
        path.write_text("not a zip")
    with pytest.raises(BayesreproError, match=message) as error:
        read_logs("inspect", [path])
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_zip64_archives_with_more_than_65535_members_are_read(tmp_path):
    path = tmp_path / "many.eval"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for i in range(65540):
            archive.writestr(f"samples/{i}_epoch_1.json", b"{}")
        archive.writestr("header.json", b'{"status": "success"}')
    with EvalArchive(path) as archive:
        assert archive.read_json(archive.member("header.json")) == {"status": "success"}
        assert archive.member("samples/65539_epoch_1.json").name == "samples/65539_epoch_1.json"
        assert archive.member("samples/65540_epoch_1.json") is None


def test_zip64_sizes_are_taken_from_the_extra_field():
    extra = b"\x99\x99\x02\x00ab" + b"\x01\x00\x10\x00" + (5 << 32).to_bytes(8, "little") + (7 << 32).to_bytes(8, "little")
    assert _zip64_values(extra, 0xFFFFFFFF, 12, 0xFFFFFFFF) == (5 << 32, 12, 7 << 32)


def test_later_members_under_one_name_supersede_earlier_ones(tmp_path):
    from bayesrepro.harness.zip_writer import write_zip
    path = tmp_path / "a.eval"
    write_zip(path, [("header.json", b'{"v": 1}'), ("x/header.json", b'{"v": 0}'), ("header.json", b'{"v": 2}')])
    with EvalArchive(path) as archive:
        assert archive.read_json(archive.member("header.json")) == {"v": 2}


def test_inspect_logs_as_a_data_source_of_the_analysis_commands(tmp_path):
    for seed in range(3):
        for model in ("a", "b"):
            values = ["C", "I", "C", "C", "I", "C", "I", "I"] if model == "a" else ["C"] * 6 + ["I", "C"]
            write(tmp_path / f"{model}{seed}.eval", samples=samples(values[seed:] + values[:seed]), model=model, seed=seed)
    run = subprocess.run([sys.executable, "-m", "bayesrepro", "vca", f"inspect:{tmp_path}", "--formula",
                          "match ~ model + (1|item) + (1|seed)", "--json"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["n_obs"] == 48


def test_nan_scores_stay_missing(tmp_path):
    write(tmp_path / "a.eval", samples=samples([1.0, math.nan, 0.0], scorer="mean"))
    assert read_logs("inspect", [tmp_path])["mean"].isna().tolist() == [False, True, False]


def forge_zip64_sizes(path, name, size=None, packed=None):
    """Rewrite the directory entry of member ``name`` with ZIP64 sizes that claim ``size`` / ``packed`` bytes."""
    import struct

    central, end = struct.Struct("<4sHHHHHHIIIHHHHHII"), struct.Struct("<4sHHHHIIH")
    data = path.read_bytes()
    at_end = data.rfind(b"PK\x05\x06")
    fields = end.unpack_from(data, at_end)
    directory_size, directory_offset = fields[5], fields[6]
    directory, entries, at = data[directory_offset:directory_offset + directory_size], [], 0
    while at < len(directory):
        entry = list(central.unpack_from(directory, at))
        name_length, extra_length, comment_length = entry[10], entry[11], entry[12]
        entry_name = directory[at + central.size:at + central.size + name_length]
        whole = directory[at:at + central.size + name_length + extra_length + comment_length]
        if entry_name == name.encode():
            extra = struct.pack("<HHQQ", 1, 16, entry[9] if size is None else size, entry[8] if packed is None else packed)
            entry[8] = entry[9] = 0xFFFFFFFF
            entry[11] = len(extra)
            whole = central.pack(*entry) + entry_name + extra
        entries.append(whole)
        at += central.size + name_length + extra_length + comment_length
    rewritten = b"".join(entries)
    path.write_bytes(data[:directory_offset] + rewritten +
                     end.pack(b"PK\x05\x06", 0, 0, fields[3], fields[4], len(rewritten), directory_offset, 0))


@pytest.mark.parametrize("member", ["header.json", "summaries.json"])
@pytest.mark.parametrize("claim, message", [
    ({"packed": 2**62}, r"claims 4,611,686,018,427,387,904 compressed bytes at offset [0-9,]+, past the end of the "
                        r"[0-9,]+-byte file"),
    ({"packed": 2**62, "size": 2**62}, r"claims 4,611,686,018,427,387,904 compressed bytes"),
    ({"size": 2**62}, r"declares 4,611,686,018,427,387,904 bytes inflated, more than the [0-9,]+ a \.eval member is "
                      r"read up to"),
])
def test_forged_zip64_sizes_are_checked_against_the_file_before_memory_is_spent(tmp_path, member, claim, message):
    path = write(tmp_path / "a.eval")
    forge_zip64_sizes(path, member, **claim)
    with pytest.raises(BayesreproError, match=message) as error:
        read_logs("inspect", [path])
    assert member in str(error.value) and str(path) in str(error.value)


@pytest.mark.parametrize("suffix", [".eval", ".json"])
@pytest.mark.parametrize("bare", [0, 2])
def test_a_score_entry_that_is_a_bare_value_is_named_not_dropped(tmp_path, monkeypatch, suffix, bare):
    from bayesrepro.harness import log_writers

    written = log_writers._summary

    def bare_score(sample, model):   # "match": "C" instead of {"value": "C", ...}
        summary = written(sample, model)
        if sample.id == f"s{bare}":
            summary["scores"]["match"] = summary["scores"]["match"]["value"]
        return summary

    monkeypatch.setattr(log_writers, "_summary", bare_score)
    path = write(tmp_path / f"a{suffix}", values=("C", "I", "P", "C"))
    assert f'"match": {json.dumps(["C", "I", "P", "C"][bare])}'.encode() in (
        path.read_bytes() if suffix == ".json" else _summaries_of(path))
    value = json.dumps(["C", "I", "P", "C"][bare])
    with pytest.raises(BayesreproError, match=rf"score 'match' of sample s{bare} \(epoch 1\) is {re.escape(value)}, "
                                              r"not an object \{\"value\": \.\.\.\} as Inspect writes a score"):
        read_logs("inspect", [path])


def _summaries_of(path):
    with EvalArchive(path) as archive:
        return archive.read_raw(archive.member("summaries.json"))
