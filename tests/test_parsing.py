import pytest

from p2sim.util.errors import InputError
from p2sim.util.parsing import byte_size, int_list, nccl_tests_size, positive_int


def test_int_list_forms():
    assert int_list("4,16", "h") == (4, 16)
    assert int_list(" 4 16 ", "h") == (4, 16)


@pytest.mark.parametrize("text", ["", " , ", "4,x", "1.5"])
def test_int_list_errors(text):
    with pytest.raises(InputError, match="axes"):
        int_list(text, "axes")


def test_int_list_minimum():
    with pytest.raises(InputError, match="below 1"):
        int_list("0,4", "axes", minimum=1)


def test_byte_sizes():
    assert byte_size("2GiB") == 2**31
    assert byte_size("512 MiB") == 2**29
    assert byte_size("1e9") == 10**9
    for bad in ["", "-1GiB", "2 parsecs", "0"]:
        with pytest.raises(InputError, match="bytes"):
            byte_size(bad)


@pytest.mark.parametrize("text,size", [
    # nccl-tests' parsesize (src/common.cu): a number, then only the first letter of the unit, 1024-based
    ("8", 8), ("1K", 1024), ("1k", 1024), ("1MB", 2**20), ("1mb", 2**20), ("1MiB", 2**20), ("2 GB", 2**31),
    ("1.5K", 1536), ("0.3K", 307), ("1e6", 10**6), ("1e6M", 10**6 * 2**20),
])
def test_nccl_tests_sizes_read_only_the_units_first_letter(text, size):
    assert nccl_tests_size(text, "minbytes") == size


@pytest.mark.parametrize("text", ["", "8B", "1TiB", "1T", "lots", "0", "0.5", "-1K", "1M2", "2**20"])
def test_nccl_tests_sizes_refuse_what_nccl_tests_refuses(text):
    with pytest.raises(InputError, match="^minbytes: "):
        nccl_tests_size(text, "minbytes")


def test_positive_int():
    assert positive_int("5", "max-size") == 5
    with pytest.raises(InputError, match="max-size"):
        positive_int("0", "max-size")
