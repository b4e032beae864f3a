from __future__ import annotations

import pytest

from p2sim.util.errors import InputError, OutputError
from p2sim.util.fileio import check_output_dir, check_output_file, decode, read_text, writing


def test_read_text(tmp_path):
    f = tmp_path / "a.csv"
    f.write_bytes(b"\xef\xbb\xbfgpu,nodes\nA100,2\n")  # a spreadsheet's byte-order mark is dropped
    assert read_text(f).startswith("gpu,nodes")
    f.write_bytes(b"\xef\xbb\xbfgpu\nA\xe9\n")  # Latin-1, not UTF-8
    with pytest.raises(InputError, match=r"a.csv:2: encoding: byte 0xe9 at column 2 is not UTF-8 \(is this a log\?\)"):
        read_text(f, "log")
    with pytest.raises(InputError, match="no such log"):
        read_text(tmp_path / "none", "log")
    with pytest.raises(InputError, match="is a directory, not a log"):
        read_text(tmp_path, "log")


def test_decode_counts_lines_and_columns():
    with pytest.raises(InputError, match=r"^x:3: encoding: byte 0xff at column 3"):
        decode(b"a\nb\nab\xff", "x")


def test_output_directories(tmp_path):
    assert check_output_dir(tmp_path / "new" / "deeper", "out") == tmp_path / "new" / "deeper"
    assert check_output_dir(tmp_path, "out") == tmp_path
    f = tmp_path / "f"
    f.write_text("")
    with pytest.raises(OutputError, match="out: .*f exists and is not a directory"):
        check_output_dir(f, "out")
    with pytest.raises(OutputError, match="is a file, so the directory"):
        check_output_dir(f / "sub" / "dir", "out")


def test_output_files(tmp_path):
    assert check_output_file(tmp_path / "t.json", "trace") == tmp_path / "t.json"
    with pytest.raises(OutputError, match=r"draw: .*p.txt should end in .png or .svg"):
        check_output_file(tmp_path / "p.txt", "draw", (".png", ".svg"))
    assert check_output_file(tmp_path / "P.PNG", "draw", (".png",))  # suffixes in any case
    with pytest.raises(OutputError, match="does not exist"):
        check_output_file(tmp_path / "no" / "t.json", "trace")
    with pytest.raises(OutputError, match="is a directory, not a file"):
        check_output_file(tmp_path, "trace")


def test_writing_turns_os_errors_into_one_message(tmp_path):
    with pytest.raises(OutputError, match=r"^out: cannot write x \(No space left on device\)$"):
        with writing("out", "x"):
            raise OSError(28, "No space left on device")


def test_special_inputs_are_refused_or_read_once(tmp_path):
    import os
    import threading

    from p2sim.util.fileio import check_input_file, read_bytes, read_text

    with pytest.raises(InputError, match="/dev/zero: is a device or socket, not a regular file"):
        read_text("/dev/zero", "system file")
    big = tmp_path / "big.log"
    big.write_bytes(b"x" * 2048)
    with pytest.raises(InputError, match="big.log: 2 KiB is more than a log may be .1 KiB."):
        read_bytes(big, "log", limit=1024)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    threading.Thread(target=lambda: fifo.write_bytes(b"name = 1\n"), daemon=True).start()
    assert read_text(fifo, "system file", pipes=True) == "name = 1\n"  # a pipe, read once
    with pytest.raises(InputError, match="fifo: is a pipe, not a regular file"):
        check_input_file(fifo, "measurement file", pipes=False)
    assert check_input_file(big, "log") == "file"


def test_special_outputs_are_refused(tmp_path):
    from p2sim.util.fileio import check_output_file

    for dev in ("/dev/null", "/dev/full"):
        with pytest.raises(OutputError, match=f"out: {dev} is not a regular file"):
            check_output_file(dev, "out")


def test_pipes_are_refused_unless_the_reader_takes_them_and_a_silent_one_ends(tmp_path, monkeypatch):
    import os
    import threading

    from p2sim.util import fileio

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="fifo: is a pipe, not a regular file: a model configuration is read"):
        fileio.read_text(fifo, "model configuration")  # refused before it is opened: no writer, no hang
    monkeypatch.setattr(fileio, "PIPE_WAIT_S", 0.05)
    with pytest.raises(InputError, match="fifo: is a pipe and nothing was written to it in 0.05 s"):
        fileio.read_text(fifo, "system file", pipes=True)
    monkeypatch.setattr(fileio, "PIPE_WAIT_S", 600)  # a writer that comes is waited for
    threading.Thread(target=lambda: fifo.write_bytes(b"name = 1\n"), daemon=True).start()
    assert fileio.read_text(fifo, "system file", pipes=True) == "name = 1\n"


def test_an_empty_name_is_not_the_current_directory():
    from p2sim.util.fileio import read_text

    with pytest.raises(InputError, match="'': an empty name is no model configuration"):
        read_text("", "model configuration")


def test_json_that_python_cannot_read_is_a_decode_error_or_one_line():
    import json

    from p2sim.util.fileio import json_loads, parse_json

    deep, long = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", '{"a": ' + "9" * 5000 + "}"
    for text, says in ((deep, "nested too deeply"), (long, "too long to be read")):
        with pytest.raises(json.JSONDecodeError, match=says):  # a RecursionError, a ValueError before
            json_loads(text)
        with pytest.raises(InputError, match=f"^f.json: .*{says}"):
            parse_json(text, "f.json")
    with pytest.raises(InputError, match="^f.json: a: given twice .1 and 2.: each key once$"):
        parse_json('{"b": {"a": 1, "a": 2}}', "f.json")
    assert parse_json('{"a": {"a": 1}}', "f.json") == {"a": {"a": 1}}
