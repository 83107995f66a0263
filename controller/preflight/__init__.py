"""`aiolbc check`: the pre-flight scan of a live cluster before switching from upstream's
controller (docs/check.md)."""

from controller.preflight.report import (
    EXIT_CANNOT_CHECK,
    EXIT_GO,
    EXIT_NO_GO,
    SCHEMA_VERSION,
    Finding,
    Report,
)
from controller.preflight.scan import CannotCheck, add_arguments, run, scan

__all__ = ["EXIT_CANNOT_CHECK", "EXIT_GO", "EXIT_NO_GO", "SCHEMA_VERSION", "CannotCheck",
           "Finding", "Report", "add_arguments", "run", "scan"]
