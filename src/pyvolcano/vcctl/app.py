"""The ``vcctl`` and ``kubectl-vc`` console scripts (``kubectl vc ...`` as a kubectl plugin).

:func:`run` is the single entry point: a usage mistake (an unknown flag, a missing name, a
bad selector or snapshot file) is one ``error:`` line on stderr and exit code 2; an API
error (not found, forbidden, refused by admission, unreachable server) is one ``error:``
line and exit code 1. Results go to stdout, "No resources found" to stderr, as kubectl does.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import typer

from pyvolcano.cli.options import Group
from pyvolcano.cli.output import one_line
from pyvolcano.store.base import StoreError
from pyvolcano.vcctl.common import Env
from pyvolcano.vcctl.job import job_app
from pyvolcano.vcctl.jobflow import jobflow_app, jobtemplate_app
from pyvolcano.vcctl.pod import pod_app
from pyvolcano.vcctl.queue import queue_app
from pyvolcano.vcctl.version import version

__all__ = ["app", "kubectl_plugin_main", "main", "run"]

app = typer.Typer(name="vcctl", help="Volcano's command line: jobs, queues, their pods, JobFlows and JobTemplates, "
                                    "live or on a snapshot.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False, cls=Group)
app.add_typer(job_app, name="job")
app.add_typer(queue_app, name="queue")
app.add_typer(pod_app, name="pod")
app.add_typer(jobflow_app, name="jobflow")
app.add_typer(jobtemplate_app, name="jobtemplate")
app.command("version", help="Print the version information")(version)


def run(argv: Sequence[str] | None = None, *, prog_name: str = "vcctl", env: Env | None = None) -> int:
    """Run vcctl on ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    command = typer.main.get_command(app)
    args = list(argv) if argv is not None else sys.argv[1:]
    try:
        result = command.main(args=args, prog_name=prog_name, standalone_mode=False, obj=env or Env())
    except typer.TyperException as e:
        if type(e).__name__ == "NoArgsIsHelpError":
            return 2
        ctx = getattr(e, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None and e.exit_code == 2 else ""
        print(f"error: {one_line(' '.join(e.format_message().split()))}{hint}", file=sys.stderr)
        return int(e.exit_code)
    except StoreError as e:
        print(f"error: {one_line(str(e))}", file=sys.stderr)
        return 1
    except typer.Abort:
        print("error: aborted", file=sys.stderr)
        return 1
    return result if isinstance(result, int) else 0


def main() -> None:
    sys.exit(run())


def kubectl_plugin_main() -> None:
    """``kubectl vc``: kubectl finds ``kubectl-vc`` on PATH and runs it with the rest of the line."""
    name = os.path.basename(sys.argv[0]) if sys.argv else ""
    sys.exit(run(prog_name="kubectl vc" if name.startswith("kubectl-") else "vcctl"))
