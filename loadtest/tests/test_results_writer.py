"""results.jsonl survives a crash: kill the writer mid-run, every record is intact."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loadtest.bench.results import ResultsWriter, read_records

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]

WRITER = """
import sys
from pathlib import Path
from loadtest.bench.results import ResultsWriter

writer = ResultsWriter(Path(sys.argv[1]))
payload = "x" * 20000  # bigger than any stdio buffer: one write per line still
for seq in range(1, 100000):
    writer.write({"kind": "measurement", "seq": seq, "payload": payload})
    print(seq, flush=True)  # reported only after the record is on disk
"""


def test_killed_writer_leaves_complete_records(tmp_path):
    path = tmp_path / "results.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    confirmed = 0
    deadline = time.monotonic() + 30
    while confirmed < 50 and time.monotonic() < deadline:
        confirmed = int(process.stdout.readline())
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert confirmed >= 50
    records = read_records(path)
    seqs = [r["seq"] for r in records]
    # Every confirmed record is there, in order; at most the record being
    # written when SIGKILL arrived is missing (the kernel may have cut it).
    assert seqs[:confirmed] == list(range(1, confirmed + 1))
    assert seqs == list(range(1, len(seqs) + 1))
    # A resumed run trims any torn tail and appends whole lines after it.
    with ResultsWriter(path) as writer:
        writer.write({"kind": "measurement", "seq": len(seqs) + 1})
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    assert [json.loads(line)["seq"] for line in lines[:-1]] == list(
        range(1, len(seqs) + 2)
    )


def test_reader_skips_a_torn_last_line(tmp_path):
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        writer.write({"seq": 1})
        writer.write({"seq": 2})
    with path.open("ab") as handle:
        handle.write(b'{"seq": 3, "trunc')
    assert [r["seq"] for r in read_records(path)] == [1, 2]


def test_writer_trims_a_torn_last_line_before_appending(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"seq": 1}\n{"seq": 2}\n{"seq": 3, "tr')
    with ResultsWriter(path) as writer:
        writer.write({"seq": 4})
    assert path.read_bytes() == b'{"seq": 1}\n{"seq": 2}\n{"seq": 4}\n'


def test_writer_trims_a_file_that_is_one_torn_line(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"seq": 1, "tr' + b"x" * 200000)
    with ResultsWriter(path) as writer:
        writer.write({"seq": 2})
    assert [r["seq"] for r in read_records(path)] == [2]


def test_appends_to_an_existing_file(tmp_path):
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        writer.write({"seq": 1})
    with ResultsWriter(path) as writer:
        writer.write({"seq": 2})
    assert [r["seq"] for r in read_records(path)] == [1, 2]
