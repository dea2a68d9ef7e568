"""``--engine auto`` chooses by the memory the rows would take in pandas, not by the file's size on disk."""

import gzip

import numpy as np
import pandas as pd
import pytest

from bayesrepro.design import producers
from bayesrepro.design.producers import choose_engine
from bayesrepro.design.producers.memory_estimate import NUMBER_CELL, TEXT_CELL, TEXT_FILE_FACTOR, expected_memory


def scores(rows):
    codes = np.arange(rows)
    return pd.DataFrame({"item": (codes % 1000).astype(str), "system": np.where(codes % 2, "a", "b"),
                         "seed": codes % 5, "score": np.round(codes % 100 / 100, 2)})


def test_parquet_is_estimated_from_its_row_count_and_column_types(tmp_path):
    path = tmp_path / "s.parquet"
    scores(200_000).to_parquet(path)
    assert expected_memory(path) == 200_000 * (2 * TEXT_CELL + 2 * NUMBER_CELL)
    # dictionary encoding keeps the file small: its size on disk says nothing of the memory
    assert path.stat().st_size * 20 < expected_memory(path)


def test_text_files_are_estimated_from_their_inflated_size(tmp_path):
    frame = scores(50_000)
    plain, packed = tmp_path / "s.csv", tmp_path / "s.csv.gz"
    frame.to_csv(plain, index=False)
    with gzip.open(packed, "wt") as out:
        frame.to_csv(out, index=False)
    assert expected_memory(plain) == int(TEXT_FILE_FACTOR * plain.stat().st_size)
    assert expected_memory(packed) == expected_memory(plain) > 3 * packed.stat().st_size


def test_a_file_small_on_disk_and_large_in_memory_goes_to_duckdb(tmp_path, monkeypatch):
    path = tmp_path / "s.parquet"
    scores(200_000).to_parquet(path)
    monkeypatch.setattr(producers, "LARGE_FRAME_BYTES", expected_memory(path) - 1)
    assert path.stat().st_size < producers.LARGE_FRAME_BYTES
    assert choose_engine(str(path), "auto") == "duckdb"
    monkeypatch.setattr(producers, "LARGE_FRAME_BYTES", expected_memory(path))
    assert choose_engine(str(path), "auto") == "memory"
    assert choose_engine(str(path), "memory") == "memory"


@pytest.mark.parametrize("name, content", [("bad.parquet", b"not parquet"), ("empty.csv.gz", b"")])
def test_a_file_that_cannot_be_examined_is_left_to_the_memory_reader_to_refuse(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    assert expected_memory(path) == 0
    assert choose_engine(str(path), "auto") == "memory"
