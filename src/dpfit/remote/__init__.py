"""``dpfit.remote.Client``: fit on a steward's ``dpfit serve`` as you would on local data.

::

    client = dpfit.remote.Client("http://127.0.0.1:8000", token)   # or $DPFIT_TOKEN
    client.schema("survey")                      # public columns, bounds, levels, budget
    client.dry_run("y ~ x1 + x2", dataset="survey", rho=0.1)   # cost, nothing charged
    result = client.ols("y ~ x1 + x2", dataset="survey", rho=0.1)
    print(result.summary())                      # the same Result a local dpfit.ols returns
    odds = client.logit("works ~ age + kids", dataset="survey", rho=0.1).params_exp()

The client needs only the standard library (``urllib``) and dpfit itself. Results travel as
JSON (:mod:`dpfit.remote.codec`), never as pickles, and each is checked against the SHA-256
the service recorded for it. The fit's dpfit warnings are raised again here, as a local fit
raises them. Refusals raise the error a local call would: ``BudgetExceededError`` for a
budget, ``ValueError`` for a bad request, ``PermissionError`` for a bad token, ``LookupError``
for an unknown dataset or release.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
import warnings
from dataclasses import dataclass
from typing import Any

from .. import exceptions
from .._validation import user_stacklevel
from ..exceptions import BudgetExceededError, PrivacyWarning
from ..models.glm.results import GLMResult
from ..models.results import Result
from .codec import decode_result, result_sha256

__all__ = ["Client", "Release"]


@dataclass(frozen=True, kw_only=True)
class Release:
    """One request to the service: its status, charge and, when released, its result."""

    id: str
    dataset: str | None
    model: str
    formula: str
    status: str
    rho_charged: float
    sha256: str | None
    warnings: tuple[str, ...]
    error: str | None
    result: Result | None


def _error(status: int, body: bytes) -> Exception:
    try:
        error = json.loads(body)["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        code, message = "http_error", f"HTTP {status}"
    text = f"dpfit serve ({status} {code}): {message}"
    if code == "budget":
        return BudgetExceededError(text)
    if status in (401, 403):
        return PermissionError(text)
    if status == 404:
        return LookupError(text)
    if 400 <= status < 500:
        return ValueError(text)
    return RuntimeError(text)


def _warn_again(lines: tuple[str, ...]) -> None:
    """Raise each of the fit's dpfit warnings again, with its own category."""
    for line in lines:
        name, _, message = line.partition(": ")
        category = getattr(exceptions, name, None)
        if not (isinstance(category, type) and issubclass(category, PrivacyWarning)):
            category, message = PrivacyWarning, line
        warnings.warn(message, category, stacklevel=user_stacklevel())


