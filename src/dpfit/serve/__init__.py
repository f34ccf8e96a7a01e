"""``dpfit serve``: a data steward's service for private fits (docs/serve.md).

A steward registers datasets with a public schema and a total privacy budget, gives analysts
tokens and shares of it, and audits every release. Analysts read the public schemas, dry-run
and submit fits through web pages, a JSON API or :class:`dpfit.remote.Client`, and get back
the same :class:`~dpfit.models.results.Result` a local fit returns. The service holds no
statistics of its own: it checks a request against the public schema, charges its rho to
the analyst's and the dataset's budgets in the database, then calls ``dpfit.ols``,
``dpfit.iv``, ``dpfit.logit``, ``dpfit.probit`` or ``dpfit.poisson`` as a local user would.

Needs the ``serve`` extra: ``pip install -e ".[serve]"``.
"""

from .app import create_app
from .releases import dry_run, recover, submit
from .site import Site, init_site, open_site
from .steward import (
    create_analyst,
    grant_share,
    register_dataset,
    revoke_analyst,
    set_dataset_status,
)

__all__ = [
    "Site",
    "create_analyst",
    "create_app",
    "dry_run",
    "grant_share",
    "init_site",
    "open_site",
    "recover",
    "register_dataset",
    "revoke_analyst",
    "set_dataset_status",
    "submit",
]
