import difflib


class APIUsageError(Exception):
    """Raised when an environment or vectorized env is used in a way its API does not allow."""


def did_you_mean(name, choices, cutoff=0.6, otherwise=""):
    """The hint ' Did you mean X?' for the choice closest to a mistyped name, else ``otherwise``."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=cutoff)
    return f" Did you mean {close[0]}?" if close else otherwise