class Client:
    """A connection to a ``dpfit serve`` service as one analyst.

    Parameters
    ----------
    url : str
        The service's address, e.g. ``"http://127.0.0.1:8000"``. Use ``https://`` (a TLS
        reverse proxy) for a service that is not on your machine: the token travels with
        every request.
    token : str, optional
        Your token from the steward; by default the ``DPFIT_TOKEN`` environment variable.
    timeout : float, default=600
        Seconds to wait for an answer (a fit runs while the request waits).
    """

    def __init__(self, url: str, token: str | None = None, *, timeout: float = 600.0) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {url!r}")
        token = os.environ.get("DPFIT_TOKEN") if token is None else token
        if not token:
            raise ValueError("token is required (or set the DPFIT_TOKEN environment variable)")
        self.url = url.rstrip("/")
        self._token = token
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"Client({self.url!r})"  # never the token

    def _call(self, method: str, path: str, payload: Any = None) -> Any:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {self._token}",
                "Accept": "application/json",
                **({"Content-Type": "application/json"} if data is not None else {}),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise _error(exc.code, exc.read()) from None

    @staticmethod
    def _fit_payload(
        formula: str, dataset: str, rho: float, model: str, bounds: Any, y_bounds: Any,
        **offsets: str | None,
    ) -> dict[str, Any]:  # fmt: skip
        payload: dict[str, Any] = {
            "dataset": dataset,
            "model": model,
            "formula": formula,
            "rho": rho,
        }
        if bounds is not None:
            payload["bounds"] = {str(k): list(v) for k, v in dict(bounds).items()}
        if y_bounds is not None:
            payload["y_bounds"] = list(y_bounds)
        payload.update({k: v for k, v in offsets.items() if v is not None})
        return payload

    @staticmethod
    def _release(view: dict[str, Any]) -> Release:
        document = view.get("result")
        result = None
        if document is not None:
            if result_sha256(document) != view.get("sha256"):
                raise RuntimeError("the result does not match the SHA-256 the service recorded")
            result = decode_result(document)
        return Release(
            id=view["id"],
            dataset=view.get("dataset"),
            model=view["model"],
            formula=view["formula"],
            status=view["status"],
            rho_charged=view["rho_charged"],
            sha256=view.get("sha256"),
            warnings=tuple(view.get("warnings") or ()),
            error=view.get("error"),
            result=result,
        )

    def datasets(self) -> list[dict[str, Any]]:
        """Your datasets: name, public n, delta, public schema and your budget."""
        return self._call("GET", "/api/v1/datasets")["datasets"]

    def schema(self, dataset: str) -> dict[str, Any]:
        """One dataset's public view (schema, n, delta, your budget); never a value."""
        return self._call("GET", f"/api/v1/datasets/{urllib.parse.quote(dataset, safe='')}")

    def dry_run(
        self,
        formula: str,
        *,
        dataset: str,
        rho: float,
        model: str = "ols",
        bounds: Any = None,
        y_bounds: Any = None,
        exposure: str | None = None,
        offset: str | None = None,
    ) -> dict[str, Any]:
        """What the fit would use (terms, public bounds) and cost (rho, epsilon); no charge."""
        payload = self._fit_payload(
            formula, dataset, rho, model, bounds, y_bounds, exposure=exposure, offset=offset
        )
        return self._call("POST", "/api/v1/dry-run", payload)

    def submit(
        self,
        formula: str,
        *,
        dataset: str,
        rho: float,
        model: str = "ols",
        bounds: Any = None,
        y_bounds: Any = None,
        exposure: str | None = None,
        offset: str | None = None,
    ) -> Release:
        """Charge ``rho`` and fit; the :class:`Release` (its ``result`` when released).
        ``exposure`` and ``offset`` (Poisson) name declared numeric columns."""
        payload = self._fit_payload(
            formula, dataset, rho, model, bounds, y_bounds, exposure=exposure, offset=offset
        )
        return self._release(self._call("POST", "/api/v1/releases", payload))

    def _fit(self, model: str, formula: str, **kwargs: Any) -> Result:
        done = self.submit(formula, model=model, **kwargs)
        if done.result is None:
            raise RuntimeError(f"dpfit serve: release {done.id} {done.status}: {done.error}")
        _warn_again(done.warnings)
        return done.result

    def ols(
        self, formula: str, *, dataset: str, rho: float, bounds: Any = None, y_bounds: Any = None
    ) -> Result:
        """``dpfit.ols`` on the service's dataset: returns the same :class:`Result`.

        Declared columns use the schema's public bounds; ``bounds`` ({term: (low, high)})
        and ``y_bounds`` are needed only for derived terms such as ``I(x ** 2)``.
        """
        return self._fit("ols", formula, dataset=dataset, rho=rho, bounds=bounds, y_bounds=y_bounds)

    def iv(
        self, formula: str, *, dataset: str, rho: float, bounds: Any = None, y_bounds: Any = None
    ) -> Result:
        """``dpfit.iv`` (``y ~ exog + [endog ~ instruments]``) on the service's dataset."""
        return self._fit("iv", formula, dataset=dataset, rho=rho, bounds=bounds, y_bounds=y_bounds)

    def logit(self, formula: str, *, dataset: str, rho: float, bounds: Any = None) -> GLMResult:
        """``dpfit.logit`` (a 0/1 response) on the service's dataset: the same
        :class:`~dpfit.models.glm.GLMResult` (odds ratios, marginal effects)."""
        return self._glm("logit", formula, dataset=dataset, rho=rho, bounds=bounds)

    def probit(self, formula: str, *, dataset: str, rho: float, bounds: Any = None) -> GLMResult:
        """``dpfit.probit`` (a 0/1 response) on the service's dataset."""
        return self._glm("probit", formula, dataset=dataset, rho=rho, bounds=bounds)

    def poisson(
        self, formula: str, *, dataset: str, rho: float, bounds: Any = None, y_bounds: Any = None,
        exposure: str | None = None, offset: str | None = None,
    ) -> GLMResult:  # fmt: skip
        """``dpfit.poisson`` on the service's dataset; ``y_bounds=(0, K)`` only for a count
        that is not a declared column; ``exposure`` or ``offset`` name declared numeric columns
        (an exposure's declared lower bound must be above 0: the service clips into it)."""
        return self._glm(
            "poisson", formula, dataset=dataset, rho=rho, bounds=bounds, y_bounds=y_bounds,
            exposure=exposure, offset=offset,
        )  # fmt: skip

    def _glm(self, model: str, formula: str, **kwargs: Any) -> GLMResult:
        result = self._fit(model, formula, **kwargs)
        if not isinstance(result, GLMResult):
            raise RuntimeError(f"dpfit serve: a {model} fit did not return a GLM result")
        return result

    def release(self, release_id: str) -> Release:
        """A past request and its result, fetched again (no new charge)."""
        path = f"/api/v1/releases/{urllib.parse.quote(release_id, safe='')}"
        return self._release(self._call("GET", path))

    def history(self) -> list[dict[str, Any]]:
        """Your requests, newest first (results left out: fetch one with :meth:`release`)."""
        return self._call("GET", "/api/v1/releases")["releases"]
