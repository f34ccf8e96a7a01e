"""scikit-learn's estimator checks for DPLinearRegression, with the expected failures explained."""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from dpfit import DPLinearRegression

#: Checks that cannot hold for dpfit's private estimator, with the reason.
EXPECTED_FAILED_CHECKS = {
    "check_complex_data": (
        "complex input raises TypeError (no silent conversion of private data), not the ValueError "
        "scikit-learn expects"
    ),
    "check_estimators_empty_data_messages": (
        "X without columns raises ValueError('X has no columns') from dpfit's shared validation, "
        "not scikit-learn's wording"
    ),
    "check_fit2d_predict1d": (
        "a 1-D X raises ValueError with dpfit's reshape hint ('use X.reshape(-1, 1)'), not "
        "scikit-learn's 'Reshape your data' wording"
    ),
    "check_dtype_object": (
        "object arrays are refused with a TypeError even when every entry "
        "is a number: no silent conversion of private data"
    ),
    "check_supervised_y_2d": (
        "a column-vector y is refused (no silent repair of private data) instead of being "
        "ravelled with a DataConversionWarning"
    ),
}


def _expected_failed_checks(estimator):
    return EXPECTED_FAILED_CHECKS


@parametrize_with_checks(
    # rho = 5 is the largest value that does not warn; clip 5 * sqrt(p) for standardised data.
    [DPLinearRegression(rho=5.0, clip=16.0, steps=400, random_state=0)],
    expected_failed_checks=_expected_failed_checks,
)
@pytest.mark.filterwarnings(
    # scikit-learn's checks fit on about 20 records: the warning is right and beside the point.
    "ignore:p = .* coefficients with n = .* records:dpfit.exceptions.SideConditionWarning"
)
# The checks call score() on their own made-up data, which is what the warning is about.
@pytest.mark.filterwarnings("ignore:score\\(\\) computes R\\^2:dpfit.exceptions.NonPrivateWarning")
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
