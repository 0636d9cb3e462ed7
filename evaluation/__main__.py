"""``python -m evaluation build|evaluate|report ...`` (see ``evaluation.builders``,
``evaluation.cli`` and ``evaluation.report``)."""

import sys


def main(argv: list[str]) -> int:
    commands = ("build", "evaluate", "report")
    if not argv or argv[0] not in commands:
        print(f"usage: python -m evaluation {{{','.join(commands)}}} ...", file=sys.stderr)
        return 2
    # Each command imports only what it runs: evaluating loads torch and Ray, building
    # the solver, and neither should wait for the other.
    if argv[0] == "build":
        from evaluation.builders import build_main

        return build_main(argv[1:])
    if argv[0] == "evaluate":
        from evaluation.cli import evaluate_main

        return evaluate_main(argv[1:])
    from evaluation.report import report_main

    return report_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
