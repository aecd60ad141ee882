"""Return Address client for Python agents (stdlib only); the code is in return_address.py."""
from .return_address import *  # noqa: F401,F403  (every public name: ReturnAddress, ReturnAddressError, main, ...)
