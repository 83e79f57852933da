"""Command line: python3 -m contracts.conformance --base-url URL --display-name NAME."""

from __future__ import annotations

import argparse
import sys

from . import report
from .checks import CATEGORIES, GROUP_NAMES
from .runner import DEFAULT_TIMEOUT, run_checks, run_for_cli

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def parse_args(argv: list) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python3 -m contracts.conformance",
        description="Check a running server against the serverlab HTTP contract (v1).",
        epilog="Exit status: 0 all checks passed, 1 a check failed, "
        "2 usage error or server unreachable.",
    )
    parser.add_argument(
        "--base-url",
        required=True,
        help="e.g. http://127.0.0.1:8101 or https://127.0.0.1:8443 (no path)",
    )
    parser.add_argument(
        "--tls",
        metavar="CERT",
        help="check an https:// base URL trusting this PEM certificate "
        "(a self-signed test certificate); without it https uses the system trust store",
    )
    parser.add_argument("--display-name", required=True, help="the name the hello body must carry")
    parser.add_argument(
        "--json", action="store_true", help="print one JSON report instead of lines"
    )
    parser.add_argument(
        "--seed", type=int, help="seed for the random n values (default: random, printed)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds allowed per connection and response (default {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--calendar",
        help="calendar file (default: contracts/calendar/xshg-non-trading-weekdays.txt)",
    )
    parser.add_argument(
        "--vectors", help="folder with workday.json and inputs.json (default: contracts/vectors)"
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="run only these check groups or categories (comma-separated, repeatable): "
        + ", ".join(CATEGORIES + GROUP_NAMES),
    )
    return parser.parse_args(argv)


def main(argv: list | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    only = None
    if args.only:
        only = [name.strip() for value in args.only for name in value.split(",") if name.strip()]

    def stream(check: dict) -> None:
        print(report.check_line(check), flush=True)

    result = run_for_cli(
        lambda: run_checks(
            args.base_url,
            args.display_name,
            seed=args.seed,
            timeout=args.timeout,
            calendar=args.calendar,
            vectors=args.vectors,
            only=only,
            on_result=None if args.json else stream,
            tls_cert=args.tls,
        )
    )
    if result is None:
        return EXIT_USAGE
    if args.json:
        print(report.to_json(result))
    else:
        for line in report.info_lines(result):
            print(line)
        print(report.summary_line(result))
    return EXIT_FAILED if result["failed"] else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
