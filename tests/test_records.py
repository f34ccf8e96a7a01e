"""The record boundary (dpfit/_records.py): fixed errors, values read one by one, and the
records on which a batch evaluation raises found and zeroed."""

import math

import numpy as np
import pytest

from dpfit import DataError
from dpfit._records import evaluate_records, float_values, read_records, to_float


def _batch_rows(values, sub):
    return values if sub is None else np.where(sub.index < 0, 0.0, values[np.maximum(sub.index, 0)])


@pytest.mark.parametrize("bad", [[0], [999], [3, 500, 501, 998]])
def test_the_records_that_raise_alone_are_found_by_bisection(bad):
    values = np.arange(1.0, 1001.0)
    values[bad] = -values[bad]
    calls = []

    def evaluate(sub):
        rows = _batch_rows(values, sub)
        calls.append(rows.size)
        if (rows < 0).any():
            raise ValueError(f"negative value {rows[rows < 0]}")
        return rows * 2.0

    result, failed = evaluate_records(evaluate, values.size, what="doubling")
    assert np.flatnonzero(failed).tolist() == bad
    assert not (result < 0).any() and result.shape == values.shape
    # O(k log n) evaluations, not one per record
    assert len(calls) <= 2 + 2 * len(bad) * math.ceil(math.log2(values.size))


def test_every_record_failing_reads_the_zero_record():
    def evaluate(sub):
        rows = _batch_rows(np.full(8, -1.0), sub)
        if (rows < 0).any():
            raise ValueError("negative")
        return rows

    result, failed = evaluate_records(evaluate, 8, what="x")
    assert failed.all() and (result == 0.0).all()


def test_a_batch_failure_no_record_explains_is_a_fixed_error_with_nothing_chained():
    def evaluate(sub):
        if sub is None or sub.index.size > 1:
            raise ValueError("batch of 'secret-4.2'")
        return np.zeros(1)

    with pytest.raises(DataError) as err:
        evaluate_records(evaluate, 6, what="pairing", hint="see it yourself")
    assert str(err.value) == (
        "pairing failed in code outside dpfit; its message is withheld because it may quote "
        "a record (see it yourself)"
    )
    assert err.value.__context__ is None and err.value.__cause__ is None


def test_memory_and_storage_errors_pass_unchanged():
    def storage():
        raise FileNotFoundError("data.csv")

    with pytest.raises(FileNotFoundError):
        read_records(storage, what="reading")


def test_values_that_are_not_numbers_are_nan():
    block = np.array([[1, "2.5", "secret"], [True, None, "1_000"]], dtype=object)
    out = float_values(block)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [[1.0, 2.5, np.nan], [1.0, np.nan, np.nan]])
    assert to_float(10**400) == math.inf and to_float(" True ") == 1.0
