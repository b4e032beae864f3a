"""p2sim.sim.model_config: the rates a run gives the collective model, the file's or calibration's."""

from __future__ import annotations

import dataclasses
import json
import math

from p2sim.sim.model_config import ModelConfig
from p2sim.topology import load_system


def test_the_file_s_rates_unless_a_run_replaces_them():
    spec = load_system("a100", 2).spec
    assert ModelConfig.of(spec).resolve(spec) is spec.rates and ModelConfig().resolve(spec) is spec.rates
    fitted = dataclasses.replace(spec.rates, **{f.name: 12.5 for f in dataclasses.fields(spec.rates)
                                                if f.name.endswith("_rate")})
    assert ModelConfig(fitted).resolve(spec) is fitted


def test_json_writes_an_uncapped_rate_as_null_and_the_nccl_settings_beside():
    spec = load_system("a100", 2).spec
    name = next(f.name for f in dataclasses.fields(spec.rates) if f.name.endswith("_rate"))
    doc = ModelConfig(dataclasses.replace(spec.rates, **{name: math.inf})).to_json(spec)
    json.dumps(doc, allow_nan=False)  # valid JSON: no Infinity
    assert name in doc["rates_GBps"] and doc["rates_GBps"][name] is None
    assert set(doc["nccl"]) == {f.name for f in dataclasses.fields(spec.nccl)}
