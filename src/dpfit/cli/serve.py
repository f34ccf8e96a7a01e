"""``dpfit serve``: run a data steward's service, and manage its datasets and analysts.

``dpfit serve init DIR`` creates a site; ``dpfit serve DIR`` (or ``dpfit serve start DIR``)
runs it; ``dpfit serve dataset|analyst|audit ...`` are the steward's actions on the site's
database, the same functions the admin page calls (:mod:`dpfit.serve.steward`).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ._args import examples

__all__ = ["add_parser", "run"]

EXAMPLES = examples(
    "dpfit serve init site                    # prints the steward's token once",
    "dpfit serve dataset add site survey --data data.csv --schema schema.toml --rho 2 \\",
    "    --delta 1e-6",
    "dpfit serve analyst add site alice --dataset survey --rho 0.5   # prints alice's token",
    "dpfit serve site                         # http://127.0.0.1:8000 until Ctrl-C",
    "dpfit serve site --database postgresql://dpfit@localhost/dpfit --workers 4",
    "dpfit serve audit site --format csv --out audit.csv",
)
_DEFAULT = "start"


class _StartByDefault(argparse._SubParsersAction):
    """Subcommand actions where a first word that is no action means ``start``:
    ``dpfit serve DIR`` is ``dpfit serve start DIR``."""

    class _Any(dict):
        def __contains__(self, key: object) -> bool:
            return True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.choices = self._Any()

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        if values and values[0] not in self._name_parser_map:
            values = [_DEFAULT, *values]
        super().__call__(parser, namespace, values, option_string)


def _site(p: argparse.ArgumentParser) -> None:
    p.add_argument("site", metavar="DIR", help="the site folder (dpfit serve init DIR)")
    p.add_argument("--database", help="a database URL replacing the site's (serve.toml)")


def _token_file(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--token-file",
        metavar="PATH",
        help="write the token to PATH (readable by you only) instead of printing it",
    )


def _add_dataset_parsers(sub: Any) -> None:
    p = sub.add_parser("dataset", help="register, pause, reopen, close or list datasets")
    acts = p.add_subparsers(dest="dataset_action", required=True, metavar="ACTION")
    add = acts.add_parser("add", help="register a data file with its public schema and budget")
    _site(add)
    add.add_argument("name", help="the name analysts use")
    add.add_argument("--data", required=True, help="CSV or Parquet file (read in place)")
    add.add_argument("--schema", required=True, help="public schema: .toml, .yaml or .json")
    add.add_argument("--rho", type=float, help="total zCDP budget (or 'rho' in the schema)")
    add.add_argument("--delta", type=float, help="delta of statements (or 'delta' in the schema)")
    for action, what in (
        ("pause", "refuse new fits until resumed"),
        ("resume", "accept fits again"),
        ("close", "refuse fits for good"),
    ):
        q = acts.add_parser(action, help=what)
        _site(q)
        q.add_argument("name", help="the dataset")
    _site(acts.add_parser("list", help="datasets with their budgets"))


def _add_analyst_parsers(sub: Any) -> None:
    p = sub.add_parser("analyst", help="create analysts, grant shares, revoke, list")
    acts = p.add_subparsers(dest="analyst_action", required=True, metavar="ACTION")
    add = acts.add_parser("add", help="create an analyst and print their token once")
    _site(add)
    add.add_argument("name", help="the analyst's name")
    add.add_argument("--dataset", help="give a first share of this dataset")
    add.add_argument("--rho", type=float, help="the share's rho (with --dataset)")
    _token_file(add)
    grant = acts.add_parser("grant", help="add rho of a dataset to an analyst's share")
    _site(grant)
    grant.add_argument("name", help="the analyst")
    grant.add_argument("--dataset", required=True, help="the dataset")
    grant.add_argument("--rho", type=float, required=True, help="rho to add to the share")
    revoke = acts.add_parser("revoke", help="revoke an analyst's token and sessions")
    _site(revoke)
    revoke.add_argument("name", help="the analyst")
    _site(acts.add_parser("list", help="analysts with their shares"))


def add_parser(sub: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    p = sub.add_parser(
        name,
        help="run a data steward's service: web pages and a JSON API for private fits",
        description=(
            "A steward's service: analysts read datasets' public schemas, dry-run and submit "
            "private fits (web pages, JSON API, dpfit.remote.Client) against per-analyst "
            "budgets kept in a database; every release is audited. 'dpfit serve DIR' runs the "
            "site in DIR (the same as 'dpfit serve start DIR'). See docs/serve.md."
        ),
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = p.add_subparsers(
        dest="action", required=True, metavar="ACTION", action=_StartByDefault
    )
    init = actions.add_parser("init", help="create a site folder; print the steward's token once")
    init.add_argument("site", metavar="DIR", help="a new (or empty) folder")
    init.add_argument("--database", help="a PostgreSQL URL instead of DIR/serve.sqlite")
    _token_file(init)
    start = actions.add_parser("start", help="run the service (dpfit serve DIR does the same)")
    _site(start)
    start.add_argument("--host", help="address to bind (default: serve.toml's, 127.0.0.1)")
    start.add_argument("--port", type=int, help="port (default: serve.toml's, 8000)")
    start.add_argument("--workers", type=int, default=1, help="server processes (default 1)")
    _add_dataset_parsers(actions)
    _add_analyst_parsers(actions)
    audit = actions.add_parser("audit", help="export the audit log (every release and action)")
    _site(audit)
    audit.add_argument("--format", choices=("csv", "json"), default="csv", help="csv or json")
    audit.add_argument("--out", metavar="PATH", help="write to PATH (default: standard output)")
    return p


def _show_token(token: str, who: str, path: str | None) -> None:
    if path is None:
        print(f"token of {who} (shown once; only its hash is stored): {token}")
        return
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(token + "\n")
    print(f"token of {who} written to {path} (only its hash is stored)")


def _start(args: argparse.Namespace) -> int:
    import uvicorn

    from ..serve import create_app, open_site, recover

    site = open_site(args.site, database=args.database)
    host, port = args.host or site.host, args.port or site.port
    interrupted = recover(site)
    print(
        f"dpfit serve: site {site.path} on http://{host}:{port}/ (analysts sign in at /login;"
        f" the steward at /admin); {interrupted} interrupted fit(s) marked",
        flush=True,
    )
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(f"dpfit serve: listening on {host}: put TLS in front (docs/serve.md)", flush=True)
    if args.workers == 1:
        uvicorn.run(create_app(site), host=host, port=port, log_level="warning")
        return 0
    os.environ["DPFIT_SERVE_SITE"] = str(site.path)
    os.environ["DPFIT_SERVE_DATABASE"] = args.database or ""
    uvicorn.run(
        "dpfit.serve.app:app_from_environment",
        factory=True,
        host=host,
        port=port,
        workers=args.workers,
        log_level="warning",
    )
    return 0


def _datasets(args: argparse.Namespace, site: Any) -> int:
    from ..serve import audit, register_dataset, set_dataset_status

    action = args.dataset_action
    if action == "add":
        done = register_dataset(
            site, args.name, data=args.data, schema=args.schema, rho=args.rho, delta=args.delta
        )
        print(
            f"dataset {done['name']!r}: n = {done['n']} records, rho = {done['rho']:g}, "
            f"delta = {done['delta']:g}, sha256 {done['sha256'][:16]}..."
        )
        return 0
    if action == "list":
        print(
            f"{'dataset':<20} {'status':<8} {'n':>9} {'rho total':>10} {'shared':>10} {'spent':>10}"
        )
        for d in audit.overview(site)["datasets"]:
            print(
                f"{d['name']:<20} {d['status']:<8} {d['n']:>9} {d['rho_total']:>10.4g} "
                f"{d['rho_allocated']:>10.4g} {d['rho_spent']:>10.4g}"
            )
        return 0
    status = {"pause": "paused", "resume": "open", "close": "closed"}[action]
    set_dataset_status(site, args.name, status)
    print(f"dataset {args.name!r} is {status}")
    return 0


def _analysts(args: argparse.Namespace, site: Any) -> int:
    from ..serve import audit, create_analyst, grant_share, revoke_analyst

    action = args.analyst_action
    if action == "add":
        if (args.dataset is None) != (args.rho is None):
            raise ValueError("give --dataset and --rho together (a first share), or neither")
        token = create_analyst(site, args.name)
        if args.dataset is not None:
            grant_share(site, args.name, args.dataset, args.rho)
        share = f"; rho {args.rho:g} of {args.dataset!r}" if args.dataset else ""
        print(f"analyst {args.name!r} created{share}")
        _show_token(token, args.name, args.token_file)
    elif action == "grant":
        grant_share(site, args.name, args.dataset, args.rho)
        print(f"analyst {args.name!r}: rho {args.rho:g} more of {args.dataset!r}")
    elif action == "revoke":
        revoke_analyst(site, args.name)
        print(f"analyst {args.name!r} revoked")
    else:
        for a in audit.overview(site)["analysts"]:
            shares = (
                "; ".join(
                    f"{s['dataset']} {s['rho_spent']:.4g} of {s['rho_total']:.4g}"
                    for s in a["shares"]
                )
                or "no share"
            )
            print(f"{a['name']:<20} {'revoked' if a['revoked'] else 'active':<8} {shares}")
    return 0


def run(args: argparse.Namespace) -> int:
    try:
        import dpfit.serve  # noqa: F401 - the serve extra's packages
    except ImportError as exc:
        raise ImportError(
            f"dpfit serve needs the serve extra ({exc.name} is missing): pip install -e '.[serve]'"
        ) from None
    from ..serve import init_site, open_site

    if args.action == "init":
        site, token = init_site(args.site, database=args.database)
        print(f"dpfit serve: created site {site.path}")
        _show_token(token, "the steward", args.token_file)
        print(
            f"next: dpfit serve dataset add {args.site} NAME --data FILE --schema FILE "
            "--rho RHO --delta DELTA"
        )
        return 0
    if args.action == "start":
        return _start(args)
    site = open_site(args.site, database=args.database)
    if args.action == "dataset":
        return _datasets(args, site)
    if args.action == "analyst":
        return _analysts(args, site)
    from ..serve.audit import export_audit

    text = export_audit(site, args.format)
    if args.out is None:
        sys.stdout.write(text)
    else:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
        print(f"audit log written to {args.out}")
    return 0
