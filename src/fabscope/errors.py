"""One family of exceptions.

The CLI prints ``str(err)`` of a :class:`FabscopeError` as one line and exits
non-zero; anything else is a bug and keeps its traceback.
"""


class FabscopeError(Exception):
    """Base class of every error fabscope reports to a user.

    Its text is always one line: a line break that came in with the user's
    input (a file name, a JSON key) is shown escaped.

    >>> str(FabscopeError("at links/\\r: bad"))
    'at links/\\\\r: bad'
    """

    def __str__(self) -> str:
        return super().__str__().translate(_LINE_BREAKS)


# every character str.splitlines() breaks at, shown as its escape
_LINE_BREAKS = {ord(c): repr(c)[1:-1] for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"}


class FabricError(FabscopeError):
    """A fabric that cannot be built or read: unknown name, bad parameter, dangling link."""


class RoutingError(FabscopeError):
    """A route that cannot be computed: loop, missing table entry, unreachable host."""


class TrafficError(FabscopeError):
    """A pattern or communication graph that does not fit the job or the fabric."""


class PlacementError(FabscopeError):
    """Ranks that do not fit the hosts, or hosts the fabric does not know."""


class SchemaError(FabscopeError):
    """A result or fabric file of the wrong schema version or shape."""


class MeasureError(FabscopeError):
    """MPI not found, a benchmark that failed, a launcher that cannot be built."""


class MappingError(FabscopeError):
    """A mapping problem that has no valid answer."""


class OutputError(FabscopeError):
    """An output file that cannot be written: missing folder, a folder named as a file, no permission."""


class FabscopeWarning(UserWarning):
    """Something a user should know, that does not stop the work (the CLI prints it as one line)."""
