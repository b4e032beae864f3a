import pytest

from p2sim.util.errors import InputError
from p2sim.util.parsing import byte_size, int_list, positive_int


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


def test_positive_int():
    assert positive_int("5", "max-size") == 5
    with pytest.raises(InputError, match="max-size"):
        positive_int("0", "max-size")
