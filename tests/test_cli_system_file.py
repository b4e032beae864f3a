"""A user's own system file, outside the repository, through every command that takes ``--system``.

The file is the shipped p5 with a tenth of its NIC bandwidth, once under a name in no catalogue and once
under the catalogue name ``p5`` (an edited copy keeps the name): both must be read as the file says,
in every command, with worker processes too, never looked up again by name.
"""

from __future__ import annotations

import json
import re

import pytest

from p2sim.cli import main
from p2sim.topology import builtin_dir, find_spec, system_ref

AXES = ("--nodes", "2", "--axes", "data=4,tensor=4", "--reduce", "data")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        rc = main(list(argv))
    except SystemExit as e:
        rc = int(e.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


def own_file(tmp_path, name: str, nic: float = 5.0) -> str:
    text = (builtin_dir() / "p5.toml").read_text()
    text = re.sub(r'^name\s*=.*$', f'name = "{name}"', text, count=1, flags=re.M)
    text, n = re.subn(r"^nic(\s*)= \{ bandwidth = 50\.0 \}", rf"nic\1= {{ bandwidth = {nic} }}", text, flags=re.M)
    assert n == 1, "p5.toml's NIC line changed: update this test's edit"
    d = tmp_path / "elsewhere"
    d.mkdir(exist_ok=True)
    path = d / f"{name}-cluster.toml"
    path.write_text(text)
    return str(path)


def sweep_json(capsys, system: str, *extra: str) -> dict:
    rc, out, err = run(capsys, "sweep", "--system", system, "--nodes", "2", "-b", "64M", "-e", "64M", "--json",
                       *extra)
    assert rc == 0, err
    return json.loads(out)


def test_system_ref_names_catalogue_systems_by_name_and_files_by_path(tmp_path):
    assert system_ref(find_spec("p5")) == "p5"
    mine = own_file(tmp_path, "p5")  # a catalogue name on another file: by path
    assert system_ref(find_spec(mine)) == str((tmp_path / "elsewhere" / "p5-cluster.toml").resolve())


@pytest.mark.slow  # every command, a calibration fit among them
@pytest.mark.parametrize("name", ["mycluster", "p5"])
def test_every_command_reads_the_users_file(capsys, tmp_path, name):
    system = own_file(tmp_path, name)
    shipped = sweep_json(capsys, "p5")
    mine = sweep_json(capsys, system)
    assert mine["points"][0]["seconds"] > 3 * shipped["points"][0]["seconds"]  # a tenth of the NIC: NIC-bound

    # the log p2sim predicts for the file is what every reader of logs gets back
    rc, log, err = run(capsys, "sweep", "--system", system, "--nodes", "2", "-b", "1M", "-e", "64M", "-f", "4")
    assert rc == 0, err
    logfile = tmp_path / "elsewhere" / "run.log"
    logfile.write_text(log)

    # the commands that read no logs, once (a name is only ever looked up again where rows name the system)
    for argv in (("topo", system), ("placements", "--system", system, *AXES[:4]),
                 ("synth", "--system", system, *AXES),
                 ("simulate", "--system", system, *AXES, "--json"),
                 ("rank", "--system", system, *AXES, "--workers", "2", "--json"),
                 ("plan", "--system", system, *AXES[:4], "--reduction", "data:1GiB", "--workers", "2", "--json"),
                 ("whatif", "--system", system, *AXES, "--vary", "nic.bandwidth=5,10", "--workers", "2", "--json")
                 ) if name == "mycluster" else ():
        rc, out, err = run(capsys, *argv)
        assert rc == 0, (argv, err)

    # a prediction read back from its own log: as predicted, row by row
    rc, out, err = run(capsys, "check", "--system", system, *AXES, str(logfile), "--json")
    assert rc == 0, err
    assert {v["verdict"] for v in json.loads(out)["rows"]} == {"as predicted"}
    rc, out, err = run(capsys, "validate", "--measurements", str(logfile), "--system", system, "--json",
                       "--workers", "2")
    assert rc == 0, err
    assert json.loads(out)["collectives"]["metrics"]["all"]["des"]["all"]["median_ratio"] == pytest.approx(1.0, rel=0.02)

    out_toml = tmp_path / "elsewhere" / "cal.toml"
    rc, out, err = run(capsys, "calibrate", "--measurements", str(logfile), "--system", system,
                       "--out", str(out_toml), "--json", "--workers", "2")
    assert rc == 0, err
    assert json.loads(out)["rms_log_error_before"] < 0.02  # the file itself predicted its own log


@pytest.mark.slow  # a calibration fit (scipy least squares)
def test_calibration_fits_the_file_not_the_catalogue(capsys, tmp_path):
    """Calibrated on a log of a slower cluster, an edited copy named ``p5`` (its NIC a tenth of the shipped
    one's) moves its NIC down to the log's: its rows name it by path, and the fit's trials must be what
    predicts them (keyed by name, they were not: the shipped p5 answered, and validate --calibrate-on scored
    the file as read).  The log's NIC is half the copy's, because calibration fits a link at most at its
    file's figure (fit_params.py)."""
    system = own_file(tmp_path, "p5")
    truth = own_file(tmp_path, "truth", nic=2.5)
    rc, log, err = run(capsys, "sweep", "--system", truth, "--nodes", "2", "-b", "16M", "-e", "256M", "-f", "4")
    assert rc == 0, err
    logfile = tmp_path / "elsewhere" / "shipped.log"
    logfile.write_text(log)
    rc, out, err = run(capsys, "validate", "--measurements", str(logfile), "--system", system,
                       "--calibrate-on", str(logfile), "--json", "--workers", "1")
    assert rc == 0, err
    doc = json.loads(out)["collectives"]
    assert doc["metrics"]["all"]["des"]["all"]["median_ratio"] == pytest.approx(1.0, rel=0.1)
    rc, out, err = run(capsys, "calibrate", "--measurements", str(logfile), "--system", system,
                       "--out", str(tmp_path / "cal.toml"), "--json", "--workers", "1")
    assert rc == 0, err
    fit = json.loads(out)
    assert fit["system"] == "p5"
    assert fit["rms_log_error_after"] < 0.2 < fit["rms_log_error_before"]


@pytest.mark.slow  # a calibration fit (scipy least squares)
def test_a_system_held_in_memory_is_what_check_and_calibrate_predict_with(capsys, tmp_path):
    """Through the API a system may be a SystemSpec changed in memory, its file gone or never there: the
    logs' rows are checked and predicted with it, not with a file found again by name or path."""
    from dataclasses import replace

    import p2sim

    system = own_file(tmp_path, "mycluster")
    rc, log, err = run(capsys, "sweep", "--system", system, "--nodes", "2", "-b", "1M", "-e", "64M", "-f", "4")
    assert rc == 0, err
    logfile = tmp_path / "run.log"
    logfile.write_text(log)
    held = replace(find_spec(system), source=str(tmp_path / "gone" / "never.toml"))
    doc = p2sim.check(system=held, nodes=2, axes="data=4,tensor=4", reduce="data", logs=[str(logfile)],
                      workers=1).to_json()
    assert {v["verdict"] for v in doc["rows"]} == {"as predicted"}
    fit = p2sim.calibrate(measurements=str(logfile), system=held, workers=1).calibration
    assert fit.rms_log_before < 0.02
