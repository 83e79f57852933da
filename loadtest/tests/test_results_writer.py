"""results.jsonl survives a crash: kill the writer mid-run, every record is intact."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from loadtest.results import ResultsWriter, read_records

REPO_ROOT = Path(__file__).resolve().parents[2]

WRITER = """
import sys
from pathlib import Path
from loadtest.results import ResultsWriter

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
    # Every confirmed record is there, in order, with nothing torn.
    assert seqs[:confirmed] == list(range(1, confirmed + 1))
    assert seqs == list(range(1, len(seqs) + 1))
    with path.open("rb") as handle:
        lines = handle.read().split(b"\n")
    assert lines[-1] == b""  # the file ends with a complete line
    for line in lines[:-1]:
        json.loads(line)


def test_reader_skips_a_torn_last_line(tmp_path):
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        writer.write({"seq": 1})
        writer.write({"seq": 2})
    with path.open("ab") as handle:
        handle.write(b'{"seq": 3, "trunc')
    assert [r["seq"] for r in read_records(path)] == [1, 2]


def test_appends_to_an_existing_file(tmp_path):
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        writer.write({"seq": 1})
    with ResultsWriter(path) as writer:
        writer.write({"seq": 2})
    assert [r["seq"] for r in read_records(path)] == [1, 2]
