class APIUsageError(Exception):
    """Raised when an environment or vectorized env is used in a way its API does not allow."""
