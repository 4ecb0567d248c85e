"""The exceptions of `gguf_validate`: one base class with a stable `code`
(the command line's exit code for the same failure), picklable."""

from __future__ import annotations

__all__ = ["GGUFValidateError", "UnreadableError", "UsageError", "NotGGUFError"]


class GGUFValidateError(Exception):
    """Base class of every error `gguf_validate` raises.

    `code` is the exit code the command line gives for the same failure.
    An invalid file is never an exception: `validate` returns a `Report`
    whose `valid` is False.
    """

    code: int = 2


class UnreadableError(GGUFValidateError):
    """The input could not be read (missing file, refused URL, a read that
    failed or timed out): what the command line reports with exit 2."""

    code = 2


class UsageError(GGUFValidateError, ValueError):
    """A bad argument (unknown profile, ggml type or algorithm, a config
    file that does not parse, a buffer of the wrong size)."""

    code = 2


class NotGGUFError(GGUFValidateError):
    """`dump` of a file that is not GGUF v2/v3 (exit 1 on the command line)."""

    code = 1


_KINDS: dict[str, type[GGUFValidateError]] = {
    "usage": UsageError,
    "unreadable": UnreadableError,
    "invalid": NotGGUFError,
}


def _translate(e: ValueError) -> BaseException:
    """The package's exception for a `(kind, message)` error of `_native`."""
    if len(e.args) == 2 and e.args[0] in _KINDS:
        return _KINDS[e.args[0]](e.args[1])
    return e
