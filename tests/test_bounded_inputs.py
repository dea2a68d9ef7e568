"""Inputs built to exhaust memory or the stack are refused in one line before the resources are spent:
ZIP members that inflate far beyond their size or declare forged sizes, JSON and TOML nested 100,000 deep,
numbers in --where beyond double precision."""

import json
import struct
import zlib

import pytest

from bayesrepro.errors import BayesreproError
from bayesrepro.harness import read_logs
from bayesrepro.harness.eval_zip import _CENTRAL, _END, DEFLATED, MAX_RATIO, RATIO_FLOOR, ZSTANDARD, EvalArchive
from bayesrepro.harness.log_writers import InspectSample, write_inspect_log
from bayesrepro.harness.zip_writer import write_zip
from bayesrepro.specs import load_spec
from bayesrepro.where import parse_where

DEEP = 100_000


def forge_sizes(path, size, zip64):
    """Rewrite the one entry of the archive at ``path`` to declare ``size`` inflated bytes (in a ZIP64 extra field)."""
    data = path.read_bytes()
    end = data.rfind(b"PK\x05\x06")
    end_fields = list(_END.unpack_from(data, end))
    start = end_fields[6]
    entry = list(_CENTRAL.unpack_from(data, start))
    name = data[start + _CENTRAL.size:start + _CENTRAL.size + entry[10]]
    extra = struct.pack("<HHQ", 1, 8, size) if zip64 else b""
    entry[9], entry[11] = (0xFFFFFFFF if zip64 else size), len(extra)
    central = _CENTRAL.pack(*entry) + name + extra
    end_fields[5] = len(central)
    path.write_bytes(data[:start] + central + _END.pack(*end_fields))


@pytest.mark.parametrize("method", [ZSTANDARD, DEFLATED])
def test_a_member_that_would_inflate_far_beyond_its_size_is_refused_before_inflating(tmp_path, method):
    path = tmp_path / "bomb.eval"
    content = b"[" + b"0," * (RATIO_FLOOR // 2 + 1) + b"0]"
    write_zip(path, [("summaries.json", content)], method)
    with EvalArchive(path) as archive:
        member = archive.member("summaries.json")
        assert member.size > MAX_RATIO * member.packed_size
        with pytest.raises(BayesreproError, match=rf"member 'summaries\.json' would inflate .* more than {MAX_RATIO} "
                                                  "times; .* damaged or built to exhaust memory"):
            archive.read_raw(member)


def test_the_same_member_within_the_ratio_is_read(tmp_path):
    path = tmp_path / "small.eval"
    content = b"[" + b"0," * 1000 + b"0]"
    write_zip(path, [("summaries.json", content)])
    with EvalArchive(path) as archive:
        assert archive.read_json(archive.member("summaries.json")) == [0] * 1001


def test_a_forged_zip64_size_is_refused_in_one_line(tmp_path):
    path = tmp_path / "forged.eval"
    write_zip(path, [("header.json", b'{"status": "success"}')])
    forge_sizes(path, 2**62, zip64=True)
    with EvalArchive(path) as archive:
        member = archive.member("header.json")
        assert member.size == 2**62
        with pytest.raises(BayesreproError, match=r"member 'header\.json' declares 4,611,686,018,427,387,904 bytes "
                                                  r"inflated, more than the .* a \.eval member is read up to"):
            archive.read_json(member)
    with pytest.raises(BayesreproError, match="declares 4,611,686,018,427,387,904 bytes"):
        read_logs("inspect", [path])


@pytest.mark.parametrize("method", [ZSTANDARD, DEFLATED])
def test_a_member_holding_more_than_it_declares_is_not_inflated_whole(tmp_path, method):
    path = tmp_path / "liar.eval"
    write_zip(path, [("header.json", json.dumps({"status": "success", "pad": "x" * 5000}).encode())], method)
    forge_sizes(path, 100, zip64=False)
    with EvalArchive(path) as archive:
        with pytest.raises(BayesreproError, match=r"corrupt \.eval archive: member 'header\.json' cannot be read "
                                                  r"\(it inflates to more or fewer than the 100 bytes it declares\)"):
            archive.read_json(archive.member("header.json"))


def deep_json(depth=DEEP):
    return "[" * depth + "]" * depth


def test_json_nested_100000_deep_is_refused_in_every_log_that_is_parsed(tmp_path):
    results = tmp_path / "run" / "results_2026-01-01T10-00-00.json"
    results.parent.mkdir()
    results.write_text(deep_json())
    with pytest.raises(BayesreproError, match="results file .* nested too deeply"):
        read_logs("lm-eval", [results])
    log = tmp_path / "log.json"
    log.write_text(deep_json())
    with pytest.raises(BayesreproError, match=r"Inspect log .*log\.json.* nested too deeply"):
        read_logs("inspect", [log])
    archive = tmp_path / "log.eval"
    write_zip(archive, [("header.json", deep_json().encode())])
    with pytest.raises(BayesreproError, match=r"member 'header\.json' is not a harness log: .* nested too deeply"):
        read_logs("inspect", [archive])


def test_a_samples_line_nested_100000_deep_is_refused_naming_the_line(tmp_path):
    sample = InspectSample("s1", 1, "question", "answer", {"match": "C"})
    path = write_inspect_log(tmp_path / "a.json", task="qa", model="m", samples=[sample], seed=1)
    text = path.read_text()
    path.write_text(text.replace('"input": "question"', f'"input": {deep_json()}'))
    with pytest.raises(BayesreproError, match="nested too deeply"):
        read_logs("inspect", [path])


def test_a_toml_spec_nested_100000_deep_is_refused(tmp_path):
    spec = tmp_path / "deep.toml"
    spec.write_text(f"formula = {'[' * DEEP}1{']' * DEEP}\n")
    with pytest.raises(BayesreproError, match="spec file .*deep.toml' is nested too deeply to read"):
        load_spec(spec)
    spec.write_text("x = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n")
    with pytest.raises(BayesreproError, match="nested too deeply"):
        load_spec(spec)


@pytest.mark.parametrize("condition", [
    "score > " + "9" * 400, "score == -" + "1" * 400, "score in [1, " + "7" * 400 + "]", "score < 1e400",
    "score + " + "2" * 320 + " > 0",
])
def test_numbers_beyond_double_precision_in_where_are_refused(condition):
    with pytest.raises(BayesreproError, match="a number in it is beyond the range of double precision"):
        parse_where(condition)


def test_the_largest_double_is_still_a_number_in_where():
    assert parse_where(f"score < {int(1.7976931348623157e308)}").columns == ["score"]


def test_crc_checks_still_apply_within_bounds(tmp_path):
    path = tmp_path / "flip.eval"
    write_zip(path, [("header.json", b'{"status": "success"}')])
    data = bytearray(path.read_bytes())
    start = data.rfind(b"PK\x01\x02")
    struct.pack_into("<I", data, start + 16, zlib.crc32(b"other"))
    path.write_bytes(bytes(data))
    with EvalArchive(path) as archive, pytest.raises(BayesreproError, match="checksum does not match"):
        archive.read_json(archive.member("header.json"))
