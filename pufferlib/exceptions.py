import difflib


class APIUsageError(Exception):
    """Raised when an environment or vectorized env is used in a way its API does not allow."""


class ParameterError(ValueError):
    """A parameter given a value outside its valid range; the message names the parameter, the
    value and the range."""


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, corrupt, or does not fit the env and policy it is loaded into."""


class UnknownParameterError(ParameterError, TypeError):
    """A keyword argument that the callee does not take (a TypeError, as Python's own)."""


def closest(name, choices, cutoff=0.6, ignore_prefix=""):
    """The choice most like a mistyped name, or None when none is alike enough.

    Names are compared case-insensitively and without ``ignore_prefix`` (a prefix such as
    ``puffer_`` that many names share would make any two of them look alike)."""
    def core(text):
        text = str(text).lower()
        return text[len(ignore_prefix):] if ignore_prefix and text.startswith(ignore_prefix.lower()) else text

    cores = {}
    for choice in choices:
        cores.setdefault(core(choice), choice)
    close = difflib.get_close_matches(core(name), list(cores), n=1, cutoff=cutoff)
    return cores[close[0]] if close else None


def did_you_mean(name, choices, cutoff=0.6, otherwise="", ignore_prefix=""):
    """The hint ' Did you mean X?' for the choice closest to a mistyped name, else ``otherwise``."""
    match = closest(name, choices, cutoff, ignore_prefix)
    return f" Did you mean {match}?" if match is not None else otherwise


def check_keywords(owner, given, valid):
    """Raises UnknownParameterError for the first key of ``given`` not in ``valid``, with the
    closest valid name and the list of valid ones."""
    for key in given:
        if key not in valid:
            hint = did_you_mean(key, valid)
            raise UnknownParameterError(
                f"{owner} got an unexpected keyword argument {key!r}.{hint} Valid: {', '.join(valid)}"
            )
