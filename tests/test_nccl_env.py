from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from p2sim.topology import find_spec
from p2sim.topology.nccl_env import ENV_KEYS, NO_EFFECT, env_text, nccl_table, parse_env, with_env
from p2sim.util.errors import InputError

WHERE = "rows.systems.csv:7: env"


def test_the_nvl72_job_of_20_racks_runs_without_nvls_or_collnet():
    env = parse_env("NCCL_NVLS_ENABLE=0 NCCL_COLLNET_ENABLE=0 NCCL_NET_GDR_C2C=1", WHERE)
    assert env == (("NCCL_COLLNET_ENABLE", "0"), ("NCCL_NET_GDR_C2C", "1"), ("NCCL_NVLS_ENABLE", "0"))
    spec = with_env(find_spec("gb200-nvl72-pod"), env, WHERE)
    assert spec.nccl.nvls is False and spec.nccl.collnet is False
    # nothing else changes: the variable of no effect is recorded, not applied
    base = find_spec("gb200-nvl72-pod").nccl
    assert [f for f in base.__dataclass_fields__ if getattr(base, f) != getattr(spec.nccl, f)] == ["nvls", "collnet"]


def test_nvls_enable_2_is_the_default_and_means_on():
    assert nccl_table((("NCCL_NVLS_ENABLE", "2"),), WHERE) == {"nvls": True}


@pytest.mark.parametrize("text,want", [
    ("LL128", ("LL128",)),
    ("simple,ll", ("LL", "Simple")),  # case-insensitive, NCCL's order
    ("^LL", ("LL128", "Simple")),  # the complement
])
def test_proto_lists_as_nccl_reads_them(text, want):
    assert nccl_table((("NCCL_PROTO", text),), WHERE) == {"protocols": want}


@pytest.mark.parametrize("text,want", [
    ("Ring,Tree", ("ring", "tree")),
    ("^NVLS,NVLSTree", ("ring", "tree", "collnet_direct", "collnet_chain")),
    ("CollNet", ("collnet_direct", "collnet_chain")),  # either CollNet
])
def test_algo_lists_as_nccl_reads_them(text, want):
    assert nccl_table((("NCCL_ALGO", text),), WHERE) == {"algorithms": want}


@pytest.mark.parametrize("text,words", [
    ("NCCL_NVLS_ENABLE=yes", "NCCL_NVLS_ENABLE: 'yes' must be 0, 1 or 2"),
    ("NCCL_PROTO=LL,fast", "'fast' in 'LL,fast' is not a protocol"),
    ("NCCL_PROTO=^LL,LL128,Simple", "leaves NCCL no protocol"),
    ("NCCL_ALGO=allreduce:ring", "per collective"),
    ("NCCL_BUFFSIZE=12", "NCCL_BUFFSIZE: 12 must be a whole number of bytes"),
    ("NCCL_P2P_LEVEL=FAR", "NCCL_P2P_LEVEL: 'FAR' is not one of"),
    ("NCCL_MAX_NCHANNELS=x", "NCCL_MAX_NCHANNELS: 'x' is not a whole number"),
    ("NCCL_FANCY=1", "NCCL_FANCY is not a variable p2sim knows"),
    ("NCCL_PROTO", "'NCCL_PROTO' is not NAME=value"),
    ("NCCL_PROTO=LL NCCL_PROTO=Simple", "NCCL_PROTO is set twice"),
])
def test_bad_entries_name_where_the_variable_and_the_value(text, words):
    with pytest.raises(InputError) as e:
        parse_env(text, WHERE)
    assert str(e.value).startswith(WHERE) and words in str(e.value)


def test_channel_bounds_are_checked_together_against_the_system():
    with pytest.raises(InputError, match="NCCL_MIN_NCHANNELS 40 is above NCCL_MAX_NCHANNELS 8"):
        with_env(find_spec("dgx-h100"), parse_env("NCCL_MIN_NCHANNELS=40 NCCL_MAX_NCHANNELS=8", WHERE), WHERE)


def test_an_empty_environment_is_the_system_itself():
    spec = find_spec("dgx-h100")
    assert parse_env("", WHERE) == () and with_env(spec, (), WHERE) is spec


def test_every_variable_has_a_reason_or_a_key_and_none_has_both():
    assert not set(ENV_KEYS) & set(NO_EFFECT) and all(NO_EFFECT.values())
    from p2sim.topology.settings import NcclSettings
    assert all(key in NcclSettings.__dataclass_fields__ for key, _ in ENV_KEYS.values())


@given(st.dictionaries(st.sampled_from(["NCCL_NVLS_ENABLE", "NCCL_COLLNET_ENABLE", "NCCL_IB_SPLIT_DATA_ON_QPS"]),
                       st.sampled_from(["0", "1"]), min_size=1))
def test_the_text_reads_back_to_the_same_environment(env):
    parsed = parse_env(" ".join(f"{k}={v}" for k, v in env.items()), WHERE)
    assert parse_env(env_text(parsed), WHERE) == parsed == tuple(sorted(env.items()))


def test_the_tcpx_recipes_chunk_is_an_nccl_setting():
    """Google's TCPX recipe sets NCCL_DYNAMIC_CHUNK_SIZE=524288: the plugin's per-socket chunk, [nccl] dynamic_chunksize."""
    from p2sim.topology import find_spec

    spec = with_env(find_spec("a3-high"), (("NCCL_DYNAMIC_CHUNK_SIZE", "131072"),), "x")
    assert spec.nccl.dynamic_chunksize == 131072
    with pytest.raises(InputError, match="NCCL_DYNAMIC_CHUNK_SIZE: 12 must be a whole number of bytes"):
        with_env(find_spec("a3-high"), (("NCCL_DYNAMIC_CHUNK_SIZE", "12"),), "x")


def test_nccl_version_is_recorded_and_checked() -> None:
    """NCCL_VERSION (the release the job loaded, not a variable NCCL reads) sets [nccl] version; a release is
    MAJOR.MINOR.PATCH."""
    spec = with_env(find_spec("gb200-nvl72-pod"), parse_env("NCCL_VERSION=2.26.2", WHERE), WHERE)
    assert spec.nccl.version == "2.26.2"
    assert not spec.nccl.version_at_least(2, 27, 3) and spec.nccl.version_at_least(2, 26, 2)
    assert find_spec("gb200-nvl72-pod").nccl.version_at_least(2, 27, 3)  # unset: the newest
    with pytest.raises(InputError, match=r"NCCL_VERSION: '2.26' must be an NCCL release"):
        parse_env("NCCL_VERSION=2.26", WHERE)


def test_the_plugins_least_stripe_is_an_nccl_setting():
    """OFI_NCCL_MIN_STRIPE_SIZE (aws-ofi-nccl nccl_ofi_param.h, 128 KiB) sets [nccl] ofi_min_stripe_size."""
    from p2sim.topology import find_spec
    from p2sim.topology.nccl_env import with_env

    assert find_spec("p5").nccl.ofi_min_stripe_size == 131072
    spec = with_env(find_spec("p5"), (("OFI_NCCL_MIN_STRIPE_SIZE", "262144"),), "x")
    assert spec.nccl.ofi_min_stripe_size == 262144 and spec.nccl.ofi_rails == 4
